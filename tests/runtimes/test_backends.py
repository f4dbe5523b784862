"""OpenCL / CUDA / render-only devices: default selection and the reasons a backend is unusable
(absent packages and drivers simulated), build and allocation errors, render-only output,
cross-device copies, the same kernel rendered for every backend, and ops decomposed by rule."""
import subprocess
import sys
import types

import numpy as np
import pytest

from tinylab import Context, Device, Tensor, trace
from tinylab.engine import devices as device_module
from tinylab.engine.devices import Backend, _DeviceRegistry
from tinylab.engine.realize import render_for
from tinylab.errors import CompileError, CompilerNotFoundError, DeviceError
from tinylab.ir import node as ir
from tinylab.ir.evaluate import evaluate
from tinylab.ir.ops import ALU, Op
from tinylab.renderers.c import CRenderer
from tinylab.runtimes import cuda as cuda_runtime
from tinylab.runtimes.cuda import CUDARuntime, find_nvcc, nvcc_compile
from tinylab.runtimes.base import Runtime
from tinylab.runtimes.opencl import OpenCLRuntime

HAS_CL = Device["CL"].available
needs_cl = pytest.mark.skipif(not HAS_CL, reason="no OpenCL device")
try:
    find_nvcc()
    HAS_NVCC = True
except CompilerNotFoundError:
    HAS_NVCC = False


# ---- selection -------------------------------------------------------------------------------
class FakeRuntime(Runtime):
    """A runtime that opens (or fails to) and compiles nothing: for device selection only."""

    def __init__(self, problem=None, gpu=True):
        self.problem, self.is_gpu = problem, gpu

    def check(self):
        if self.problem:
            raise DeviceError(self.problem)

    def compile(self, source: str):
        raise NotImplementedError("FakeRuntime compiles nothing")

    def load(self, artifact, name: str):
        raise NotImplementedError("FakeRuntime loads nothing")


def _fake(monkeypatch, name, problem=None, gpu=True):
    old = device_module.BACKENDS[name]
    monkeypatch.setitem(device_module.BACKENDS, name, Backend(
        name, old.make_renderer, lambda: FakeRuntime(problem, gpu), old.description,
        old.default_rank, old.default_if))


@pytest.mark.parametrize("cuda,cl_gpu,expected", [
    (None, True, "CUDA"), ("pycuda is not installed", True, "CL"),
    ("pycuda is not installed", False, "CPU")])
def test_default_prefers_cuda_then_gpu_opencl_then_cpu(monkeypatch, cuda, cl_gpu, expected):
    _fake(monkeypatch, "CUDA", cuda)
    _fake(monkeypatch, "CL", None, gpu=cl_gpu)
    with Context(DEV=""):
        assert _DeviceRegistry().DEFAULT == expected


def test_pocl_cpu_opencl_is_usable_but_not_default():
    if HAS_CL and not Device["CL"].runtime.is_gpu:
        with Context(DEV=""):
            assert Device.DEFAULT != "CL"
        assert "not chosen by default" in Device["CL"].describe()
    with Context(DEV="CL" if HAS_CL else "CPU"):
        assert Device.DEFAULT == ("CL" if HAS_CL else "CPU")


def _fake_pyopencl(platforms):
    module = types.ModuleType("pyopencl")
    module.Error = type("Error", (Exception,), {})

    def get_platforms():
        if platforms is None:
            raise module.Error("clGetPlatformIDs failed: PLATFORM_NOT_FOUND_KHR")
        return platforms
    module.get_platforms = get_platforms
    return module


def test_opencl_missing_package_driver_or_device(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyopencl", None)
    with pytest.raises(DeviceError, match=r"pyopencl is not installed: pip install 'tinylab\["):
        OpenCLRuntime().check()
    fake = _fake_pyopencl(None)
    monkeypatch.setitem(sys.modules, "pyopencl", fake)
    with pytest.raises(DeviceError, match="no OpenCL driver found .*install"):
        OpenCLRuntime().check()

    def no_devices():
        raise fake.Error("DEVICE_NOT_FOUND")
    fake.get_platforms = lambda: [types.SimpleNamespace(name="Fake CL", get_devices=no_devices)]
    with pytest.raises(DeviceError, match=r"driver\(s\) found \(Fake CL\) but no device"):
        OpenCLRuntime().check()


def _fake_builds(monkeypatch, broken: set):
    """A fake pyopencl with two PoCL platforms (the wheel's and Debian's), one CPU device each;
    a build on a device named in `broken` fails as the wheel's LLVM 14 PoCL does."""
    fake = _fake_pyopencl(None)
    fake.device_type = types.SimpleNamespace(GPU=4, CPU=2)
    fake.command_queue_properties = types.SimpleNamespace(PROFILING_ENABLE=2)

    def device(name, platform):
        holder = types.SimpleNamespace(name=platform)
        return types.SimpleNamespace(name=name, type=fake.device_type.CPU, platform=holder)
    wheel = device("cpu-generic", "Portable Computing Language (wheel)")
    debian = device("cpu-skylake-avx512", "Portable Computing Language")
    fake.get_platforms = lambda: [types.SimpleNamespace(name=d.platform.name,
                                                        get_devices=lambda d=d: [d])
                                  for d in (wheel, debian)]
    fake.Context = lambda devices: types.SimpleNamespace(device=devices[0])

    class Program:
        def __init__(self, context, source):
            self.device = context.device

        def build(self):
            if self.device.name in broken:
                raise fake.Error("clBuildProgram failed: BUILD_PROGRAM_FAILURE\nerror: 'generic'")
            return self
    fake.Program = Program
    fake.CommandQueue = lambda context, device, properties: "queue"
    monkeypatch.setitem(sys.modules, "pyopencl", fake)
    return wheel, debian


def test_opencl_skips_a_device_that_cannot_build(monkeypatch):
    wheel, debian = _fake_builds(monkeypatch, broken={"cpu-generic"})
    assert OpenCLRuntime().open()[1] is debian
    _fake_builds(monkeypatch, broken=set())
    assert OpenCLRuntime().open()[1].name == "cpu-generic"  # the driver's order otherwise
    _fake_builds(monkeypatch, broken={"cpu-generic", "cpu-skylake-avx512"})
    with pytest.raises(DeviceError, match=r"no OpenCL device builds a kernel; tried cpu-generic "
                       r"\(Portable Computing Language \(wheel\)\): clBuildProgram failed.*; "
                       r"cpu-skylake-avx512 \(Portable Computing Language\): .*pocl-opencl-icd"):
        OpenCLRuntime().check()


def test_opencl_prefers_a_gpu_that_builds():
    from tinylab.runtimes.opencl import choose_device
    platform = types.SimpleNamespace(name="Fake CL")
    cpu, gpu, bad_gpu = (types.SimpleNamespace(name=n, platform=platform)
                         for n in ("cpu", "gpu", "bad"))

    def is_gpu(device):
        return device.name != "cpu"

    def probe(device):
        return "BUILD_PROGRAM_FAILURE" if device is bad_gpu else None
    assert choose_device([cpu, bad_gpu, gpu], is_gpu, probe) is gpu
    assert choose_device([cpu, bad_gpu], is_gpu, probe) is cpu
    with pytest.raises(DeviceError, match=r"tried bad \(Fake CL\): BUILD_PROGRAM_FAILURE\. "):
        choose_device([bad_gpu], is_gpu, probe)


@needs_cl
def test_the_opened_opencl_device_builds():
    from tinylab.runtimes.opencl import _probe_error
    cl, device, _, _ = Device["CL"].runtime.open()
    assert _probe_error(cl, device) is None
    np.testing.assert_allclose((Tensor([1.0, 2.0], device="CL") * 3).numpy(), [3.0, 6.0])


def _fake_pycuda(monkeypatch, init_error=None, count=1):
    package, driver = types.ModuleType("pycuda"), types.ModuleType("pycuda.driver")
    package.driver = driver

    def init():
        if init_error:
            raise RuntimeError(init_error)
    driver.init = init
    driver.Device = type("Device", (), {"count": staticmethod(lambda: count)})
    monkeypatch.setitem(sys.modules, "pycuda", package)
    monkeypatch.setitem(sys.modules, "pycuda.driver", driver)
    return driver


def test_cuda_missing_package_driver_or_device(monkeypatch):
    monkeypatch.setitem(sys.modules, "pycuda", None)
    monkeypatch.setitem(sys.modules, "pycuda.driver", None)
    with pytest.raises(DeviceError, match=r"pycuda is not installed: pip install 'tinylab\[cu"):
        CUDARuntime().check()
    _fake_pycuda(monkeypatch, init_error="cuInit failed: unknown error")
    runtime = CUDARuntime()
    with pytest.raises(DeviceError, match="no NVIDIA driver could be opened.*install"):
        runtime.check()
    with pytest.raises(DeviceError, match="no NVIDIA driver"):  # remembered, not retried
        runtime.check()
    _fake_pycuda(monkeypatch, count=0)
    with pytest.raises(DeviceError, match="no CUDA device"):
        CUDARuntime().check()


def test_device_listing_gives_reasons():
    out = subprocess.run([sys.executable, "-m", "tinylab.device"], capture_output=True,
                         text=True, check=True).stdout
    rows = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    for name in ("CL", "CUDA", "WEBGPU", "METAL", "NULL:C", "NULL:CL", "NULL:CUDA", "NULL:WGSL",
                 "NULL:METAL"):
        assert name in rows
    assert " yes " in rows["NULL:WGSL"] and " yes " in rows["NULL:METAL"]
    assert "no Metal runtime" in rows["METAL"]
    assert " yes " in rows["WEBGPU"] or "pip install 'tinylab[webgpu]'" in rows["WEBGPU"]
    assert " yes " in rows["NULL:CUDA"] and "render" in rows["NULL:CUDA"]
    assert " yes " in rows["CUDA"] or "pip install" in rows["CUDA"] or "driver" in rows["CUDA"]


# ---- bad input -------------------------------------------------------------------------------
@needs_cl
def test_opencl_build_failure_shows_source_and_log(tmp_path):
    runtime = OpenCLRuntime(tmp_path)
    with pytest.raises(CompileError) as info:
        runtime.compile("__kernel void broken(__global float* x) { x[0] = undefined_name; }")
    message = str(info.value)
    assert "undefined_name" in info.value.log and "1 | __kernel void broken" in message


@needs_cl
def test_opencl_allocation_too_large_names_size_and_device():
    with pytest.raises(MemoryError, match=r"cannot allocate 1073741824\.0 MiB on CL \("):
        Device["CL"].allocator.alloc(1 << 50)


def test_cuda_allocation_failure_names_size_and_device(monkeypatch):
    driver = _fake_pycuda(monkeypatch)
    driver.MemoryError = type("MemoryError", (Exception,), {})

    def mem_alloc(nbytes):
        raise driver.MemoryError("cuMemAlloc failed: out of memory")
    driver.mem_alloc, driver.mem_get_info = mem_alloc, lambda: (1 << 30, 80 << 30)
    runtime = CUDARuntime()
    runtime._opened = (driver, types.SimpleNamespace(name=lambda: "Fake H100"), None)
    with pytest.raises(MemoryError, match=r"2048\.0 MiB on CUDA \(Fake H100\): 1024\.0 of 81920"):
        runtime.allocator.alloc(2 << 30)


def test_nvcc_missing_or_failing(monkeypatch):
    if HAS_NVCC:
        with pytest.raises(CompileError, match="nvcc failed") as info:
            nvcc_compile('extern "C" __global__ void k(float* x) { x[0] = nope; }', "sm_80", "ptx")
        assert "nope" in info.value.log
    monkeypatch.setattr(cuda_runtime.shutil, "which", lambda name: None)
    monkeypatch.setattr(cuda_runtime, "NVCC_PLACES", ())
    with pytest.raises(CompilerNotFoundError, match="install the CUDA toolkit"):
        find_nvcc()


# ---- render-only devices ---------------------------------------------------------------------
@pytest.mark.parametrize("device,marker", [("NULL:CUDA", '__global__ void'),
                                           ("NULL:CL", "__kernel void"), ("NULL:C", "void E_"),
                                           ("NULL:WGSL", "@compute @workgroup_size("),
                                           ("NULL:METAL", "kernel void E_")])
def test_render_only_devices_print_source_and_refuse_values(device, marker, capsys):
    with Context(DEV=device, DEBUG=4):
        x = Tensor(np.ones((4, 8), np.float32))
        y = (x * 2 + 1).exp()
        y.realize()
        with pytest.raises(DeviceError, match="only renders source"):
            y.numpy()
    assert marker in capsys.readouterr().out


def test_render_only_names():
    assert Device.canonicalize("null:opencl") == "NULL:CL"
    assert Device.canonicalize("NULL:CLANG") == "NULL:C"
    assert Device.canonicalize("null:webgpu") == "NULL:WGSL" == Device.canonicalize("NULL:WGSL")
    assert Device.canonicalize("wgsl") == "WEBGPU" and Device.canonicalize("msl") == "METAL"
    assert Device["NULL:CUDA"].render_only


# ---- cross-device ----------------------------------------------------------------------------
@needs_cl
def test_copies_between_cpu_and_cl():
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    on_cpu = Tensor(data, device="CPU")
    on_cl = on_cpu.to("CL")
    assert on_cl.device == "CL"
    back = (on_cl * 2 + 1).sum(1).to("CPU")
    assert back.device == "CPU"
    np.testing.assert_allclose(back.numpy(), (data * 2 + 1).sum(1))
    with pytest.raises(DeviceError, match="different devices"):
        on_cpu + on_cl


# ---- the same kernel on every backend --------------------------------------------------------
def test_kernel_record_renders_for_every_backend():
    n = 16
    a, b = Tensor(np.ones((n, n), np.float32)), Tensor(np.ones((n, n), np.float32))
    with Context(DEV="CPU"), trace() as t:
        (a.reshape(n, 1, n) * b.T.reshape(1, n, n)).sum(axis=2).numpy()
    kernel = t.kernels[-1]
    cuda, opencl = kernel.render("CUDA"), kernel.render("CL")
    assert 'extern "C" __global__' in cuda and "threadIdx.x" in cuda
    assert "__kernel void" in opencl and "get_local_id(0)" in opencl
    assert kernel.render("C") == kernel.render("CPU") and "#include <math.h>" in kernel.render("C")
    assert "def r_" in kernel.render("PYTHON")
    wgsl, metal = kernel.render("WGSL"), kernel.render("METAL")
    assert "@compute @workgroup_size(" in wgsl and "local_invocation_index" in wgsl
    assert "kernel void" in metal and "[[thread_position_in_threadgroup]]" in metal
    if HAS_NVCC:
        nvcc_compile(cuda, "sm_80", "ptx")


@needs_cl
def test_render_for_matches_what_the_device_compiles():
    x = Tensor(np.ones((32, 64), np.float32), device="CL")
    with trace() as t:
        (x * 3).sum(1).numpy()
    kernel = t.kernels[-1]
    rendered = render_for(kernel.ast, "CL")
    plan_name = rendered.split("__kernel void ")[1].split("(")[0]
    assert rendered == kernel.source.replace(kernel.name + "(", plan_name + "(")


# ---- capability-driven decomposition ---------------------------------------------------------
class LeanCRenderer(CRenderer):
    """A C backend that lacks four ops: they must arrive decomposed into the others."""
    ops = frozenset(ALU) - {Op.MAX, Op.NEG, Op.MOD, Op.TRUNC}


F = np.array([1.5, -2.5, np.nan, 3.0, -0.0, 1e30, -7.9, 0.49], np.float32)
G = np.array([1.0, np.nan, 2.0, 3.0, 0.0, -1e30, -7.0, 0.5], np.float32)
I = np.array([7, -7, 7, -7, 0, 5, -2147483648, 9], np.int32)
J = np.array([2, 2, -2, -2, 3, 0, -1, -4], np.int32)


@pytest.mark.parametrize("op,arrays", [(Op.MAX, (F, G)), (Op.MAX, (I, J)), (Op.NEG, (F,)),
                                       (Op.NEG, (I,)), (Op.NEG, (F > 0,)), (Op.MOD, (I, J)),
                                       (Op.TRUNC, (F,))])
def test_ops_a_renderer_lacks_are_decomposed_by_rule(monkeypatch, op, arrays):
    cpu = device_module.BACKENDS["CPU"]
    monkeypatch.setitem(device_module.BACKENDS, "LEANC", Backend(
        "LEANC", LeanCRenderer, cpu.make_runtime, "C without MAX NEG MOD TRUNC", 99))
    monkeypatch.setattr(Device, "_opened", dict(Device._opened))
    node = ir.alu(op, *[Tensor(a, device="LEANC").node for a in arrays])
    with trace() as t:
        got = Tensor(node).numpy()
    np.testing.assert_array_equal(got, evaluate(node))
    linear = t.kernels[-1].passes["linear"]
    assert f" {op.name} " not in linear
