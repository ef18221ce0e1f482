"""Skip a finished step when nothing it depends on has changed.

A long job (a training stage, a cross-validation fold, one member of a CRF vote)
writes a *marker* file when it finishes: JSON holding the step's fingerprint (a
digest of its settings and data) and whatever the step wants to keep (e.g. its
scores). On the next run, :func:`step_status` says whether the step is ``done``
(marker present, same fingerprint, outputs present and as the step left them),
``changed`` (it ran with other settings or data, or an output was damaged or
replaced since: run it again) or ``new``. Markers are written atomically after the
outputs, so an interrupted step is never taken for a finished one. A marker records
the size and sha256 of the output files it is given (:func:`mark_done`); a marker
without them (written before they were recorded) is taken at its word.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from casflow.pipeline.files import atomic_write_text

Status = Literal["done", "changed", "new"]


class Fingerprint:
    """An incremental digest of JSON-able parts and file contents."""

    def __init__(self, *parts: Any) -> None:
        self._digest = hashlib.sha256()
        for part in parts:
            self.add(part)

    def add(self, part: Any) -> Fingerprint:
        """Add a JSON-able value (dict keys sorted, so key order does not matter)."""
        encoded = json.dumps(part, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        self._digest.update(encoded.encode("utf-8"))
        self._digest.update(b"\n")
        return self

    def add_file(self, path: str | Path) -> Fingerprint:
        """Add a file's bytes (its name does not count)."""
        self._digest.update(file_digest(path).encode("ascii"))
        self._digest.update(b"\n")
        return self

    def hexdigest(self) -> str:
        return self._digest.hexdigest()


def fingerprint(*parts: Any, files: Iterable[str | Path] = ()) -> str:
    """The digest of ``parts`` (JSON-able values) and the contents of ``files``."""
    digest = Fingerprint(*parts)
    for path in files:
        digest.add_file(path)
    return digest.hexdigest()


def file_digest(path: str | Path) -> str:
    """sha256 of a file's bytes, read in blocks."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_marker(marker: str | Path) -> dict[str, Any] | None:
    """The marker's content, or None when it is absent or unreadable (an old format)."""
    try:
        content = json.loads(Path(marker).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return content if isinstance(content, dict) else None


#: The marker's field recording its step's output files (see :func:`output_files`).
OUTPUT_FILES = "output_files"


def output_files(marker: str | Path, outputs: Iterable[str | Path]) -> dict[str, list[Any]]:
    """``[size, sha256]`` of each output file (each file under an output folder), by its
    path from the marker's folder (so a moved output folder still matches)."""
    base = Path(marker).parent
    found: dict[str, list[Any]] = {}
    for output in map(Path, outputs):
        files = sorted(p for p in output.rglob("*") if p.is_file()) if output.is_dir() else [output]
        for path in files:
            if path.is_file():
                name = Path(os.path.relpath(path, base)).as_posix()
                found[name] = [path.stat().st_size, file_digest(path)]
    return found


def step_status(marker: str | Path, fingerprint: str, *outputs: str | Path) -> Status:
    """``done`` when ``marker`` records ``fingerprint``, every output exists and the
    output files are as the marker recorded them (when it did); ``changed`` when a
    marker records another fingerprint, or an output is gone, damaged or replaced;
    ``new`` when there is no marker."""
    if not Path(marker).exists():
        return "new"
    content = read_marker(marker) or {}
    if content.get("fingerprint") != fingerprint or not all(Path(p).exists() for p in outputs):
        return "changed"
    recorded = content.get(OUTPUT_FILES)
    if recorded is not None and recorded != output_files(marker, outputs):
        return "changed"
    return "done"


def mark_done(
    marker: str | Path, fingerprint: str, *, outputs: Iterable[str | Path] = (), **kept: Any
) -> None:
    """Record that the step with ``fingerprint`` finished (``kept``: what to read back);
    ``outputs``: the files it made, whose sizes and digests :func:`step_status` checks
    (give it the same outputs; a folder stands for every file under it, so nothing may
    be added to it later)."""
    record: dict[str, Any] = {"fingerprint": fingerprint, **kept}
    outputs = list(outputs)
    if outputs:
        record[OUTPUT_FILES] = output_files(marker, outputs)
    atomic_write_text(Path(marker), json.dumps(record, indent=2) + "\n")


def forget(marker: str | Path) -> None:
    """Remove a marker before a step runs again, so a crash leaves it unfinished."""
    Path(marker).unlink(missing_ok=True)
