"""Text of the helpers C kernels on native vector variables call (renderers/c.py's walk): a scalar
broadcast, a lane select, masked vector loads and stores (the ISA's where the target has them), lanes
a step apart read and written in a loop, and EXP2 / LOG2 / SQRT on float32 lanes written with vector
ops. Pure string building.
"""
from __future__ import annotations

from types import MappingProxyType

from ..codegen.linear_ops import LinearOp


def broadcast(value: str, t: str) -> str:
    """A scalar in every lane. `x - 0` is x for every float (-0 and NaN too), so the compiler
    folds it into one broadcast (often a broadcast memory operand); `0 + x` is not (-0 + 0 = +0)
    and costs an add and a register."""
    operand = value if value.replace("_", "").replace(".", "").isalnum() else f"({value})"
    return f"({operand}-({t}){{}})"


def select(mask: str, a: str, b: str, t: str, mask_type: str) -> str:
    """Lanes of a where mask is set, else lanes of b (bitwise, so NaN payloads pass)."""
    if t.startswith("int"):
        return f"(({mask}&{a})|(~{mask}&{b}))"
    return f"(({t})(({mask}&(({mask_type}){a}))|(~{mask}&(({mask_type}){b}))))"


# x86 masked loads that never touch memory in masked-off lanes, by (element type, lanes)
_MASKED_LOAD = MappingProxyType({
    ("float", 16): ("__AVX512F__", "(float16)_mm512_maskz_loadu_ps(_mm512_cmpneq_epi32_mask("
                    "(__m512i)m, _mm512_setzero_si512()), p)"),
    ("float", 8): ("__AVX__", "(float8)_mm256_maskload_ps(p, (__m256i)m)"),
    ("float", 4): ("__AVX__", "(float4)_mm_maskload_ps(p, (__m128i)m)"),
    ("int", 16): ("__AVX512F__", "(int16)_mm512_maskz_loadu_epi32(_mm512_cmpneq_epi32_mask("
                  "(__m512i)m, _mm512_setzero_si512()), p)"),
    ("int", 8): ("__AVX2__", "(int8)_mm256_maskload_epi32(p, (__m256i)m)"),
    ("int", 4): ("__AVX2__", "(int4)_mm_maskload_epi32(p, (__m128i)m)"),
})


_MASKED_STORE = MappingProxyType({
    ("float", 16): ("__AVX512F__", "_mm512_mask_storeu_ps(p, _mm512_cmpneq_epi32_mask("
                    "(__m512i)m, _mm512_setzero_si512()), (__m512)v)"),
    ("float", 8): ("__AVX__", "_mm256_maskstore_ps(p, (__m256i)m, (__m256)v)"),
    ("float", 4): ("__AVX__", "_mm_maskstore_ps(p, (__m128i)m, (__m128)v)"),
    ("int", 16): ("__AVX512F__", "_mm512_mask_storeu_epi32(p, _mm512_cmpneq_epi32_mask("
                  "(__m512i)m, _mm512_setzero_si512()), (__m512i)v)"),
    ("int", 8): ("__AVX2__", "_mm256_maskstore_epi32(p, (__m256i)m, (__m256i)v)"),
    ("int", 4): ("__AVX2__", "_mm_maskstore_epi32(p, (__m128i)m, (__m128i)v)"),
})


def masked_store_helper(name: str, t: str, m: str, base: str, lanes: int, features) -> str:
    """The ISA's masked store where it has one; else a store per valid lane (a whole-vector
    blend would write back lanes another thread may own)."""
    guard, body = _MASKED_STORE.get((base, lanes), (None, None))
    if guard not in features:
        body = f"for (int l = 0; l < {lanes}; l++) if (m[l]) p[l] = v[l]"
    return f"static inline void {name}({base}* p, {m} m, {t} v) {{\n  {body};\n}}\n"


def spaced_helper(name: str, t: str, base: str, lanes: int, store: bool) -> str:
    """Lanes `step` elements apart (a vector along a strided axis), read or written in a loop over
    the lanes. Out of line (noinline): a unit holds one such loop, not one per vector, because gcc
    runs its loop passes over every loop it sees (a conv's weight gradient tile reads and writes
    24 such vectors; the CNN step's unit built in a fifth more CPU with the loops inline). A
    kernel calls it once per tile, never in a reduce loop."""
    head = "__attribute__((noinline)) static "
    if store:
        return (f"{head}void {name}({base}* p, int step, {t} v) {{\n"
                f"  for (int lane = 0; lane < {lanes}; lane++) p[lane*step] = v[lane];\n}}\n")
    return (f"{head}{t} {name}(const {base}* p, int step) {{\n  {t} v;\n"
            f"  for (int lane = 0; lane < {lanes}; lane++) v[lane] = p[lane*step];\n"
            f"  return v;\n}}\n")


def masked_load_helper(name: str, t: str, tu: str, m: str, base: str, lanes: int,
                        features) -> str:
    """The ISA's masked load where it has one. Elsewhere: when the whole vector lies inside the
    buffer (nearly always), one unaligned load and a lane select; at the buffer's edges, only
    the valid lanes are read."""
    head = f"static inline {t} {name}(const {base}* b, long i, long n, {m} m) {{\n" \
           f"  const {base}* p = b + i;\n"
    guard, body = _MASKED_LOAD.get((base, lanes), (None, None))
    if guard in features:
        return head + f"  return {body};\n}}\n"
    return head + (f"  if (i >= 0 && i + {lanes} <= n) return ({t})(m & ({m})*(const {tu}*)p);\n"
                   f"  {t} r = {{}};\n  for (int l = 0; l < {lanes}; l++) if (m[l]) r[l] = p[l];\n"
                   f"  return r;\n}}\n")


# 2^f on [-1/2, 1/2]: the Taylor coefficients ln2^k / k!, k = 1..7 (error below float rounding)
_EXP2_COEFFS = ("1.525273380405984e-05f", "1.540353039338161e-04f", "1.333355814642844e-03f",
                "9.618129107628477e-03f", "5.550410866482158e-02f", "2.402265069591007e-01f",
                "6.931471805599453e-01f", "1.0f")
# ln(m) = 2 atanh(s), s = (m-1)/(m+1): odd series 2/(2k+1) s^(2k+1), k = 0..5
_LOG_COEFFS = ("0.18181818181818182f", "0.2222222222222222f", "0.2857142857142857f",
               "0.4f", "0.6666666666666666f", "2.0f")
_SQRT = MappingProxyType({16: ("__AVX512F__", "_mm512_sqrt_ps((__m512)x)"),
                          8: ("__AVX__", "_mm256_sqrt_ps((__m256)x)"),
                          4: ("__SSE__", "_mm_sqrt_ps((__m128)x)")})


def _horner(coeffs, x: str) -> str:
    text = coeffs[0]
    for c in coeffs[1:]:
        text = f"({text}*{x}+{c})"
    return text


def vector_math(op: str, name: str, t: str, m: str, lanes: int, features) -> str:
    """A vector helper for EXP2 / LOG2 / SQRT on float32 lanes, written with vector ops only
    (SQRT: the ISA's instruction where the target has it, else sqrtf per lane)."""
    head = f"static inline {t} {name}({t} x) {{\n"
    if op == LinearOp.SQRT:
        guard, body = _SQRT.get(lanes, (None, None))
        if guard not in features:
            return head + (f"  {t} r; for (int l = 0; l < {lanes}; l++) r[l] = sqrtf(x[l]);\n"
                           f"  return r;\n}}\n")
        return head + f"  return ({t}){body};\n}}\n"
    if op == LinearOp.EXP2:
        clamped_high = select("(x > 128.0f)", f"(({t}){{}}+128.0f)", "x", t, m)
        clamped = select("(c < -150.0f)", f"(({t}){{}}-150.0f)", "c", t, m)
        return head + (
            f"  {m} nan = x != x;\n"
            f"  {t} c = {clamped_high};\n  c = {clamped};\n"
            f"  {t} n = (c + 12582912.0f) - 12582912.0f;  /* round to nearest */\n"
            f"  {t} f = c - n;\n"
            f"  {t} p = {_horner(_EXP2_COEFFS, 'f')};\n"
            f"  {m} k = __builtin_convertvector(n, {m}); {m} a = k >> 1, b = k - a;\n"
            f"  {t} r = p * ({t})((a + 127) << 23) * ({t})((b + 127) << 23);\n"
            f"  return {select('nan', 'x', 'r', t, m)};\n}}\n")
    return head + (  # LOG2
        f"  {m} tiny = x < 1.17549435e-38f;  /* subnormals: scale up by 2^23 first */\n"
        f"  {t} y = ({t})((tiny & ({m})(x * 8388608.0f)) | (~tiny & ({m})x));\n"
        f"  {m} bits = ({m})y;\n"
        f"  {m} e = ((bits >> 23) & 255) - 127 - (tiny & 23);\n"
        f"  {t} mant = ({t})((bits & 8388607) | 1065353216);\n"
        f"  {m} big = mant > 1.41421356f;\n"
        f"  mant = ({t})((big & ({m})(mant * 0.5f)) | (~big & ({m})mant)); e = e - big;\n"
        f"  {t} s = (mant - 1.0f) / (mant + 1.0f), s2 = s * s;\n"
        f"  {t} ln = s * {_horner(_LOG_COEFFS, 's2')};\n"
        f"  {t} r = __builtin_convertvector(e, {t}) + ln * 1.4426950408889634f;\n"
        f"  {t} inf = ({t}){{}} + INFINITY, ninf = -inf, qnan = ({t}){{}} + NAN;\n"
        f"  r = ({t})(((x == inf) & ({m})inf) | (~(x == inf) & ({m})r));\n"
        f"  r = ({t})(((x == 0.0f) & ({m})ninf) | (~(x == 0.0f) & ({m})r));\n"
        f"  {m} bad = (x < 0.0f) | (x != x);\n"
        f"  return ({t})((bad & ({m})qnan) | (~bad & ({m})r));\n}}\n")
