"""Export: a traced or jitted tinylab function as something that runs without Python.

`webgpu(fn, example_inputs, path)` writes one offline HTML page that runs fn's kernels as WGSL on
the reader's GPU (WebGPU); `wgsl_kernel(ast)` is one kernel as WGSL plus what a WebGPU runner
needs to launch it (used by the page and by the inspector widget's "run on this browser's GPU").
"""
from .webgpu import kernel_payload, runner_script, webgpu, wgsl_kernel

__all__ = ["webgpu", "wgsl_kernel", "kernel_payload", "runner_script"]
