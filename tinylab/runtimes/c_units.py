"""Several C kernels in one translation unit, so the compiler starts once for a schedule's kernels.

`unit_text([(name, source), ...])` -> (text, symbols): each kernel's function verbatim, renamed for
the unit by a `#define` around it (`E_4_4` becomes `E_4_4__2`, its symbol in the shared object),
after the declarations its source opens with (includes, vector typedefs, static helpers), each
written once. Raises UnitConflict when two kernels declare one name differently.
`UnitCompiler` is the CPU runtime's (cpu.py) `compile_unit`: one unit per group of kernels that
share compiler flags, each kernel found again in later processes through a reference file.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import CompileError
from .compile_cache import cached_build, lookup, read_reference, secure_dir, write_reference


class UnitConflict(ValueError):
    """Two kernels of a unit open with different declarations under one first line."""


def split_kernel(name: str, source: str, prefix: str = "void") -> tuple[list[str], str]:
    """(the declarations before the kernel's function, as top-level chunks; the function)."""
    start = source.find(f"{prefix} {name}(")
    if start < 0 or (start and source[start - 1] != "\n"):
        raise UnitConflict(f"kernel {name}: no function '{prefix} {name}(' at a line start")
    return declaration_chunks(source[:start]), source[start:]


def declaration_chunks(text: str) -> list[str]:
    """Top-level chunks: a line at column 0 (not a closing brace) starts one; indented lines
    and a closing brace continue it (a helper's body)."""
    chunks: list[list[str]] = []
    for line in text.splitlines(keepends=True):
        if chunks and (line[:1].isspace() or line.startswith("}") or not line.strip()):
            chunks[-1].append(line)
        else:
            chunks.append([line])
    return ["".join(chunk) for chunk in chunks]


def unit_text(kernels: list[tuple[str, str]], prefix: str = "void") -> tuple[str, list[str]]:
    """(one translation unit holding every kernel, each kernel's symbol in it)."""
    declared: dict[str, str] = {}   # first line -> the whole chunk
    bodies, symbols = [], []
    for number, (name, source) in enumerate(kernels):
        chunks, function = split_kernel(name, source, prefix)
        for chunk in chunks:
            first = chunk.splitlines()[0]
            known = declared.setdefault(first, chunk)
            if known != chunk:
                raise UnitConflict(f"kernel {name} declares {first!r} unlike an earlier kernel")
        symbol = f"{name}__{number}"
        symbols.append(symbol)
        bodies.append(f"#define {name} {symbol}\n{function.rstrip()}\n#undef {name}\n")
    return "".join(declared.values()) + "".join(bodies), symbols


class UnitCompiler:
    """compile_unit for a runtime that has `flags(facts, quick)`, `_key(text, flags)`,
    `compile(source, facts, flags)`, `_build(text, flags, out)`, `_header_flags(intrinsics,
    flags, text)`, `_built_with_fallback` (x86_headers.py), `cache_dir`,
    `use_cache`, `_parallel` (whether each loaded kernel runs threads) and `_tiers`."""

    @property
    def builds_in_tiers(self) -> bool:
        """Quick build first, full build later: only with the disk cache on (it keeps the full one)."""
        return bool(self.use_cache)

    def compile_unit(self, kernels: list[tuple],
                     quick: bool = False) -> list[tuple[Path, str, bool]]:
        """For each (name, source, BuildFacts): (shared object, the kernel's symbol in it, True if it came
        from the disk cache). Kernels not cached compile together: one translation unit per
        set of compiler flags (c_units.py), so the compiler starts once for them; a unit the
        compiler refuses compiles kernel by kernel (its error names the kernel's own source).
        `quick`: a kernel whose full build is not cached builds with the quick flags
        (`flags(facts, quick=True)`); `tier_of(library, symbol)` says which it got."""
        found: list = [None] * len(kernels)
        missing: dict[str, list[int]] = {}   # kernel key -> positions asking for it
        flags_of: dict[str, tuple[str, ...]] = {}
        quick_at: list[bool] = []            # per kernel: whether its binary is the quick one
        directory = secure_dir(self.cache_dir) if self.use_cache else None
        for i, (name, source, facts) in enumerate(kernels):
            tiers = (False, True) if quick else (False,)
            for tier_quick in tiers:   # the full build wherever the cache has it
                flags = self.flags(facts, quick=tier_quick)
                key = self._key(source, flags)
                cached = self._cached(directory, key, name) if directory else None
                if cached is not None:
                    break
            if cached is not None:
                found[i] = (*cached, True)
            else:
                missing.setdefault(key, []).append(i)
            flags_of[key] = flags
            quick_at.append(tier_quick)
        groups: dict[tuple, list[str]] = {}
        for key in missing:
            groups.setdefault(flags_of[key], []).append(key)
        for flags, keys in groups.items():
            members = [kernels[missing[key][0]] for key in keys]
            for key, built in zip(keys, self._build_unit(members, keys, flags)):
                for i in missing[key]:
                    found[i] = (*built, False)
        for (_, _, facts), (library, symbol, _), tier_quick in zip(kernels, found, quick_at):
            self._parallel[(str(library), symbol)] = facts.openmp
            self._tiers[(str(library), symbol)] = "quick" if tier_quick else "full"
        return found

    def tier_of(self, library: Path, symbol: str) -> str:
        """"quick" for a kernel compile_unit built (or found) with the quick flags, else
        "full"."""
        return self._tiers.get((str(library), symbol), "full")

    def _cached(self, directory: Path, key: str, name: str) -> tuple[Path, str] | None:
        """(shared object, symbol) of a kernel compiled before, alone or in a unit."""
        alone = lookup(directory, key, ".so")
        return (alone, name) if alone is not None else read_reference(directory, key, ".so")

    def _build_unit(self, members: list[tuple], keys: list[str],
                    flags: tuple[str, ...]) -> list[tuple[Path, str]]:
        """(shared object, symbol) per member, compiled as one unit where that can be."""
        if len(members) > 1 and self.use_cache:
            try:
                text, symbols = unit_text([(name, source) for name, source, _ in members])
                built = self.compile_text(text, flags, any(f.intrinsics for _, _, f in members))
                for key, symbol in zip(keys, symbols):
                    write_reference(self.cache_dir, key, ".so", built, symbol)
                return [(built, symbol) for symbol in symbols]
            except (UnitConflict, CompileError):
                pass  # each alone: a failure then names its own kernel
        return [(self.compile(source, facts, flags)[0], name) for name, source, facts in members]

    def compile_text(self, text: str, flags: tuple[str, ...], intrinsics: bool) -> Path:
        """The shared object of a translation unit `text` built with `flags` (cached);
        `intrinsics`: a member includes <immintrin.h> (x86_headers.py)."""
        def build(out: Path) -> None:
            self._built_with_fallback(lambda given: self._build(text, given, out), flags,
                                      self._header_flags(intrinsics, flags, text))
        return cached_build(self.cache_dir, self._key(text, flags), build, ".so")[0]

