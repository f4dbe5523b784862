"""Datasets as Tensors, like tinygrad's: `mnist(fashion=False)` gives (X_train, Y_train, X_test,
Y_test), images uint8 (N, 1, 28, 28) and labels uint8 (N,). Files are IDX (gzip or raw), looked
for in $TINYLAB_DATA/<dataset>/, then the user cache, then Debian's /usr/share/datasets/<dataset>/
(package dataset-fashion-mnist); otherwise downloaded into the cache with an MD5 check, its
progress as the engine's "download" events (engine/progress.py: a tqdm bar on a terminal).
Called by examples and notebooks; builds Tensors through the public Tensor API only.
"""
from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from .. import config
from ..engine import progress
from ..frontend.tensor import Tensor
from .idx import read_idx

SYSTEM_DIRS = tuple([Path("/usr/share/datasets")])  # Debian's dataset-* packages install here
FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
         "t10k-labels-idx1-ubyte")


def urlopen(url: str, timeout: float):
    """urllib's urlopen, imported on first use. The only network access here (tests replace it)."""
    import urllib.request
    return urllib.request.urlopen(url, timeout=timeout)


@dataclass(frozen=True)
class Dataset:
    title: str
    folder: str                       # <search dir>/<folder>/<file>[.gz]
    mirrors: tuple[str, ...]          # base URLs, tried in order
    md5: dict                         # "<file>.gz" -> MD5 of the published gzip file


MNIST = Dataset("MNIST", "mnist", (
    "https://storage.googleapis.com/cvdf-datasets/mnist/",
    "https://ossci-datasets.s3.amazonaws.com/mnist/"), {
    "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
    "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
    "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
    "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c"})
FASHION_MNIST = Dataset("Fashion-MNIST", "fashion-mnist", (
    "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
    "https://raw.githubusercontent.com/zalandoresearch/fashion-mnist/master/data/fashion/"), {
    "train-images-idx3-ubyte.gz": "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
    "train-labels-idx1-ubyte.gz": "25c81989df183df01b3e8a0aad5dffbe",
    "t10k-images-idx3-ubyte.gz": "bef4ecab320f06d8554ea6380940ec79",
    "t10k-labels-idx1-ubyte.gz": "bb300cfdad3c16e7a12a480ee83cd310"})


class DatasetNotFoundError(FileNotFoundError):
    """Files were found nowhere and could not be downloaded; the message says how to provide
    them."""


# ---- where files are looked for ----
def search_dirs(dataset: Dataset) -> list[tuple[str, Path]]:
    """(why, folder) pairs in search order: TINYLAB_DATA, the user cache, system folders."""
    dirs = []
    if config.DATA.value:
        dirs.append(("TINYLAB_DATA", Path(config.DATA.value) / dataset.folder))
    dirs.append(("user cache", cache_folder(dataset)))
    dirs += [("system", base / dataset.folder) for base in SYSTEM_DIRS]
    return dirs


def cache_folder(dataset: Dataset) -> Path:
    return config.cache_dir() / "datasets" / dataset.folder


def find_file(dataset: Dataset, name: str) -> Path | None:
    """The first existing <dir>/<name>.gz or <dir>/<name> in search order."""
    for _, folder in search_dirs(dataset):
        for candidate in (folder / f"{name}.gz", folder / name):
            if candidate.is_file():
                return candidate
    return None


# ---- downloading ----
def _fetch(url: str, destination: Path, label: str) -> str:
    """Stream url into destination, one progress event per chunk (a bar on a terminal; the
    training monitor lists it too); return the MD5 of what was written."""
    digest = hashlib.md5(usedforsecurity=False)
    with urlopen(url, timeout=30) as response, open(destination, "wb") as out:
        length = response.headers.get("Content-Length") if response.headers else None
        total = int(length) if length and str(length).isdigit() else 0
        size = f" ({total / 1e6:.1f} MB)" if total else ""
        sys.stderr.write(f"downloading {label}{size} from {url}\n")   # shown in notebooks too
        with progress.task("download", label, total) as task:
            while chunk := response.read(1 << 16):
                out.write(chunk)
                digest.update(chunk)
                task.advance(len(chunk))
    return digest.hexdigest()


def download(dataset: Dataset, name: str) -> tuple[Path | None, list[str]]:
    """Try each mirror for <name>.gz into the user cache: (path, []) or (None, failures)."""
    filename = f"{name}.gz"
    folder = cache_folder(dataset)
    partial = folder / f"{filename}.part"
    failures = []
    for base in dataset.mirrors:
        url = base + filename
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            md5 = _fetch(url, partial, f"{dataset.title} {filename}")
        except OSError as error:  # URLError, timeouts, HTTP errors, disk errors
            partial.unlink(missing_ok=True)
            failures.append(f"{url}: {error}")
            continue
        if md5 != dataset.md5[filename]:
            partial.unlink(missing_ok=True)
            failures.append(f"{url}: checksum mismatch (MD5 {md5}, expected "
                            f"{dataset.md5[filename]})")
            continue
        os.replace(partial, folder / filename)
        return folder / filename, []
    return None, failures


def _not_found(dataset: Dataset, name: str, failures: list[str]) -> DatasetNotFoundError:
    looked = "\n".join(f"    {folder}  ({why})" for why, folder in search_dirs(dataset))
    tried = "\n".join(f"    {line}" for line in failures)
    hint = "  or: apt install dataset-fashion-mnist (Debian/Ubuntu)\n" \
        if dataset is FASHION_MNIST else ""
    return DatasetNotFoundError(
        f"{dataset.title} file {name} (.gz or raw) was not found in:\n{looked}\n"
        f"and downloading it failed (offline?):\n{tried}\n"
        f"To provide it: put the four IDX files ({', '.join(FILES)}, gzip or raw) in\n"
        f"    $TINYLAB_DATA/{dataset.folder}/  or  {cache_folder(dataset)}/\n{hint}")


def fetch(dataset: Dataset, name: str) -> Path:
    """A local path for one dataset file: found in the search folders, or downloaded."""
    path = find_file(dataset, name)
    if path is None:
        path, failures = download(dataset, name)
        if path is None:
            raise _not_found(dataset, name, failures)
    return path


# ---- datasets ----
def _check_mnist(images, labels, split: str, paths) -> None:
    if images.dtype.name != "uint8" or images.ndim != 3 or images.shape[1:] != (28, 28):
        raise ValueError(f"{paths[0]}: expected uint8 images of 28x28, got {images.dtype} "
                         f"{images.shape}")
    if labels.dtype.name != "uint8" or labels.shape != images.shape[:1]:
        raise ValueError(f"{paths[1]}: expected {images.shape[0]} uint8 labels for the {split} "
                         f"images, got {labels.dtype} {labels.shape}")
    if labels.size and labels.max() > 9:
        raise ValueError(f"{paths[1]}: labels must be 0..9, found {labels.max()}")


def mnist(device: str | None = None, fashion: bool = False
          ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(X_train, Y_train, X_test, Y_test): uint8 images (N, 1, 28, 28) and uint8 labels (N,),
    of MNIST or (fashion=True) Fashion-MNIST."""
    dataset = FASHION_MNIST if fashion else MNIST
    out = []
    for split, image_name, label_name in (("train", *FILES[:2]), ("test", *FILES[2:])):
        paths = (fetch(dataset, image_name), fetch(dataset, label_name))
        images, labels = read_idx(paths[0]), read_idx(paths[1])
        _check_mnist(images, labels, split, paths)
        out += [Tensor(images.reshape(-1, 1, 28, 28), device=device), Tensor(labels, device=device)]
    return tuple(out)
