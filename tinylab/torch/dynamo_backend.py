"""The torch.compile backend: `torch.compile(model, backend="tinylab")` (the name comes from the
`torch_dynamo_backends` entry point in pyproject.toml). Dynamo hands over an FX graph;
AOTAutograd splits it into ATen forward and backward graphs, each compiled to a GraphProgram.
Options: `torch.compile(m, backend="tinylab", options={"fallback": "eager", "jit": False})`.
"""
from __future__ import annotations

import os
from types import MappingProxyType

import torch
from torch._functorch.aot_autograd import aot_module_simplified

from ..engine import trace as tracing
from ..memo import Role, register
from .graph_program import GraphProgram, Options

# decompositions chosen for the bridge: none by default. Every op AOTAutograd emits without
# them (core ATen plus the backward ops) has its own row in aten_table.py; PyTorch's full
# core-ATen table changed gradients of a GPT-2 training step here (REFERENCE.md)
DECOMPOSITIONS: dict = MappingProxyType({})
# the GraphPrograms made in this process, newest last (for the inspector), the last 64
COMPILED = register("compiled graph programs", [], Role.LIVE)


def _compiler(kind: str, options: Options):
    def compile_graph(gm: torch.fx.GraphModule, example_inputs):
        program = GraphProgram(gm, kind, options)
        COMPILED.append(program)
        del COMPILED[:-64]

        def run(args):
            return program(args)
        run._boxed_call = True  # AOTAutograd's boxed convention: the list of inputs
        run.program = program
        return run
    return compile_graph


def backend(gm: torch.fx.GraphModule, example_inputs, options: dict | None = None):
    """torch.compile's backend callable: (FX graph, example inputs) -> a callable."""
    settings = Options.parse(options)
    tracing.skip_frames_in(os.path.dirname(torch.__file__))
    return aot_module_simplified(gm, example_inputs,
                                 fw_compiler=_compiler("forward", settings),
                                 bw_compiler=_compiler("backward", settings),
                                 inference_compiler=_compiler("inference", settings),
                                 decompositions=DECOMPOSITIONS)
