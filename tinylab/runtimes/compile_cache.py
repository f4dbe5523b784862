"""The on-disk cache of compiled kernels, owned by the user.

`cached_build(kind, key_text, build, suffix)` returns the path of an artifact built once per key:
the directory is created 0700 and refused when others can write to it (a shared object loaded
from there would run their code); artifacts are written to a temp file and renamed atomically,
so two processes compiling the same kernel both succeed; a truncated entry (size 0 or failing
its checksum) is rebuilt. Used by the CPU runtime (shared objects) and BEAM (winners).
`write_reference` / `read_reference`: a kernel built inside a shared translation unit points at
that unit's artifact and its symbol there. `write_once(path, text)`: a header a compile reads,
written whole and renamed.
"""
from __future__ import annotations

import hashlib
import os
import stat
import tempfile
import threading
from pathlib import Path

from ..errors import TinylabError
from ..memo import Memo


class CacheError(TinylabError, RuntimeError):
    pass


def secure_dir(path: Path) -> Path:
    """Create `path` (mode 0700) and check neither it nor its parent is writable by others."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = path.stat()
    if info.st_uid != os.getuid():
        raise CacheError(f"cache directory {path} belongs to another user; refusing to use it "
                         f"(set TINYLAB_CACHE to a directory you own)")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise CacheError(f"cache directory {path} is writable by others "
                         f"(mode {oct(info.st_mode & 0o777)}); refusing to load code from it. "
                         f"Fix with: chmod 700 {path}")
    return path


def key_of(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:32]


def _checksum_path(path: Path) -> Path:
    return path.with_suffix(path.suffix + ".sha256")


# (path, size, mtime_ns, inode) -> True: checksums this process verified
_CHECKED = Memo("verified artifacts", 1 << 14)


def _valid(path: Path) -> bool:
    try:
        info = path.stat()
    except OSError:
        return False
    if info.st_size == 0:
        return False
    if info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise CacheError(f"cached file {path} is writable by others; refusing to load it")
    seen = (str(path), info.st_size, info.st_mtime_ns, info.st_ino)
    if seen in _CHECKED:  # a unit's artifact serves many kernels: its bytes are hashed once
        return True
    check = _checksum_path(path)
    if not check.exists():
        return False
    good = check.read_text().strip() == hashlib.sha256(path.read_bytes()).hexdigest()
    if good:
        _CHECKED[seen] = True
    return good


def lookup(directory: Path, key: str, suffix: str) -> Path | None:
    """The artifact of `key` when it is cached and passes its checksum, else None."""
    path = directory / f"{key}{suffix}"
    return path if _valid(path) else None


def write_reference(directory: Path, key: str, suffix: str, artifact: Path,
                    symbol: str) -> None:
    """Say that the artifact of `key` is `symbol` inside `artifact` (a unit in `directory`)."""
    fd, tmp = tempfile.mkstemp(dir=directory, suffix=".ref")
    with os.fdopen(fd, "w") as f:
        f.write(f"{artifact.name}\n{symbol}\n")
    os.replace(tmp, directory / f"{key}{suffix}.ref")


def read_reference(directory: Path, key: str, suffix: str) -> tuple[Path, str] | None:
    """(the unit artifact, the kernel's symbol in it) for `key`, when one is recorded and the
    artifact passes its checksum; None otherwise."""
    try:
        name, symbol = (directory / f"{key}{suffix}.ref").read_text().split("\n")[:2]
    except (OSError, ValueError):
        return None
    artifact = directory / name
    if "/" in name or not name.endswith(suffix) or not symbol.isidentifier():
        return None
    return (artifact, symbol) if _valid(artifact) else None


def discard(path: Path) -> None:
    """Remove a cache entry (artifact and checksum), e.g. one that failed to load."""
    path.unlink(missing_ok=True)
    _checksum_path(path).unlink(missing_ok=True)


def cached_build(directory: Path, key: str, build, suffix: str,
                 use_cache: bool = True) -> tuple[Path, bool]:
    """(path of the artifact for `key`, whether it came from the cache); `build(tmp_path)`
    writes it when missing or corrupt."""
    directory = secure_dir(directory)
    final = directory / f"{key}{suffix}"
    if use_cache and _valid(final):
        return final, True
    fd, tmp = tempfile.mkstemp(dir=directory, suffix=suffix)
    os.close(fd)
    try:
        build(Path(tmp))
        os.chmod(tmp, 0o700)
        digest = hashlib.sha256(Path(tmp).read_bytes()).hexdigest()
        if not use_cache:
            return Path(tmp), False  # caller owns a private, uncached artifact
        check_fd, check_tmp = tempfile.mkstemp(dir=directory, suffix=".sha256")
        with os.fdopen(check_fd, "w") as f:
            f.write(digest)
        os.replace(tmp, final)
        os.replace(check_tmp, _checksum_path(final))
    finally:
        if use_cache and os.path.exists(tmp):
            os.unlink(tmp)
    return final, False


def write_once(path: Path, text: str) -> Path:
    """`path` holding `text`: written whole, then renamed (another process may read it)."""
    if not path.exists():
        partial = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}")
        partial.write_text(text)
        os.replace(partial, path)
    return path
