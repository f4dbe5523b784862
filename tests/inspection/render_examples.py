"""Trace the two teaching examples (matmul written as multiply + sum, and softmax) in a fresh
process — kernel names depend on what the process compiled before — and print every inspection
rendering of each as JSON. Run by test_renderings.py; its output is compared with golden files.
"""
import json
import sys

import numpy as np

import tinylab
from tinylab import Context, Tensor, inspection

N = 8


def matmul_trace():
    a = Tensor(np.arange(N * N, dtype=np.float32).reshape(N, N)).realize()
    b = Tensor(np.eye(N, dtype=np.float32)).realize()
    with tinylab.trace() as recorded:
        c = (a.reshape(N, 1, N) * b.T.reshape(1, N, N)).sum(axis=2)
        c.numpy()
    return recorded


def softmax_trace():
    x = Tensor(np.arange(20, dtype=np.float32).reshape(4, 5)).realize()
    with tinylab.trace() as recorded:
        y = x.softmax(1)
        y.numpy()
    return recorded


def renderings(recorded) -> dict:
    model = inspection.build_model(recorded, timings=False)
    return {"summary.txt": inspection.summary_text(model),
            "txt": inspection.to_text(model, source=True),
            "dot": inspection.to_dot(model),
            "expanded.dot": inspection.to_dot(model, expand=True),
            "json": inspection.to_json(model),
            "html": inspection.to_html(model, graph_engine="python"),
            "dot.html": inspection.to_html(model, graph_engine="dot") if
            inspection.dot_available() else ""}


def main() -> None:
    with Context(DEV="CPU", NOOPT=1):
        out = {"matmul": renderings(matmul_trace()), "softmax": renderings(softmax_trace())}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
