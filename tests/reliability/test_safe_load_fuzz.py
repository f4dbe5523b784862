"""Fuzzing nn.state.safe_load with malformed files: valid files written by the `safetensors`
package, then truncated, bit-flipped, given wrong header lengths, or with headers rebuilt from
random JSON (bad dtypes, shapes, offsets). safe_load must either return exactly what the package
reads or raise SafetensorsError (a ValueError); it never raises anything else and never accepts
a file the package rejects. Example count follows FUZZ_EXAMPLES like test_fuzz.py."""
import json
import os
import struct

import numpy as np
import safetensors.numpy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinylab.nn.safetensors_format import MAX_HEADER_BYTES, SafetensorsError
from tinylab.nn.state import safe_load

BOUNDED_EXAMPLES = 150
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", BOUNDED_EXAMPLES))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                derandomize=EXAMPLES <= BOUNDED_EXAMPLES,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
NUMPY_DTYPES = ["bool", "uint8", "int8", "int16", "uint16", "float16", "int32", "uint32",
                "float32", "float64", "int64", "uint64"]
CODES = ["BOOL", "U8", "I8", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "F64", "I64",
         "U64", "F8_E5M2", "F8_E4M3", "F128", "f32", "", "I4"]


@st.composite
def arrays(draw) -> dict[str, np.ndarray]:
    names = draw(st.lists(st.text(min_size=1, max_size=6), max_size=4, unique=True))
    out = {}
    for name in names:
        dtype = draw(st.sampled_from(NUMPY_DTYPES))
        shape = draw(st.lists(st.integers(0, 4), max_size=3))
        rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
        out[name] = rng.integers(0, 256, int(np.prod(shape)) * np.dtype(dtype).itemsize,
                                 dtype=np.uint8).view(dtype).reshape(shape)
    return out


def valid_file(tensors: dict[str, np.ndarray], metadata=None) -> bytes:
    return safetensors.numpy.save(tensors, metadata=metadata)


def package_reads(data: bytes):
    """What the safetensors package makes of these bytes (None: it rejects them)."""
    try:
        return safetensors.numpy.load(data)
    except Exception:  # noqa: BLE001 - the package raises several types; any means "rejected"
        return None


def check(data: bytes) -> None:
    """The property every input must satisfy."""
    try:
        ours = safe_load(data)
    except SafetensorsError:
        return
    theirs = package_reads(data)
    assert theirs is not None, "safe_load accepted a file the safetensors package rejects"
    assert set(ours) == set(theirs)
    for name, tensor in ours.items():
        got, expected = tensor.numpy(), theirs[name]
        assert got.shape == expected.shape, name
        if expected.dtype != got.dtype:  # only BF16 reads back as float32 values
            continue
        assert got.tobytes() == expected.tobytes(), name


@FUZZ
@given(arrays())
def test_valid_files_load_exactly(tensors):
    loaded = safe_load(valid_file(tensors))
    assert set(loaded) == set(tensors)
    for name, array in tensors.items():
        assert loaded[name].numpy().tobytes() == array.tobytes()
        assert loaded[name].shape == array.shape


@FUZZ
@given(arrays(), st.data())
def test_truncated_files(tensors, data):
    file = valid_file(tensors)
    cut = data.draw(st.integers(0, max(0, len(file) - 1)))
    check(file[:cut])


@FUZZ
@given(arrays(), st.data())
def test_flipped_bytes(tensors, data):
    file = bytearray(valid_file(tensors))
    for _ in range(data.draw(st.integers(1, 4))):
        where = data.draw(st.integers(0, len(file) - 1))
        file[where] = data.draw(st.integers(0, 255))
    check(bytes(file))


@FUZZ
@given(arrays(), st.one_of(st.integers(0, 2 ** 64 - 1), st.integers(-16, 16),
                           st.just(MAX_HEADER_BYTES), st.just(MAX_HEADER_BYTES + 1)))
def test_wrong_header_lengths(tensors, length):
    file = valid_file(tensors)
    real = struct.unpack("<Q", file[:8])[0]
    claimed = length if length >= 0 else max(0, real + length)
    check(struct.pack("<Q", claimed % 2 ** 64) + file[8:])


JSON = st.recursive(st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) |
                    st.floats(allow_nan=False) | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) |
                    st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=8)


@st.composite
def headers(draw) -> tuple[dict, bytes]:
    """A header of plausible-looking entries with random mistakes, and a data section."""
    header, position = {}, 0
    for index in range(draw(st.integers(0, 3))):
        code = draw(st.sampled_from(CODES))
        shape = draw(st.one_of(st.lists(st.integers(-2, 5), max_size=3), JSON))
        size = draw(st.integers(0, 40))
        begin = draw(st.sampled_from([position, position + 1, max(0, position - 1), 2 ** 63]))
        offsets = draw(st.one_of(st.just([begin, begin + size]), JSON))
        entry = {"dtype": code, "shape": shape, "data_offsets": offsets}
        for key in draw(st.sets(st.sampled_from(sorted(entry)), max_size=1)):
            del entry[key]
        header[f"t{index}"] = entry
        position = begin + size
    if draw(st.booleans()):
        header["__metadata__"] = draw(st.one_of(
            st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=2), JSON))
    data = bytes(draw(st.integers(0, 64)) * [7])
    return header, data


@FUZZ
@given(headers())
def test_random_headers(header_and_data):
    header, data = header_and_data
    text = json.dumps(header).encode()
    check(struct.pack("<Q", len(text)) + text + data)


@FUZZ
@given(st.binary(max_size=64), st.binary(max_size=64))
def test_random_bytes_after_a_plausible_length(header, data):
    check(struct.pack("<Q", len(header)) + header + data)


def test_nested_json_does_not_crash():
    for text in [b"{" + b'"a":[' * 100_000 + b"]" * 100_000 + b"}", b"{" * 50_000]:
        check(struct.pack("<Q", len(text)) + text)


def test_duplicate_keys_are_rejected():
    text = b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},' \
           b'"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'
    try:
        safe_load(struct.pack("<Q", len(text)) + text + b"\x00")
    except SafetensorsError as error:
        assert "repeats the key" in str(error)
    else:
        raise AssertionError("a header with a repeated key was accepted")


def test_from_a_file_too(tmp_path):
    path = tmp_path / "cut.safetensors"
    path.write_bytes(valid_file({"w": np.arange(6, dtype=np.float32)})[:-3])
    try:
        safe_load(path)
    except SafetensorsError as error:
        assert str(path) in str(error)
    else:
        raise AssertionError("a truncated file was accepted")
