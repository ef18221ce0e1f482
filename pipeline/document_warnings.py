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
collection are shown as before.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from casflow.pipeline.component import DocumentWarning

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
