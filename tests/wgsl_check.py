"""A WGSL check for every kernel a test session produced, on any backend: each AST is rendered as
WGSL (what `kernel.render("WGSL")` shows) and, where wgpu-py runs, naga validates the source.
Used by conftest at the end of a session; a kernel of a dtype WGSL lacks, or with a buffer past
i32 indexing or a variable past int32, must be refused by name."""
from tinylab import Device
from tinylab.engine.realize import render_for


def check_wgsl(asts) -> tuple[int, int]:
    """(kernels rendered and validated, kernels refused for a dtype WGSL lacks). Raises
    CompileError (with source and naga's report) for the first source naga rejects."""
    renderer = Device["NULL:WGSL"].renderer
    runtime = Device["WEBGPU"].runtime if Device["WEBGPU"].available else None
    checked = refused = 0
    for ast in asts:
        try:
            source = render_for(ast, "WEBGPU")
        except NotImplementedError as error:
            lacking = [name for name in renderer.lacks_dtypes if f"WGSL has no {name}" in str(error)]
            if not lacking and "WGSL kernels take i32 variables" not in str(error):
                raise
            refused += 1
            continue
        except MemoryError as error:   # a render-only test's buffer past WGSL's i32 indexing
            if "WGSL indexes buffers with i32" not in str(error):
                raise
            refused += 1
            continue
        if runtime is not None:
            runtime.shader_module(source)
        checked += 1
    return checked, refused
