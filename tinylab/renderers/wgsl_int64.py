"""64-bit integers for WGSL, which has none: an int64 / uint64 is a vec2<u32> (low word, high
word) in registers and two u32 words in memory, and each op is a small WGSL function below, with
numpy's meaning (wrapping add/mul, truncating division with x/0 = 0, shifts past 63 give 0 or the
sign, float casts as numpy's (NaN to 0, out of range to INT64_MIN or 0), int->float rounded once
to nearest-even).
Called by renderers/wgsl.py for every op that reads or writes a 64-bit integer. Pure strings.
"""
from __future__ import annotations

from ..codegen.linear_ops import LinearOp
from ..dtype import DType

VEC = "vec2<u32>"
# marker in rendered text -> the WGSL function it needs (in dependency order)
HELPERS = {
    "tl_add64(": """fn tl_add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let low = a.x + b.x;
  return vec2<u32>(low, a.y + b.y + select(0u, 1u, low < a.x));
}
""",
    "tl_neg64(": """fn tl_neg64(a: vec2<u32>) -> vec2<u32> { return tl_add64(~a, vec2<u32>(1u, 0u)); }
""",
    "tl_mul64(": """fn tl_mulwide(a: u32, b: u32) -> vec2<u32> {
  let a0 = a & 0xffffu; let a1 = a >> 16u; let b0 = b & 0xffffu; let b1 = b >> 16u;
  let p00 = a0 * b0; let p01 = a0 * b1; let p10 = a1 * b0; let p11 = a1 * b1;
  let middle = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  return vec2<u32>((p00 & 0xffffu) | (middle << 16u),
                   p11 + (p01 >> 16u) + (p10 >> 16u) + (middle >> 16u));
}
fn tl_mul64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let low = tl_mulwide(a.x, b.x);
  return vec2<u32>(low.x, low.y + a.x * b.y + a.y * b.x);
}
""",
    "tl_lt64(": """fn tl_lt64(a: vec2<u32>, b: vec2<u32>, signed: bool) -> bool {
  let high = select(a.y < b.y, bitcast<i32>(a.y) < bitcast<i32>(b.y), signed);
  return high || (a.y == b.y && a.x < b.x);
}
""",
    "tl_shl64(": """fn tl_shl64(a: vec2<u32>, k: u32) -> vec2<u32> {
  if (k >= 64u) { return vec2<u32>(0u, 0u); }
  if (k >= 32u) { return vec2<u32>(0u, a.x << (k - 32u)); }
  if (k == 0u) { return a; }
  return vec2<u32>(a.x << k, (a.y << k) | (a.x >> (32u - k)));
}
""",
    "tl_shr64(": """fn tl_shr64(a: vec2<u32>, k: u32, signed: bool) -> vec2<u32> {
  let negative = signed && bitcast<i32>(a.y) < 0;
  let fill = select(0u, 0xffffffffu, negative);
  if (k >= 64u) { return vec2<u32>(fill, fill); }
  if (k >= 32u) {
    return vec2<u32>(select(a.y >> (k - 32u), u32(bitcast<i32>(a.y) >> (k - 32u)), signed), fill);
  }
  if (k == 0u) { return a; }
  let high = select(a.y >> k, u32(bitcast<i32>(a.y) >> k), signed);
  return vec2<u32>((a.x >> k) | (a.y << (32u - k)), high);
}
""",
    "tl_divmod64(": """fn tl_udivmod64(a: vec2<u32>, b: vec2<u32>) -> vec4<u32> {
  var q = vec2<u32>(0u, 0u);
  var r = vec2<u32>(0u, 0u);
  for (var i: i32 = 63; i >= 0; i--) {
    let word = select(a.x, a.y, i >= 32);
    r = vec2<u32>((r.x << 1u) | ((word >> (u32(i) % 32u)) & 1u), (r.y << 1u) | (r.x >> 31u));
    if (!tl_lt64(r, b, false)) {
      r = tl_add64(r, tl_neg64(b));
      if (i >= 32) { q.y = q.y | (1u << u32(i - 32)); } else { q.x = q.x | (1u << u32(i)); }
    }
  }
  return vec4<u32>(q, r);
}
fn tl_divmod64(a: vec2<u32>, b: vec2<u32>, signed: bool) -> vec4<u32> {
  if (all(b == vec2<u32>(0u, 0u))) { return vec4<u32>(0u, 0u, 0u, 0u); }
  let na = signed && bitcast<i32>(a.y) < 0;
  let nb = signed && bitcast<i32>(b.y) < 0;
  let qr = tl_udivmod64(select(a, tl_neg64(a), na), select(b, tl_neg64(b), nb));
  return vec4<u32>(select(qr.xy, tl_neg64(qr.xy), na != nb), select(qr.zw, tl_neg64(qr.zw), na));
}
""",
    "tl_f32_to_64(": """fn tl_f32_to_64(x: f32, signed: bool) -> vec2<u32> {
  let t = trunc(x);
  if (tl_isnan(x) || (!signed && t <= 0.0f)) { return vec2<u32>(0u, 0u); }
  // past the range: INT64_MIN, or 0 for uint64 (numpy's cast on x86, the oracle's)
  if (signed && !(abs(t) < 9.223372036854775808e18f)) { return vec2<u32>(0u, 0x80000000u); }
  if (!signed && t >= 1.8446744073709551616e19f) { return vec2<u32>(0u, 0u); }
  let m = abs(t);
  let high = floor(m / 4294967296.0f);
  let v = vec2<u32>(u32(m - high * 4294967296.0f), u32(high));
  return select(v, tl_neg64(v), t < 0.0f);
}
""",
    "tl_64_to_f32(": """fn tl_u64_to_f32(a: vec2<u32>) -> f32 {
  if (a.y == 0u && a.x < 0x1000000u) { return f32(a.x); }
  let s = select(countLeadingZeros(a.y), 32u + countLeadingZeros(a.x), a.y == 0u);
  let n = tl_shl64(a, s);
  let mantissa = n.y >> 8u;
  let rest = n.y & 0xffu;
  let up = rest > 0x80u || (rest == 0x80u && (n.x != 0u || (mantissa & 1u) == 1u));
  return ldexp(f32(mantissa + select(0u, 1u, up)), 40 - i32(s));
}
fn tl_64_to_f32(a: vec2<u32>, signed: bool) -> f32 {
  if (signed && bitcast<i32>(a.y) < 0) { return -tl_u64_to_f32(tl_neg64(a)); }
  return tl_u64_to_f32(a);
}
""",
}
# helpers a helper calls
NEEDS = {"tl_neg64(": ("tl_add64(",), "tl_divmod64(": ("tl_lt64(", "tl_neg64(", "tl_add64("),
         "tl_f32_to_64(": ("tl_neg64(", "tl_add64("), "tl_64_to_f32(": ("tl_shl64(", "tl_neg64(",
                                                                       "tl_add64(")}


def helpers(body: str) -> str:
    wanted = {marker for marker in HELPERS if marker in body}
    for marker in list(wanted):
        wanted.update(NEEDS.get(marker, ()))
    return "".join(text for marker, text in HELPERS.items() if marker in wanted)


def literal(value: int) -> str:
    bits = int(value) & (2 ** 64 - 1)
    return f"{VEC}({bits & 0xffffffff}u, {bits >> 32}u)"


def is_wide(dtype: DType) -> bool:
    return dtype.is_int and dtype.itemsize == 8


def alu(renderer, op: str, args: list[str], dtype: DType, src: DType) -> str:
    """An op with a 64-bit integer operand or result."""
    a = args[0]
    b = args[1] if len(args) > 1 else ""
    signed = "true" if not (src if is_wide(src) else dtype).is_unsigned else "false"
    if op == LinearOp.CAST:
        return cast(renderer, a, src, dtype)
    if op == LinearOp.BITCAST:   # int64 <-> uint64: the same words
        if is_wide(src) and is_wide(dtype):
            return a
        raise NotImplementedError(f"WGSLRenderer: BITCAST {src.name} -> {dtype.name}")
    table = {
        "ADD": f"tl_add64({a}, {b})", "MUL": f"tl_mul64({a}, {b})", "NEG": f"tl_neg64({a})",
        "AND": f"({a} & {b})", "OR": f"({a} | {b})", "XOR": f"({a} ^ {b})",
        "CMPLT": f"tl_lt64({a}, {b}, {signed})", "CMPNE": f"any({a} != {b})",
        "MAX": f"select({b}, {a}, tl_lt64({b}, {a}, {signed}))",
        "IDIV": f"tl_divmod64({a}, {b}, {signed}).xy", "MOD": f"tl_divmod64({a}, {b}, {signed}).zw",
        "SHL": f"tl_shl64({a}, {_amount(b)})", "SHR": f"tl_shr64({a}, {_amount(b)}, {signed})",
    }
    if op == LinearOp.WHERE:
        return f"select({args[2]}, {b}, {a})"
    if op not in table:
        raise NotImplementedError(f"WGSLRenderer cannot render {op} on {dtype.name}")
    return table[op]


def _amount(b: str) -> str:
    """A shift amount: the low word, or all ones (shift everything out) if the high word is set."""
    return f"select(0xffffffffu, {b}.x, {b}.y == 0u)"


def cast(renderer, a: str, src: DType, dst: DType) -> str:
    if is_wide(src) and is_wide(dst):
        return a
    if is_wide(dst):
        if src.is_float:
            return f"tl_f32_to_64(f32({a}), {'false' if dst.is_unsigned else 'true'})"
        if src.is_bool:
            return f"{VEC}(select(0u, 1u, {a}), 0u)"
        high = f"select(0u, 0xffffffffu, {a} < 0)" if not src.is_unsigned else "0u"
        return f"{VEC}(u32({a}), {high})"
    if dst.is_bool:
        return f"any({a} != {VEC}(0u, 0u))"
    if dst.is_float:
        value = f"tl_64_to_f32({a}, {'false' if src.is_unsigned else 'true'})"
        return f"tl_round_half({value})" if dst.itemsize == 2 else value
    narrow = f"{renderer.type_name(dst)}({a}.x)"   # wraps, as numpy's astype
    return renderer.wrap(narrow, dst)
