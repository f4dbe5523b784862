"""notebooks/READING.md's examples, computed: kernel names (the plan's sizes in order, a backend's
own plan, masked lanes rounding up, symbolic sizes) and FLOP counts (the textbook count for a
matmul, more where lanes are folded), on the AVX2 target the notebooks are built for."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from tinylab import Context, Tensor, Variable, trace
from tinylab.target.cpu_target import PRESETS, detect

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
READING = (NOTEBOOKS / "READING.md").read_text()


@pytest.fixture(autouse=True)
def avx2():
    if not PRESETS["avx2"].executable_on(detect()):
        pytest.skip("this CPU cannot run AVX2 code: the guide's names are the AVX2 target's")
    with Context(CPU_TARGET="avx2", TINYLAB_CALIBRATE=0):
        yield


def _kernels(fn, *shapes):
    rng = np.random.default_rng(0)
    inputs = [Tensor(rng.standard_normal(shape).astype(np.float32)) for shape in shapes]
    with trace() as recorded:
        fn(*inputs).realize()
    return recorded.kernels


def test_a_name_is_the_plan_and_each_backend_plans_its_own():
    (kernel,) = _kernels(lambda a, b: (a * b).sum(axis=1), (4, 8), (4, 8))
    assert kernel.name == "r_4_8" and [str(o) for o in kernel.opts] == ["VECTORIZE(1, 8)"]
    assert "void r_8_4(" in kernel.render("CUDA")
    assert "`r_4_8` on the AVX2 CPU" in READING and "`r_8_4` on CUDA" in READING


def test_masked_lanes_round_the_sizes_up():
    (kernel,) = _kernels(lambda x: x * 2, (4, 5))
    assert kernel.name == "E_3_8" and 3 * 8 > 4 * 5
    assert "is `E_3_8`, the 20 elements as 3 vectors of 8 lanes" in READING


def _saved_outputs(name: str) -> str:
    """Every saved output of a committed notebook, as text (what a reader of it sees)."""
    notebook = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text())
    return "\n".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/html", ""))
                     + "".join(o.get("data", {}).get("text/plain", ""))
                     for cell in notebook["cells"] for o in cell.get("outputs", []))


def test_the_notebooks_it_points_to_show_those_kernels():
    (exp,) = _kernels(lambda x: (x * 2 + 1).exp(), (4, 5))
    softmax = _kernels(lambda x: x.softmax(1), (4, 5))
    assert exp.name == "E_3_8" and [k.name for k in softmax] == ["r_4_5", "r_5_4", "E_4_8"]
    assert "`(x * 2 + 1).exp()` of a (4, 5) input is that kernel" in READING
    assert "softmax ends in `E_4_8`, each row of 5 read as 8 lanes" in READING
    assert "E_3_8" in _saved_outputs("inspector") and "E_4_8" in _saved_outputs("02_laziness_and_fusion")
    (rows,) = _kernels(lambda a, b: (a * b).sum(axis=1) + 1, (4, 8), (4, 8))
    assert rows.name == "r_4_8" and re.search(r"r_4_8</b>.{0,80}· 72 FLOPs", _saved_outputs("00_tour"))
    assert re.search(r"matmul 256 +r_\w+ +33554432 FLOPs", _saved_outputs("07b_search_jit_roofline"))


def test_a_symbolic_size_names_its_variable():
    x = Tensor(np.arange(64, dtype=np.float32)).realize()
    i = Variable("i", 1, 63)
    with trace() as recorded:
        (x[:i.bind(5)] * 2).sum().realize()
        (x[:i.bind(5) + 1] * 2).sum().realize()
    assert [k.name for k in recorded.kernels] == ["r_i", "r_ip1"]


def test_flop_counts_are_textbook_where_nothing_is_folded():
    (matmul,) = _kernels(lambda a, b: a @ b, (256, 256), (256, 256))
    (relu,) = _kernels(lambda a, b: (a @ b).relu(), (256, 256), (256, 256))
    (rows,) = _kernels(lambda a, b: (a * b).sum(axis=1) + 1, (4, 8), (4, 8))
    assert matmul.flops == 2 * 256 ** 3 and relu.flops - matmul.flops == 4 * 256 ** 2
    assert rows.flops == 72 and 2 * 4 * 8 == 64
    assert "exactly `2·256³`" in READING and "count 72, the textbook's 64" in READING
