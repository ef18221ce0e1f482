"""Progress of a run: documents done, failures, documents/s, tokens/s and time left.

On a terminal a live bar (rich) on stderr; otherwise (CI, logs, nohup) one
plain line at most every ``log_every`` seconds, so long runs stay readable.

The run lists its documents lazily, as workers take them, so the listing reaches
the end of a large input only near the end of the run. Until then the total is the
reader's own count (:meth:`Progress.expect`, "about N"), less the documents an
earlier run finished, where the reader can count its input; else it is unknown
and no time left is shown.
"""

from __future__ import annotations

import sys
import time
from typing import Any

#: Failed documents named as they come; the rest are counted (all are in the run report),
#: so a run whose documents all fail the same way does not fill a log with them.
FAILURES_SHOWN = 20


class Progress:
    def __init__(
        self,
        total: int | None,
        skipped: int = 0,
        enabled: bool = True,
        log_every: float = 10.0,
        done_before: int = 0,
    ) -> None:
        # total None: documents are counted as the reader lists them (streamed input).
        self.total = total or 0
        self.listed = total is not None  # the total is final once the input is listed
        self.skipped = skipped
        # Documents in the input as the reader counted them (None: not counted), and
        # those the journal holds as finished: at most that many are still to be skipped.
        self.expected: int | None = None
        self.done_before = done_before
        self.done = 0
        self.failed = 0
        self.tokens = 0
        self.enabled = enabled
        self.started = time.perf_counter()
        self.log_every = log_every
        self._last_log = time.perf_counter()
        # Documents done at the last log line, and whether the total was final then: the
        # last line is printed again at the end only when it would say more.
        self._logged: tuple[int, bool] = (-1, False)
        self._bar: Any = None
        self._task: Any = None
        if not enabled:
            return
        if skipped:
            self.note(
                f"{skipped} of {total} documents already done in this output folder; skipping them"
            )
        if sys.stderr.isatty():
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn
            from rich.progress import Progress as RichProgress

            # The time left is casflow's own: rich's column took the total listed so far
            # for the whole input and documents skipped as done before for speed.
            self._bar = RichProgress(
                TextColumn("[bold]casflow"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[stats]}"),
                TextColumn("[cyan]{task.fields[left]}"),
                transient=False,
            )
            self._bar.start()
            self._task = self._bar.add_task(
                "run", total=self.total, completed=skipped, stats="", left=_clock(None)
            )

    def add_total(self, n: int = 1) -> None:
        self.total += n
        if self._bar is not None:
            self._bar.update(self._task, total=self._bar_total())

    def listing_done(self) -> None:
        """Every document is listed: the total is known from now on."""
        self.listed = True

    def expect(self, documents: int) -> None:
        """The reader counted ``documents`` in the input (Reader.count_documents). Called
        from the thread that counted: it only sets a number the display reads."""
        self.expected = documents

    def to_process(self) -> tuple[int, bool] | None:
        """Documents this run processes and whether that is exact (the input is listed),
        or None while it is not known."""
        if self.listed:
            return self.total, True
        if self.expected is None:
            return None
        not_listed = self.expected - self.total - self.skipped
        still_skipped = max(self.done_before - self.skipped, 0)
        return self.total + max(not_listed - still_skipped, 0), False

    def skip(self, n: int = 1) -> None:
        self.skipped += n
        if self._bar is not None:
            self._bar.update(
                self._task, total=self._bar_total(), completed=self.done + self.skipped
            )

    def _bar_total(self) -> int:
        known = self.to_process()
        return (known[0] if known else self.total) + self.skipped

    def _rates(self) -> str:
        elapsed = max(time.perf_counter() - self.started, 1e-9)
        return f"{self.done / elapsed:.2f} docs/s, {self.tokens / elapsed:,.0f} tokens/s"

    def seconds_left(self) -> float | None:
        """The time left at the rate so far, or None while it cannot be told."""
        known = self.to_process()
        if known is None or not self.done:
            return None
        elapsed = time.perf_counter() - self.started
        return max(known[0] - self.done, 0) * elapsed / self.done

    def _stats(self) -> str:
        return f"{self.failed} failed, {self._rates()}"

    def update(self, result: Any) -> None:
        self.done += 1
        self.tokens += result.tokens
        if result.status != "ok":
            self.failed += 1
            if self.failed <= FAILURES_SHOWN:
                self.note(f"{result.status}: {result.doc_id} ({result.stage}): {result.error}")
            elif self.failed == FAILURES_SHOWN + 1:
                self.note(
                    f"more than {FAILURES_SHOWN} documents failed: the others are counted in "
                    "the progress lines, and each is in run-report.json when the run ends"
                )
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(
                self._task,
                total=self._bar_total(),
                advance=1,
                stats=self._stats(),
                left=_clock(self.seconds_left()),
            )
            return
        now = time.perf_counter()
        if now - self._last_log >= self.log_every:
            self._last_log = now
            self._log_line()

    def _log_line(self) -> None:
        self._logged = (self.done, self.listed)
        # The total grows while a streamed input is listed: until then it is the
        # reader's count ("of about N") or, where the reader cannot count, only what is
        # known so far is "queued"; afterwards the line shows "N of TOTAL".
        known = self.to_process()
        queued = ""
        if known is None:
            done = f"{self.done} processed"
            queued = f", {self.total - self.done} queued (input still being listed)"
        else:
            done = f"{self.done} of {'' if known[1] else 'about '}{known[0]} processed"
        print(
            f"casflow: {done} ({self.failed} failed), {self.skipped} skipped "
            f"(done before){queued}; {self._rates()}{_words(self.seconds_left())}",
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
        if (
            self.enabled
            and self._bar is None
            and self.done
            and self._logged != (self.done, self.listed)
        ):
            self._log_line()
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _words(seconds: float | None) -> str:
    """``, about 12 min left`` for a log line; nothing when unknown or done."""
    if not seconds:
        return ""
    if seconds < 90:
        left = f"{max(round(seconds), 1)} s"
    elif seconds < 90 * 60:
        left = f"{round(seconds / 60)} min"
    else:
        left = f"{seconds / 3600:.1f} h"
    return f", about {left} left"


def _clock(seconds: float | None) -> str:
    """``0:12:05`` for the bar, as rich writes times (``-:--:--`` when unknown)."""
    if seconds is None:
        return "-:--:--"
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{secs:02d}"
