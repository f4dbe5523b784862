"""safe_save / safe_load against the `safetensors` package: identical bytes when writing, the
same values when reading each other's files, and malformed files rejected (by both) before any
tensor data is read."""
import json
import struct

import numpy as np
import pytest
import safetensors.numpy
import safetensors.torch
import torch

from tinylab import Tensor, dtypes
from tinylab.nn.safetensors_format import SafetensorsError
from tinylab.nn.state import safe_load, safe_load_metadata, safe_save

DTYPES = ["bool", "uint8", "int8", "int16", "uint16", "float16", "int32", "uint32", "float32",
          "float64", "int64", "uint64"]


def sample_arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    arrays = {f"{name}.values": (rng.standard_normal((3, 4)) * 50).astype(name)
              for name in DTYPES}
    arrays["bool.values"] = rng.random((3, 4)) > 0.5
    arrays["scalar"] = np.array(2.5, np.float32)
    arrays["empty"] = np.zeros((0, 5), np.float32)
    arrays["odd size"] = np.arange(3, dtype=np.uint8)  # misaligns what follows: still packed
    arrays["naïve ü"] = np.ones((2, 1, 2), np.float64)
    arrays['quote"back\\slash\n'] = np.arange(2, dtype=np.int16)
    return arrays


def _save_ours(arrays, path, metadata=None) -> bytes:
    safe_save({k: Tensor(v) for k, v in arrays.items()}, path, metadata)
    return path.read_bytes()


@pytest.mark.parametrize("metadata", [None, {"format": "pt"}])
def test_safe_save_writes_the_same_bytes_as_the_safetensors_package(tmp_path, metadata):
    arrays = sample_arrays()
    expected = safetensors.numpy.save(arrays, metadata=metadata)
    assert _save_ours(arrays, tmp_path / "ours.safetensors", metadata) == expected


def test_safe_save_of_nothing_matches_too(tmp_path):
    assert _save_ours({}, tmp_path / "empty.safetensors") == safetensors.numpy.save({})


def test_safe_load_reads_the_packages_files_exactly(tmp_path):
    arrays = sample_arrays()
    path = tmp_path / "theirs.safetensors"
    safetensors.numpy.save_file(arrays, path, metadata={"a": "1", "b": "two"})
    loaded = safe_load(path)
    header = json.loads(path.read_bytes()[8:8 + struct.unpack("<Q", path.read_bytes()[:8])[0]])
    header.pop("__metadata__")
    assert list(loaded) == sorted(header, key=lambda name: header[name]["data_offsets"])
    for name, array in arrays.items():
        assert loaded[name].numpy().dtype == array.dtype, name
        np.testing.assert_array_equal(loaded[name].numpy(), array, err_msg=name)
    assert safe_load_metadata(path) == {"a": "1", "b": "two"}
    assert set(safe_load(path.read_bytes())) == set(arrays)  # bytes work as well as paths


def test_the_package_reads_our_files_exactly(tmp_path):
    arrays = sample_arrays()
    path = tmp_path / "ours.safetensors"
    _save_ours(arrays, path, {"framework": "tinylab"})
    loaded = safetensors.numpy.load_file(path)
    for name, array in arrays.items():
        assert loaded[name].dtype == array.dtype
        np.testing.assert_array_equal(loaded[name], array, err_msg=name)
    with safetensors.safe_open(path, framework="np") as f:
        assert f.metadata() == {"framework": "tinylab"}


def test_bfloat16_from_torch_loads_as_bfloat16_bit_for_bit(tmp_path):
    values = torch.tensor([[1.5, -2.0, 3.140625], [1e30, -1e-30, 0.0]], dtype=torch.bfloat16)
    path = tmp_path / "bf16.safetensors"
    safetensors.torch.save_file({"w": values, "h": values.half()}, path)
    loaded = safe_load(path)
    assert loaded["w"].dtype.name == "bfloat16" and loaded["h"].dtype.name == "float16"
    np.testing.assert_array_equal(loaded["w"].numpy(), values.float().numpy())
    np.testing.assert_array_equal(loaded["w"].bitcast(dtypes.uint16).numpy(),
                                  values.view(torch.int16).numpy().view(np.uint16))
    safe_save({"w": loaded["w"]}, tmp_path / "back.safetensors")   # and back, bit for bit
    again = safetensors.torch.load_file(tmp_path / "back.safetensors")["w"]
    assert again.dtype == torch.bfloat16 and torch.equal(again.view(torch.int16),
                                                         values.view(torch.int16))


def test_bad_save_arguments_fail_early(tmp_path):
    with pytest.raises(TypeError, match="dict"):
        safe_save([Tensor([1.0])], tmp_path / "x")
    with pytest.raises(ValueError, match="__metadata__"):
        safe_save({"__metadata__": Tensor([1.0])}, tmp_path / "x")
    with pytest.raises(TypeError, match="not a Tensor"):
        safe_save({"a": np.zeros(2)}, tmp_path / "x")
    with pytest.raises(TypeError, match="metadata"):
        safe_save({"a": Tensor([1.0])}, tmp_path / "x", metadata={"n": 1})


# ---- malformed files: each is rejected by safe_load, naming the problem ----
def _file(header, data: bytes = b"", length: int | None = None) -> bytes:
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(text) if length is None else length) + text + data


F32_2 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
MALFORMED = {  # name: (file bytes, words in the error)
    "too_short": (b"\x08\x00\x00", "too short"),
    "header_past_end": (_file({"a": F32_2}, b"\0" * 8, length=500), "runs past the end"),
    "header_over_limit": (_file(b"{}", length=10 ** 9), "over the"),
    "not_utf8": (_file(b'{"\xff": 1}'), "not UTF-8"),
    "not_an_object": (_file(b"[1, 2]"), "starting with '{'"),
    "not_json": (_file(b'{"a": '), "not valid JSON"),
    "duplicate_keys": (_file(b'{"a": {}, "a": {}}'), "repeats the key"),
    "nan_constant": (_file(b'{"a": NaN}'), "NaN"),
    "deep_nesting": (_file(b"{" + b'"a":[' * 100000 + b"]" * 100000 + b"}"), "JSON"),
    "entry_not_object": (_file({"a": [1]}), "expected an object"),
    "missing_dtype": (_file({"a": {"shape": [2], "data_offsets": [0, 8]}}, b"\0" * 8),
                      "missing ['dtype']"),
    "unknown_dtype": (_file({"a": {**F32_2, "dtype": "F7"}}, b"\0" * 8), "'F7' is unknown"),
    "unsupported_dtype": (_file({"a": {**F32_2, "dtype": "F8_E4M3", "shape": [8]}}, b"\0" * 8),
                          "unsupported"),
    "negative_dim": (_file({"a": {**F32_2, "shape": [-2]}}, b"\0" * 8), "non-negative ints"),
    "bool_dim": (_file({"a": {**F32_2, "shape": [True, 2]}}, b"\0" * 8), "non-negative ints"),
    "float_offset": (_file({"a": {**F32_2, "data_offsets": [0, 8.0]}}, b"\0" * 8),
                     "data_offsets must be"),
    "three_offsets": (_file({"a": {**F32_2, "data_offsets": [0, 4, 8]}}, b"\0" * 8),
                      "data_offsets must be"),
    "size_mismatch": (_file({"a": {**F32_2, "shape": [3]}}, b"\0" * 8), "needs 12 bytes"),
    "offsets_past_data": (_file({"a": {**F32_2, "data_offsets": [0, 8]}}, b"\0" * 4),
                          "holds 4 bytes"),
    "huge_offsets": (_file({"a": {**F32_2, "shape": [2 ** 60],
                                  "data_offsets": [0, 2 ** 62]}}, b"\0" * 8), "cover"),
    "gap": (_file({"a": {**F32_2, "data_offsets": [4, 12]}}, b"\0" * 12), "should start at 0"),
    "overlap": (_file({"a": F32_2, "b": {**F32_2, "data_offsets": [4, 12]}}, b"\0" * 12),
                "should start at 8"),
    "trailing_data": (_file({"a": F32_2}, b"\0" * 16), "holds 16 bytes"),
    "bad_metadata": (_file({"__metadata__": {"a": 1}}), "__metadata__ must be"),
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_malformed_files_are_rejected_with_a_clear_error(name, tmp_path):
    data, words = MALFORMED[name]
    path = tmp_path / f"{name}.safetensors"
    path.write_bytes(data)
    with pytest.raises(SafetensorsError, match=words.replace("[", r"\[").replace("(", r"\(")):
        safe_load(path)
    with pytest.raises(ValueError):
        safe_load_metadata(data)
    if name not in ("duplicate_keys", "unsupported_dtype"):  # the package accepts these two
        with pytest.raises(Exception):  # noqa: B017 - the package's own error types
            safetensors.numpy.load(data)
