"""Random tensor programs for the fuzzers. `recipes()` is a hypothesis strategy for a `Recipe`: a
numbered list of steps (leaves, elementwise, where, reduce, movement, casts, and from
random_indexing.py integer indexing and slices, stack, cat, eye / arange / tril / triu, gather and
scatter) simulated in plain numpy while it is drawn, so every step fits its input's shape and
values; `recipe.build()` plays it onto fresh Tensors and `recipe.expected` is numpy's answer.
Used by test_fuzz.py."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

from tinylab import Tensor

import random_indexing as indexing

MAX_ELEMENTS = 2048         # keeps the PYTHON backend and the oracle quick
EXACT_LIMIT = 2 ** 24       # integer-valued float32 below this is exact in any order
SQUASH_ABOVE = 4096         # larger values are clipped back (exactly) before the next step
MARGIN = 1e-3               # comparisons / truncations of inexact values need this much room
DIMS = [1, 1, 2, 3, 4, 5, 7, 8, 0]


# ---- the two interpretations of every step: numpy (the reference) and Tensor -------------------
def _np_floordiv(a, b):
    return a // np.where(b < 0, b - 1, b + 1)


def _t_floordiv(a, b):
    return a // (b < 0).where(b - 1, b + 1)


def _np_mod(a, b):
    return a % np.where(b < 0, b - 1, b + 1)


def _t_mod(a, b):
    return a % (b < 0).where(b - 1, b + 1)


UNARY = {  # name: (numpy, Tensor, keeps exact integer values)
    "neg": (lambda x: -x, lambda x: -x, True),
    "abs": (np.abs, lambda x: x.abs(), True),
    "relu": (lambda x: np.maximum(x, x.dtype.type(0)), lambda x: x.relu(), True),
    "sin": (np.sin, lambda x: x.sin(), False),
    "sqrt_abs": (lambda x: np.sqrt(np.abs(x)), lambda x: x.abs().sqrt(), False),
    "exp2": (np.exp2, lambda x: x.exp2(), False),
    "reciprocal": (lambda x: np.float32(1) / (np.abs(x) + np.float32(1)),
                   lambda x: (x.abs() + 1).reciprocal(), False),
    "trunc": (np.trunc, lambda x: x.trunc(), True),
    "invert": (np.invert, lambda x: ~x, True),        # integers only
    "square": (lambda x: x * x, lambda x: x * x, True),
}
FLOAT_UNARY = ["neg", "abs", "relu", "sin", "sqrt_abs", "exp2", "reciprocal", "trunc", "square"]
INT_UNARY = ["neg", "abs", "relu", "invert", "square"]

BINARY = {  # name: (numpy, Tensor, keeps exact integer values)
    "add": (np.add, lambda a, b: a + b, True),
    "sub": (np.subtract, lambda a, b: a - b, True),
    "mul": (np.multiply, lambda a, b: a * b, True),
    "maximum": (np.maximum, lambda a, b: a.maximum(b), True),
    "minimum": (np.minimum, lambda a, b: a.minimum(b), True),
    "div": (lambda a, b: a / (np.abs(b) + np.float32(1)), lambda a, b: a / (b.abs() + 1), False),
    "and": (np.bitwise_and, lambda a, b: a & b, True),
    "or": (np.bitwise_or, lambda a, b: a | b, True),
    "xor": (np.bitwise_xor, lambda a, b: a ^ b, True),
    "floordiv": (_np_floordiv, _t_floordiv, True),
    "mod": (_np_mod, _t_mod, True),
}
FLOAT_BINARY = ["add", "sub", "mul", "maximum", "minimum", "div"]
INT_BINARY = ["add", "sub", "mul", "maximum", "minimum", "and", "or", "xor", "floordiv", "mod"]

SCALAR = {  # name: (numpy, Tensor) with a Python scalar `s` (never 0 for div/floordiv/mod)
    "add": (lambda a, s: a + s, lambda a, s: a + s),
    "sub": (lambda a, s: a - s, lambda a, s: a - s),
    "rsub": (lambda a, s: s - a, lambda a, s: s - a),
    "mul": (lambda a, s: a * s, lambda a, s: a * s),
    "maximum": (np.maximum, lambda a, s: a.maximum(s)),
    "minimum": (np.minimum, lambda a, s: a.minimum(s)),
    "div": (lambda a, s: a / s, lambda a, s: a / s),
    "and": (lambda a, s: a & s, lambda a, s: a & s),
    "or": (lambda a, s: a | s, lambda a, s: a | s),
    "xor": (lambda a, s: a ^ s, lambda a, s: a ^ s),
    "floordiv": (lambda a, s: a // s, lambda a, s: a // s),
    "mod": (lambda a, s: a % s, lambda a, s: a % s),
}
SCALAR_EXACT = {"add", "sub", "rsub", "mul", "maximum", "minimum", "and", "or", "xor",
                "floordiv", "mod"}


@dataclass(frozen=True)
class Step:
    """`v{index} = op(inputs..., param)`."""
    op: str
    inputs: tuple = ()
    param: object = None

    def describe(self, index: int) -> str:
        args = ", ".join(f"v{i}" for i in self.inputs)
        if self.op == "leaf":
            array = self.param
            return f"v{index} = leaf({array.dtype}{list(array.shape)})"
        extra = "" if self.param is None else (", " if args else "") + repr(self.param)
        return f"v{index} = {self.op}({args}{extra})"


def _movement_numpy(op: str, x: np.ndarray, param) -> np.ndarray:
    if op == "reshape":
        return x.reshape(param)
    if op == "permute":
        return x.transpose(param)
    if op == "expand":
        return np.broadcast_to(x, param)
    if op == "pad":
        return np.pad(x, param)
    if op == "shrink":
        return x[tuple(slice(b, e) for b, e in param)]
    if op == "flip":
        return np.flip(x, param)
    raise AssertionError(op)


def _movement_tensor(op: str, x: Tensor, param) -> Tensor:
    if op == "reshape":
        return x.reshape(param)
    if op == "permute":
        return x.permute(param)
    if op == "expand":
        return x.expand(param)
    if op == "pad":
        return x.pad(param)
    if op == "shrink":
        return x.shrink(param)
    if op == "flip":
        return x.flip(param)
    raise AssertionError(op)


MOVEMENT = ("reshape", "permute", "expand", "pad", "shrink", "flip")
CASTS = {  # name: (numpy, Tensor)
    "to_int32": (lambda x: x.astype(np.int32), lambda x: x.cast("int32")),
    "to_float32": (lambda x: x.astype(np.float32), lambda x: x.cast("float32")),
    "half_round": (lambda x: x.astype(np.float16).astype(np.float32),
                   lambda x: x.half().float()),
    "nonzero": (lambda x: (x != 0).astype(x.dtype), lambda x: (x != 0).cast(x.dtype)),
    "to_int8_wrap": (lambda x: (x & 0xff).astype(np.uint8).astype(np.int8).astype(np.int32),
                     lambda x: (x & 0xff).cast("uint8").cast("int8").cast("int32")),
}


def play_numpy(step: Step, values: list) -> np.ndarray:
    return np.asarray(_play_numpy(step, values))


def _play_numpy(step: Step, values: list) -> np.ndarray:
    args = [values[i] for i in step.inputs]
    op = step.op
    if op == "leaf":
        return step.param
    if op in UNARY:
        return UNARY[op][0](args[0])
    if op in BINARY:
        return BINARY[op][0](args[0], args[1])
    if op.startswith("scalar_"):
        return SCALAR[op[7:]][0](args[0], args[0].dtype.type(step.param))
    if op == "where":
        return np.where(args[0] < args[1], args[2], args[3])
    if op in ("sum", "max"):
        axes, keepdim = step.param
        reduce = np.sum if op == "sum" else np.max
        return reduce(args[0], axis=axes, keepdims=keepdim).astype(args[0].dtype)
    if op in MOVEMENT:
        return np.array(_movement_numpy(op, args[0], step.param))
    if op in CASTS:
        return CASTS[op][0](args[0])
    if op == "clip":
        return np.clip(args[0], -step.param, step.param)
    if op == "contiguous":
        return args[0]
    if op in indexing.INDEXING:
        return np.array(indexing.INDEXING[op][0](args, step.param))
    raise AssertionError(op)


def play_tensor(step: Step, values: list) -> Tensor:
    args = [values[i] for i in step.inputs]
    op = step.op
    if op == "leaf":
        return Tensor(step.param.copy())
    if op in UNARY:
        return UNARY[op][1](args[0])
    if op in BINARY:
        return BINARY[op][1](args[0], args[1])
    if op.startswith("scalar_"):
        return SCALAR[op[7:]][1](args[0], step.param)
    if op == "where":
        return (args[0] < args[1]).where(args[2], args[3])
    if op == "sum":
        return args[0].sum(axis=step.param[0], keepdim=step.param[1])
    if op == "max":
        return args[0].max(axis=step.param[0], keepdim=step.param[1])
    if op in MOVEMENT:
        return _movement_tensor(op, args[0], step.param)
    if op in CASTS:
        return CASTS[op][1](args[0])
    if op == "clip":
        return args[0].clip(-step.param, step.param)
    if op == "contiguous":
        return args[0].contiguous()
    if op in indexing.INDEXING:
        return indexing.INDEXING[op][1](args, step.param)
    raise AssertionError(op)


@dataclass
class Recipe:
    steps: list[Step] = field(default_factory=list)
    values: list[np.ndarray] = field(default_factory=list)   # numpy value of every step
    exact: list[bool] = field(default_factory=list)          # integer-valued, order-independent
    loose: bool = False                                      # went through float16
    also: int | None = None   # an intermediate step realized together with the result

    @property
    def expected(self) -> np.ndarray:
        return self.values[-1]

    @property
    def scale(self) -> float:
        """The largest magnitude any step reached (absolute tolerances scale with it)."""
        return max([1.0] + [_magnitude(v) for v in self.values])

    def tolerance(self) -> float:
        return 2e-3 if self.loose else 1e-4

    def build(self) -> Tensor:
        return self.build_all()[-1]

    def build_all(self) -> list[Tensor]:
        """A fresh Tensor for every step (fresh leaf buffers: nothing is reused from before)."""
        tensors: list[Tensor] = []
        for step in self.steps:
            tensors.append(play_tensor(step, tensors))
        return tensors

    def add(self, step: Step, exact_op: bool = True) -> int:
        value = play_numpy(step, self.values)
        exact = exact_op and all(self.exact[i] for i in step.inputs) and _is_exact(value)
        if step.op == "leaf":
            exact = _is_exact(value)
        self.steps.append(step)
        self.values.append(value)
        self.exact.append(exact)
        return len(self.steps) - 1

    def __str__(self) -> str:
        lines = [s.describe(i) for i, s in enumerate(self.steps)]
        if self.also is not None:
            lines.append(f"realize(v{len(self.steps) - 1}, v{self.also})")
        return "\n".join(lines)


def _magnitude(value: np.ndarray) -> float:
    if value.size == 0 or value.dtype == np.bool_:
        return 0.0
    return float(np.max(np.abs(value.astype(np.float64))))


def _is_exact(value: np.ndarray) -> bool:
    if value.dtype.kind in "iub":
        return True
    finite = np.isfinite(value).all()
    return bool(finite and (value == np.trunc(value)).all() and _magnitude(value) < EXACT_LIMIT)


def _far_from_integers(value: np.ndarray) -> bool:
    if value.size == 0:
        return True
    v = value.astype(np.float64)
    distance = np.abs(v - np.round(v))
    return bool(np.isfinite(v).all() and (distance > MARGIN * np.maximum(1, np.abs(v))).all())


def _apart(a: np.ndarray, b: np.ndarray) -> bool:
    a64, b64 = np.broadcast_arrays(a.astype(np.float64), b.astype(np.float64))
    room = MARGIN * np.maximum(1, np.maximum(np.abs(a64), np.abs(b64)))
    return bool((np.abs(a64 - b64) > room).all())


# ---- drawing ------------------------------------------------------------------------------------
@st.composite
def shapes(draw, max_dims: int = 4):
    ndim = draw(st.integers(1, max_dims))
    shape = tuple(draw(st.sampled_from(DIMS)) for _ in range(ndim))
    while math.prod(shape) > MAX_ELEMENTS // 4:
        shape = shape[1:]
    return shape


def _leaf_array(draw, shape: tuple, dtype: str) -> np.ndarray:
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    if dtype == "int32":
        return rng.integers(-9, 10, shape).astype(np.int32)
    if draw(st.booleans()):  # integer-valued floats: every op on them is exact
        return rng.integers(-4, 5, shape).astype(np.float32)
    return rng.standard_normal(shape).astype(np.float32)


def _broadcastable_shape(draw, shape: tuple) -> tuple:
    """A shape that broadcasts to `shape` (some dims 1, some leading dims dropped)."""
    drop = draw(st.integers(0, len(shape)))
    kept = shape[drop:]
    return tuple(1 if draw(st.booleans()) else s for s in kept)


def _new_leaf(draw, recipe: Recipe, shape: tuple, dtype: str) -> int:
    return recipe.add(Step("leaf", (), _leaf_array(draw, shape, dtype)))


def _other_operand(draw, recipe: Recipe, current: int) -> int:
    """Something to combine with `current`: a new (broadcastable) leaf, an earlier value of the
    same dtype whose shape broadcasts, or `current` flipped (read at other indices)."""
    value = recipe.values[current]
    dtype = str(value.dtype)
    choice = draw(st.sampled_from(["leaf", "history", "flip", "self"]))
    if choice == "history":
        fits = [i for i, v in enumerate(recipe.values[:current])
                if str(v.dtype) == dtype and _broadcast_ok(v.shape, value.shape)]
        if fits:
            return draw(st.sampled_from(fits))
    if choice == "flip" and value.ndim:
        axis = draw(st.integers(0, value.ndim - 1))
        return recipe.add(Step("flip", (current,), (axis,)))
    if choice == "self":
        return current
    return _new_leaf(draw, recipe, _broadcastable_shape(draw, value.shape), dtype)


def _broadcast_ok(a: tuple, b: tuple) -> bool:
    try:
        out = np.broadcast_shapes(a, b)
    except ValueError:
        return False
    return math.prod(out) <= MAX_ELEMENTS


def _unary(draw, recipe: Recipe, current: int) -> int:
    value = recipe.values[current]
    names = INT_UNARY if value.dtype.kind == "i" else FLOAT_UNARY
    name = draw(st.sampled_from(names))
    if name == "exp2" and _magnitude(value) > 16:
        name = "sin"
    if name == "trunc" and not (recipe.exact[current] or _far_from_integers(value)):
        name = "abs"
    if name == "square" and _magnitude(value) > 2 ** 11:
        name = "neg"
    return recipe.add(Step(name, (current,)), UNARY[name][2])


def _binary(draw, recipe: Recipe, current: int) -> int:
    value = recipe.values[current]
    names = INT_BINARY if value.dtype.kind == "i" else FLOAT_BINARY
    name = draw(st.sampled_from(names))
    if draw(st.integers(0, 3)) == 0:  # with a Python scalar
        return _scalar(draw, recipe, current, name)
    other = _other_operand(draw, recipe, current)
    if name == "mul" and _magnitude(value) * _magnitude(recipe.values[other]) > 2 ** 22:
        name = "maximum"
    operands = (current, other) if draw(st.booleans()) else (other, current)
    return recipe.add(Step(name, operands), BINARY[name][2])


def _scalar(draw, recipe: Recipe, current: int, name: str) -> int:
    value = recipe.values[current]
    scalar = draw(st.integers(-5, 5)) if value.dtype.kind == "i" else \
        draw(st.sampled_from([-2.5, -1.0, 0.0, 0.5, 3.0]))
    if name in ("div", "floordiv", "mod") and scalar == 0:
        scalar = 3
    if name == "mul" and _magnitude(value) > 2 ** 11:
        name = "add"
    if name == "sub" and draw(st.booleans()):
        name = "rsub"
    return recipe.add(Step("scalar_" + name, (current,), scalar), name in SCALAR_EXACT)


def _where(draw, recipe: Recipe, current: int) -> int:
    other = _other_operand(draw, recipe, current)
    a, b = recipe.values[current], recipe.values[other]
    exact = recipe.exact[current] and recipe.exact[other]
    if not exact and not _apart(a, b):
        return _unary(draw, recipe, current)
    third = _other_operand(draw, recipe, current)
    if not _broadcast_ok(np.broadcast_shapes(a.shape, b.shape), recipe.values[third].shape):
        third = current
    picks = (current, third) if draw(st.booleans()) else (third, current)
    return recipe.add(Step("where", (current, other) + picks))


def _reduce(draw, recipe: Recipe, current: int) -> int:
    value = recipe.values[current]
    if value.ndim == 0:
        return _unary(draw, recipe, current)
    axes = tuple(sorted(draw(st.sets(st.integers(0, value.ndim - 1), min_size=1))))
    op = draw(st.sampled_from(["sum", "max"]))
    if op == "max" and any(value.shape[a] == 0 for a in axes):
        op = "sum"  # the maximum of nothing is an error (as in PyTorch)
    # a sum is order-independent only if no partial sum can leave the exact range
    exact = op == "max" or _magnitude(value) * max(1, value.size) < EXACT_LIMIT
    return recipe.add(Step(op, (current,), (axes, draw(st.booleans()))), exact)


def _movement(draw, recipe: Recipe, current: int) -> int:
    shape = recipe.values[current].shape
    op = draw(st.sampled_from(MOVEMENT))
    param = MOVEMENT_PARAMS[op](draw, shape)
    if param is None:
        return recipe.add(Step("contiguous", (current,)))
    return recipe.add(Step(op, (current,), param))


def _reshape_param(draw, shape: tuple):
    kind = draw(st.sampled_from(["flatten", "merge", "split", "insert", "remove"]))
    if kind == "flatten" or len(shape) == 0:
        return (math.prod(shape),)
    i = draw(st.integers(0, len(shape) - 1))
    if kind == "merge" and i + 1 < len(shape):
        return shape[:i] + (shape[i] * shape[i + 1],) + shape[i + 2:]
    if kind == "split":
        factors = [f for f in range(2, shape[i]) if shape[i] % f == 0]
        if factors:
            f = draw(st.sampled_from(factors))
            return shape[:i] + (f, shape[i] // f) + shape[i + 1:]
    if kind == "remove" and 1 in shape:
        j = shape.index(1)
        return shape[:j] + shape[j + 1:]
    if len(shape) >= 5:
        return (math.prod(shape),)
    return shape[:i] + (1,) + shape[i:]


def _permute_param(draw, shape: tuple):
    if len(shape) < 2:
        return None
    return tuple(draw(st.permutations(range(len(shape)))))


def _expand_param(draw, shape: tuple):
    ones = [i for i, s in enumerate(shape) if s == 1]
    target = list(shape)
    for i in ones:
        target[i] = draw(st.sampled_from([1, 2, 3, 4]))
    if (not ones or draw(st.booleans())) and len(shape) < 5:
        target = [draw(st.sampled_from([2, 3]))] + target
    if math.prod(target) > MAX_ELEMENTS:
        return None
    return tuple(target)


def _pad_param(draw, shape: tuple):
    if not shape:
        return None
    pads = tuple((draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in shape)
    padded = [s + lo + hi for s, (lo, hi) in zip(shape, pads)]
    return None if math.prod(padded) > MAX_ELEMENTS else pads


def _shrink_param(draw, shape: tuple):
    if not shape:
        return None
    bounds = []
    for s in shape:
        begin = draw(st.integers(0, s))
        bounds.append((begin, draw(st.integers(begin, s))))
    return tuple(bounds)


def _flip_param(draw, shape: tuple):
    if not shape:
        return None
    return tuple(sorted(draw(st.sets(st.integers(0, len(shape) - 1), min_size=1))))


MOVEMENT_PARAMS = {"reshape": _reshape_param, "permute": _permute_param, "expand": _expand_param,
                   "pad": _pad_param, "shrink": _shrink_param, "flip": _flip_param}


def _cast(draw, recipe: Recipe, current: int) -> int:
    value = recipe.values[current]
    if value.dtype.kind == "i":
        name = draw(st.sampled_from(["to_float32", "nonzero", "to_int8_wrap"]))
        return recipe.add(Step(name, (current,)))
    exact = recipe.exact[current]
    name = draw(st.sampled_from(["to_int32", "half_round", "nonzero"]))
    if name == "to_int32" and _magnitude(value) < 2 ** 30 and \
            (exact or _far_from_integers(value)):
        return recipe.add(Step(name, (current,)))
    if name == "nonzero" and (exact or _apart(value, np.zeros((), value.dtype))):
        return recipe.add(Step(name, (current,)))
    if _magnitude(value) < 1000:
        recipe.loose = recipe.loose or not exact
        return recipe.add(Step("half_round", (current,)))
    return _unary(draw, recipe, current)


def _same_shape_operand(draw, recipe: Recipe, current: int) -> int:
    """An earlier value of current's shape and dtype, current itself, or a new leaf."""
    value = recipe.values[current]
    fits = [i for i, v in enumerate(recipe.values) if v.shape == value.shape
            and v.dtype == value.dtype]
    if draw(st.booleans()):
        return draw(st.sampled_from(fits))
    return _new_leaf(draw, recipe, value.shape, str(value.dtype))


def _indexing(draw, recipe: Recipe, current: int) -> int:
    """One step of random_indexing.py that fits current's shape (else a unary step)."""
    value = recipe.values[current]
    shape, name = value.shape, draw(st.sampled_from(INDEXING_STEPS))
    inputs, param = (current,), None
    if name in ("index", "slice"):
        param = indexing.index_param(draw, shape, slices_only=name == "slice")
        name = "index"
    elif name == "stack":
        inputs = (current, _same_shape_operand(draw, recipe, current))
        param = indexing.stack_dim(draw, shape, len(inputs))
    elif name == "cat" and shape:
        dim = draw(st.integers(-len(shape), len(shape) - 1))
        other = list(shape)
        other[dim] = draw(st.integers(0, 3))
        if math.prod(shape) + math.prod(other) <= MAX_ELEMENTS:
            inputs = (current, _new_leaf(draw, recipe, tuple(other), str(value.dtype)))
            param = dim
    elif name == "eye_add":
        param = indexing.eye_scale(draw, shape)
    elif name == "arange_add":
        param = indexing.arange_param(draw, shape, value.dtype)
    elif name in ("tril", "triu"):
        param = indexing.triangle_param(draw, shape)
    elif name == "gather":
        param = indexing.gather_param(draw, shape, draw(st.integers(0, 2 ** 32 - 1)))
    elif name == "scatter":
        param = indexing.scatter_param(draw, shape, draw(st.integers(0, 2 ** 32 - 1)))
        if param is not None:
            src_shape = tuple(n + draw(st.integers(0, 1)) for n in param[1].shape)
            inputs = (current, _new_leaf(draw, recipe, src_shape, str(value.dtype)))
    if param is None:
        return _unary(draw, recipe, current)
    return recipe.add(Step(name, inputs, param))


INDEXING_STEPS = ["index", "index", "slice", "stack", "cat", "eye_add", "arange_add", "tril",
                  "triu", "gather", "scatter"]
STEP_KINDS = {"unary": _unary, "binary": _binary, "where": _where, "reduce": _reduce,
              "movement": _movement, "cast": _cast, "indexing": _indexing}
STEP_WEIGHTS = ["unary", "binary", "binary", "where", "reduce", "reduce", "movement",
                "movement", "movement", "cast", "contiguous", "indexing", "indexing"]


@st.composite
def recipes(draw, max_steps: int = 8) -> Recipe:
    recipe = Recipe()
    dtype = draw(st.sampled_from(["float32", "float32", "int32"]))
    current = _new_leaf(draw, recipe, draw(shapes()), dtype)
    for _ in range(draw(st.integers(1, max_steps))):
        kind = draw(st.sampled_from(STEP_WEIGHTS))
        if kind == "contiguous":
            current = recipe.add(Step("contiguous", (current,)))
        else:
            current = STEP_KINDS[kind](draw, recipe, current)
        if _magnitude(recipe.values[current]) > SQUASH_ABOVE:
            current = recipe.add(Step("clip", (current,), 64))
    inner = [i for i, s in enumerate(recipe.steps[:-1]) if s.op != "leaf"]
    if inner and draw(st.booleans()):
        recipe.also = draw(st.sampled_from(inner))
    return recipe
