"""WGSL and WebGPU: the CNN train step on WEBGPU (wgpu-py; Mesa's lavapipe on a CPU-only machine)
against the CPU, packed 1- and 2-byte stores from neighbouring work-items, launches past 65535
work-groups, the clear errors for what WGSL lacks, render-only NULL:WGSL / NULL:METAL source for
every kernel of the step, and what export.webgpu captures and refuses."""
import re

import numpy as np
import pytest

from tinylab import Context, Device, Tensor, dtypes, export, nn, trace
from tinylab.examples.beautiful_mnist import Model, make_steps
from tinylab.ir import node as ir

HAS_WEBGPU = Device["WEBGPU"].available
needs_webgpu = pytest.mark.skipif(not HAS_WEBGPU, reason="no WebGPU adapter (pip install wgpu; "
                                  "apt-get install mesa-vulkan-drivers)")
RNG = np.random.default_rng(7)


def _train(device: str, steps: int = 2):
    """Losses, first and final weights of a few jitted steps of the CNN from the same start (SGD
    with momentum at a rate where the loss stays put: at lr=0.01 these random batches make it
    climb 1.9 -> 5.7, and two correct CPU targets, avx512 and sse4, then differ on 318 of the
    800 weights beyond rtol 1e-3, atol 1e-4: float noise grown by the steps, not an error)."""
    with Context(DEV=device):
        Tensor.manual_seed(0)
        model = Model()
        parameters = nn.state.get_parameters(model)
        Tensor.realize(*parameters)
        first = [p.numpy() for p in parameters]
        step, _ = make_steps(model, nn.optim.SGD(parameters, lr=0.001, momentum=0.9))
        images = RNG.random((steps + 1, 8, 1, 28, 28)).astype(np.float32)
        labels = RNG.integers(0, 10, (steps + 1, 8)).astype(np.int32)
        losses = [float(step(Tensor(i), Tensor(l)).item()) for i, l in zip(images, labels)]
        return losses, first, [p.numpy() for p in parameters]


@needs_webgpu
def test_cnn_train_step_on_webgpu_matches_cpu():
    """The updates (final - first weights) agree norm-wise: a gradient summed in another order
    differs by float rounding of its largest terms, so a tiny element's relative error says
    nothing. Measured against avx512: avx2 7e-6, sse4 1.3e-4, WEBGPU 2.6e-4 of the worst
    tensor's largest update; a wrong kernel differs by the update itself."""
    state = RNG.bit_generator.state
    cpu_losses, cpu_first, cpu_weights = _train("CPU")
    RNG.bit_generator.state = state
    gpu_losses, gpu_first, gpu_weights = _train("WEBGPU")
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=1e-5)
    for first, mine, reference, start in zip(gpu_first, gpu_weights, cpu_weights, cpu_first):
        # the init u * 2b - b, u uniform: within an ulp or two of its bound b
        np.testing.assert_allclose(first, start, rtol=0, atol=1e-6 * np.abs(start).max())
        update, expected = mine - first, reference - start
        assert np.abs(expected).max() > 0
        np.testing.assert_allclose(update, expected, rtol=0, atol=2e-3 * np.abs(expected).max())


@needs_webgpu
@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "float16"])
def test_packed_stores_from_neighbouring_work_items(dtype):
    """1- and 2-byte elements share 32-bit words: every work-item's store must land intact."""
    data = RNG.standard_normal(1001).astype(np.float32) * 100
    expected = (data > 0) if dtype == "bool" else data.astype(dtype) if dtype == "float16" \
        else np.trunc(np.clip(data, np.iinfo(dtype).min, np.iinfo(dtype).max)).astype(dtype)
    with Context(DEV="WEBGPU"):
        x = Tensor(data)
        out = (x > 0) if dtype == "bool" else Tensor(ir.cast(x.node, getattr(dtypes, dtype)))
        got = out.numpy()
        again = (out + out).numpy() if dtype != "bool" else (out & out).numpy()  # reads them back
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(again, expected + expected if dtype != "bool" else expected)


@needs_webgpu
def test_launch_past_65535_work_groups():
    n = 65537 * 256   # more work-groups than one dimension holds: dispatched as x * y
    with Context(DEV="WEBGPU"), trace() as t:
        got = (Tensor.arange(n, dtype=dtypes.int32) * 3).numpy()
    assert "if (gindex >= " in t.kernels[-1].source
    np.testing.assert_array_equal(got, np.arange(n, dtype=np.int32) * 3)


def test_wgsl_names_the_float64_it_lacks():
    with Context(DEV="NULL:WGSL"), pytest.raises(NotImplementedError,
                                                match="WGSL has no float64.*32-bit"):
        (Tensor(np.ones(4, np.float64)) + 1).realize()


INT64 = np.array([0, -1, 2 ** 63 - 1, -2 ** 63, 5, -7, 3 << 40, -(5 << 33)], np.int64)
SMALL = np.array([3, -1, -1, -1, 0, 2, -(1 << 20), 7], np.int64)
AMOUNTS = np.array([0, 1, 31, 32, 33, 63, 64, 70], np.int64)


@needs_webgpu
@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
@pytest.mark.parametrize("op", ["ADD", "MUL", "IDIV", "MOD", "CMPLT", "CMPNE", "MAX", "XOR",
                                "NEG", "SHL", "SHR"])
def test_int64_as_two_words_matches_numpy(dtype, op):
    """WGSL has no 64-bit integers: each op is a function on (low, high) u32 words."""
    from tinylab.ir.evaluate import evaluate
    from tinylab.ir.ops import Op
    with Context(DEV="WEBGPU"):
        a = Tensor(INT64.astype(dtype)).node
        b = Tensor((AMOUNTS if op in ("SHL", "SHR") else SMALL).astype(dtype)).node
        node = ir.alu(Op[op], a) if op == "NEG" else ir.alu(Op[op], a, b)
        np.testing.assert_array_equal(Tensor(node).numpy(), evaluate(node))


@needs_webgpu
def test_int64_casts_match_numpy():
    from tinylab.ir.evaluate import evaluate
    floats = np.array([1e30, -1e30, 3e9, -3e9, 4.3e9, 2.2e19, -1.5, np.nan, 2.0 ** 31, 12345.9],
                      np.float32)
    with Context(DEV="WEBGPU"):
        for wide in (dtypes.int64, dtypes.uint64):
            for source in (floats, INT64.astype(np.int32), INT64.astype(np.uint8), INT64 > 0):
                node = ir.cast(Tensor(source).node, wide)
                np.testing.assert_array_equal(Tensor(node).numpy(), evaluate(node))
            for narrow in (dtypes.float32, dtypes.int32, dtypes.uint8, dtypes.bool, dtypes.float16):
                node = ir.cast(Tensor(INT64.astype(wide.np)).node, narrow)
                np.testing.assert_array_equal(Tensor(node).numpy(), evaluate(node))
        for narrow in (dtypes.int32, dtypes.uint32, dtypes.int16, dtypes.uint8):  # out of range
            node = ir.cast(Tensor(floats).node, narrow)
            np.testing.assert_array_equal(Tensor(node).numpy(), evaluate(node))


@needs_webgpu
@pytest.mark.parametrize("source,target", [(np.int16, np.uint16), (np.uint16, np.int16),
                                           (np.int8, np.uint8), (np.uint8, np.int8)])
def test_small_integer_bitcasts_keep_the_bits(source, target):
    """int16 <-> uint16 (cummax's tie order builds one) had no WGSL form: a NotImplementedError
    at render time. Computed first, so the bitcast runs in a kernel, against numpy's view."""
    values = np.array([-128, -3, 0, 5, 100, 127], np.int64).astype(source)
    with Context(DEV="WEBGPU"):
        got = (Tensor(values) + 1).bitcast(dtypes.from_numpy(np.dtype(target))).numpy()
    np.testing.assert_array_equal(got, (values + source(1)).view(target))


def test_every_kernel_of_the_cnn_step_renders_as_wgsl_and_metal():
    """One Adam step of the CNN on the render-only NULL:WGSL device (nothing compiles or runs):
    every kernel has WGSL, and Metal from the same walk; naga validates the WGSL."""
    with Context(DEV="NULL:WGSL"), Tensor.train(), trace() as t:
        model = Model()
        optimizer = nn.optim.Adam(nn.state.get_parameters(model), lr=1e-3)
        images, labels = Tensor.rand(8, 1, 28, 28), Tensor(np.arange(8, dtype=np.int32) % 10)
        optimizer.zero_grad()
        model(images).sparse_categorical_crossentropy(labels).backward()
        optimizer.step()   # realizes the new weights (and Adam's moments)
    kernels = {k.name: k for k in t.kernels}
    assert len(kernels) > 50 and all(k.language == "WGSL" for k in kernels.values())
    for kernel in kernels.values():
        assert "@compute @workgroup_size(" in kernel.source
        assert "kernel void " in kernel.render("METAL") == kernel.render("MSL")
    if HAS_WEBGPU:   # naga validates each one
        runtime = Device["WEBGPU"].runtime
        for kernel in kernels.values():
            runtime.shader_module(kernel.source)


def test_export_refuses_a_function_that_changes_state(tmp_path):
    total = Tensor.zeros(4).contiguous().realize()

    def accumulate(x):   # a page replays kernels on fresh buffers: it cannot keep `total`
        total.assign(total + x)
        return total * 2
    with Context(DEV="CPU"), pytest.raises(ValueError, match="changes the float32.4. buffer"):
        export.webgpu(accumulate, [Tensor.ones(4)], tmp_path / "page.html")


def test_export_page_holds_kernels_weights_and_runner(tmp_path):
    weight = Tensor(RNG.standard_normal((6, 4)).astype(np.float32)).realize()
    with Context(DEV="CPU"):
        path = export.webgpu(lambda x: (x @ weight).relu(), [Tensor.zeros(3, 6)],
                             tmp_path / "page.html", title="tiny <model>")
    page = path.read_text()
    assert "tiny &lt;model&gt;" in page and "async function openWebGPU" in page
    assert "@compute" in page and "http" not in page.replace("http://", "").split("<script")[0]
    plan = export.webgpu.__module__ and __import__("json").loads(
        page.split("const plan = ")[1].split(";\nconst weightsText")[0])
    roles = sorted(b["role"] for b in plan["buffers"])
    assert roles == ["input0", "scratch", "weight"] and plan["output_shape"] == [3, 4]


@needs_webgpu
def test_uncached_webgpu_builds_leave_no_files(tmp_path):
    """Regression: with the cache disabled every compile left its private .wgsl behind."""
    from tinylab.runtimes.webgpu import WebGPURuntime
    with Context(DEV="NULL:WGSL"), trace() as t:
        (Tensor.ones(8).contiguous() * 3).realize()
    kernel = t.kernels[-1]
    runtime = WebGPURuntime(cache_dir=tmp_path, use_cache=False)
    for _ in range(2):
        path, hit = runtime.compile(kernel.source)
        assert not hit and path.exists()
        runtime.load(path, re.search(r"@compute @workgroup_size\(\w+\)\nfn (\w+)",
                                     kernel.source).group(1))
        assert sorted(p.name for p in tmp_path.iterdir()) == []


@needs_webgpu
@pytest.mark.parametrize("name,make,expected", [
    ("reciprocal of 0", lambda: Tensor.full((3,), 0.0).reciprocal(), np.inf),
    ("overflow", lambda: Tensor.full((3,), 3e38) * 10, np.inf),
    ("log of 0", lambda: Tensor.full((3,), 0.0).log(), -np.inf),
    ("sqrt of -1", lambda: Tensor.full((3,), -1.0).sqrt(), np.nan),
    ("int division by 0", lambda: Tensor.full((3,), 5, dtype="int32") // Tensor.full((3,), 0), 0),
    ("uint mod 0", lambda: Tensor.full((3,), 5, dtype="uint32") % Tensor.full((3,), 0, dtype="uint32"),
     0)], ids=lambda v: v
    if isinstance(v, str) else "")
def test_kernels_of_literals_alone_compile(name, make, expected):
    """Regression: naga folds a literal-only expression while parsing and rejected `1.0f / 0.0f`,
    `log2(0.0f)`, `5i / 0i` ("Float literal is infinite"); such kernels now run like on CPU."""
    with Context(DEV="WEBGPU"):
        got = make().numpy()
    np.testing.assert_array_equal(got, np.full(3, expected, got.dtype))
