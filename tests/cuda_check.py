"""A compile check for CUDA on machines without a GPU: render kernel ASTs for CUDA and compile them
all to PTX with nvcc in one batch (shared helper lines once, each kernel renamed apart). Used by
conftest (every kernel the test session produced) and test_cuda_render.py."""
from tinylab.engine import realize
from tinylab.engine.realize import render_for
from tinylab.errors import CompilerNotFoundError
from tinylab.runtimes.cuda import find_nvcc, nvcc_compile

ARCH = "sm_80"
MARKER = 'extern "C" __global__ void '


def nvcc_present() -> bool:
    try:
        find_nvcc()
        return True
    except CompilerNotFoundError:
        return False


def session_asts() -> list:
    """Every distinct kernel AST compiled (or rendered) in this process so far."""
    return list(dict.fromkeys(key[1] for key in realize.STATE.runners))


def batch_source(asts) -> str:
    headers, kernels = {}, []
    for i, ast in enumerate(asts):
        head, marker, body = render_for(ast, "CUDA").partition(MARKER)
        assert marker, "a CUDA kernel starts with its extern \"C\" signature"
        headers.update(dict.fromkeys(head.splitlines(keepends=True)))
        kernels.append(f"{MARKER}k{i}_{body}")
    return "".join(headers) + "\n".join(kernels)


def compile_for_cuda(asts) -> int:
    """Compile every kernel to PTX (raises CompileError with source and log); returns the count."""
    if asts:
        nvcc_compile(batch_source(asts), ARCH, "ptx", optimize=False)
    return len(asts)
