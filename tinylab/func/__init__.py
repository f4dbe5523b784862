"""tinylab.func: composable function transforms with torch.func's names (grad, grad_and_value,
vjp, jvp, vmap, jacrev, jacfwd, hessian), each a rewrite of the lazy graph through one rule table
(rules.py) that holds every primitive's forward, reverse and batching rule.
"""
from .jacobians import hessian, jacfwd, jacrev
from .rules import TABLE, coverage
from .transforms import grad, grad_and_value, jvp, vjp
from .vmap import vmap

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "vmap", "jacrev", "jacfwd", "hessian",
           "TABLE", "coverage"]
