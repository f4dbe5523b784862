"""Symbolic sizes as in tinygrad: `Variable("i", 1, 64).bind(5)`, the expressions of them a shape,
a shrink or a pad may hold, and the helpers that take a shape's maxima or bound values, unbind
arguments into (expression, {name: value}) and rebind them. Re-exported by ir/symbolic.py.
"""
from __future__ import annotations

import numbers
import re

from .symbolic import Lin, Var, const, div, lin, var
from .conditions import evaluate
from .symbolic_render import render


INT_DTYPE_NAMES = ("int", "int32", "int64", "long")  # tinygrad's Variable(..., dtype=) choices
RESERVED_PREFIXES = ("gidx", "lidx", "ridx", "bidx", "data", "val", "alu", "acc", "red", "tl_",
                     "__t")
# whole names generated kernels declare besides those prefixes (a lane loop's counter, a named
# lane mask, a value loaded once, a GPU reduction's staging buffer and its loop, WGSL's
# temporaries), and the variables planning substitutes away (a vector's lane, a tile's axes)
RESERVED_NAMES = re.compile(r"v?lane|tile\d+|(lm|one|temp|part|idx|at)\d+(_\d+)?")


class Variable:
    """A symbolic size, as in tinygrad: `Variable("i", 1, 64)` is an int known to lie in 1..64;
    `.bind(5)` says which value this use has. Shapes, shrink/pad bounds and views may hold one
    (or a linear expression of them, `v + 1`, `2 * v`). Kernels take the variable as an int
    argument, so one compiled kernel serves every bound value. Comparisons answer when the
    range decides them and raise otherwise; equality is structural (expression and values)."""
    __slots__ = ("lin", "values")

    def __new__(cls, name: str, min_value: int, max_value: int, dtype=None):
        if dtype is not None and str(dtype).rsplit(".", 1)[-1] not in INT_DTYPE_NAMES:
            raise TypeError(f"Variable {name!r}: dtype must be an int dtype (kernels take it as "
                            f"an int), got {dtype!r}")
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"Variable: name must be an identifier, got {name!r}")
        if name.startswith(RESERVED_PREFIXES) or RESERVED_NAMES.fullmatch(name):
            raise ValueError(f"Variable: name {name!r} is reserved for generated code (it may not "
                             f"start with {', '.join(RESERVED_PREFIXES)}, nor be 'lane' or lm0, one0, temp0, "
                             f"part0, idx0, at0 and the like)")
        for bound in (min_value, max_value):
            if isinstance(bound, bool) or not isinstance(bound, int):
                raise TypeError(f"Variable {name!r}: min and max must be ints, got "
                                f"{min_value!r}, {max_value!r}")
        if not 0 <= min_value <= max_value:
            raise ValueError(f"Variable {name!r}: needs 0 <= min <= max, got [{min_value}, "
                             f"{max_value}]")
        return cls._of(var(name, min_value, max_value), ())

    @classmethod
    def _of(cls, expr: Lin, values: tuple) -> Variable:
        out = object.__new__(cls)
        out.lin, out.values = expr, values
        return out

    def __reduce__(self):  # pickling / deepcopy: rebuilt from its terms (interned again)
        terms = []
        for atom, coeff in self.lin.terms:
            if not isinstance(atom, Var):
                raise TypeError(f"cannot pickle the symbolic size {self!r} (it divides)")
            terms.append((atom.name, atom.lo, atom.hi, coeff))
        return (_variable_from_terms, (tuple(terms), self.lin.const, self.values))

    # ---- what it is ----
    @property
    def is_plain(self) -> bool:
        """A variable itself (not an expression of one)."""
        atom = self.lin.as_atom()
        return isinstance(atom, Var)

    @property
    def expr(self) -> str:
        """The name of a plain variable (tinygrad's `expr`); the expression's text otherwise."""
        atom = self.lin.as_atom()
        return atom.name if isinstance(atom, Var) else render(self.lin)

    @property
    def min(self) -> int:
        return self.lin.lo

    @property
    def max(self) -> int:
        return self.lin.hi

    @property
    def is_bound(self) -> bool:
        names = {v.name for v in self.lin.vars()}
        return names <= {name for name, _ in self.values}

    @property
    def val(self) -> int:
        """The bound value (of the expression: `(v + 1).val` is v's value + 1)."""
        if not self.is_bound:
            raise ValueError(f"{self!r} is not bound: call .bind(value) first")
        return int(evaluate(self.lin, dict(self.values)))

    def bind(self, value: int) -> Variable:
        """This variable with `value` for this use. Out of range is an error, here."""
        if not self.is_plain:
            raise ValueError(f"bind: only a variable can be bound, not the expression {self!r}")
        if self.values:
            raise ValueError(f"bind: {self!r} is already bound; bind the unbound variable "
                             f"(.unbind()[0]) again")
        if isinstance(value, bool) or not hasattr(value, "__index__"):
            raise TypeError(f"bind: Variable {self.expr!r} takes an int, got {value!r}")
        value = int(value.__index__())
        if not self.min <= value <= self.max:
            raise ValueError(f"bind: Variable {self.expr!r} has range [{self.min}, {self.max}]; "
                             f"{value} is outside it")
        return Variable._of(self.lin, ((self.expr, value),))

    def unbind(self) -> tuple[Variable, int]:
        """(the variable without its value, the value), as tinygrad's `unbind`."""
        if not self.is_plain or not self.values:
            raise ValueError(f"unbind: {self!r} is not a bound variable")
        return Variable._of(self.lin, ()), self.values[0][1]

    def unbound(self) -> Variable:
        """The same expression with no values (what a kernel sees)."""
        return self if not self.values else Variable._of(self.lin, ())

    def vars(self) -> list[Variable]:
        """The plain variables in this expression, unbound, sorted by name."""
        return [Variable._of(lin(v), ()) for v in sorted(self.lin.vars(), key=lambda v: v.name)]

    # ---- arithmetic (linear: sums, and products with ints) ----
    def _combine(self, other, result: Lin) -> Variable | int:
        values = dict(self.values)
        if isinstance(other, Variable):
            for name, value in other.values:
                if values.setdefault(name, value) != value:
                    raise ValueError(f"Variable {name!r} is bound to both {values[name]} and "
                                     f"{value} in one expression")
        if result.is_const:
            return result.const
        names = {v.name for v in result.vars()}
        return Variable._of(result, tuple(sorted((k, v) for k, v in values.items()
                                                 if k in names)))

    @staticmethod
    def _lin(other) -> Lin:
        if isinstance(other, Variable):
            return other.lin
        if isinstance(other, bool) or not isinstance(other, int):
            raise TypeError(f"symbolic sizes combine with ints and Variables, not {other!r}")
        return const(other)

    def __add__(self, other):
        if _foreign(other):
            return NotImplemented  # a tensor: Tensor.__radd__ reads the variable as a value
        return self._combine(other, self.lin + self._lin(other))

    __radd__ = __add__

    def __sub__(self, other):
        if _foreign(other):
            return NotImplemented
        return self._combine(other, self.lin - self._lin(other))

    def __rsub__(self, other):
        if _foreign(other):
            return NotImplemented
        return self._combine(other, self._lin(other) - self.lin)

    def __neg__(self):
        return self._combine(0, -self.lin)

    def __mul__(self, other):
        if _foreign(other):
            return NotImplemented
        right = self._lin(other)
        if not right.is_const:
            raise TypeError(f"the product {self!r} * {other!r} is not linear: a shape may hold one "
                            f"symbolic size per product (merge static axes only)")
        return self._combine(other, self.lin * right.const)

    __rmul__ = __mul__

    def __floordiv__(self, other):
        if isinstance(other, bool) or not isinstance(other, int) or other <= 0:
            raise TypeError(f"{self!r} // {other!r}: symbolic sizes divide by positive ints only")
        return self._combine(other, div(self.lin, other))

    # ---- comparisons: decided by the range, or an error ----
    def _difference(self, other) -> Lin:
        return self.lin - self._lin(other)

    def _decide(self, op: str, other, holds: bool | None) -> bool:
        if holds is None:
            raise TypeError(f"cannot tell whether {self!r} {op} {other!r} for every value in the "
                            f"range: a symbolic size is compared only where its range decides")
        return holds

    def __lt__(self, other):
        d = self._difference(other)
        return self._decide("<", other, True if d.hi < 0 else False if d.lo >= 0 else None)

    def __le__(self, other):
        d = self._difference(other)
        return self._decide("<=", other, True if d.hi <= 0 else False if d.lo > 0 else None)

    def __gt__(self, other):
        d = self._difference(other)
        return self._decide(">", other, True if d.lo > 0 else False if d.hi <= 0 else None)

    def __ge__(self, other):
        d = self._difference(other)
        return self._decide(">=", other, True if d.lo >= 0 else False if d.hi < 0 else None)

    def __eq__(self, other):
        if isinstance(other, Variable):
            return self.lin is other.lin and self.values == other.values
        return False  # a symbolic size is never one fixed int

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash((Variable, self.lin, self.values))

    def __index__(self):
        raise TypeError(f"{self!r} is a symbolic size, not a fixed int: use .val for the bound "
                        f"value, or keep it symbolic")

    def __bool__(self):
        return True  # a size, not a truth value (never used as one)

    def __repr__(self):
        text = self.expr
        bound = f"={self.val}" if self.values and self.is_bound else ""
        return f"<{text}[{self.min}-{self.max}]{bound}>"

    def __str__(self):
        return repr(self)


def _foreign(other) -> bool:
    """An operand that is neither a number nor a Variable (a Tensor): its own reflected operator
    decides."""
    return not isinstance(other, (numbers.Number, Variable))


def _variable_from_terms(terms: tuple, constant: int, values: tuple) -> Variable:
    expr = Lin(tuple((Var(name, lo, hi), coeff) for name, lo, hi, coeff in terms), constant)
    return Variable._of(expr, values)


def is_symbolic(value) -> bool:
    return isinstance(value, Variable)


def any_symbolic(values) -> bool:
    return any(isinstance(v, Variable) for v in values)


def _holds(smaller, larger) -> bool:
    """smaller <= larger for every value in the range, or, where the range leaves it open and
    every variable is bound, for the values bound in this use."""
    try:
        return smaller <= larger
    except TypeError:
        pass
    try:
        return bound_value(smaller) <= bound_value(larger)
    except ValueError:  # an unbound variable: nothing to decide it
        return False


def fits_bounds(bounds, shape) -> bool:
    """0 <= begin <= end <= size on every axis of a shrink, as tinygrad checks it: for every
    value in a symbolic bound's range, or for the bound values where the range does not decide
    it (`x[:, v:v+2]` of a static dim, `(0, 2)` of a dim bound to 2). Buffers are laid out at
    their maximum size; a shrink checked at its bound values reads inside them."""
    return all(_holds(0, b) and _holds(b, e) and _holds(e, s) for (b, e), s in zip(bounds, shape))


def max_of(size) -> int:
    """The largest value a size can take (an int is its own)."""
    return size.max if isinstance(size, Variable) else size


def max_shape(shape) -> tuple[int, ...]:
    return tuple(max_of(s) for s in shape)


def bound_value(size) -> int:
    """The value a size has in this use (a bound Variable's value, or the int)."""
    return size.val if isinstance(size, Variable) else size


def bound_shape(shape) -> tuple[int, ...]:
    return tuple(bound_value(s) for s in shape)


def unbind_args(value, var_vals: dict):
    """`value` (an int, Variable, or nested tuple of them) with every Variable unbound; the
    values go into var_vals {name: value} (two values for one name is an error)."""
    if isinstance(value, Variable):
        for name, bound in value.values:
            if var_vals.setdefault(name, bound) != bound:
                raise ValueError(f"Variable {name!r} is bound to both {var_vals[name]} and "
                                 f"{bound} in one kernel")
        return value.unbound()
    if isinstance(value, tuple):
        return tuple(unbind_args(v, var_vals) for v in value)
    return value


def rebind(value, var_vals: dict):
    """`value` (an int, Variable or nested tuple) with its Variables bound to var_vals' values
    (names it lacks keep their old values)."""
    if isinstance(value, Variable):
        names = {v.name for v in value.lin.vars()}
        values = {**dict(value.values), **{k: v for k, v in var_vals.items() if k in names}}
        return Variable._of(value.lin, tuple(sorted(values.items())))
    if isinstance(value, tuple):
        return tuple(rebind(v, var_vals) for v in value)
    return value


def as_lin(size) -> Lin:
    """An index expression for a size (a Variable's expression, or an int constant)."""
    return size.lin if isinstance(size, Variable) else lin(size)
