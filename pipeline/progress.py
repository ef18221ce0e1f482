"""Progress of a run: documents done, failures, documents/s and tokens/s.

On a terminal a live bar (rich) on stderr; otherwise (CI, logs, nohup) one
plain line at most every ``log_every`` seconds, so long runs stay readable.
"""

from __future__ import annotations

import sys
import time
from typing import Any


class Progress:
    def __init__(
        self, total: int | None, skipped: int = 0, enabled: bool = True, log_every: float = 10.0
    ) -> None:
        # total None: documents are counted as the reader lists them (streamed input).
        self.total = total or 0
        self.listed = total is not None  # the total is final once the input is listed
        self.skipped = skipped
        self.done = 0
        self.failed = 0
        self.tokens = 0
        self.enabled = enabled
        self.started = time.perf_counter()
        self.log_every = log_every
        self._last_log = time.perf_counter()
        self._logged = -1  # documents done at the last log line (no line twice at the end)
        self._bar: Any = None
        self._task: Any = None
        if not enabled:
            return
        if skipped:
            self.note(
                f"{skipped} of {total} documents already done in this output folder; skipping them"
            )
        if sys.stderr.isatty():
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(
                TextColumn("[bold]casflow"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[stats]}"),
                TimeRemainingColumn(),
                transient=False,
            )
            self._bar.start()
            self._task = self._bar.add_task("run", total=self.total, completed=skipped, stats="")

    def add_total(self, n: int = 1) -> None:
        self.total += n
        if self._bar is not None:
            self._bar.update(self._task, total=self.total + self.skipped)

    def listing_done(self) -> None:
        """Every document is listed: the total is known from now on."""
        self.listed = True

    def skip(self, n: int = 1) -> None:
        self.skipped += n
        if self._bar is not None:
            self._bar.update(
                self._task, total=self.total + self.skipped, completed=self.done + self.skipped
            )

    def _rates(self) -> str:
        elapsed = max(time.perf_counter() - self.started, 1e-9)
        return f"{self.done / elapsed:.2f} docs/s, {self.tokens / elapsed:,.0f} tokens/s"

    def _stats(self) -> str:
        return f"{self.failed} failed, {self._rates()}"

    def update(self, result: Any) -> None:
        self.done += 1
        self.tokens += result.tokens
        if result.status != "ok":
            self.failed += 1
            if self.enabled:
                self.note(f"{result.status}: {result.doc_id} ({result.stage}): {result.error}")
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(self._task, advance=1, stats=self._stats())
            return
        now = time.perf_counter()
        if now - self._last_log >= self.log_every:
            self._last_log = now
            self._log_line()

    def _log_line(self) -> None:
        self._logged = self.done
        # The total grows while a streamed input is listed: until then only what is
        # known so far is "queued"; afterwards the line shows "N of TOTAL".
        if self.listed:
            done = f"{self.done} of {self.total} processed"
            queued = ""
        else:
            done = f"{self.done} processed"
            queued = f", {self.total - self.done} queued (input still being listed)"
        print(
            f"casflow: {done} ({self.failed} failed), {self.skipped} skipped "
            f"(done before){queued}; {self._rates()}",
            file=sys.stderr,
        )

    def note(self, message: str) -> None:
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.console.print(message, markup=False)
        else:
            print(f"casflow: {message}", file=sys.stderr)

    def close(self) -> None:
        if self.enabled and self._bar is None and self.done and self._logged != self.done:
            self._log_line()
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
