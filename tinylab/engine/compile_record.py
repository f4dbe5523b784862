"""One kernel's compilation, recorded: `compile_record(device, ast, noopt, beam)` -> CompileRecord,
the only compile pipeline (decompose -> plan -> each action -> partial sums -> linearize -> render;
the plan, the linear program and the rendered kernel are frozen values). It holds every
stage as it happened; realize.compile_kernel makes one per kernel, compiles its `source` and keeps
it in the Runner; DEBUG, the Trace and every inspection view read the record and re-run nothing.
"""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field

from .. import config
from ..codegen.decompose import decompose
from ..codegen.heuristic import choose_opts
from ..codegen.heuristic_costs import work
from ..codegen.heuristic_gpu import choose_gpu_opts
from ..codegen.linear_program import LinearProgram
from ..codegen.linearize import linearize
from ..codegen.partial_sums import plan_partial_sums
from ..caps import PlanFamily
from ..codegen.plan import KernelPlan, OptError
from ..ir.node import Node
from ..ir.graph_printer import print_graph
from ..target.build_facts import BuildFacts
from ..target.cpu_target import GENERIC
from . import progress
from .devices import Device

MAX_PRINTED_TREE = 20000  # the loop IR prints expressions as trees: a large DAG is exponential
NOT_RECORDED = "(not recorded for this backend)"
TUNE_WORK = (1 << 24, 1 << 31)  # loop iterations where timing a few candidate plans pays off
                                # (above: too slow to time; the heuristic's choice stands)


def source_hash(text: str) -> str:
    """sha256 of a kernel's source text: what the views compare with what was compiled."""
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class KernelBuild:
    """How one kernel came to be ready to launch, as it happened (the inspector reads it).
    `how`: "compiled" (planned, rendered and compiled here), "binary from the disk cache"
    (planned and rendered here; the compile cache had its binary), "planned program from the
    disk cache" (source and binary from an earlier process: not planned again here), or
    "render only". `tier`: "full" (the -O2 build), or "quick" (-O1, the first build of a big
    batch, build_tiers.py) until the full build is swapped in `upgraded_s` after it."""
    how: str
    tier: str = "full"
    unit_kernels: int = 1     # kernels compiled in its translation unit (1: alone or none)
    plan_s: float = 0.0       # decompose, heuristic, actions and linearize
    render_s: float = 0.0     # the renderer's text
    compile_s: float = 0.0    # the compiler's wall time for its whole unit (0 on a cache hit)
    load_s: float = 0.0       # loading the binary and finding the kernel in it
    upgraded_s: float = 0.0   # the full build swapped in this long after the quick one (0: not)
    upgrade_error: str = ""   # why the full build failed (the quick one keeps running)

    @property
    def seconds(self) -> float:
        """This kernel's share of the work: planning, rendering, its part of the unit's
        compile, loading."""
        return self.plan_s + self.render_s + self.compile_s / self.unit_kernels + self.load_s

    def describe(self) -> str:
        """One line: how it was built and what it cost."""
        unit = f" in a unit of {self.unit_kernels} kernels" if self.unit_kernels > 1 else ""
        compiled = f", compile {self.compile_s:.3f} s{unit}" if self.compile_s else ""
        tier = f"{self.tier} build"
        if self.upgraded_s:
            tier += f", swapped in {self.upgraded_s:.1f} s after the quick one"
        elif self.tier == "quick":
            tier += (f", the full build failed: {self.upgrade_error}" if self.upgrade_error
                     else ", the full one building")
        return (f"{self.how} ({tier}): plan {self.plan_s:.3f} s, render "
                f"{self.render_s:.3f} s{compiled}, load {self.load_s:.3f} s")


@dataclass(eq=False)
class CompileRecord:
    """Every stage of one kernel's compilation for one device, as it happened."""
    device: str
    language: str
    ast: Node                       # the kernel AST as lowered by the scheduler
    decomposed: Node                # in the renderer's ops (the same node when nothing changed)
    decompose_memo: dict            # kernel AST node -> its decomposed node (provenance)
    plans: list                     # [(title, KernelPlan)]: before actions, then after each
    linearized: KernelPlan          # the plan stage's value: the chosen plan with its partial sums
    program: LinearProgram          # with `origins`: the plan's AST nodes per instruction
    source: str
    line_owners: tuple | None       # per source line, the instruction it renders (None: no map)
    facts: BuildFacts               # what the runtime reads: launch, threads, OpenMP, float16
    settings: dict                  # what chose the plan: NOOPT, BEAM, TUNE, target, chooser
    source_hash: str
    compiled_hash: str | None = None   # hash of the text the runtime compiled (None: not compiled)
    build: KernelBuild | None = None   # how its binary was made (None: display only, not built)
    timings: tuple = (0.0, 0.0)        # (plan, render) seconds this record took to make
    extra_loops: tuple = ()            # the source's loops beyond the plan's (RenderedKernel's)
    _printed: dict = field(default_factory=dict, repr=False)

    @property
    def plan(self) -> KernelPlan:
        """The plan chosen: after every action (before the partial-sum step)."""
        return self.plans[-1][1]

    @property
    def launch(self) -> dict:
        """The launch dimensions: loops (name, extent, kind) outermost first, threads, and on a
        GPU the grid / block / global size / dispatch the runtime launched (its facts' LaunchDims,
        folded once by linearize); None for those where the source runs the loops."""
        dims = self.facts.launch
        return {"loops": [list(loop) for loop in self.program.loops],
                "threads": self.facts.threads,
                **(dims.describe() if dims is not None else
                   {"grid": None, "block": None, "global_size": None, "dispatch": None,
                    "text": None})}

    def _printed_tree(self) -> bool:
        if "printable" not in self._printed:
            self._printed["printable"] = _tree_size(self.ast) <= MAX_PRINTED_TREE
        return self._printed["printable"]

    def plan_text(self, plan: KernelPlan) -> str:
        if not self._printed_tree():
            return (f"(loop IR not printed: its expression tree has over {MAX_PRINTED_TREE} "
                    "nodes; see the linear program)")
        return plan.describe()

    def extra_loops_text(self) -> str:
        """The renderer's loops beyond the plan's, as lines after it (the source has them)."""
        if not self.extra_loops:
            return ""
        return ("\n  # loops the renderer wrote over vector lanes:\n"
                + "\n".join(f"  {loop}" for loop in self.extra_loops))

    def passes(self) -> dict[str, str]:
        """{"ast", "plan" (as linearized), "linear"}: the printed passes the Trace keeps."""
        if "passes" not in self._printed:
            self._printed["passes"] = {"ast": print_graph(self.ast),
                                       "plan": self.plan_text(self.linearized)
                                       + self.extra_loops_text(),
                                       "linear": self.program.print()}
        return dict(self._printed["passes"])

    def steps(self) -> list[tuple[str, str]]:
        """[(title, printed text)] in pipeline order, each printed from this record."""
        if "steps" not in self._printed:
            self._printed["steps"] = self._steps()
        return list(self._printed["steps"])

    def _steps(self) -> list[tuple[str, str]]:
        passes = self.passes()
        steps = [("kernel AST", passes["ast"])]
        if self.decomposed is not self.ast:
            steps.append(("kernel AST in the renderer's ops", print_graph(self.decomposed)))
        steps += [(title, self.plan_text(plan)) for title, plan in self.plans]
        steps.append(("plan as linearized", passes["plan"]))
        steps.append(("linear program", passes["linear"]))
        steps.append((f"source ({self.language})", self.source))
        return steps


def compile_record(device: str, ast: Node, noopt: bool, beam: int) -> CompileRecord:
    """Lower, plan, linearize and render `ast` for `device` (compiles nothing): the record."""
    spec = Device[device]
    renderer = spec.renderer
    memo: dict = {}
    start = time.perf_counter()
    decomposed = decompose(ast, renderer, memo)  # ops the renderer lacks, by rule
    base = KernelPlan.from_ast(decomposed)
    chosen, chooser = plan_kernel(spec, base, noopt, beam)
    plans = [("plan before actions", base)]
    for number, opt in enumerate(chosen.opts, 1):
        plans.append((f"action {number}: {opt}", plans[-1][1].apply(opt)))
    plans[-1] = (plans[-1][0], chosen)   # the chosen plan itself, not a replay's copy
    finished = plan_partial_sums(chosen)   # the last planning step: what linearize builds
    program = linearize(finished, chosen.name, origins=True, fold_launch=renderer.fold_launch)
    planned = time.perf_counter()
    rendered_kernel = renderer.render_kernel(program)
    source, owners = rendered_kernel.source, rendered_kernel.line_owners
    rendered = time.perf_counter()
    settings = {"NOOPT": noopt, "BEAM": beam, "TUNE": int(config.TUNE.value),
                "target": spec.target.name if spec.target else "", "chosen_by": chooser,
                "opts": [str(o) for o in chosen.opts]}
    record = CompileRecord(spec.name, spec.language, ast, decomposed, memo, plans,
                           program.plan, program, source, owners, rendered_kernel.facts, settings,
                           source_hash(source))
    record.timings = (planned - start, rendered - planned)
    record.extra_loops = rendered_kernel.extra_loops
    return record


def choose_plan(device: str, ast: Node, noopt: bool, beam: int) -> KernelPlan:
    """The plan `device` compiles `ast` with (the chosen plan of its compile record)."""
    spec = Device[device]
    return plan_kernel(spec, KernelPlan.from_ast(decompose(ast, spec.renderer)), noopt, beam)[0]


def plan_kernel(spec, plan: KernelPlan, noopt: bool, beam: int) -> tuple[KernelPlan, str]:
    """(the plan with its actions, what chose them) for the plan before actions."""
    if noopt:
        return plan, "NOOPT: no actions"
    if plan.is_symbolic:
        return _symbolic_plan(plan, spec), "heuristic at the variables' maxima (symbolic)"
    actions, target = spec.renderer.supported_actions, spec.target or GENERIC  # GENERIC: PYTHON
    ignore = bool(config.IGNORE_BEAM_CACHE.value)
    if beam and not spec.render_only:
        from ..codegen.beam import beam_search
        cache = None if config.DISABLE_CACHE.value else config.cache_dir() / "beam"
        default = plan.apply_all(_heuristic(plan, spec, actions, target))
        with progress.task("beam", plan.name, 0) as searching:
            return beam_search(plan, spec, beam, cache, target, progress=searching.update,
                               default=default, ignore_cache=ignore), f"BEAM={beam} search"
    if spec.renderer.plan_family is PlanFamily.GPU:  # OpenCL / CUDA / WGSL / Metal: work-groups
        return plan.apply_all(_heuristic(plan, spec, actions, target)), "GPU heuristic"
    if config.TUNE.value and not spec.render_only and TUNE_WORK[0] <= work(plan) <= TUNE_WORK[1]:
        from ..codegen.beam import tune  # big kernels: time the heuristic's candidates
        cache = None if config.DISABLE_CACHE.value else config.cache_dir() / "beam"
        with progress.task("tune", plan.name, 0) as searching:
            return tune(plan, spec, target, cache, progress=searching.update,
                        ignore_cache=ignore), "TUNE: timed the heuristic's candidates"
    return plan.apply_all(_heuristic(plan, spec, actions, target)), "heuristic"


def _heuristic(plan: KernelPlan, spec, actions: tuple, target) -> list:
    """The actions the heuristic of the renderer's plan family chooses for `plan`."""
    if spec.renderer.plan_family is PlanFamily.GPU:
        return choose_gpu_opts(plan, actions)
    return choose_opts(plan, actions, target)


def _symbolic_plan(plan: KernelPlan, spec) -> KernelPlan:
    """A kernel with a symbolic loop: the heuristic plans it as if every variable took its
    maximum, and its actions apply in order up to the first that would split a symbolic axis
    (plan.py refuses: no size the variable does not promise). BEAM and TUNE time one bound
    value, which would not speak for the others: they are skipped."""
    actions, target = spec.renderer.supported_actions, spec.target or GENERIC
    proxy = plan.static_proxy()
    try:
        opts = _heuristic(proxy, spec, actions, target)
    except TypeError:  # the heuristic met a symbolic size it cannot reason about: plain plan
        return plan
    for opt in opts:
        try:
            plan = plan.apply(opt)
        except OptError:
            break
    return plan


def _tree_size(ast) -> int:
    """Nodes of `ast` counted as a tree (a shared subexpression once per use)."""
    size: dict = {}
    for node in ast.toposort():
        size[node] = 1 + sum(size[s] for s in node.src)
    return size[ast]
