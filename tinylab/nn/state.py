"""Model state: find a model's tensors by walking its attributes, name them like PyTorch's state
dicts ("layers.0.weight"), and load them back strictly. File formats live beside this module
(safe_save / safe_load: safetensors; torch_load: PyTorch .pth) and are re-exported here.
Called by user code and examples; uses only the public Tensor API.
"""
from __future__ import annotations

import numpy as np

from ..errors import TinylabError
from ..frontend.tensor import Tensor
from .safetensors_format import safe_load, safe_load_metadata, safe_save
from .torch_format import UnsafePickleError, torch_load

__all__ = ["StateDictError", "UnsafePickleError", "get_parameters", "get_state_dict",
           "load_state_dict", "safe_load", "safe_load_metadata", "safe_save", "torch_load"]


class StateDictError(TinylabError, KeyError, ValueError):
    """A state dict does not fit the model: missing, unexpected or mis-shaped keys (all listed).
    Both a KeyError and a ValueError, so either `except` catches it."""

    def __str__(self) -> str:  # KeyError would print the message with quotes around it
        return str(self.args[0]) if self.args else ""


def get_state_dict(obj, prefix: str = "", tensor_type=Tensor) -> dict[str, Tensor]:
    """name -> Tensor for every tensor reachable through attributes, lists, tuples and dicts,
    in attribute order (a list item i is named "i"). Each object is walked once (no cycles)."""
    out: dict[str, Tensor] = {}
    _walk(obj, prefix, tensor_type, out, set())
    return out


def _walk(obj, prefix: str, tensor_type, out: dict, visiting: set) -> None:
    if isinstance(obj, tensor_type):
        out[prefix.rstrip(".")] = obj
        return
    if hasattr(obj, "_asdict"):  # namedtuple
        obj = obj._asdict()
    if isinstance(obj, dict):
        items = obj.items()
    elif isinstance(obj, (list, tuple)):
        items = ((str(i), value) for i, value in enumerate(obj))
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        items = vars(obj).items()
    else:
        return
    if id(obj) in visiting:  # a reference cycle (e.g. a layer that points to its parent)
        return
    visiting.add(id(obj))
    for key, value in list(items):
        _walk(value, f"{prefix}{key}.", tensor_type, out, visiting)
    visiting.discard(id(obj))


def get_parameters(obj) -> list[Tensor]:
    """Every tensor of a model, each once, in attribute order (what optimizers take)."""
    seen, out = set(), []
    for tensor in get_state_dict(obj).values():
        if id(tensor) not in seen:
            seen.add(id(tensor))
            out.append(tensor)
    return out


def _as_tensor(value) -> Tensor:
    return value if isinstance(value, Tensor) else Tensor(value)


def _mismatches(own: dict[str, Tensor], state_dict: dict, strict: bool) -> list[str]:
    """Human-readable problems: missing / unexpected keys (strict only) and shape mismatches."""
    problems = []
    missing = [k for k in own if k not in state_dict]
    unexpected = [k for k in state_dict if k not in own]
    if strict and missing:
        problems.append(f"missing keys (in the model, not in the state dict): {missing}")
    if strict and unexpected:
        problems.append(f"unexpected keys (in the state dict, not in the model): {unexpected}")
    for name, target in own.items():
        if name not in state_dict:
            continue
        value = state_dict[name]
        if not isinstance(value, (Tensor, np.ndarray)):
            problems.append(f"{name!r} is a {type(value).__name__}; values must be Tensors or "
                            f"numpy arrays")
        elif tuple(value.shape) != target.shape:
            problems.append(f"{name!r} has shape {tuple(value.shape)} in the state dict but "
                            f"{target.shape} in the model")
    return problems


def load_state_dict(model, state_dict: dict, strict: bool = True, verbose: bool = False,
                    consume: bool = False, realize: bool = True) -> None:
    """Copy tensors by name into the model (cast to each target's dtype and device).

    strict: every model key must be in the state dict and vice versa. Nothing is loaded unless
    every key fits; the error lists all missing, unexpected and mis-shaped keys at once.
    consume: delete each entry from state_dict once loaded (frees memory for large models)."""
    if not isinstance(state_dict, dict):
        raise TypeError(f"load_state_dict: state_dict must be a dict, got "
                        f"{type(state_dict).__name__}")
    own = get_state_dict(model)
    problems = _mismatches(own, state_dict, strict)
    if problems:
        raise StateDictError("load_state_dict: the state dict does not fit the model:\n  " +
                             "\n  ".join(problems))
    loaded = []
    for name, target in own.items():
        if name not in state_dict:
            continue
        value = _as_tensor(state_dict[name]).to(target.device)
        target.replace(value if value.dtype == target.dtype else value.cast(target.dtype))
        loaded.append(target)
        if consume:
            del state_dict[name]
        if verbose:
            print(f"loaded {name} {target.shape} {target.dtype.name}")
    if realize and loaded:
        Tensor.realize(*loaded)
