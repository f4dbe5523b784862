"""The Renderer contract: what every backend's source generator declares and provides. A renderer
takes a LinearProgram (codegen/linearize.py) and gives source text; its class attributes tell the
planner and the engine what it can say. Subclassed by every renderer here; read (never probed)
by codegen (decompose.py, beam.py), the engine (realize.py, devices.py, compile_record.py), the
schedule's packing (through realize), inspection and export.
"""
from __future__ import annotations

from abc import ABC, abstractmethod

from ..caps import PlanFamily
from ..ir.ops import ALU, Op, spelled_by
from ..target.build_facts import BuildFacts, RenderedKernel


class Renderer(ABC):
    """A backend's source generator. A minimal one defines `device` and `render`; the defaults
    describe a plain scalar language: every ALU op, every dtype, IEEE floats, no vector
    variables, no optimization actions (the plain loop nest always renders)."""
    device: str = ""                      # the device name it renders for ("CPU", "CL", ...)
    # the plan actions (codegen/plan.py Action) the planner may apply for this backend
    supported_actions: tuple = ()
    family: str | None = None             # whose spellings it reads in each primitive's row
    half_arithmetic: bool = True          # False: float16 math runs in float32 (decompose.py)
    lacks_dtypes: frozenset = frozenset()  # dtype names the language cannot express
    finite_math: bool = False             # True: compilers may assume no NaN / inf (WGSL)
    native_widths: tuple = ()             # lane counts one native vector variable can hold
    matmul_panel: int | None = None       # pack big matmul operands into panels this wide
    matmul_pack_rows: bool = True         # the rows operand too (False: read in place)
    relayout_lanes: int | None = None     # float32 lanes a reduce's operand is relaid out for
    plan_family = PlanFamily.CPU          # GPU: plans come from codegen/heuristic_gpu.py
    max_work_group: int = 1               # work-items per work-group (1: no work-groups)
    target = None                         # the CPUTarget it renders for (C only)
    line_maps: bool = False               # render_with_lines: source line -> instruction

    @property
    def ops(self) -> frozenset:
        """The ALU ops it renders: those its family spells (ir/ops.py spelled_by), every ALU op
        for a renderer of no family, or what an instance was given; decompose.py rewrites the
        others by their rows' decompositions."""
        given = self.__dict__.get("given_ops")
        if given is not None:
            return given
        return spelled_by(self.family) if self.family else frozenset(ALU)

    @ops.setter
    def ops(self, value) -> None:
        self.__dict__["given_ops"] = frozenset(value)

    def spelling(self, op, family: str | None = None):
        """How `op` (an Op, a LinearOp or its name) is written by this renderer's family (or
        `family`): its row's spelling. decompose.py rewrites what `ops` lacks, so a plan never
        reaches the error."""
        family = family or self.family
        spell = Op[op].spelling(family)
        if spell is None:
            raise NotImplementedError(f"{type(self).__name__} cannot render {op}: its row has no "
                                      f"{family!r} spelling")
        return spell

    # loops -> LaunchDims (target/launch.py) for a backend whose output loops are launched as
    # work-groups; None: every loop runs inside the source (C, Python)
    fold_launch = None

    def launch(self, program):
        """The program's LaunchDims: the ones linearize kept on it (the source indexes with
        them, the compile record shows them, the runtime launches them), else folded here from
        its loops; None where the source runs every loop. Writes nothing to the program."""
        if program.launch is not None or self.fold_launch is None:
            return program.launch
        return self.fold_launch(program.loops)

    def build_facts(self, program, intrinsics: bool = False) -> BuildFacts:
        """What the runtime reads to build and launch `program`, read off the program
        (`intrinsics`: the source includes the x86 intrinsics header)."""
        return BuildFacts(self.launch(program), program.threads, program.parallel,
                          program.uses_float16, intrinsics)

    def render_kernel(self, program) -> RenderedKernel:
        """The render stage: source, its line map where the renderer keeps one, and facts."""
        if self.line_maps:
            source, owners = self.render_with_lines(program)
            return RenderedKernel(source, tuple(owners), self.build_facts(program))
        return RenderedKernel(self.render(program), None, self.build_facts(program))

    @abstractmethod
    def render(self, program) -> str:
        """Source text for one kernel's LinearProgram."""
