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

import hashlib
import json
import os
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from casflow.pipeline.files import atomic_write_text

STATE_DIR = ".casflow"


class ManifestMismatch(Exception):
    """The output folder holds the outputs of a different workflow."""


@dataclass
class ResumeIdentity:
    """What decides whether a run may resume into a folder: the resolved workflow
    (run scheduling options left out) with input paths normalised, its hash, and
    the hashes earlier casflow versions wrote for the same workflow."""

    resolved: dict[str, Any]
    hash: str
    accepted_hashes: frozenset[str]


def resume_identity(
    resolved: dict[str, Any], raw_hash: str, cwd: Path, workflow_dir: Path
) -> ResumeIdentity:
    """``dir/``, ``dir``, ``./dir`` and its absolute path are the same input."""
    relevant = {k: v for k, v in resolved.items() if k not in {"run", "name", "description"}}
    relevant = json.loads(json.dumps(relevant, default=str))
    config = (relevant.get("reader") or {}).get("config") or {}
    if isinstance(config.get("input"), str) and config["input"]:
        config["input"] = normal_input_path(config["input"], cwd, workflow_dir)
    blob = json.dumps(relevant, sort_keys=True).encode("utf-8")
    digest = hashlib.sha256(blob).hexdigest()[:16]
    return ResumeIdentity(relevant, digest, frozenset({digest, raw_hash}))


def normal_input_path(value: str, cwd: Path, workflow_dir: Path) -> str:
    """An input as an absolute, normalised path, found as the readers find it: from the
    working directory first, then from the workflow's folder (``@`` lists keep their ``@``)."""
    prefix = "@" if value.startswith("@") else ""
    path = Path(value[len(prefix) :]).expanduser()
    if not path.is_absolute():
        here = cwd / path
        beside = workflow_dir / path
        path = beside if not here.exists() and beside.exists() else here
    return prefix + os.path.normpath(path)


def _previous_resolved(output_dir: Path) -> dict[str, Any] | None:
    try:
        import yaml

        data = yaml.safe_load((output_dir / "workflow.resolved.yaml").read_text("utf-8"))
    except (OSError, ValueError, ImportError):
        return None
    if not isinstance(data, dict):
        return None
    return {k: v for k, v in data.items() if k not in {"run", "name", "description"}}


def describe_differences(before: Any, now: Any, limit: int = 8) -> list[str]:
    """``path: old -> new`` lines for the settings that differ (at most ``limit``)."""
    lines: list[str] = []

    def walk(a: Any, b: Any, path: tuple[str, ...]) -> None:
        if isinstance(a, dict) and isinstance(b, dict):
            for key in list(a) + [k for k in b if k not in a]:
                walk(a.get(key, _MISSING), b.get(key, _MISSING), (*path, str(key)))
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                walk(x, y, (*path, str(i)))
        elif a != b:
            lines.append(f"{' -> '.join(path)}: {_show(a)} -> {_show(b)}")

    walk(before, now, ())
    if len(lines) > limit:
        lines = lines[:limit] + [f"... and {len(lines) - limit} more"]
    return lines


_MISSING = object()


def _show(value: Any) -> str:
    if value is _MISSING:
        return "(absent)"
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


class Journal:
    def __init__(self, output_dir: Path) -> None:
        self.dir = Path(output_dir) / STATE_DIR
        self.path = self.dir / "journal.jsonl"
        self.manifest_path = self.dir / "manifest.json"
        self._handle: Any = None

    # -- manifest -----------------------------------------------------------

    def check_manifest(
        self,
        identity: ResumeIdentity,
        allow_changed: bool,
    ) -> None:
        """Refuse to resume into a folder another workflow wrote (unless allowed),
        saying which settings differ."""
        if not self.manifest_path.exists():
            return
        try:
            manifest = json.loads(self.manifest_path.read_text("utf-8"))
        except (OSError, ValueError):
            return
        previous = manifest.get("workflow_hash")
        # Manifests written before input paths were normalised hold the raw hash.
        if not previous or previous in identity.accepted_hashes or allow_changed:
            return
        before = manifest.get("resolved")
        if before is None:
            before = _previous_resolved(self.dir.parent)
        differences = describe_differences(before, identity.resolved) if before else []
        what = (
            "what differs (before -> now):\n" + "\n".join(f"  {d}" for d in differences) + "\n"
            if differences
            else ""
        )
        raise ManifestMismatch(
            f"{self.dir.parent} holds the outputs of a different workflow; resuming would mix "
            f"outputs of two workflows.\n{what}"
            "Use another --output folder, --allow-changed-workflow to keep the finished "
            "outputs and go on with this workflow, or --overwrite to reprocess every document "
            "with it."
        )

    def write_manifest(
        self,
        identity: ResumeIdentity,
        source: str,
        documents: int | None,
        input_digest: str | None = None,
    ) -> None:
        """Record the workflow (at the start) and the input set (once it is known)."""
        atomic_write_text(
            self.manifest_path,
            json.dumps(
                {
                    "workflow_hash": identity.hash,
                    "workflow": source,
                    "documents": documents,
                    "input_set_sha256": input_digest,
                    "resolved": identity.resolved,
                },
                indent=2,
            ),
        )

    # -- journal ------------------------------------------------------------

    def load(self, fields: Collection[str] | None = None) -> dict[str, dict[str, Any]]:
        """Last entry per document id, with only ``fields`` where given (a whole entry
        is about 3 KB in memory: timings, warnings, scores); a torn trailing line is
        ignored."""
        if fields is None:
            return {entry["doc_id"]: entry for entry in self._entries()}
        return {
            entry["doc_id"]: {key: entry[key] for key in fields if key in entry}
            for entry in self._entries()
        }

    def finished_outputs(self) -> dict[str, tuple[str, ...]]:
        """The outputs (as recorded) of each document whose last entry says ``ok``: what
        a writer's run-level files need, without the rest of each entry (``load`` holds
        about 3 KB a document: timings, warnings, scores)."""
        outputs: dict[str, tuple[str, ...]] = {}
        shared: dict[str, str] = {}  # one string per path: a batch's archive is in many
        for entry in self._entries():
            if entry.get("status") == "ok":
                paths = entry.get("outputs", [])
                outputs[entry["doc_id"]] = tuple(shared.setdefault(p, p) for p in paths)
            else:
                outputs.pop(entry["doc_id"], None)
        return outputs

    def _entries(self) -> Iterator[dict[str, Any]]:
        """The entries in the order written; a torn trailing line is ignored."""
        if not self.path.exists():
            return
        with open(self.path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.endswith("\n"):
                    break  # written by a run that was killed mid-line
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                yield entry

    def reset(self) -> None:
        if self.path.exists():
            self.path.unlink()

    def append(self, entries: Iterable[dict[str, Any]]) -> None:
        if self._handle is None:
            self.dir.mkdir(parents=True, exist_ok=True)
            self._repair_tail()
            # Unbuffered: after a write that failed (disk full) no buffer holds the rest,
            # which closing the file would write again and fail on a second time.
            self._handle = open(self.path, "ab", buffering=0)  # noqa: SIM115 - kept open for the run
        data = memoryview(
            "".join(json.dumps(entry, ensure_ascii=False) + "\n" for entry in entries).encode()
        )
        while data:
            data = data[self._handle.write(data) :]
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
