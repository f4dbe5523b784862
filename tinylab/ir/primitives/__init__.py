"""The rows of the primitive op vocabulary (ir/ops.py Op), one module per family: unary math
(math_rows.py), binary and ternary arithmetic (arithmetic_rows.py), reduce, movement, buffer
and kernel ops (structure_rows.py). Importing this package registers them, in this order.
"""
from . import math_rows, arithmetic_rows, structure_rows  # noqa: F401
