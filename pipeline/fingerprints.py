"""Skip a finished step when nothing it depends on has changed.

A long job (a training stage, a cross-validation fold, one member of a CRF vote)
writes a *marker* file when it finishes: JSON holding the step's fingerprint (a
digest of its settings and data) and whatever the step wants to keep (e.g. its
scores). On the next run, :func:`step_status` says whether the step is ``done``
(marker present, same fingerprint, outputs present), ``changed`` (it ran with
other settings or data: run it again) or ``new``. Markers are written atomically
after the outputs, so an interrupted step is never taken for a finished one.
"""

from __future__ import annotations

import hashlib
import json
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


def step_status(marker: str | Path, fingerprint: str, *outputs: str | Path) -> Status:
    """``done`` when ``marker`` records ``fingerprint`` and every output exists;
    ``changed`` when a marker records another fingerprint (or an output is gone);
    ``new`` when there is no marker."""
    if not Path(marker).exists():
        return "new"
    content = read_marker(marker) or {}
    if content.get("fingerprint") == fingerprint and all(Path(p).exists() for p in outputs):
        return "done"
    return "changed"


def mark_done(marker: str | Path, fingerprint: str, **kept: Any) -> None:
    """Record that the step with ``fingerprint`` finished (``kept``: what to read back)."""
    text = json.dumps({"fingerprint": fingerprint, **kept}, indent=2) + "\n"
    atomic_write_text(Path(marker), text)


def forget(marker: str | Path) -> None:
    """Remove a marker before a step runs again, so a crash leaves it unfinished."""
    Path(marker).unlink(missing_ok=True)
