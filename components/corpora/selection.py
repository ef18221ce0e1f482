"""Choosing documents of a gold corpus by id: the ``ids`` and ``ids_file`` options every
gold reader shares, read the same way everywhere."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from casflow.components.inputs import resolve_input
from casflow.pipeline.component import DocumentError


class IdSelectionError(DocumentError, ValueError):
    hint = "check the reader's 'ids' or 'ids_file'"


def read_id_list(path: Path) -> list[str]:
    """The ids of an id file, one a line (blank lines and ``#`` comments skipped)."""
    ids = []
    # utf-8-sig: a byte-order mark would otherwise stay, invisible, in the first id
    for line in path.read_text(encoding="utf-8-sig").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            ids.append(line)
    return ids


def wanted_ids(
    ids: Sequence[str] | None, ids_file: str | None, base_dir: Path | None
) -> list[str] | None:
    """The ids a reader is asked for (``ids``, or those of ``ids_file``), None for all."""
    if ids_file is None:
        return list(ids) if ids is not None else None
    path = Path(resolve_input(ids_file, base_dir))
    try:
        listed = read_id_list(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise IdSelectionError(f"cannot read the ids_file {path}: {exc}") from exc
    repeated = sorted({i for i in listed if listed.count(i) > 1})
    if repeated:
        raise IdSelectionError(f"{path}: ids listed more than once: {', '.join(repeated[:5])}")
    return listed


def unknown_ids(wanted: Sequence[str], known: Sequence[str] | set[str], origin: str) -> str | None:
    """A problem naming the wanted ids that ``origin`` does not hold, or None."""
    have = set(known)
    unknown = [i for i in wanted if i not in have]
    if not unknown:
        return None
    more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
    return f"ids not in {origin}: {', '.join(unknown[:5])}{more}"


def one_id_list(ids: object, ids_file: object) -> None:
    """The config check every corpus reader shares: 'ids' or 'ids_file', not both."""
    if ids is not None and ids_file is not None:
        raise ValueError("give 'ids' or 'ids_file', not both")
