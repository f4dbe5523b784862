"""Write fuzzing (issue 29.5, 52): a random chain of views of a realized tensor (permute, flip,
shrink, step slices, reshape, int index, detach, bitcast float32 <-> int32, and realize, which
leaves a view a view), a random write through it (setitem, assign, `+=`), then reads made before
the write (lazy), the view and the base after, against a numpy model: the view's elements are
base positions (the chain applied to an array of positions), so a write is
`base.flat[positions] = value` (through a bitcast: on the bits). Then several assigns realized in
one call with copies and reduces between them, against eager numpy. `make test` runs a few
derandomized examples per backend; `make fuzz` (FUZZ_EXAMPLES=2000) runs long with fresh
randomness."""
import os

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinylab import Tensor, dtypes

F32 = np.float32
BOUNDED_EXAMPLES = 250  # as in test_fuzz.py: FUZZ_EXAMPLES above this runs long and random
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", BOUNDED_EXAMPLES))
SHARE = {"PYTHON": 0.04, "CPU": 0.03, "CL": 0.012, "WEBGPU": 0.012}  # compiles are slow


def _settings(device: str):
    return settings(max_examples=max(2, int(EXAMPLES * SHARE.get(device, 0.012))), deadline=None,
                    derandomize=EXAMPLES <= BOUNDED_EXAMPLES, database=None, print_blob=True,
                    suppress_health_check=list(HealthCheck))


def _toggle_bits(t):
    return t.bitcast(dtypes.int32 if t.dtype.is_float else dtypes.float32)


@st.composite
def view_steps(draw, shape: tuple):
    """(description, tinylab step, numpy step on positions) triples and the final shape."""
    steps = []
    for _ in range(draw(st.integers(1, 4))):
        kinds = ["permute", "flip", "shrink", "step", "reshape", "detach", "bitcast", "realize"]
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
        elif kind == "bitcast":  # float32 <-> int32: the same bits (positions unchanged)
            steps.append(("bitcast", _toggle_bits, lambda p: p))
        elif kind == "realize":  # a view of realized storage has nothing to compute: a view
            steps.append(("realize()", lambda t: t.realize(), lambda p: p))
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


def _nonzero(rng, shape) -> np.ndarray:
    """Small nonzero integers as float32: through an int32 view, + 2**23 doubles each exactly."""
    return (rng.integers(1, 9, size=shape) * rng.choice([-1, 1], size=shape)).astype(F32)


def _check(program):
    shape, steps, view_shape, write, where, seed = program
    rng = np.random.default_rng(seed)
    start = _nonzero(rng, shape)
    base = Tensor(start.copy()).realize()
    positions = np.arange(start.size).reshape(shape)
    view = base
    for _, ours, theirs in steps:
        view, positions = ours(view), theirs(positions)
    chain = " -> ".join(text for text, _, _ in steps) + f", {write} at {where}"
    before_base, before_view = base * 2 + 1, view.sum()  # lazy: the values before the write
    model = start.copy().reshape(-1)
    as_int = not view.dtype.is_float  # an odd number of bitcasts: the view reads the bits
    seen = model.view(np.int32) if as_int else model  # the model as the view reads it
    expected_view_sum = np.asarray(seen[positions].sum()).astype(seen.dtype)  # int32 wraps
    value = _nonzero(rng, view_shape)
    value = value.view(np.int32) if as_int else value
    step = 2 ** 23 if as_int else 5  # on the bits: doubles each float
    if write == "setitem" and view_shape:
        view[where] = Tensor(value[where])
        seen[positions[where]] = value[where]
    elif write == "setitem":
        view[...] = value.item()
        seen[positions] = value
    elif write == "assign":
        view.assign(Tensor(value))
        seen[positions] = value
    else:
        view += step
        seen[positions] += step
    model = model.reshape(shape)
    np.testing.assert_array_equal(base.numpy(), model, err_msg=chain)
    np.testing.assert_array_equal(view.numpy(), seen[positions], err_msg=chain)
    np.testing.assert_array_equal(before_base.numpy(), start * 2 + 1, err_msg=chain)
    np.testing.assert_array_equal(before_view.numpy(), expected_view_sum, err_msg=chain)
    np.testing.assert_array_equal((base.sum(0) + 0).numpy(), model.sum(0), err_msg=chain)


def test_random_writes_through_view_chains_match_numpy(device):
    given(programs())(_settings(device)(lambda program: _check(program)))()


# ---- several assigns realized in one call, with copies and reduces between them -----------
VALUE_KINDS = ["copy", "clone", "reduce", "mix", "target"]


@st.composite
def assign_programs(draw):
    """Three realized tensors of one shape; a random sequence of values (copies, clones,
    reduces broadcast back, mixes) and assigns, each value built from the targets as they are
    then; the realize call names some targets and some values."""
    shape = draw(st.sampled_from([(4,), (3, 4), (2, 3)]))
    actions = []
    for _ in range(draw(st.integers(2, 7))):
        if draw(st.booleans()):
            actions.append(("assign", draw(st.integers(0, 2)), draw(st.integers(0, 99))))
        else:
            actions.append((draw(st.sampled_from(VALUE_KINDS)), draw(st.integers(0, 2)),
                            draw(st.integers(0, 99))))
    realized = draw(st.lists(st.integers(0, 99), min_size=1, max_size=4))
    return shape, actions, realized, draw(st.integers(0, 2 ** 16))


def _build(kind: str, source, pool: list, pick: int):
    """(tinylab value, numpy value) of kind `kind` read from `source` (tensor, array) now."""
    tensor, array = source
    other_t, other_a = pool[pick % len(pool)] if pool else source
    if kind == "copy":
        return tensor.contiguous(), array.copy()
    if kind == "clone":
        return tensor.clone(), array.copy()
    if kind == "reduce":  # a reduce read back over the reduced axis
        return (tensor - other_t).sum(-1, keepdim=True) + tensor * 0, \
            np.broadcast_to((array - other_a).sum(-1, keepdims=True), array.shape).copy()
    if kind == "mix":
        return tensor * 2 - other_t, array * 2 - other_a
    return tensor + 0, array.copy()


def _check_assigns(program):
    shape, actions, realized, seed = program
    rng = np.random.default_rng(seed)
    starts = [_nonzero(rng, shape) for _ in range(3)]
    targets = [Tensor(s.copy()).realize() for s in starts]
    models = [s.copy() for s in starts]
    pool: list = []  # (tinylab value, its numpy value when it was built)
    for kind, which, pick in actions:
        source = (targets[which], models[which])
        if kind == "assign":
            value_t, value_a = pool[pick % len(pool)] if pool else _build("mix", source, pool,
                                                                          pick)
            targets[which].assign(value_t - source[0] * 2 + 1)
            models[which] = value_a - source[1] * 2 + 1
        else:
            pool.append(_build(kind, source, pool, pick))
    values = [pool[i % len(pool)] for i in realized] if pool else []
    Tensor.realize(*targets[:1 + realized[0] % 3], *[t for t, _ in values])
    text = f"{shape} {actions} realize {realized}"
    for t, model in [*zip(targets, models), *pool]:  # sums may grow past 2**24: rounding
        np.testing.assert_allclose(t.numpy(), model, rtol=1e-6, atol=0, err_msg=text)


def test_assigns_realized_together_keep_what_each_value_read(device):
    """A value built before a write keeps what it read, even realized in the same call."""
    given(assign_programs())(_settings(device)(lambda program: _check_assigns(program)))()
