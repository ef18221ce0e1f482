"""Warnings raised while a document goes through the chain, kept with the document.

A reader that repairs damaged input (a CRAFT annotation whose text differs from
its offsets, a BC2GM line skipped) says so with a warning. Printed by a worker,
such a line was lost among the progress lines, missing from ``run-report.json``,
gone with a remote Dask worker's log, and shown once per worker process by
Python's default filter. Here each stage of each document collects its own
warnings into its :class:`~casflow.pipeline.chain.DocumentResult`; the parent adds
them up in the run report and prints the first few.

Collection is per thread (a Dask worker may run several documents at once), so
the process-wide ``warnings.showwarning`` hook is installed once and hands each
warning to the collector of the thread that raised it; warnings raised outside a
collection are shown as before. Every occurrence of a :class:`DocumentWarning` is
collected; other warnings as Python's filters let them through (by default once per
place in the code and process). Before Python 3.14, ``warnings.catch_warnings``
swaps the hook and filters of the whole process: casflow's own code does not use it
while a document goes through the chain, but a library that does, on one thread,
can hide or take another thread's warnings meanwhile (casflow's local Dask cluster
runs one thread per worker).

A document keeps each distinct warning once, with its ``count``, and at most
:data:`MAX_PER_DOCUMENT` of them, so that its result, the run journal and the
parent stay small whatever a damaged input makes a component say.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from casflow.pipeline.component import DocumentWarning

#: Distinct warnings kept per document (more are counted under ``warnings_not_kept``).
MAX_PER_DOCUMENT = 50

_local = threading.local()
_install_lock = threading.Lock()


def _install() -> None:
    """Put the hook in place, again if something (``catch_warnings`` in a test or a
    library) has restored the hook it found since."""
    with _install_lock:
        shown_before = warnings.showwarning
        if getattr(shown_before, "casflow_collects", False):
            return

        def show(
            message: Warning | str,
            category: type[Warning],
            filename: str,
            lineno: int,
            file: Any = None,
            line: str | None = None,
        ) -> None:
            collected: list[dict[str, str]] | None = getattr(_local, "collected", None)
            if collected is None:
                shown_before(message, category, filename, lineno, file, line)
                return
            collected.append(
                {"stage": _local.stage, "category": category.__name__, "message": str(message)}
            )

        show.casflow_collects = True  # type: ignore[attr-defined]
        warnings.showwarning = show
        # Every document's damage is its own: the default filter would show a second
        # document's identical message (or a retried document's) no more.
        warnings.filterwarnings("always", category=DocumentWarning)


@contextmanager
def collected_warnings(stage: str, into: list[dict[str, str]]) -> Iterator[None]:
    """Append the warnings this thread raises inside the block to ``into``, each as
    ``{"stage", "category", "message"}``; nested blocks collect into the inner list."""
    _install()
    before = getattr(_local, "collected", None), getattr(_local, "stage", None)
    _local.collected, _local.stage = into, stage
    try:
        yield
    finally:
        _local.collected, _local.stage = before


def distinct_warnings(said: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each distinct warning once, in the order first said, with how often it was said
    (``count``); past :data:`MAX_PER_DOCUMENT` distinct ones, the last entry counts the
    rest (its ``category`` is ``"(more)"``)."""
    kept: dict[tuple[str, ...], dict[str, Any]] = {}
    more = 0
    for item in said:
        key = (str(item.get("stage")), str(item.get("category")), str(item.get("message")))
        key += tuple(item.get("documents") or ())
        entry = kept.get(key)
        if entry is not None:
            entry["count"] += int(item.get("count", 1))
        elif len(kept) < MAX_PER_DOCUMENT:
            kept[key] = {**item, "count": int(item.get("count", 1))}
        else:
            more += int(item.get("count", 1))
    out = list(kept.values())
    if more:
        stage = str(said[-1].get("stage"))
        message = f"{more} more warning(s) of other kinds about this document, not kept"
        out.append({"stage": stage, "category": "(more)", "message": message, "count": more})
    return out
