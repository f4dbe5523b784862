"""Provenance to the line: which IR nodes each line of a kernel's generated source computes.

`mapped_source(record)` reads a CompileRecord (engine/compile_record.py: source line ->
instruction -> the plan's AST node -> the kernel AST node, numbered by the kernel AST's toposort);
nothing is planned or rendered again. `kernel_ast_nodes(item, ast, node_ids)` maps those kernel
AST nodes back to the lazy graph's nodes (model ids), whose user lines the Trace recorded.
`align(...)` lines up the sources of several languages where their loops and nodes agree.
Called by sources.py and model.py.
"""
from __future__ import annotations

from ..codegen.linear_ops import LinearOp
from ..ir.node import Node
from ..ir.ops import MOVEMENT, Op

ALIGNED_LANGUAGES = ("C", "OpenCL", "CUDA")
MAX_ALIGN_CELLS = 600_000   # longest-common-subsequence table size; larger sources stay unaligned
PASS_THROUGH = frozenset(MOVEMENT | {Op.DETACH, Op.CONTIGUOUS})


def mapped_source(record) -> dict | None:
    """{"text", "lines": [[kernel AST indices] per line], "keys": [...]} for a compile record's
    source; None when its renderer kept no line map (not recorded for this backend)."""
    if record.line_owners is None or record.program.origins is None:
        return None
    program, text, ast = record.program, record.source, record.ast
    index = {node: i for i, node in enumerate(ast.toposort())}
    to_kernel = _plan_to_kernel_ast(record)
    lines, keys = [], []
    for number, owner in enumerate(record.line_owners):
        found = set()
        if owner is not None:
            for node in program.origins[owner]:
                found |= {index[k] for k in to_kernel.get(node, ()) if k in index}
        lines.append(sorted(found))
        keys.append(_line_key(program, owner, found, text, number))
    return {"text": text, "lines": lines, "keys": keys}


def _line_key(program, owner, found, text: str, number: int) -> str:
    """What a line stands for, comparable across languages: a loop, a loop's end, the nodes it
    computes, or (for lines no instruction wrote) its own text."""
    if owner is None:
        return "text:" + text.splitlines()[number].strip()
    instr = program.instrs[owner]
    if instr.op == LinearOp.RANGE:
        return "range:" + instr.arg[0]
    if instr.op == LinearOp.END:
        return "end"
    return f"{instr.op}:" + ",".join(map(str, sorted(found)))


def _plan_to_kernel_ast(record) -> dict:
    """The linearized plan's AST node -> the kernel AST nodes it stands for, from the
    decomposition the record kept."""
    ast, decomposed = record.ast, record.decomposed
    replaced = {}
    for old, new in record.decompose_memo.items():
        replaced.setdefault(new, set()).add(old)
    if decomposed is ast:
        replaced = {node: {node} for node in ast.toposort()}
    plan_ast = record.linearized.ast
    to_decomposed = correspond(decomposed, plan_ast)
    direct = {}
    for node, olds in to_decomposed.items():
        direct[node] = set().union(*(replaced.get(old, set()) for old in olds))
    return inherit(plan_ast, {k: v for k, v in direct.items() if v})


def correspond(old_root: Node, new_root: Node, skip=None) -> dict:
    """new node -> {old nodes} for two trees of the same structure (a rebuild that changed views,
    shapes or constants), walked in step while ops agree; `skip(old)` passes over old nodes the
    rebuild dropped. Where ops differ the new subtree inherits its parent's old node."""
    pairs: dict = {}
    stack, seen = [(old_root, new_root)], set()
    while stack:
        old, new = stack.pop()
        if skip is not None:
            old = skip(old)
        if (id(old), id(new)) in seen:
            continue
        seen.add((id(old), id(new)))
        pairs.setdefault(new, set()).add(old)
        if old.op is new.op and len(old.src) == len(new.src):
            stack.extend(zip(old.src, new.src))
        elif new.op is Op.WHERE and new.src[0].op is Op.VALID and old.op is not Op.WHERE:
            stack.append((old, new.src[1]))   # a padded value masked by the lowering
    return inherit(new_root, pairs)


def inherit(root: Node, direct: dict) -> dict:
    """Every node under `root` -> its own entry in `direct`, else its users' entries (nodes a
    rewrite added belong to the node they help compute)."""
    users: dict = {}
    order = root.toposort()
    for node in order:
        for src in node.src:
            users.setdefault(src, []).append(node)
    out: dict = {}
    for node in reversed(order):
        if node in direct:
            out[node] = direct[node]
        else:
            found = set()
            for user in users.get(node, ()):
                found |= out.get(user, set())
            if found:
                out[node] = found
    return out


def kernel_ast_nodes(item, ast: Node, node_ids: dict) -> list[list[str]]:
    """Per kernel AST node (toposort order): the lazy-graph node ids (model "n<i>") it computes,
    found by walking the scheduled region from its output beside the kernel AST."""
    fused = set(item.fused)

    def skip(node: Node) -> Node:
        while node in fused and (node.op in PASS_THROUGH or node.op is Op.ASSIGN):
            node = node.src[-1] if node.op is Op.ASSIGN else node.src[0]
        return node

    pairs: dict = {}
    for store in ast.src:
        pairs.update(correspond(item.output, store.src[0], skip))
        pairs[store] = {skip(item.output)}
    out = []
    for node in ast.toposort():
        ids = {node_ids[lazy] for lazy in pairs.get(node, ()) if lazy in node_ids}
        if node.op in (Op.CONST, Op.VALID):
            ids = set()    # constants and masks are not drawn
        out.append(sorted(ids, key=lambda i: int(i[1:])))
    return out


def align(sources: dict) -> dict:
    """{"languages": [...], "rows": [[line number or None per language]]}: the lines of each
    language's source in rows, lines with the same key (loop, nodes) side by side."""
    languages = [lang for lang in ALIGNED_LANGUAGES if lang in sources]
    if not languages:
        return {"languages": [], "rows": [], "header_rows": 0}
    starts = [_signature_line(sources[language]["keys"]) for language in languages]
    all_keys = []
    for language, start in zip(languages, starts):   # signatures side by side too
        keys = list(sources[language]["keys"])
        keys[start:start + 1] = ["signature"] * min(1, len(keys))
        all_keys.append(keys)
    rows = [[number] for number in range(len(all_keys[0]))]
    row_keys = list(all_keys[0])
    for column in range(1, len(languages)):
        keys = all_keys[column]
        matches = _common(row_keys, keys)
        merged, merged_keys, i, j = [], [], 0, 0
        for a, b in matches + [(len(rows), len(keys))]:
            while i < a:
                merged.append(rows[i] + [None]); merged_keys.append(row_keys[i]); i += 1
            while j < b:
                merged.append([None] * column + [j]); merged_keys.append(keys[j]); j += 1
            if a < len(rows):
                merged.append(rows[a] + [b]); merged_keys.append(row_keys[a]); i, j = a + 1, b + 1
        rows, row_keys = merged, merged_keys
    header = 0
    while header < len(rows) and all(line is None or line < start
                                     for line, start in zip(rows[header], starts)):
        header += 1
    return {"languages": languages, "rows": rows, "header_rows": header}


def _signature_line(keys: list[str]) -> int:
    """The kernel's signature line: the one before the first line an instruction wrote (lines
    above it are includes, typedefs and helper functions)."""
    first = next((i for i, key in enumerate(keys) if not key.startswith("text:")), len(keys))
    return max(first - 1, 0)


def _common(a: list, b: list) -> list[tuple[int, int]]:
    """Index pairs of a longest common subsequence of a and b (none when too large)."""
    if len(a) * len(b) > MAX_ALIGN_CELLS:
        return []
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) - 1, -1, -1):
        row, below = table[i], table[i + 1]
        for j in range(len(b) - 1, -1, -1):
            row[j] = below[j + 1] + 1 if a[i] == b[j] else max(below[j], row[j + 1])
    pairs, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        if a[i] == b[j]:
            pairs.append((i, j)); i += 1; j += 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


# ---- labels for the static renderings (text.py gutter, html.py gutter) ---------------------------
GUTTER_WIDTH = 40


def user_location(line: str) -> str:
    """'line 6' for a notebook cell's line, 'train.py:6' for a script's (from 'file:6  code')."""
    location = line.partition("  ")[0]
    filename, _, number = location.rpartition(":")
    if not filename:
        return location
    cell = filename.startswith("<") or filename[:-3].isdigit()
    return f"line {number}" if cell else location


def user_code(line: str) -> str:
    """'line 3  hidden = (a @ a.T).relu()' (a script's 'train.py:3  ...') from 'file:3  code':
    where, and the code itself."""
    code = line.partition("  ")[2]
    return f"{user_location(line)}  {code}" if code else user_location(line)


def kernel_user_lines(model: dict, kernel: dict) -> list[str]:
    """The lines of the user's code (location and text) that built the ops this kernel fuses,
    in graph order, each once; a line of a compiled PyTorch model names the ATen ops it became
    ('line 9  y = h.relu() * 2  [aten: relu, mul]')."""
    nodes = {n["id"]: n for n in model["nodes"]}
    found = (nodes[i] for i in kernel.get("fused", ()) if i in nodes)
    origins: dict = {}
    for n in found:
        if n["line"] and n["role"] != "input":
            names = origins.setdefault(user_code(n["line"]), {})
            if n.get("origin"):
                names[n["origin"]] = True
    return [f"{code}  [aten: {', '.join(names)}]" if names else code
            for code, names in origins.items()]


def gutter_labels(model: dict, kernel: dict, language: str) -> list[str] | None:
    """Per source line: the ops it computes and the user lines that built them, e.g.
    'EXP2 MUL ← line 6' (None when the kernel has no line map for `language`)."""
    program = model["programs"].get(kernel["name"])
    if program is None or language not in program.get("lines", {}) or "ast_nodes" not in kernel:
        return None
    nodes = {n["id"]: n for n in model["nodes"]}
    labels = []
    for indices in program["lines"][language]:
        ids = sorted({n for i in indices for n in kernel["ast_nodes"][i]}, key=lambda i: int(i[1:]))
        ops = " ".join(dict.fromkeys(_op_label(nodes[i]) for i in ids))
        users = ", ".join(dict.fromkeys(user_location(nodes[i]["line"]) for i in ids
                                        if nodes[i]["line"] and nodes[i]["role"] != "input"))
        label = f"{ops} ← {users}" if users else ops
        labels.append(label if len(label) <= GUTTER_WIDTH else label[:GUTTER_WIDTH - 1] + "…")
    return labels


def _op_label(node: dict) -> str:
    return "input" if node["role"] == "input" else node["op"]


def annotated_source(model: dict, kernel_id: str = "k0", language: str | None = None) -> str:
    """One kernel's source with the provenance gutter (what `to_text(source=True)` prints):
    `print(annotated_source(build_model(trace)))`."""
    kernel = next(k for k in model["kernels"] if k["id"] == kernel_id)
    program = model["programs"][kernel["name"]]
    language = language or program["language"]
    source = program["sources"][language].splitlines()
    gutter = gutter_labels(model, kernel, language) or [""] * len(source)
    return "\n".join(f"{label:<{GUTTER_WIDTH}} | {line}".rstrip()
                     for label, line in zip(gutter, source))
