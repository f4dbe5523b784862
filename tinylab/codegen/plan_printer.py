"""Print codegen passes: a KernelPlan as a loop nest (the loop IR) and a LinearProgram as one
instruction per line. Both are shown at DEBUG=5, kept in the Trace and checked by golden files.
"""
from __future__ import annotations

from ..ir import symbolic as sym
from ..ir.node import Node
from ..ir.ops import ALU, REDUCE, Op
from .linear_ops import LinearOp
from .plan import AxisKind, KernelPlan, view_index


class _ExprPrinter:
    """Prints kernel-AST expressions; a node used more than once is named once (`t3 = ...`)
    so shared subexpressions (a random-number hash, say) print in linear, not exponential, size."""

    def __init__(self, plan: KernelPlan, values: dict):
        self.plan, self.values = plan, values
        self.names: dict[Node, str] = {}
        self.lets: list[str] = []

    def render(self, root: Node) -> str:
        uses: dict[Node, int] = {}
        for node in root.toposort():
            for src in node.src:
                uses[src] = uses.get(src, 0) + 1
        text: dict[Node, str] = {}
        for node in root.toposort():
            if node in self.names:
                text[node] = self.names[node]
                continue
            value = self._one(node, [text[s] for s in node.src])
            if uses.get(node, 0) > 1 and node.op in ALU:
                name = f"t{len(self.names)}"
                self.names[node] = name
                self.lets.append(f"{name} = {value}")
                value = name
            text[node] = value
        return text[root]

    def take_lets(self) -> list[str]:
        lets, self.lets = self.lets, []
        return lets

    def _one(self, node: Node, args: list[str]) -> str:
        if node.op is Op.CONST:
            return repr(node.value)
        if node.op is Op.LOAD:
            index, valid = view_index(node.view, self.plan.index_exprs(self.values))
            load = f"buf{node.buffer_index}[{index}]"
            return load if valid.is_true else f"({valid} ? {load} : 0)"
        if node.op is Op.VALID:
            return str(view_index(node.view, self.plan.index_exprs(self.values))[1])
        if node.op in REDUCE:
            return "acc"
        assert node.op in ALU
        if node.op in (Op.CAST, Op.BITCAST):
            return f"{node.op.name.lower()}<{node.dtype.name}>({', '.join(args)})"
        return f"{node.op.name.lower()}({', '.join(args)})"


def print_plan(plan: KernelPlan) -> str:
    """The plan as pseudo-code loops; register-tile axes appear as `tile` lines."""
    values, names = {}, {}
    loop_vars = plan.loop_vars()
    for i, axis in enumerate(plan.axes):
        if axis.kind.is_loop:
            values[i] = loop_vars[i]
        else:
            name = {AxisKind.UPCAST: "u", AxisKind.UNROLL: "k", AxisKind.VECTOR: "v"}[axis.kind]
            values[i] = sym.var(f"{name}{i}", 0, axis.size - 1)
        names[i] = str(values[i])
    lines = [f"kernel {plan.name}  shape={plan.shape} reduce_dims={plan.n_reduce}"
             + (f"  opts=[{', '.join(map(str, plan.opts))}]" if plan.opts else "")
             + (f"  partial sums restart in {names[plan.partial_axis]}"
                if plan.partial_axis is not None else "")]
    indent = "  "
    for i, axis in enumerate(plan.axes):
        if not axis.kind.is_loop and not axis.reduce:
            lines.append(f"{indent}tile {names[i]} in 0..{axis.size} ({axis.kind.value})")
    reduce = plan.reduce_node
    blocks = sorted(plan.axes_of(AxisKind.BLOCK), key=lambda i: plan.axes[i].reduce)
    outer = blocks + [i for i, a in enumerate(plan.axes)
                      if a.kind.is_loop and not a.reduce and i not in blocks]
    for i in outer:  # BLOCK loops run outside the output loops
        lines.append(f"{indent}for {names[i]} in 0..{plan.axes[i].size} "
                     f"({plan.axes[i].kind.value}):")
        indent += "  "
    if reduce is not None:
        identity = "0" if reduce.op is Op.REDUCE_SUM else "-inf"
        if plan.block_axis is not None:  # later blocks start from what earlier ones stored
            block = next(names[i] for i in blocks if plan.axes[i].reduce)
            store = plan.stores[0]
            index, _ = view_index(store.view, plan.index_exprs(values))
            identity = f"buf{store.buffer_index}[{index}] if {block} > 0 else {identity}"
        lines.append(f"{indent}acc = {identity}")
        inner = indent
        for i, axis in enumerate(plan.axes):
            if axis.reduce and not axis.kind.is_loop:
                lines.append(f"{inner}tile {names[i]} in 0..{axis.size} ({axis.kind.value})")
        reduces = [i for i, a in enumerate(plan.axes) if a.kind.is_loop and a.reduce
                   and i not in blocks]
        # GROUP loops outside the serial reduce loops, as linearize (gpu_plan.order_loops) nests
        for i in sorted(reduces, key=lambda i: plan.axes[i].kind is not AxisKind.GROUP):
            lines.append(f"{inner}for {names[i]} in 0..{plan.axes[i].size} "
                         f"({plan.axes[i].kind.value}):")
            inner += "  "
        op = "+" if reduce.op is Op.REDUCE_SUM else "max"
        inner_printer = _ExprPrinter(plan, values)
        body = inner_printer.render(reduce.src[0])
        lines.extend(f"{inner}{let}" for let in inner_printer.take_lets())
        lines.append(f"{inner}acc = acc {op} {body}")
    printer = _ExprPrinter(plan, values)
    for store in plan.stores:
        index, _ = view_index(store.view, plan.index_exprs(values))
        value = printer.render(store.src[0])
        lines.extend(f"{indent}{let}" for let in printer.take_lets())
        lines.append(f"{indent}buf{store.buffer_index}[{index}] = {value}")
    return "\n".join(lines)


def _arg_text(instr) -> str:
    op, arg = instr.op, instr.arg
    if op in (LinearOp.LOAD, LinearOp.STORE):
        buf, indices, valids = arg
        lanes = []
        for index, valid in zip(indices, valids):
            lanes.append(f"[{index}]" if valid.is_true else f"[{index}] if {valid}")
        if len(set(lanes)) == 1:
            return f"buf{buf}{lanes[0]}"
        return f"buf{buf}<" + ", ".join(lanes) + ">"
    if op == LinearOp.COND:
        return ", ".join(map(str, arg))
    if op == LinearOp.PARAM:
        index, size, is_out, is_in = arg
        role = "out" if is_out and not is_in else "inout" if is_out else "in"
        return f"buf{index} size={size} {role}"
    if op == LinearOp.RANGE:
        return f"{arg[0]} 0..{arg[1]} {arg[2]}"
    return "" if arg is None else repr(arg)


def print_linear(program) -> str:
    lines = [f"program {program.name}  threads={program.threads} "
             f"index={program.index_dtype.name}"]
    if program.variables:  # symbolic sizes: int arguments after the buffers
        lines[0] += "  variables=" + ",".join(f"{n}[{lo}-{hi}]" for n, lo, hi in program.variables)
    depth = 0
    for i, instr in enumerate(program.instrs):
        if instr.op == LinearOp.END:
            depth -= 1
        srcs = " ".join(f"%{s}" for s in instr.src)
        dtype = repr(instr.dtype).replace("dtypes.", "")
        text = f"{'  ' * depth}%{i} = {instr.op} {srcs} {_arg_text(instr)}".rstrip()
        lines.append(f"{text:<60} : {dtype}")
        if instr.op == LinearOp.RANGE:
            depth += 1
    return "\n".join(lines)
