"""Write fuzzing (issue 29.5): a random chain of views of a realized tensor (permute, flip,
shrink, step slices, reshape, int index, detach), a random write through it (setitem, assign,
`+=`), then reads made before the write (lazy), the view and the base after, against a numpy
model: the view's elements are base positions (the chain applied to an array of positions), so
a write is `base.flat[positions] = value`. `make test` runs a few derandomized examples per
backend; `make fuzz` (FUZZ_EXAMPLES=2000) runs long with fresh randomness."""
import os

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinylab import Tensor

F32 = np.float32
BOUNDED_EXAMPLES = 250  # as in test_fuzz.py: FUZZ_EXAMPLES above this runs long and random
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", BOUNDED_EXAMPLES))
SHARE = {"PYTHON": 0.04, "CPU": 0.03, "CL": 0.012, "WEBGPU": 0.012}  # compiles are slow


def _settings(device: str):
    return settings(max_examples=max(2, int(EXAMPLES * SHARE.get(device, 0.012))), deadline=None,
                    derandomize=EXAMPLES <= BOUNDED_EXAMPLES, database=None, print_blob=True,
                    suppress_health_check=list(HealthCheck))


@st.composite
def view_steps(draw, shape: tuple):
    """(description, tinylab step, numpy step on positions) triples and the final shape."""
    steps = []
    for _ in range(draw(st.integers(1, 4))):
        kinds = ["permute", "flip", "shrink", "step", "reshape", "detach"]
        kinds += ["index"] if len(shape) > 1 else []
        kind = draw(st.sampled_from(kinds))
        axis = draw(st.integers(0, len(shape) - 1))
        if kind == "permute":
            order = tuple(draw(st.permutations(range(len(shape)))))
            steps.append((f"permute{order}", lambda t, o=order: t.permute(o),
                          lambda p, o=order: p.transpose(o)))
            shape = tuple(shape[i] for i in order)
        elif kind == "flip":
            steps.append((f"flip({axis})", lambda t, a=axis: t.flip(a),
                          lambda p, a=axis: np.flip(p, a)))
        elif kind in ("shrink", "step"):
            low = draw(st.integers(0, shape[axis] - 1))
            high = draw(st.integers(low + 1, shape[axis]))
            step = draw(st.sampled_from([1, 2, 3, -1, -2])) if kind == "step" else 1
            part = slice(low, high, step) if step > 0 else slice(high - 1, None if low == 0
                                                                 else low - 1, step)
            index = (slice(None),) * axis + (part,)
            steps.append((f"[{index}]", lambda t, i=index: t[i], lambda p, i=index: p[i]))
            shape = np.empty(shape)[index].shape
        elif kind == "reshape":
            flat = int(np.prod(shape))
            splits = [d for d in range(1, flat + 1) if flat % d == 0]
            first = draw(st.sampled_from(splits))
            new = (first, flat // first) if draw(st.booleans()) else (flat,)
            steps.append((f"reshape{new}", lambda t, n=new: t.reshape(n),
                          lambda p, n=new: p.reshape(n)))
            shape = new
        elif kind == "index":
            at = draw(st.integers(0, shape[axis] - 1))
            index = (slice(None),) * axis + (at,)
            steps.append((f"[{index}]", lambda t, i=index: t[i], lambda p, i=index: p[i]))
            shape = shape[:axis] + shape[axis + 1:]
        else:
            steps.append(("detach()", lambda t: t.detach(), lambda p: p))
    return steps, shape


@st.composite
def programs(draw):
    shape = draw(st.sampled_from([(3, 4), (2, 3, 4), (6,), (4, 5)]))
    steps, view_shape = draw(view_steps(shape))
    write = draw(st.sampled_from(["setitem", "assign", "iadd"]))
    where = draw(st.integers(0, max(view_shape[0] - 1, 0))) if view_shape else 0
    seed = draw(st.integers(0, 2 ** 16))
    return shape, steps, view_shape, write, where, seed


def _check(program):
    shape, steps, view_shape, write, where, seed = program
    rng = np.random.default_rng(seed)
    start = rng.integers(-9, 9, size=shape).astype(F32)
    base = Tensor(start.copy()).realize()
    positions = np.arange(start.size).reshape(shape)
    view = base
    for _, ours, theirs in steps:
        view, positions = ours(view), theirs(positions)
    chain = " -> ".join(text for text, _, _ in steps) + f", {write} at {where}"
    before_base, before_view = base * 2 + 1, view.sum()  # lazy: the values before the write
    model = start.copy().reshape(-1)
    expected_view_sum = model[positions].sum()
    value = rng.integers(-9, 9, size=view_shape).astype(F32)
    if write == "setitem" and view_shape:
        view[where] = Tensor(value[where])
        model[positions[where]] = value[where]
    elif write == "setitem":
        view[...] = float(value)
        model[positions] = value
    elif write == "assign":
        view.assign(Tensor(value))
        model[positions] = value
    else:
        view += 5
        model[positions] += 5
    model = model.reshape(shape)
    np.testing.assert_array_equal(base.numpy(), model, err_msg=chain)
    np.testing.assert_array_equal(view.numpy(), model.reshape(-1)[positions], err_msg=chain)
    np.testing.assert_array_equal(before_base.numpy(), start * 2 + 1, err_msg=chain)
    np.testing.assert_array_equal(before_view.numpy(), expected_view_sum, err_msg=chain)
    np.testing.assert_array_equal((base.sum(0) + 0).numpy(), model.sum(0), err_msg=chain)


def test_random_writes_through_view_chains_match_numpy(device):
    given(programs())(_settings(device)(lambda program: _check(program)))()
