"""Compressed and archived output files, written reproducibly and read back.

A writer may gzip each document's file (``PMC1.xmi.gz``) and may put the files
of a batch of documents into one ``.tar`` (for file systems that suffer from
millions of small files). Both are reproducible: the same documents give the
same bytes (no time stamps, owners or file names in the headers), so a resumed
or repeated run writes what an uninterrupted one writes.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path

from casflow.pipeline.component import DocumentError

GZIP_SUFFIX = ".gz"
ARCHIVE_SUFFIX = ".tar"
_GZIP_MAGIC = b"\x1f\x8b"


class PackedFileError(DocumentError, ValueError):
    hint = (
        "the file is damaged or truncated; delete it and run again (only its documents are redone)"
    )


def gzip_bytes(data: bytes, level: int = 6) -> bytes:
    """gzip with no time stamp or file name in the header: the same bytes every time."""
    return gzip.compress(data, compresslevel=level, mtime=0)


def gunzip_if_needed(data: bytes, name: str) -> bytes:
    """The bytes of a file that may be gzipped (told by its first bytes, not its name)."""
    if data[:2] != _GZIP_MAGIC:
        return data
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as exc:
        raise PackedFileError(f"{name}: cannot decompress: {exc}") from exc


def unpacked_name(name: str) -> str:
    """``PMC1.xmi.gz`` -> ``PMC1.xmi``."""
    return name[: -len(GZIP_SUFFIX)] if name.endswith(GZIP_SUFFIX) else name


def archive_name(doc_ids: Sequence[str], stem: str) -> str:
    """The archive of a batch: named by its first document and a digest of all of them,
    so a batch written again (a retried task) replaces its own archive."""
    digest = hashlib.sha256("\n".join(doc_ids).encode("utf-8")).hexdigest()[:12]
    return f"{stem}-{digest}{ARCHIVE_SUFFIX}"


def tar_bytes(members: Sequence[tuple[str, bytes]]) -> bytes:
    """An uncompressed tar of ``(name, data)`` members, in order, with fixed headers."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def is_archive(path: Path | str) -> bool:
    return str(path).endswith((ARCHIVE_SUFFIX, ".tar.gz", ".tgz"))


def iter_packed(path: Path) -> Iterator[tuple[str, bytes]]:
    """``(name, bytes)`` of each file in ``path``: its members if it is an archive,
    else the file itself; gzipped data is decompressed, ``.gz`` dropped from names."""
    if is_archive(path):
        try:
            with tarfile.open(path, mode="r:*") as tar:
                for member in tar:
                    handle = tar.extractfile(member) if member.isfile() else None
                    if handle is None:
                        continue
                    name = f"{path}!{member.name}"
                    yield (
                        unpacked_name(Path(member.name).name),
                        gunzip_if_needed(handle.read(), name),
                    )
        except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
            raise PackedFileError(f"{path}: cannot read the archive: {exc}") from exc
        return
    yield unpacked_name(path.name), gunzip_if_needed(path.read_bytes(), str(path))
