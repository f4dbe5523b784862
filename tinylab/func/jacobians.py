"""jacrev, jacfwd and hessian, built from the other transforms as torch.func builds them: jacrev
maps vjp over the rows of an identity, jacfwd maps jvp over its columns, hessian = jacfwd(jacrev).
The Jacobian of f: R^in -> R^out has shape out.shape + in.shape.
"""
from __future__ import annotations

from functools import wraps

from ..frontend.tensor import Tensor
from .transforms import _argnums, jvp, vjp
from .vmap import vmap


def _basis(like: Tensor) -> Tensor:
    """The identity as a batch of one-hot tensors shaped like `like`: (numel, *like.shape)."""
    n = like.numel()
    return Tensor.eye(n, dtype=like.dtype, device=like.device).reshape(n, *like.shape)


def _partial(f, args, index):
    def one(x):
        return f(*args[:index], x, *args[index + 1:])
    return one


def _check_output(out, name: str) -> Tensor:
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}: f must return a Tensor, got {type(out).__name__}")
    return out


def jacrev(f, argnums=0):
    """Jacobian by reverse mode: one vjp per output element, batched by vmap."""
    @wraps(f)
    def wrapper(*args):
        nums = _argnums(argnums, len(args), "jacrev")
        out, vjp_fn = vjp(lambda *xs: _check_output(f(*_with(args, nums, xs)), "jacrev"),
                          *[args[n] for n in nums])
        rows = vmap(vjp_fn)(_basis(out))
        jacs = tuple(r.reshape(*out.shape, *args[n].shape) for r, n in zip(rows, nums))
        return jacs[0] if isinstance(argnums, int) else jacs
    return wrapper


def _with(args, nums, values):
    args = list(args)
    for n, v in zip(nums, values):
        args[n] = v
    return args


def jacfwd(f, argnums=0):
    """Jacobian by forward mode: one jvp per input element, batched by vmap."""
    @wraps(f)
    def wrapper(*args):
        nums = _argnums(argnums, len(args), "jacfwd")
        jacs = []
        for n in nums:
            one = _partial(lambda *xs: _check_output(f(*xs), "jacfwd"), args, n)
            columns = vmap(lambda t: jvp(one, (args[n],), (t,))[1])(_basis(args[n]))
            out_ndim = columns.ndim - 1
            moved = columns.permute(*range(1, out_ndim + 1), 0)  # (*out, numel)
            jacs.append(moved.reshape(*moved.shape[:out_ndim], *args[n].shape))
        return jacs[0] if isinstance(argnums, int) else tuple(jacs)
    return wrapper


def hessian(f, argnums=0):
    """Second derivatives: jacfwd(jacrev(f)), shape out.shape + in.shape + in.shape."""
    return jacfwd(jacrev(f, argnums), argnums)
