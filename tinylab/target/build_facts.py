"""What a runtime needs to know to build and launch one kernel, as one frozen value: `BuildFacts`
(launch dimensions, OpenMP threads, float16 arithmetic, x86 intrinsics). The renderer reads them off
the linear program it renders (Renderer.build_facts); runtimes read these fields and never search
the source text. `as_entry` / `from_entry` keep them in the planned-program disk cache.
"""
from __future__ import annotations

from dataclasses import dataclass

from .launch import LaunchDims


@dataclass(frozen=True)
class BuildFacts:
    """One kernel's facts for its runtime. The defaults describe hand-written source: no GPU
    launch dimensions, nothing known to run threads, no float16 math, no intrinsics header."""
    launch: LaunchDims | None = None  # a GPU kernel's launch (None: the source runs its loops)
    threads: int = 1                  # threads its parallel loop asks for (1: none)
    openmp: bool = False              # it opens an OpenMP parallel loop (the runtime binds threads)
    float16: bool = False             # it computes in float16 (built without a*b+c contraction)
    intrinsics: bool = False          # it includes <immintrin.h> (runtimes/x86_headers.py)

    def as_entry(self) -> dict:
        """The facts of a kernel run without launch dimensions, as JSON values (planned_cache)."""
        if self.launch is not None:
            raise ValueError("a GPU kernel's launch dimensions are not kept on disk")
        return {"threads": self.threads, "openmp": self.openmp, "float16": self.float16,
                "intrinsics": self.intrinsics}

    @classmethod
    def from_entry(cls, entry: dict) -> BuildFacts:
        return cls(None, int(entry["threads"]), bool(entry["openmp"]), bool(entry["float16"]),
                   bool(entry["intrinsics"]))


@dataclass(frozen=True)
class RenderedKernel:
    """The render stage's value (Renderer.render_kernel): the source, for each of its lines the
    instruction it renders (None: no map), and the facts its runtime reads."""
    source: str
    line_owners: tuple | None
    facts: BuildFacts
    # loops the source runs beyond the plan's (over a vector's lanes: helpers, strided lanes,
    # folds), each as `for NAME in A..B (what)`: the inspector shows them with the plan
    extra_loops: tuple = ()
