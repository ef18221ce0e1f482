"""The run journal and manifest: what a resumed run may skip.

``<output>/.casflow/manifest.json`` records the workflow hash and the input
set; ``<output>/.casflow/journal.jsonl`` gets one line per finished document,
appended by the parent only after the worker has written (atomically) all of
that document's outputs. A run killed at any moment therefore leaves a journal
whose complete lines all describe complete outputs; a torn last line is
ignored. A document is skipped on the next run only if its last journal entry
says ``ok`` and every output it lists still exists.
"""

from __future__ import annotations

import datetime
import fcntl
import json
import os
import socket
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from casflow.pipeline.files import atomic_write_text

STATE_DIR = ".casflow"


class ManifestMismatch(Exception):
    """The output folder holds the outputs of a different workflow."""


class OutputFolderBusy(Exception):
    """Another casflow run holds the output folder's lock."""


class OutputLock:
    """One run per output folder: an exclusive ``flock`` on ``.casflow/lock``.

    The kernel releases the lock when the holding process ends, however it ends
    (kill -9 included), so a stale lock never blocks a resume. The file names the
    holder (pid, host, start, command) for the message a second run prints.
    """

    def __init__(self, output_dir: Path) -> None:
        self.path = Path(output_dir) / STATE_DIR / "lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise OutputFolderBusy(
                f"{self.path.parent.parent} is in use by another casflow run ({holder}); "
                "wait for it to end (running the same command afterwards resumes), or use "
                "another --output folder"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        holder = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "command": " ".join(sys.argv),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder).encode("utf-8"), 0)
        self._fd = fd

    def release(self) -> None:
        # The file stays: removing it would let a third run lock a new file while
        # a second still waits on the old one.
        if self._fd is not None:
            os.close(self._fd)  # closing releases the flock
            self._fd = None


def _read_holder(fd: int) -> str:
    try:
        holder = json.loads(os.pread(fd, 4096, 0).decode("utf-8"))
        return (
            f"pid {holder['pid']} on {holder['host']}, started {holder['started']}: "
            f"{holder['command']}"
        )
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that has not yet written its name"


class Journal:
    def __init__(self, output_dir: Path) -> None:
        self.dir = Path(output_dir) / STATE_DIR
        self.path = self.dir / "journal.jsonl"
        self.manifest_path = self.dir / "manifest.json"
        self._handle: Any = None

    # -- manifest -----------------------------------------------------------

    def check_manifest(self, workflow_hash: str, allow_changed: bool) -> None:
        if not self.manifest_path.exists():
            return
        try:
            manifest = json.loads(self.manifest_path.read_text("utf-8"))
        except (OSError, ValueError):
            return
        previous = manifest.get("workflow_hash")
        if previous and previous != workflow_hash and not allow_changed:
            raise ManifestMismatch(
                f"{self.dir.parent} holds the outputs of a different workflow "
                f"(hash {previous}, this one is {workflow_hash}); resuming would mix outputs of "
                "two workflows. Use another --output folder, or --overwrite to reprocess every "
                "document with this workflow."
            )

    def write_manifest(
        self,
        workflow_hash: str,
        source: str,
        documents: int | None,
        input_digest: str | None = None,
    ) -> None:
        """Record the workflow hash (at the start) and the input set (once it is known)."""
        atomic_write_text(
            self.manifest_path,
            json.dumps(
                {
                    "workflow_hash": workflow_hash,
                    "workflow": source,
                    "documents": documents,
                    "input_set_sha256": input_digest,
                },
                indent=2,
            ),
        )

    # -- journal ------------------------------------------------------------

    def load(self) -> dict[str, dict[str, Any]]:
        """Last entry per document id; a torn trailing line is ignored."""
        entries: dict[str, dict[str, Any]] = {}
        if not self.path.exists():
            return entries
        with open(self.path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.endswith("\n"):
                    break  # written by a run that was killed mid-line
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                entries[entry["doc_id"]] = entry
        return entries

    def reset(self) -> None:
        if self.path.exists():
            self.path.unlink()

    def append(self, entries: Iterable[dict[str, Any]]) -> None:
        if self._handle is None:
            self.dir.mkdir(parents=True, exist_ok=True)
            self._repair_tail()
            self._handle = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - kept open for the run
        for entry in entries:
            self._handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def _repair_tail(self) -> None:
        # Drop a torn last line left by a killed run so appends start on a fresh line.
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            cut = data.rfind(b"\n") + 1
            with open(self.path, "r+b") as f:
                f.truncate(cut)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def is_complete(entry: dict[str, Any] | None) -> bool:
    if not entry or entry.get("status") != "ok":
        return False
    return all(Path(p).exists() for p in entry.get("outputs", []))
