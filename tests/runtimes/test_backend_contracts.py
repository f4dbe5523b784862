"""The Renderer and Runtime contracts (renderers/base.py, runtimes/base.py): a minimal backend that
defines only what the bases leave abstract gets sensible defaults and computes the right numbers
(against numpy), every registered backend subclasses the bases, and realize and BEAM launch
through the one `Runtime.launch`."""
import numpy as np
import pytest

from tinylab import Device, Tensor, trace
from tinylab.caps import PlanFamily
from tinylab.codegen import beam
from tinylab.codegen.decompose import decompose
from tinylab.codegen.plan import KernelPlan
from tinylab.engine import devices as device_module
from tinylab.engine.devices import Backend
from tinylab.engine.realize import REALIZED
from tinylab.errors import DeviceError
from tinylab.ir.ops import ALU
from tinylab.renderers.base import Renderer
from tinylab.renderers.python import PythonRenderer
from tinylab.runtimes import cpu, cuda, opencl, python, webgpu
from tinylab.runtimes.base import Program, Runtime
from tinylab.runtimes.buffer import HostAllocator
from tinylab.schedule.schedule import schedule


class MinimalRenderer(Renderer):
    """Only `render` (the Python renderer's text, so the minimal runtime can run it)."""
    device = "MINIMAL"

    def render(self, program) -> str:
        return PythonRenderer().render(program)


class MinimalProgram(Program):
    def __init__(self, name, fn):
        self.name, self.fn = name, fn

    def __call__(self, *handles, dims=None, scalars=(), wait=True) -> float:
        self.fn(*handles)
        return 0.0


class MinimalRuntime(Runtime):
    """Only `compile` and `load`."""
    name = "MINIMAL"

    def __init__(self):
        self.allocator = HostAllocator()

    def compile(self, source: str):
        namespace = dict(python.NAMESPACE)
        exec(compile(source, "<minimal kernel>", "exec"), namespace)  # noqa: S102 - our text
        return namespace, False

    def load(self, namespace, name: str):
        return MinimalProgram(name, namespace[name])


def test_a_minimal_backend_gets_sensible_defaults():
    renderer, runtime = MinimalRenderer(), MinimalRuntime()
    assert renderer.ops == frozenset(ALU) and renderer.supported_actions == ()
    assert renderer.half_arithmetic and not renderer.finite_math and renderer.plan_family is PlanFamily.CPU
    assert renderer.lacks_dtypes == frozenset() and renderer.native_widths == ()
    assert renderer.matmul_panel is None
    runtime.check()  # works everywhere
    assert runtime.describe() == "" and not runtime.is_gpu
    with pytest.raises(TypeError):
        Renderer()  # render is abstract
    with pytest.raises(TypeError):
        Runtime()   # compile and load are abstract


def test_a_minimal_backend_computes_what_numpy_computes(monkeypatch):
    monkeypatch.setitem(device_module.BACKENDS, "MINIMAL", Backend(
        "MINIMAL", MinimalRenderer, MinimalRuntime, "the minimal test backend", 999))
    monkeypatch.setattr(Device, "_opened", dict(Device._opened))
    x = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    with trace() as recorded:
        got = (Tensor(x, device="MINIMAL") * 2 + 1).relu().sum(1).numpy()
    np.testing.assert_array_equal(got, np.maximum(x * 2 + 1, 0).sum(1))
    kernel = recorded.kernels[-1]
    assert kernel.opts == [] and kernel.language == "Minimal"  # no actions: the plain loops
    assert Device["MINIMAL"].describe() == "the minimal test backend"
    assert decompose(kernel.ast, MinimalRenderer()) is kernel.ast  # every op: nothing rewritten


@pytest.mark.parametrize("name", list(device_module.BACKENDS))
def test_every_registered_backend_subclasses_the_contracts(name):
    backend = device_module.BACKENDS[name]
    target = Device[name].target
    renderer = backend.make_renderer() if target is None else backend.make_renderer(target)
    assert isinstance(renderer, Renderer), f"{name}'s renderer is not a Renderer"
    assert renderer.render is not Renderer.render
    try:
        runtime = backend.make_runtime() if target is None else backend.make_runtime(target)
    except DeviceError as error:  # METAL: render-only here
        assert "no Metal runtime" in str(error)
        return
    assert isinstance(runtime, Runtime), f"{name}'s runtime is not a Runtime"
    assert runtime.launch.__func__ is Runtime.launch  # one launch path for every backend


@pytest.mark.parametrize("program", [cpu.CPUProgram, python.PythonProgram, opencl.CLProgram,
                                     cuda.CUDAProgram, webgpu.WebGPUProgram])
def test_every_loaded_kernel_is_a_program(program):
    assert issubclass(program, Program)


def test_realize_and_beam_launch_through_runtime_launch(launch_dims):
    """Both go through Runtime.launch with the program's launch dimensions: None on the CPU,
    whose C runs every loop (GPU launches: tests/inspection/test_compile_record.py)."""
    seen = launch_dims
    a = Tensor(np.random.default_rng(0).random((16, 16), dtype=np.float32)).realize()
    got = (a * 3).sum(1).numpy()
    np.testing.assert_allclose(got, a.numpy().sum(1) * 3, rtol=1e-6)
    assert seen == [None]   # one kernel, its loops in the C
    (kernel,) = schedule([(a + 1).exp().node], realized=REALIZED).kernels
    plan = KernelPlan.from_ast(kernel.ast)
    timer = beam._Timer(Device["CPU"], plan)   # random inputs: buffer 1 is the input
    out = timer.output(plan)
    np.testing.assert_allclose(out, np.exp(timer.buffers[1].numpy() + 1), rtol=1e-6)
    assert seen == [None, None]
