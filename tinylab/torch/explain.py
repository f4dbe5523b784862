"""`tinylab.torch.explain(model, *args)`: where Dynamo broke a model's graph (its explain) and
the kernels tinylab ran for it, as text (inspection.to_text of a trace of one compiled call).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class Explanation:
    graphs: int                  # FX graphs Dynamo made (graph breaks + 1, when it traced)
    breaks: list                 # (reason, user line) per graph break
    trace: object                # the tinylab Trace of one compiled call
    text: str                    # what explain() printed

    def __str__(self) -> str:
        return self.text


def _break_lines(explained) -> list:
    out = []
    for info in explained.break_reasons:
        frames = getattr(info, "user_stack", None) or []
        line = f"{frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno}  " \
               f"{(frames[-1].line or '').strip()}" if frames else "?"
        out.append((str(info.reason).splitlines()[0], line))
    return out


def explain(model, *args, backend_options: dict | None = None, show: bool = True, **kwargs):
    """List Dynamo's graph breaks for `model(*args, **kwargs)`, then run it once compiled with
    the tinylab backend under a trace and list its kernels (and any op run in PyTorch)."""
    import tinylab
    from tinylab import inspection
    torch._dynamo.reset()
    explained = torch._dynamo.explain(model)(*args, **kwargs)
    breaks = _break_lines(explained)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="tinylab", options=backend_options)
    with torch.no_grad(), tinylab.trace() as record:
        compiled(*args, **kwargs)
    lines = [f"Dynamo: {explained.graph_count} graph(s), {len(breaks)} graph break(s)"]
    lines += [f"  break: {reason}  ({line})" for reason, line in breaks]
    lines += [f"ran in PyTorch: {name}  ({line})" for name, line in record.external]
    lines.append(inspection.to_text(record))
    text = "\n".join(lines)
    if show:
        print(text)
    return Explanation(explained.graph_count, breaks, record, text)
