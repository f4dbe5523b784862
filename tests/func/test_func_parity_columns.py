"""The parity harness's jvp and vmap columns: every parity row with a gradient (float inputs) is
run under tinylab.func.jvp against torch.func.jvp and under tinylab.func.vmap against
torch.func.vmap, on its first shape set and on the row's 0-d / size-1 / size-0 shape sets, and
once with non-contiguous inputs."""
import importlib
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "frontend"))
from parity_harness import Case, run_jvp_case, run_vmap_case  # noqa: E402

MODULES = ["test_tensor_parity_elementwise"]
# special points (0 * inf, ties, overflow) are the reverse-mode rows' business: composite rules
SPECIAL_POINTS = {"special", "extreme", "special_finite", "special_f64", "large", "wide", "f16",
                  "ties"}
# integer and bool inputs only: no tangent goes in (the row's gradient flag is vacuous)
NO_GRADIENT = {"int", "nonzero_int", "small_int", "shift", "uint8", "int64", "bool", "index2",
               "index3", "index4", "index5"}


def _rows() -> list[Case]:
    rows = []
    for name in MODULES:
        rows += [c for c in importlib.import_module(name).CASES
                 if c.grad and not c.marks and not set(c.kinds) & SPECIAL_POINTS
                 and not set(c.kinds) <= NO_GRADIENT]
    return rows


def _edge(shapes) -> bool:
    return any(len(s) == 0 or 0 in s or 1 in s for s in shapes)


def _params() -> list:
    params = []
    for case in _rows():
        chosen = [case.shapes[0]] + [s for s in case.shapes[1:] if _edge(s)]
        for shapes in chosen:
            params.append(pytest.param(case, shapes, False, id=f"{case.name}[{shapes}]"))
        params.append(pytest.param(case, case.shapes[0], True, id=f"{case.name}[strided]"))
    return params


PARAMS = _params()


@pytest.mark.parametrize("case,shapes,strided", PARAMS)
def test_jvp_column(case, shapes, strided):
    run_jvp_case(case, shapes, strided)


@pytest.mark.parametrize("case,shapes,strided", PARAMS)
def test_vmap_column(case, shapes, strided):
    run_vmap_case(case, shapes, strided)
