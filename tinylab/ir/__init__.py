"""The IR: primitive ops, hash-consed nodes, views and the index algebra (see each module).
symbolic is imported first: its conditions, rendering and Variable modules import it."""
from . import symbolic  # noqa: F401
