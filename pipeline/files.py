"""Atomic file writes: a reader of the output folder never sees a partial file.

Each write goes to a temporary file in the same folder, is flushed to disk,
then renamed over the target (``os.replace`` is atomic on POSIX), so a run
killed at any moment leaves either the old file, the new file, or nothing.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from pathlib import Path

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _file_mode() -> int:
    # mkstemp creates 0600 files; outputs get what open() would give them (0666 minus
    # the umask), so other users of a shared output folder can read them.
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


_FILE_MODE = _file_mode()


def safe_file_stem(doc_id: str) -> str:
    """A file-name-safe form of a document id (ids may contain spaces or slashes)."""
    stem = _UNSAFE.sub("_", doc_id).strip("._")
    return stem or "document"


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, _FILE_MODE)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def remove_stale_temporary_files(folder: Path) -> int:
    """Delete temporary files left by writes that a killed run never renamed."""
    removed = 0
    for path in Path(folder).rglob(".*.tmp"):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            removed += 1
    return removed
