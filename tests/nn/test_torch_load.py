"""torch_load against files written by torch.save: every dtype, views with strides and offsets,
nested containers; a torch model's state dict drives our layers to torch's outputs. Malicious
or malformed files are refused before any code from them runs."""
import io
import struct
import zipfile

import numpy as np
import pytest
import torch

from tinylab import Tensor, nn
from tinylab.nn.state import UnsafePickleError, load_state_dict, torch_load
from tinylab.nn.torch_format import TorchFileError


def _numpy(value: torch.Tensor) -> np.ndarray:
    return (value.float() if value.dtype == torch.bfloat16 else value).numpy()


def test_every_dtype_and_layout_loads_exactly(tmp_path):
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    tensors = {
        "float32": torch.randn(3, 4), "float64": torch.randn(2, dtype=torch.float64),
        "float16": torch.randn(5).half(), "bfloat16": torch.tensor([1.5, -3.0e20, 0.007812]),
        "int64": torch.tensor([-(2 ** 40), 7]), "int32": torch.tensor([1, -2], dtype=torch.int32),
        "int16": torch.tensor([-300], dtype=torch.int16), "int8": torch.tensor([-5, 5],
                                                                               dtype=torch.int8),
        "uint8": torch.tensor([0, 255], dtype=torch.uint8), "bool": torch.tensor([True, False]),
        "uint16": torch.tensor([65535, 1], dtype=torch.uint16),  # saved with _rebuild_tensor_v3
        "uint32": torch.tensor([2 ** 32 - 1], dtype=torch.uint32),
        "transposed": base.t(), "strided_view": base[1:, ::2], "offset_view": base[2],
        "scalar": torch.tensor(3.25), "empty": torch.zeros(0, 3),
        "expanded": torch.tensor([1.0, 2.0]).expand(3, 2),
    }
    tensors["bfloat16"] = tensors["bfloat16"].bfloat16()
    path = tmp_path / "tensors.pth"
    torch.save(tensors, path)
    loaded = torch_load(path)
    assert list(loaded) == list(tensors)
    for name, value in tensors.items():
        got = loaded[name].numpy()
        assert got.shape == tuple(value.shape), name
        assert got.dtype == _numpy(value).dtype, name
        np.testing.assert_array_equal(got, _numpy(value), err_msg=name)


def test_nested_containers_parameters_and_bare_tensors(tmp_path):
    checkpoint = {"model": {"w": torch.ones(2)}, "epoch": 3, "lr": 0.5, "tags": ["a", ("b", 1)],
                  "flags": {True, None}, "param": torch.nn.Parameter(torch.full((2,), 4.0))}
    torch.save(checkpoint, tmp_path / "checkpoint.pt")
    loaded = torch_load(tmp_path / "checkpoint.pt")
    assert loaded["epoch"] == 3 and loaded["lr"] == 0.5 and loaded["tags"] == ["a", ("b", 1)]
    assert loaded["flags"] == {True, None}
    np.testing.assert_array_equal(loaded["model"]["w"].numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(loaded["param"].numpy(), [4.0, 4.0])
    torch.save(torch.arange(3), tmp_path / "bare.pt")
    np.testing.assert_array_equal(torch_load(tmp_path / "bare.pt").numpy(), [0, 1, 2])


class SmallNet:
    """Names match torch.nn.Sequential(Conv2d, BatchNorm2d, ReLU, Flatten, Linear)."""

    def __init__(self):
        self.layers = {"0": nn.Conv2d(1, 4, 3), "1": nn.BatchNorm2d(4), "4": nn.Linear(36, 5)}

    def __call__(self, x):
        x = self.layers["1"](self.layers["0"](x)).relu()
        return self.layers["4"](x.flatten(1))


def test_a_torch_models_state_dict_drives_our_layers_to_its_outputs(tmp_path):
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.BatchNorm2d(4),
                                 torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(36, 5))
    with torch.no_grad():
        theirs(torch.randn(8, 1, 5, 5) * 3)  # moves the running stats away from 0 and 1
    theirs.train(True)
    theirs(torch.randn(8, 1, 5, 5) * 3)
    theirs.eval()
    torch.save(theirs.state_dict(), tmp_path / "net.pth")
    ours = SmallNet()
    state = {f"layers.{k}": v for k, v in torch_load(tmp_path / "net.pth").items()}
    load_state_dict(ours, state)
    assert ours.layers["1"].num_batches_tracked.item() == 2
    x = np.random.default_rng(0).standard_normal((2, 1, 5, 5)).astype(np.float32)
    np.testing.assert_allclose(ours(Tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-5)


# ---- refused: arbitrary objects, wrong formats, tensors that do not fit their storage ----
def _zip(pickle_bytes: bytes, storages: dict[str, bytes] | None = None) -> io.BytesIO:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("archive/data.pkl", pickle_bytes)
        archive.writestr("archive/byteorder", "little")
        for key, data in (storages or {}).items():
            archive.writestr(f"archive/data/{key}", data)
    out.seek(0)
    return out


def _text(value: str) -> bytes:  # BINUNICODE
    return b"X" + struct.pack("<I", len(value.encode())) + value.encode()


def _int(value: int) -> bytes:  # BININT
    return b"J" + struct.pack("<i", value)


def _tuple(*items: bytes) -> bytes:  # MARK items TUPLE
    return b"(" + b"".join(items) + b"t"


def tensor_pickle(size, stride, offset=0, numel=4) -> bytes:
    """_rebuild_tensor_v2(storage 0 (FloatStorage, numel), offset, size, stride, False, {})."""
    storage = _tuple(_text("storage"), b"ctorch\nFloatStorage\n", _text("0"), _text("cpu"),
                     _int(numel)) + b"Q"
    arguments = _tuple(storage, _int(offset), _tuple(*map(_int, size)),
                       _tuple(*map(_int, stride)), b"\x89", b"}")
    return b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n" + arguments + b"R."


def test_a_handcrafted_tensor_pickle_loads():
    data = np.arange(4, dtype="<f4").tobytes()
    loaded = torch_load(_zip(tensor_pickle((2, 2), (1, 2)), {"0": data}))
    np.testing.assert_array_equal(loaded.numpy(), [[0.0, 2.0], [1.0, 3.0]])


@pytest.mark.parametrize("size, stride, offset, numel, words", [
    ((2, 2), (2, 1), 1, 4, "reads element 4 of only 4"),
    ((5,), (1,), 0, 4, "reads element 4"),
    ((2,), (-1,), 0, 4, "non-negative"),
    ((2,), (1, 1), 0, 4, "differ in length"),
    ((2,), (1,), 0, 9, "should hold 9 float32 elements"),
])
def test_tensors_that_do_not_fit_their_storage_are_refused(size, stride, offset, numel, words):
    data = np.arange(4, dtype="<f4").tobytes()
    with pytest.raises(TorchFileError, match=words):
        torch_load(_zip(tensor_pickle(size, stride, offset, numel), {"0": data}))


@pytest.mark.parametrize("module, name", [("os", "system"), ("builtins", "eval"),
                                          ("subprocess", "call"), ("torch", "load"),
                                          ("numpy.core.multiarray", "_reconstruct")])
def test_a_malicious_pickle_is_refused_before_anything_runs(tmp_path, module, name):
    marker = tmp_path / "pwned"
    payload = f"import pathlib; pathlib.Path({str(marker)!r}).touch()"
    argument = f"touch {marker}" if name in ("system", "call") else payload
    evil = b"\x80\x02" + f"c{module}\n{name}\n".encode() + _tuple(_text(argument)) + b"R."
    with pytest.raises(UnsafePickleError, match=f"{module}.{name}"):
        torch_load(_zip(evil))
    assert not marker.exists()


def test_whole_pickled_models_are_refused_with_a_hint(tmp_path):
    torch.save(torch.nn.Linear(2, 2), tmp_path / "model.pt")
    with pytest.raises(UnsafePickleError, match="save model.state_dict"):
        torch_load(tmp_path / "model.pt")


def test_legacy_and_foreign_files_are_refused_clearly(tmp_path):
    legacy = tmp_path / "legacy.pt"
    torch.save({"w": torch.ones(2)}, legacy, _use_new_zipfile_serialization=False)
    with pytest.raises(TorchFileError, match="only the zip format"):
        torch_load(legacy)
    with pytest.raises(TorchFileError, match="not a torch.save checkpoint"):
        torch_load(_foreign_zip())
    with pytest.raises(TorchFileError, match="storage '0' is missing"):
        torch_load(_zip(tensor_pickle((2,), (1,))))
    with pytest.raises(TorchFileError, match="malformed pickle"):
        torch_load(_zip(b"\x80\x02(t"))


def _foreign_zip() -> io.BytesIO:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("notes.txt", "hello")
    out.seek(0)
    return out
