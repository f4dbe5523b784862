"""Random chains of movement ops (pad, shrink, stepped and negative slices, flip, permute,
reshape, expand, stack, cat, integer indexing) on small arange inputs, drawn from a seeded
`random.Random`, each with its numpy twin. Used by test_movement_chains.py and test_fuzz.py:
a chain built lazily, one realized after every step, and numpy must all agree."""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

import numpy as np

from random_graphs import MOVEMENT, _movement_numpy, _movement_tensor
from tinylab import Tensor

MAX_ELEMENTS = 512
OFFSET = 1000.0  # stack / cat pieces are the chain's value plus k * OFFSET: every piece differs


@dataclass(frozen=True)
class Move:
    """One step: `name` applied with `param` (a numpy-style index for "index" and "slice")."""
    name: str
    param: object

    def __str__(self) -> str:
        if self.name in ("index", "slice"):
            return f"[{_index_text(self.param)}]"
        return f".{self.name}({self.param!r})"


def _index_text(index: tuple) -> str:
    parts = []
    for item in index:
        if isinstance(item, slice):
            text = ":".join("" if v is None else str(v) for v in (item.start, item.stop))
            parts.append(text + ("" if item.step is None else f":{item.step}"))
        else:
            parts.append(str(item))
    return ", ".join(parts)


@dataclass
class Chain:
    shape: tuple
    moves: list[Move] = field(default_factory=list)

    def source(self) -> np.ndarray:
        """arange from 1, so a padded 0 never looks like a read element."""
        return np.arange(1, math.prod(self.shape) + 1, dtype=np.float32).reshape(self.shape)

    def numpy(self) -> np.ndarray:
        value = self.source()
        for move in self.moves:
            value = np.array(apply_numpy(value, move))
        return value

    def tensor(self, realize_each: bool = False, device: str | None = None) -> Tensor:
        value = Tensor(self.source(), device=device)
        for move in self.moves:
            value = apply_tensor(value, move)
            if realize_each:
                value = value.realize()
        return value

    def __str__(self) -> str:
        return f"arange{self.shape}" + "".join(str(m) for m in self.moves)


def _pieces(count: int) -> list[float]:
    return [k * OFFSET for k in range(count)]


def apply_numpy(x: np.ndarray, move: Move) -> np.ndarray:
    name, param = move.name, move.param
    if name in MOVEMENT:
        return _movement_numpy(name, x, param)
    if name in ("slice", "index"):
        return x[param]
    if name == "stack":
        count, dim = param
        return np.stack([x + k for k in _pieces(count)], axis=dim)
    if name == "cat":
        flip, dim = param  # x, then x (flipped along dim when `flip`) plus OFFSET
        other = np.flip(x, dim) if flip else x
        return np.concatenate([x, other + OFFSET], axis=dim)
    raise AssertionError(name)


def apply_tensor(x: Tensor, move: Move) -> Tensor:
    name, param = move.name, move.param
    if name in MOVEMENT:
        return _movement_tensor(name, x, param)
    if name in ("slice", "index"):
        return x[param]
    if name == "stack":
        count, dim = param
        return Tensor.stack(*[x + k for k in _pieces(count)], dim=dim)
    if name == "cat":
        flip, dim = param
        other = x.flip(dim) if flip else x
        return x.cat(other + OFFSET, dim=dim)
    raise AssertionError(name)


# ---- drawing ----------------------------------------------------------------------------------
def _pad(rng: random.Random, shape: tuple):
    return tuple((rng.randint(0, 2), rng.randint(0, 2)) for _ in shape)


def _shrink(rng: random.Random, shape: tuple):
    bounds = []
    for s in shape:
        begin = rng.randint(0, s)
        bounds.append((begin, rng.randint(begin, s)))
    return tuple(bounds)


def _slice(rng: random.Random, shape: tuple):
    out = []
    for s in shape:
        step = rng.choice([1, 1, 2, 3, -1, -1, -2, -3])
        start = rng.choice([None, rng.randint(-s - 1, s + 1)])
        stop = rng.choice([None, rng.randint(-s - 1, s + 1)])
        out.append(slice(start, stop, step))
    return tuple(out[:rng.randint(1, len(shape))])


def _flip(rng: random.Random, shape: tuple):
    axes = tuple(a for a in range(len(shape)) if rng.random() < 0.5)
    return axes or (rng.randrange(len(shape)),)


def _permute(rng: random.Random, shape: tuple):
    order = list(range(len(shape)))
    rng.shuffle(order)
    return tuple(order)


def _reshape(rng: random.Random, shape: tuple):
    total = math.prod(shape)
    factors = _factorizations(total, 4) if total else [(0,), (total, 1)]
    new = list(rng.choice(factors or [()]))
    for _ in range(rng.randint(0, 2)):
        new.insert(rng.randint(0, len(new)), 1)
    return tuple(new)


def _factorizations(total: int, most: int) -> list[tuple]:
    out: list[tuple] = []

    def walk(rest: int, prefix: tuple) -> None:
        if rest == 1:
            out.append(prefix)
            return
        if len(prefix) < most:
            for d in range(2, rest + 1):
                if rest % d == 0:
                    walk(rest // d, prefix + (d,))
    walk(total, ())
    return out


def _expand(rng: random.Random, shape: tuple):
    target = tuple(rng.choice([1, 2, 3]) if s == 1 else s for s in shape)
    return None if target == shape else target


def _stack(rng: random.Random, shape: tuple):
    return (rng.randint(2, 3), rng.randint(-len(shape) - 1, len(shape)))


def _cat(rng: random.Random, shape: tuple):
    return (rng.random() < 0.5, rng.randrange(len(shape)))


DRAW = {"pad": _pad, "shrink": _shrink, "slice": _slice, "flip": _flip, "permute": _permute,
        "reshape": _reshape, "expand": _expand, "stack": _stack, "cat": _cat}
NEEDS_AXES = {"pad", "shrink", "slice", "flip", "permute", "cat"}


def draw_move(rng: random.Random, shape: tuple) -> Move:
    while True:
        name = rng.choice(list(DRAW))
        if name in NEEDS_AXES and not shape:
            continue
        if name == "expand" and 1 not in shape:
            shape_with_one = shape + (1,)  # reshape in a 1 first, next draw can expand it
            return Move("reshape", shape_with_one)
        param = DRAW[name](rng, shape)
        if param is None:
            continue
        after = apply_numpy(np.zeros(shape, np.float32), Move(name, param)).shape
        if math.prod(after) <= MAX_ELEMENTS:
            return Move(name, param)


def draw_index(rng: random.Random, shape: tuple) -> Move | None:
    """An integer index on some leading axes (negative ones too), slices mixed in."""
    if not shape or 0 in shape:
        return None
    count = rng.randint(1, len(shape))
    index = []
    for s in shape[:count]:
        if rng.random() < 0.75:
            index.append(rng.randint(-s, s - 1))
        else:
            index.append(slice(None, None, rng.choice([1, -1, 2])))
    if not any(isinstance(i, int) for i in index):
        index[0] = rng.randint(-shape[0], shape[0] - 1)
    return Move("index", tuple(index))


def draw_chain(rng: random.Random, most: int = 4, end_with_index: bool = True) -> Chain:
    """One to `most` movement ops on an arange of 1-3 small dims, then (maybe) an index."""
    shape = tuple(rng.randint(1, 4) for _ in range(rng.randint(1, 3)))
    chain = Chain(shape)
    current = shape
    for _ in range(rng.randint(1, most)):
        move = draw_move(rng, current)
        chain.moves.append(move)
        current = apply_numpy(np.zeros(current, np.float32), move).shape
    if end_with_index:
        move = draw_index(rng, current)
        if move is not None:
            chain.moves.append(move)
    return chain
