"""Writes the golden files of tinygrad's own results that the alias tests compare against:
tests/golden/tinygrad/models.json (models.py's ResNet, ViT, Llama block with a LARS step and
BERT) and conventions.json (conventions.py). Run it with a REAL tinygrad, never in tinylab's
.venv (the alias refuses to run where tinygrad is importable):

    python3 -m venv /tmp/tgref && /tmp/tgref/bin/pip install tinygrad==0.14.0 numpy
    mkdir -p /tmp/clang && ln -sf "$(command -v clang-15)" /tmp/clang/clang   # its CPU backend
    PATH=/tmp/clang:$PATH /tmp/tgref/bin/python tests/tinygrad_reference/make_reference.py

(made with tinygrad 0.14.0 from PyPI, numpy 2.4, clang 15, on the CPU device). Review the diff.
"""
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
GOLDEN = HERE.parents[0] / "golden" / "tinygrad"


def to_json(arrays: dict) -> str:
    """name -> {dtype, shape, values} with every float written exactly (repr of a double)."""
    entries = {}
    for name, value in arrays.items():
        value = np.asarray(value)
        entries[name] = {"dtype": str(value.dtype), "shape": list(value.shape),
                         "values": [float(v) if value.dtype.kind == "f" else int(v)
                                    for v in value.reshape(-1)]}
    return json.dumps(entries, indent=0, sort_keys=True) + "\n"


def from_json(text: str) -> dict:
    return {name: np.array(e["values"], dtype=e["dtype"]).reshape(e["shape"])
            for name, e in json.loads(text).items()}


def main() -> None:
    sys.path.insert(0, str(HERE))
    import tinygrad
    if getattr(tinygrad, "__tinylab_alias__", False):
        raise SystemExit("make_reference.py needs the real tinygrad, not tinylab's alias")
    import conventions
    import models
    from tinygrad import Context, Tensor, dtypes, nn

    class Library:
        pass
    lib = Library()
    lib.Tensor, lib.dtypes, lib.nn, lib.Context = Tensor, dtypes, nn, Context
    GOLDEN.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as workdir:
        (GOLDEN / "models.json").write_text(to_json(models.run_all(workdir)))
    (GOLDEN / "conventions.json").write_text(to_json(conventions.run(lib)))
    print(f"wrote {GOLDEN}/models.json and conventions.json with tinygrad from "
          f"{Path(tinygrad.__file__).parent}")


if __name__ == "__main__":
    main()
