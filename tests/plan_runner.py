"""`run_plan(plan, arrays)`: compile a kernel plan for the CPU device, fill each input parameter
from `arrays` (keyed by element count) and return the output, for tests that check a plan the
heuristic chose for some target against numpy or PyTorch."""
import numpy as np

from tinylab import Device
from tinylab.codegen.linearize import linearize
from tinylab.codegen.plan import KernelPlan
from tinylab.dtype import dtypes
from tinylab.runtimes.buffer import Buffer


def run_plan(plan: KernelPlan, arrays: dict) -> np.ndarray:
    device = Device["CPU"]
    program = linearize(plan, plan.name)
    fn = device.runtime.load(device.runtime.compile(device.renderer.render(program))[0],
                             plan.name)
    buffers, out = [], None
    for param in program.params:
        data = np.full(param.size, np.nan, np.float32) if param.is_output else \
            np.ascontiguousarray(arrays[param.size], np.float32).ravel()
        buffers.append(Buffer("CPU", param.size, dtypes.float32, device.allocator).copyin(data))
        out = buffers[-1] if param.is_output else out
    device.runtime.launch(fn, program.loops, *[b.handle for b in buffers])
    return out.numpy()
