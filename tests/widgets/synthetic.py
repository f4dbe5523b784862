"""A synthetic inspection model of any size (kernels x ops per kernel), shaped like
tinylab.inspection.build_model's output, for checking that the widget stays usable at 5,000
nodes without scheduling and compiling thousands of kernels. Used by test_browser.py.
"""
from __future__ import annotations


def synthetic_model(kernel_count: int, ops_per_kernel: int, fan_in: int = 2) -> dict:
    nodes, kernels, decisions, boxes, links = [], [], [], [], []

    def node(op: str, role: str, kernel_ids: list) -> str:
        identifier = f"n{len(nodes)}"
        nodes.append({"id": identifier, "op": op, "shape": [64, 64], "dtype": "float32",
                      "arg": "", "line": f"model.py:{len(nodes)}  y = f(x)", "role": role,
                      "realize": 0, "kernels": kernel_ids})
        return identifier

    source = node("BUFFER", "input", [])
    boxes.append({"id": source, "kind": "input", "label": "input", "detail": "float32[64, 64]",
                  "shape": [64, 64]})
    outputs = []
    for index in range(kernel_count):
        kernel_id = f"k{index}"
        reads = [outputs[index - step] for step in range(1, fan_in + 1) if index - step >= 0]
        reads = reads or [source]
        fused = [node("ADD" if i % 2 else "MUL", "op", [kernel_id]) for i in range(ops_per_kernel)]
        edges = [[fused[i - 1], fused[i], None] for i in range(1, len(fused))]
        mine = []
        for read in reads:
            decision_id = f"d{len(decisions)}"
            decisions.append({"id": decision_id, "realize": 0, "producer": read,
                              "consumer": fused[0], "merged": False,
                              "reason": "broadcast_reduce", "explanation": "synthetic cut",
                              "detail": "", "text": f"CUT {read} -> {fused[0]}",
                              "edge": f"{read} -> {fused[0]}", "kernels": [kernel_id],
                              "from_kernel": None})
            edges.append([read, fused[0], decision_id])
            mine.append(decision_id)
            producer = f"k{int(read[1:]) // ops_per_kernel}" if read != source else source
            links.append({"source": producer if read != source else source,
                          "target": kernel_id, "cut": read != source,
                          "reason": "broadcast_reduce" if read != source else "",
                          "decisions": [decision_id]})
        kernels.append({"id": kernel_id, "realize": 0, "position": index, "kind": "kernel",
                        "name": f"r_64_64n{index}", "device": "CPU", "shape": [64, 64],
                        "output": fused[-1], "ops": ["MUL", "ADD"] * (ops_per_kernel // 2),
                        "fused": fused, "reads": reads, "decisions": mine, "edges": edges,
                        "bytes_slots": 32768, "flops": 4096 * index, "bytes": 32768,
                        "opts": [], "language": "C", "compile_s": 0.01, "run_s": 1e-5 * index,
                        "gflops": 1.0, "gbps": 2.0, "cache_hit": bool(index % 2)})
        boxes.append({"id": kernel_id, "kind": "kernel", "label": f"r_64_64n{index}",
                      "detail": "MUL ADD ...", "shape": [64, 64]})
        outputs.append(fused[-1])
    boxes.append({"id": "r0", "kind": "output", "label": "y.numpy()  (line 1)",
                  "detail": "forced the realize", "shape": []})
    links.append({"source": f"k{kernel_count - 1}", "target": "r0", "cut": True,
                  "reason": "requested", "decisions": []})
    realize = {"index": 0, "forced_by": "model.py:1  y.numpy()", "forced_code": "y.numpy()",
               "outputs": [outputs[-1]], "kernels": [k["id"] for k in kernels],
               "options": "default", "what_if": []}
    program = {"name": "r_64_64", "language": "C", "sources": {"C": "void f(void) {}\n"},
               "passes": {"plan": "kernel r_64_64", "linear": "", "ast": ""}, "opts": []}
    return {"version": 1, "realizes": [realize], "nodes": nodes, "kernels": kernels,
            "decisions": decisions, "programs": {k["name"]: program for k in kernels},
            "timings": True, "graph": {"boxes": boxes, "links": links}}
