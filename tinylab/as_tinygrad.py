"""The opt-in `tinygrad` alias: runs tinygrad programs unchanged on tinylab.

    python -m tinylab.as_tinygrad script.py [args]     (or -m module [args], -c code)
    import tinylab.as_tinygrad; tinylab.as_tinygrad.install()   (a notebook's first cell)

`install()` makes `import tinygrad`, `from tinygrad import Tensor, dtypes, TinyJit, Device,
Context, GlobalCounters, Variable`, `tinygrad.nn` (layers, `.state`, `.optim`, `.datasets`),
`tinygrad.helpers`, `tinygrad.dtype`, `tinygrad.tensor`, `tinygrad.device` and
`tinygrad.engine.jit` resolve to tinylab, and turns on tinygrad's values where it and PyTorch
differ for the same call (TINYGRAD_VALUES: gelu's tanh form, interpolate's default mode, cummax's
first index). It never hides a real tinygrad: when one is importable it says where and refuses.
"""
from __future__ import annotations

import functools
import importlib.machinery
import importlib.util
import operator
import pathlib
import runpy
import sys
import types

from . import config
from .dtype import DType, dtypes, promote
from .engine.counters import GlobalCounters
from .engine.devices import Device
from .frontend.jit import TinyJit
from .frontend.tensor import Tensor
from .helpers import Context, Timing
from .ir.symbolic import Variable
from . import nn

MARK = "__tinylab_alias__"  # set on every module the alias made


class RealTinygradError(ImportError):
    """A real tinygrad is importable: the alias would hide it."""


# ---- tinygrad.helpers: the names tinygrad programs commonly import ---------------------------
def getenv(key: str, default=0):
    """tinygrad's getenv: the environment value (read once by config.py) as default's type."""
    raw = config.getenv(key, None)
    return default if raw is None else type(default)(raw)


def prod(values):
    return functools.reduce(operator.mul, values, 1)


def flatten(nested):
    return [item for part in nested for item in part]


def fully_flatten(nested):
    if isinstance(nested, (list, tuple)):
        return [item for part in nested for item in fully_flatten(part)]
    return [nested]


def dedup(values):
    return list(dict.fromkeys(values))


def argfix(*values):
    """f((2, 3)) and f(2, 3) alike: the tuple of arguments."""
    if values and isinstance(values[0], (tuple, list)):
        if len(values) != 1:
            raise ValueError(f"bad arg {values}")
        return tuple(values[0])
    return values


def helper_names() -> dict:
    """name -> value of the alias's tinygrad.helpers."""
    def unwrap(value):
        if value is None:
            raise ValueError("unwrap: the value is None")
        return value

    def fetch(url, *args, **kwargs):
        raise NotImplementedError(f"fetch: tinylab downloads nothing; fetch {url} yourself and "
                                  f"pass its path")
    colors = {"black": 30, "red": 31, "green": 32, "yellow": 33, "blue": 34, "magenta": 35,
              "cyan": 36, "white": 37}
    return {
        "getenv": getenv, "Context": Context, "GlobalCounters": GlobalCounters, "Timing": Timing,
        "DEBUG": config.DEBUG, "BEAM": config.BEAM, "NOOPT": config.NOOPT, "JIT": config.JIT,
        "TRAINING": config.TRAINING, "CI": getenv("CI", ""), "OSX": sys.platform == "darwin",
        "WINO": 0, "IMAGE": 0, "prod": prod, "flatten": flatten, "fully_flatten": fully_flatten,
        "dedup": dedup, "argfix": argfix, "all_same": lambda x: all(v == x[0] for v in x),
        "all_int": lambda t: all(isinstance(s, int) for s in t),
        "argsort": lambda x: type(x)(sorted(range(len(x)), key=x.__getitem__)),
        "make_tuple": lambda x, n: (x,) * n if isinstance(x, int) else tuple(x),
        "to_tuple": lambda x: x if isinstance(x, tuple) else (x,),
        "round_up": lambda n, amount: (n + amount - 1) // amount * amount,
        "ceildiv": lambda n, amount: -(n // -amount), "unwrap": unwrap, "fetch": fetch,
        "partition": lambda items, keep: ([x for x in items if keep(x)],
                                          [x for x in items if not keep(x)]),
        "merge_dicts": lambda ds: {k: v for d in ds for k, v in d.items()},
        "colored": lambda text, color, background=False: text if color is None else
        f"\u001b[{colors[color] + 60 * color.isupper() + 10 * background}m{text}\u001b[0m",
        "trange": lambda n, **kwargs: range(n), "tqdm": lambda items=None, **kwargs: items,
    }


def dtype_names() -> dict:
    """name -> value of the alias's tinygrad.dtype."""
    def least_upper_dtype(*kinds):
        return functools.reduce(promote, (dtypes.from_any(k) for k in kinds))
    return {"dtypes": dtypes, "DType": DType, "to_dtype": dtypes.from_any,
            "least_upper_dtype": least_upper_dtype, "ConstType": (float, int, bool)}


# ---- the modules ------------------------------------------------------------------------------
def _module(name: str, names: dict, package: bool = False) -> types.ModuleType:
    module = types.ModuleType(name, f"tinylab's alias of {name}")
    module.__dict__.update(names)
    module.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=package)
    if package:
        module.__path__ = []
    setattr(module, MARK, True)
    return module


def alias_modules() -> dict[str, types.ModuleType]:
    """sys.modules entries: each tinygrad module name -> its stand-in (tinylab's own where the
    names match: nn, nn.state, nn.optim, nn.datasets)."""
    helpers, dtype = _module("tinygrad.helpers", helper_names()), _module("tinygrad.dtype",
                                                                          dtype_names())
    jit = _module("tinygrad.engine.jit", {"TinyJit": TinyJit})
    engine = _module("tinygrad.engine", {"jit": jit}, package=True)
    root = _module("tinygrad", {
        "Tensor": Tensor, "TinyJit": TinyJit, "dtypes": dtypes, "Device": Device,
        "Context": Context, "GlobalCounters": GlobalCounters, "Variable": Variable,
        "getenv": getenv, "fetch": helper_names()["fetch"], "nn": nn, "helpers": helpers,
        "dtype": dtype, "engine": engine, "load_ipython_extension": _load_ipython_extension,
        "__version__": "tinylab"}, package=True)
    modules = {"tinygrad": root, "tinygrad.helpers": helpers, "tinygrad.dtype": dtype,
               "tinygrad.engine": engine, "tinygrad.engine.jit": jit,
               "tinygrad.tensor": _module("tinygrad.tensor", {"Tensor": Tensor}),
               "tinygrad.device": _module("tinygrad.device", {"Device": Device}),
               "tinygrad.nn": nn, "tinygrad.nn.state": nn.state, "tinygrad.nn.optim": nn.optim,
               "tinygrad.nn.datasets": nn.datasets}
    root.tensor, root.device = modules["tinygrad.tensor"], modules["tinygrad.device"]
    return modules


def _load_ipython_extension(ipython) -> None:  # `%load_ext tinygrad` under the alias
    import tinylab
    tinylab.load_ipython_extension(ipython)


def installed() -> bool:
    return getattr(sys.modules.get("tinygrad"), MARK, False)


def real_tinygrad() -> str | None:
    """Where a real tinygrad would be imported from, or None."""
    found = sys.modules.get("tinygrad")
    if found is not None:
        return None if getattr(found, MARK, False) else str(getattr(found, "__file__", found))
    spec = importlib.util.find_spec("tinygrad")
    return None if spec is None else str(spec.origin or spec.submodule_search_locations)


def install() -> None:
    """Make `tinygrad` name tinylab in this process and take tinygrad's values; refuses
    (RealTinygradError) when a real tinygrad is importable. Calling it again does nothing."""
    if installed():
        return
    where = real_tinygrad()
    if where is not None:
        raise RealTinygradError(f"as_tinygrad: a real tinygrad is installed ({where}); the alias "
                                f"would hide it, so it refuses. Run the program with tinygrad "
                                f"itself, or in an environment without it")
    config.TINYGRAD_VALUES.set_default(1)
    sys.modules.update(alias_modules())


USAGE = ("usage: python -m tinylab.as_tinygrad script.py [args] | -m module [args] | -c code\n"
         "runs a tinygrad program on tinylab (tinygrad's names and values)")


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    try:
        install()
    except RealTinygradError as error:
        print(error, file=sys.stderr)
        return 1
    if argv[0] == "-c" and len(argv) > 1:
        sys.argv = ["-c", *argv[2:]]
        exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})  # noqa: S102
    elif argv[0] == "-m" and len(argv) > 1:
        sys.argv = [argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = list(argv)
        sys.path.insert(0, str(pathlib.Path(argv[0]).resolve().parent))
        runpy.run_path(argv[0], run_name="__main__")
    return 0


__all__ = ["install", "installed", "main", "real_tinygrad", "RealTinygradError"]

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
