"""Model state: find parameters by walking attributes, name them, load them back.
(safetensors and torch .pth readers/writers live here too.) Uses only the public Tensor API.
"""
from __future__ import annotations

from collections import OrderedDict

from ..frontend.tensor import Tensor


def get_state_dict(obj, prefix: str = "", tensor_type=Tensor) -> dict[str, Tensor]:
    """name -> Tensor for every tensor reachable through attributes, lists, tuples and dicts."""
    if isinstance(obj, tensor_type):
        return {prefix.strip("."): obj}
    if hasattr(obj, "_asdict"):
        return get_state_dict(obj._asdict(), prefix, tensor_type)
    if isinstance(obj, OrderedDict) or isinstance(obj, dict):
        items = obj.items()
    elif isinstance(obj, (list, tuple)):
        items = ((str(i), v) for i, v in enumerate(obj))
    elif hasattr(obj, "__dict__"):
        items = obj.__dict__.items()
    else:
        return {}
    out: dict[str, Tensor] = {}
    for key, value in items:
        out.update(get_state_dict(value, f"{prefix}{key}.", tensor_type))
    return out


def get_parameters(obj) -> list[Tensor]:
    """Every tensor of a model (each once), in attribute order."""
    seen, out = set(), []
    for tensor in get_state_dict(obj).values():
        if id(tensor) not in seen:
            seen.add(id(tensor))
            out.append(tensor)
    return out


def load_state_dict(model, state_dict: dict, strict: bool = True, verbose: bool = False,
                    realize: bool = True) -> None:
    """Copy tensors by name into the model. strict: every key must exist on both sides."""
    own = get_state_dict(model)
    missing = [k for k in own if k not in state_dict]
    unexpected = [k for k in state_dict if k not in own]
    if strict and (missing or unexpected):
        raise KeyError(f"load_state_dict: missing keys {missing}, unexpected keys {unexpected}")
    for name, target in own.items():
        if name not in state_dict:
            continue
        value = state_dict[name]
        if not isinstance(value, Tensor):
            value = Tensor(value)
        if value.shape != target.shape:
            raise ValueError(f"load_state_dict: {name} has shape {value.shape} in the state dict "
                             f"but {target.shape} in the model")
        target.replace(value.to(target.device).cast(target.dtype))
        if realize:
            target.realize()
        if verbose:
            print(f"loaded {name} {target.shape}")
