"""A function as one offline HTML page that runs its kernels as WGSL on the reader's GPU.

`webgpu(fn, example_inputs, path)` captures fn's kernels as TinyJit does (call 1 realizes, call 2
records each launch, without TinyJit's sharing of buffers across schedules), renders each
kernel's AST as WGSL, stores every buffer no kernel writes (the weights) as one binary blob, and
writes page.html with runner.js inlined: no network, no Python. The page runs a drawn or picked
input through the kernels in order and shows fn's output.
"""
from __future__ import annotations

import base64
import html
import json
from importlib import resources
from pathlib import Path

import numpy as np

from ..engine import capture as engine_capture
from ..engine.compile_record import compile_record
from ..engine.devices import Device
from ..frontend.tensor import ALL_TENSORS, Tensor
from ..ir.ops import Op


def _asset(name: str) -> str:
    return (resources.files("tinylab.export") / name).read_text(encoding="utf-8")


def runner_script() -> str:
    """runner.js: open WebGPU (or say why not), compile WGSL kernels, upload, run, read back."""
    return _asset("runner.js")


def wgsl_kernel(ast) -> dict:
    """One kernel AST as WGSL and its launch: {name, source, dispatch [x, y, z], bindings
    [{binding, writable, dtype, size}]} (size in elements; WGSL reads whole 4-byte words), from
    the one compile pipeline's record (compile_record.py): the plan realize would choose."""
    record = compile_record("WEBGPU", ast, False, 0)
    program = record.program
    bindings = [{"binding": p.index, "writable": p.is_output, "dtype": p.dtype.name,
                 "size": p.size} for p in program.params]
    return {"name": program.name, "source": record.source,
            "dispatch": list(record.facts.launch.groups), "bindings": bindings}


def kernel_payload(record) -> tuple[dict, list[bytes]]:
    """What the inspector sends a browser to run one traced kernel on WebGPU: ({ok, kernel,
    arguments [{dtype, nbytes}], outputs [argument index], device} or {ok: False, reason}, and the
    bytes of every argument before the launch then of each output after it)."""
    if record is None:
        return {"ok": False, "reason": "this view has no trace (it was built from a model)"}, []
    if record.inputs is None:
        return {"ok": False, "reason": f"the trace kept no buffers for {record.name}: "
                                       f"{record.data_note}"}, []
    try:
        kernel = wgsl_kernel(record.ast)
    except (NotImplementedError, MemoryError) as error:
        return {"ok": False, "reason": f"no WGSL for {record.name}: {error}"}, []
    outputs = sorted(record.outputs)
    arguments = [{"dtype": a.dtype.name, "nbytes": a.nbytes} for a in record.inputs]
    content = {"ok": True, "kernel": kernel, "arguments": arguments, "outputs": outputs,
               "device": record.device}
    data = [a.tobytes() for a in record.inputs] + [record.outputs[i].tobytes() for i in outputs]
    return content, data


def _tensors(example_inputs) -> list[Tensor]:
    inputs = [t if isinstance(t, Tensor) else Tensor(np.asarray(t)) for t in example_inputs]
    for t in inputs:
        if t.dtype.name in Device["WEBGPU"].renderer.lacks_dtypes:
            raise TypeError(f"export.webgpu: input of dtype {t.dtype.name} (shape {t.shape}); "
                            f"WGSL has no 64-bit types: cast it to float32 or int32")
    return inputs


def capture(fn, example_inputs) -> dict:
    """The kernels, buffers and launches of fn on these inputs, as the page's plan (no data)."""
    inputs = _tensors(example_inputs)
    Tensor.realize(*inputs)
    result = fn(*inputs)
    if not isinstance(result, Tensor):
        raise TypeError(f"export.webgpu: fn must return one Tensor, got {type(result).__name__}")
    result.realize()
    with engine_capture.capture() as captured:
        result = fn(*inputs).realize()
    buffer_ids: dict[int, int] = {}
    buffers, kernels, launches, kernel_index = [], [], [], {}
    roles = {id(t.node.buffer): f"input{i}" for i, t in enumerate(inputs)}
    written: set[int] = set()
    for launch in captured:
        if launch.runner is None:
            _refuse_copy(launch.buffers)
        ast = launch.runner.ast
        if ast not in kernel_index:
            kernel_index[ast] = len(kernels)
            kernels.append(wgsl_kernel(ast))
        ids = []
        for position, buf in enumerate(launch.buffers):
            if id(buf) not in buffer_ids:
                buffer_ids[id(buf)] = len(buffers)
                role = roles.get(id(buf)) or ("scratch" if position == 0 else "weight")
                buffers.append({"buffer": buf, "role": role, "dtype": buf.dtype.name,
                                "size": buf.size})
            ids.append(buffer_ids[id(buf)])
        written.add(buffer_ids[id(launch.buffers[0])])
        launches.append({"kernel": kernel_index[ast], "buffers": ids})
    for index in written:   # a buffer some kernel writes is computed, never uploaded
        if buffers[index]["role"] == "weight":
            buffers[index]["role"] = "scratch"
    _check_no_state_changes(captured, result)
    output = buffer_ids.get(id(result.node.buffer))
    if output is None:
        raise ValueError("export.webgpu: fn's result is not computed by its kernels")
    return {"kernels": kernels, "buffers": buffers, "launches": launches, "output": output,
            "output_shape": list(result.shape), "inputs": [
                {"buffer": buffer_ids[id(t.node.buffer)], "shape": list(t.shape),
                 "dtype": t.dtype.name} for t in inputs]}


def _refuse_copy(buffers) -> None:
    """A copy within one device is the engine keeping a buffer's old value for a lazy reader
    while fn overwrites it (an assign): state, which a page cannot keep."""
    target, source = buffers[0], buffers[-1]
    if target.device == source.device:
        raise ValueError(f"export.webgpu: fn changes the {source.dtype.name}[{source.size}] "
                         f"buffer that a lazy value still reads (an assign); a page cannot keep "
                         f"state")
    raise ValueError("export.webgpu: fn copies between devices; keep it on one device")


def _check_no_state_changes(launches, result: Tensor) -> None:
    """A page replays fn's kernels on fresh buffers: fn must not change any tensor's value (an
    unrealized random weight draws new random numbers, advancing the generator, at every call)."""
    live = {id(t.node.buffer) for t in list(ALL_TENSORS) if t.node.op is Op.BUFFER}
    read_first = set()   # buffers whose content before fn matters
    written = set()
    for launch in launches:
        target = launch.buffers[0]
        reads = [b for p, b in zip(launch.runner.program.params, launch.buffers) if p.is_input]
        read_first.update(id(b) for b in reads if id(b) not in written)
        changes_state = id(target) in read_first or (id(target) in live and
                                                    target is not result.node.buffer)
        if changes_state:
            raise ValueError(
                f"export.webgpu: fn changes the {target.dtype.name}[{target.size}] buffer it "
                f"reads in kernel {launch.runner.name}; a page cannot keep state. If the model's "
                f"weights were never realized, their random initialisation runs inside fn: "
                f"realize them first, e.g. Tensor.realize(*nn.state.get_parameters(model))")
        written.add(id(target))


def _blob(buffers: list[dict]) -> bytes:
    """Every weight's bytes back to back, each padded to a 4-byte word; records its offset."""
    parts, offset = [], 0
    for entry in buffers:
        buf = entry.pop("buffer")
        if entry["role"] != "weight":
            continue
        data = buf.numpy().tobytes()
        data += b"\0" * (-len(data) % 4)
        entry["offset"], entry["nbytes"] = offset, len(data)
        parts.append(data)
        offset += len(data)
    return b"".join(parts)


def webgpu(fn, example_inputs, path, *, title: str = "tinylab model on WebGPU",
           labels=None, samples=None, sample_labels=None) -> Path:
    """Write fn's kernels as one self-contained HTML page that runs them on the reader's GPU.

    fn takes tensors shaped like `example_inputs` and returns one tensor (e.g. class
    probabilities). `labels` names the output classes; `samples` (an array of inputs shaped like
    example_inputs[0] without its batch axis, uint8 or float) are offered to pick from, with
    `sample_labels` their true classes. A (1, 1, H, W) or (1, H, W) input also gets a drawing pad.
    """
    plan = capture(fn, example_inputs)
    weights = _blob(plan["buffers"])
    plan["labels"] = list(labels) if labels is not None else None
    plan["title"] = title
    if samples is not None:
        samples = np.asarray(samples)
        scale = 255.0 if samples.dtype == np.uint8 else 1.0
        plan["samples"] = {"count": len(samples), "scale": scale, "data": base64.b64encode(
            samples.astype(np.uint8 if scale == 255.0 else np.float32).tobytes()).decode(),
            "dtype": "uint8" if scale == 255.0 else "float32",
            "labels": [int(v) for v in sample_labels] if sample_labels is not None else None}
    page = _asset("page.html")
    for marker, text in (("/*TITLE*/", html.escape(title)), ("/*PLAN*/", json.dumps(plan)),
                         ("/*WEIGHTS*/", base64.b64encode(weights).decode()),
                         ("/*RUNNER*/", runner_script())):
        page = page.replace(marker, text.replace("</", "<\\/"))
    path = Path(path)
    path.write_text(page, encoding="utf-8")
    return path
