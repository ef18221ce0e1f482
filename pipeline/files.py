"""Atomic file writes and output file names.

Each write goes to a temporary file in the same folder, is flushed to disk,
then renamed over the target (``os.replace`` is atomic on POSIX), so a run
killed at any moment leaves either the old file, the new file, or nothing.
Temporary files carry casflow's own marker (``.NAME.casflow-XXXXXXXX.tmp``), so
the start-up cleanup removes only files casflow wrote.

Output files are named by document id through :func:`safe_file_stem`, a
reversible encoding: two different ids never share a file name.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
# Longest encoded stem kept as is: with an extension it stays under the usual
# 255-byte limit of a file name.
_MAX_STEM = 200
_TEMP_MARKER = ".casflow-"
_CASFLOW_TEMP = re.compile(r"^\..+\.casflow-[A-Za-z0-9_]+\.tmp$")


def _file_mode() -> int:
    # mkstemp creates 0600 files; outputs get what open() would give them (0666 minus
    # the umask), so other users of a shared output folder can read them.
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


_FILE_MODE = _file_mode()


def safe_file_stem(doc_id: str) -> str:
    """The file name (without extension) of a document id: letters, digits, ``_``, ``-``
    and ``.`` stay; every other UTF-8 byte (and a leading ``.``) becomes ``%XX``.

    The encoding is reversible (:func:`doc_id_of_file_stem`), so different ids never
    share an output file: ``a b`` is ``a%20b``, ``a_b`` stays ``a_b``, ``x/y`` is
    ``x%2Fy``. An encoded id longer than 200 bytes keeps its first 180 bytes and
    ends with ``%~`` and 16 hex digits of its SHA-256 (no longer reversible, still
    unique).
    """
    if not doc_id:
        return "%"
    raw = doc_id.encode("utf-8")
    out = []
    for i, byte in enumerate(raw):
        if byte in _SAFE and not (i == 0 and byte == ord(".")):
            out.append(chr(byte))
        else:
            out.append(f"%{byte:02X}")
    stem = "".join(out)
    if len(stem) > _MAX_STEM:
        digest = hashlib.sha256(raw).hexdigest()[:16]
        stem = f"{stem[:180]}%~{digest}"
    return stem


def doc_id_of_file_stem(stem: str) -> str | None:
    """The document id a :func:`safe_file_stem` came from (None for a shortened one)."""
    if stem == "%":
        return ""
    if "%~" in stem:
        return None
    try:
        return _unquote(stem)
    except ValueError:  # not a name casflow wrote
        return None


def _unquote(stem: str) -> str:
    out = bytearray()
    i = 0
    while i < len(stem):
        if stem[i] == "%":
            out.append(int(stem[i + 1 : i + 3], 16))
            i += 3
        else:
            out.append(ord(stem[i]))
            i += 1
    return out.decode("utf-8")


def ignores_case(folder: Path) -> bool:
    """Whether ``folder``'s file system takes names that differ only in letter case for
    the same file (macOS and Windows by default): then ids such as ``PMC1a`` and
    ``PMC1A`` would share an output file."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".casflow-case-", suffix=".tmp", dir=folder)
    except OSError:
        return False
    os.close(fd)
    try:
        name = Path(probe).name
        return os.path.exists(Path(folder) / name.swapcase())
    finally:
        with contextlib.suppress(OSError):
            os.unlink(probe)


@contextlib.contextmanager
def atomic_writer(path: Path) -> Iterator[BinaryIO]:
    """A file to write ``path`` through piece by piece, for a file too large to hold in
    memory first: it is ``path`` once the block ends (flushed to disk and renamed), and
    is removed if the block raises."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}{_TEMP_MARKER}", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, _FILE_MODE)
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_bytes(path: Path, data: bytes) -> None:
    with atomic_writer(path) as f:
        f.write(data)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def create_text_exclusively(path: Path, text: str) -> bool:
    """Write ``path`` unless it exists: True when this call created it, False when the
    name was taken (by another process, say, between a check and this call).

    The text is written whole to a temporary file, then hard-linked to ``path``: the
    link fails when the name exists, and a reader never sees the file half-written.
    Where the file system has no hard links, the file is created with ``O_EXCL`` and
    written (still never replacing another's, but readable for an instant while empty).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode("utf-8")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}{_TEMP_MARKER}", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, _FILE_MODE)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)
            return True
        except FileExistsError:
            return False
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS):
                raise
        try:
            created = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _FILE_MODE)
        except FileExistsError:
            return False
        with os.fdopen(created, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        return True
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def save_atomically(save: Callable[[str], object], filename: str | os.PathLike[str]) -> None:
    """``save(path)`` into a temporary name, then renamed: a kill while saving keeps the
    previous file."""
    temporary = f"{filename}.partial"
    save(temporary)
    os.replace(temporary, filename)


def is_casflow_temporary(name: str) -> bool:
    """Whether a file name is one of :func:`atomic_write_bytes`'s temporary files."""
    return bool(_CASFLOW_TEMP.match(name))


def remove_stale_temporary_files(folder: Path) -> int:
    """Delete temporary files left by writes that a killed run never renamed.

    Only names casflow gives its own temporary files are touched; the caller holds
    the output folder's lock, so no other run is writing them.
    """
    removed = 0
    for path in Path(folder).rglob(f".*{_TEMP_MARKER}*.tmp"):
        if not is_casflow_temporary(path.name) or not path.is_file():
            continue
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            removed += 1
    return removed


# Below this, a run would fail on its first outputs: treat the disk as full.
MIN_FREE_BYTES = 1 << 20


def output_folder_problem(folder: str | Path, setting: str = "run.output") -> str | None:
    """What stops a run from writing into ``folder`` (one line saying what to do), or None.
    ``setting`` names the workflow key the folder comes from besides ``--output``
    (``output`` in a training workflow).

    Checks what can be known before any document runs: the path (or a folder
    above it) is a file, the folder cannot be written (permissions, read-only
    file system), the disk is already full. Writing is tried, not inferred
    from permission bits, which do not tell for root or for read-only mounts.
    """
    path = Path(folder).expanduser().absolute()
    existing = path
    while not existing.exists() and not existing.is_symlink() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        if existing == path:
            return (
                f"output folder {path} is a file, not a folder: choose another --output "
                f"(or {setting}), or move the file away"
            )
        return (
            f"output folder {path} cannot be created: {existing} is a file, not a folder; "
            f"choose another --output (or {setting})"
        )
    try:
        fd, probe = tempfile.mkstemp(prefix=".casflow-probe-", suffix=".tmp", dir=existing)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        where = "output folder" if existing == path else f"folder above output folder {path},"
        if exc.errno == errno.EROFS:
            why = "is on a read-only file system"
        elif exc.errno in (errno.EACCES, errno.EPERM):
            why = "is not writable by this user (permission denied)"
        elif exc.errno in (errno.ENOSPC, errno.EDQUOT):
            why = "is on a full disk (or over quota)"
        else:
            why = f"cannot be written ({exc.strerror or exc})"
        return (
            f"{where} {existing} {why}: choose another --output (or {setting}), or make it writable"
        )
    try:
        free = shutil.disk_usage(existing).free
    except OSError:
        return None
    if free < MIN_FREE_BYTES:
        return (
            f"the disk holding output folder {path} is full ({free:,} bytes free): free space "
            f"or choose another --output (or {setting})"
        )
    return None
