"""The IDX reader and nn.datasets.mnist on small IDX files the tests write (gzip and raw); the
download path is exercised with a fake urlopen: the network is never used."""
import dataclasses
import functools
import gzip
import hashlib
import http.server
import io
import struct
import threading
import urllib.error

import numpy as np
import pytest

from tinylab import Context
from tinylab.engine import progress
from tinylab.nn import datasets
from tinylab.nn.idx import IDXError, read_idx

TYPE_CODES = {"uint8": 0x08, "int8": 0x09, "int16": 0x0B, "int32": 0x0C, "float32": 0x0D,
              "float64": 0x0E}


def idx_bytes(array: np.ndarray) -> bytes:
    """The IDX encoding, written independently of the reader: magic, big-endian dims and data."""
    header = bytes([0, 0, TYPE_CODES[array.dtype.name], array.ndim])
    dims = struct.pack(f">{array.ndim}I", *array.shape)
    return header + dims + array.astype(array.dtype.newbyteorder(">")).tobytes()


def write_idx(path, array, compress: bool):
    data = idx_bytes(array)
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


# ---- read_idx ----
@pytest.mark.parametrize("dtype", list(TYPE_CODES))
@pytest.mark.parametrize("compress", [False, True])
def test_read_idx_round_trips_every_element_type(tmp_path, dtype, compress):
    array = (np.random.default_rng(0).standard_normal((3, 4, 2)) * 100).astype(dtype)
    got = read_idx(write_idx(tmp_path / "x.idx", array, compress))
    assert got.dtype == array.dtype and got.dtype.isnative
    np.testing.assert_array_equal(got, array)


GOOD = idx_bytes(np.arange(6, dtype=np.uint8).reshape(2, 3))
BAD_IDX = {  # name: (file bytes, words in the error)
    "bad_magic": (b"\x01\x00" + GOOD[2:], "two zero bytes"),
    "unknown_type": (b"\x00\x00\x07\x02" + GOOD[4:], "unknown IDX element type 0x07"),
    "no_dims": (b"\x00\x00\x08\x00", "at least one dimension"),
    "short_magic": (b"\x00\x00", "inside the magic number"),
    "truncated_dims": (GOOD[:9], "inside the dimension sizes"),
    "truncated_data": (GOOD[:-1], "5 of 6 bytes"),
    "trailing_bytes": (GOOD + b"\x00", "unexpected bytes after the data"),
    "over_limit": (b"\x00\x00\x0e\x02" + struct.pack(">II", 2 ** 31, 2 ** 31), "over the"),
    "corrupt_gzip": (gzip.compress(GOOD)[:-12], "corrupt gzip"),
}


@pytest.mark.parametrize("name", list(BAD_IDX))
def test_read_idx_rejects_malformed_files(tmp_path, name):
    data, words = BAD_IDX[name]
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(IDXError, match=words):
        read_idx(path)
    if name != "corrupt_gzip":  # the same checks apply inside a gzip stream
        path.write_bytes(gzip.compress(data))
        with pytest.raises(IDXError, match=words):
            read_idx(path)


# ---- mnist() from local folders ----
def fake_mnist(rng, count: int) -> tuple[np.ndarray, np.ndarray]:
    return (rng.integers(0, 256, (count, 28, 28), dtype=np.uint8),
            rng.integers(0, 10, count, dtype=np.uint8))


def write_dataset(folder, seed: int = 0, train: int = 5, test: int = 3, compress=(True, False)):
    """Four IDX files in folder (train gzip, test raw by default); returns the arrays."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    arrays = [*fake_mnist(rng, train), *fake_mnist(rng, test)]
    for index, (name, array) in enumerate(zip(datasets.FILES, arrays)):
        gz = compress[index // 2]
        write_idx(folder / (name + (".gz" if gz else "")), array, gz)
    return arrays


REAL_URLOPEN = datasets.urlopen


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """No system folders, an empty cache, no network: only what a test writes is found."""
    monkeypatch.setattr(datasets, "SYSTEM_DIRS", [tmp_path / "system"])

    def offline(url, timeout=None):
        raise urllib.error.URLError("network is unreachable (test)")
    monkeypatch.setattr(datasets, "urlopen", offline)
    with Context(TINYLAB_DATA=str(tmp_path / "data"), TINYLAB_CACHE=str(tmp_path / "cache")):
        yield tmp_path


def check_loaded(loaded, arrays):
    x_train, y_train, x_test, y_test = loaded
    assert x_train.shape == (5, 1, 28, 28) and x_test.shape == (3, 1, 28, 28)
    assert [t.dtype.name for t in loaded] == ["uint8"] * 4
    for got, expected in zip(loaded, arrays):
        np.testing.assert_array_equal(got.numpy().reshape(expected.shape), expected)


def test_mnist_reads_gzip_and_raw_files_from_tinylab_data(isolated):
    arrays = write_dataset(isolated / "data" / "mnist")
    write_dataset(isolated / "data" / "fashion-mnist", seed=1)
    check_loaded(datasets.mnist(), arrays)


def test_fashion_mnist_uses_its_own_folder_and_tinylab_data_comes_first(isolated):
    arrays = write_dataset(isolated / "data" / "fashion-mnist", seed=1, compress=(False, True))
    write_dataset(isolated / "cache" / "datasets" / "fashion-mnist", seed=2)
    write_dataset(isolated / "system" / "fashion-mnist", seed=3)
    check_loaded(datasets.mnist(fashion=True), arrays)


def test_the_cache_comes_before_the_system_folder(isolated):
    arrays = write_dataset(isolated / "cache" / "datasets" / "mnist", seed=2)
    write_dataset(isolated / "system" / "mnist", seed=3)
    check_loaded(datasets.mnist(), arrays)
    with Context(TINYLAB_DATA=""):
        check_loaded(datasets.mnist(), arrays)


def test_offline_without_files_names_every_place_looked_and_how_to_fix_it(isolated):
    with pytest.raises(datasets.DatasetNotFoundError) as caught:
        datasets.mnist(fashion=True)
    message = str(caught.value)
    assert "train-images-idx3-ubyte" in message
    for folder in ("data/fashion-mnist", "cache/datasets/fashion-mnist", "system/fashion-mnist"):
        assert str(isolated / folder) in message
    assert "network is unreachable" in message and "fashion-mnist.s3" in message
    assert "$TINYLAB_DATA/fashion-mnist/" in message and "apt install" in message
    assert isinstance(caught.value, FileNotFoundError)


def test_files_that_do_not_fit_mnist_are_refused(isolated):
    folder = isolated / "data" / "mnist"
    write_dataset(folder)
    write_idx(folder / "t10k-labels-idx1-ubyte", np.zeros(4, np.uint8), compress=False)
    with pytest.raises(ValueError, match="expected 3 uint8 labels"):
        datasets.mnist()
    write_idx(folder / "t10k-images-idx3-ubyte", np.zeros((3, 28, 27), np.uint8), compress=False)
    with pytest.raises(ValueError, match="28x28"):
        datasets.mnist()


# ---- downloading (a fake urlopen serves generated files) ----
class FakeResponse(io.BytesIO):
    def __init__(self, data: bytes):
        super().__init__(data)
        self.headers = {"Content-Length": str(len(data))}


def serve(monkeypatch, files: dict[str, bytes], broken_mirror: str | None = None):
    """Serve files by name from every mirror (broken_mirror serves garbage); record the URLs."""
    requested = []

    def fake_urlopen(url, timeout=None):
        requested.append(url)
        name = url.rsplit("/", 1)[1]
        if broken_mirror and url.startswith(broken_mirror):
            return FakeResponse(b"not the file")
        return FakeResponse(files[name])
    monkeypatch.setattr(datasets, "urlopen", fake_urlopen)
    return requested


def published_files(monkeypatch, dataset, arrays) -> dict[str, bytes]:
    files = {f"{name}.gz": gzip.compress(idx_bytes(a)) for name, a in zip(datasets.FILES, arrays)}
    for name, data in files.items():  # the generated files play the published ones
        monkeypatch.setitem(dataset.md5, name, hashlib.md5(data).hexdigest())
    return files


def test_missing_files_are_downloaded_verified_and_cached(isolated, monkeypatch, capsys):
    arrays = [*fake_mnist(np.random.default_rng(4), 5), *fake_mnist(np.random.default_rng(5), 3)]
    files = published_files(monkeypatch, datasets.MNIST, arrays)
    requested = serve(monkeypatch, files)
    events = []
    with progress.listening(events.append):   # the engine's progress events
        check_loaded(datasets.mnist(), arrays)
    downloads = [e for e in events if e.kind == "download"]
    finished = {e.name: e.done for e in downloads if e.finished}
    assert finished == {f"MNIST {name}": len(data) for name, data in files.items()}
    assert all(e.total == len(files[e.name.split()[1]]) for e in downloads)
    assert requested == [datasets.MNIST.mirrors[0] + f"{name}.gz" for name in datasets.FILES]
    cache = isolated / "cache" / "datasets" / "mnist"
    assert sorted(p.name for p in cache.iterdir()) == sorted(files)  # no .part files left
    assert "downloading MNIST train-images-idx3-ubyte.gz" in capsys.readouterr().err
    check_loaded(datasets.mnist(), arrays)  # from the cache now
    assert len(requested) == 4


def test_a_checksum_mismatch_falls_back_to_the_next_mirror(isolated, monkeypatch):
    arrays = [*fake_mnist(np.random.default_rng(6), 5), *fake_mnist(np.random.default_rng(7), 3)]
    files = published_files(monkeypatch, datasets.FASHION_MNIST, arrays)
    requested = serve(monkeypatch, files, broken_mirror=datasets.FASHION_MNIST.mirrors[0])
    check_loaded(datasets.mnist(fashion=True), arrays)
    assert len(requested) == 8 and requested[1].startswith(datasets.FASHION_MNIST.mirrors[1])


def test_a_download_that_never_verifies_is_not_kept(isolated, monkeypatch):
    serve(monkeypatch, {}, broken_mirror="http")
    with pytest.raises(datasets.DatasetNotFoundError, match="checksum mismatch"):
        datasets.mnist()
    assert not any((isolated / "cache" / "datasets" / "mnist").iterdir())


# ---- the real Fashion-MNIST from Debian's dataset-fashion-mnist package, when installed ----
def test_debian_fashion_mnist_loads_when_installed(tmp_path, monkeypatch):
    folder = datasets.SYSTEM_DIRS[0] / "fashion-mnist"
    if not (folder / "t10k-labels-idx1-ubyte.gz").exists():
        pytest.skip("dataset-fashion-mnist is not installed")
    monkeypatch.setattr(datasets, "urlopen", None)  # must not be needed
    with Context(TINYLAB_DATA="", TINYLAB_CACHE=str(tmp_path)):
        x_train, y_train, x_test, y_test = datasets.mnist(fashion=True)
    assert x_train.shape == (60000, 1, 28, 28) and x_test.shape == (10000, 1, 28, 28)
    assert y_train.shape == (60000,) and y_test.shape == (10000,)
    assert np.bincount(y_test.numpy(), minlength=10).tolist() == [1000] * 10


def test_download_over_real_http_from_a_local_server(isolated, monkeypatch):
    """The real urlopen against a server on 127.0.0.1: a 404 mirror, then a good one."""
    arrays = [*fake_mnist(np.random.default_rng(8), 5), *fake_mnist(np.random.default_rng(9), 3)]
    files = published_files(monkeypatch, datasets.MNIST, arrays)
    served = isolated / "served"
    served.mkdir()
    for name, data in files.items():
        (served / name).write_bytes(data)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/"
        local = dataclasses.replace(datasets.MNIST, mirrors=(base + "missing/", base))
        monkeypatch.setattr(datasets, "MNIST", local)
        monkeypatch.setattr(datasets, "urlopen", REAL_URLOPEN)
        check_loaded(datasets.mnist(), arrays)
    finally:
        server.shutdown()
        server.server_close()
