"""``casflow`` commands in other processes, for tests of what runs at the same time."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
_CLI = "import sys; from casflow.pipeline.cli import main; sys.exit(main(sys.argv[1:]))"


def start_casflow(arguments: Sequence[str], log: Path) -> subprocess.Popen[bytes]:
    """``casflow ARGUMENTS`` in another process, its output (both streams) in ``log``."""
    with log.open("wb") as handle:
        return subprocess.Popen(
            [sys.executable, "-c", _CLI, *arguments],
            cwd=REPO,
            stdout=handle,
            stderr=subprocess.STDOUT,
        )


def wait_until_all_logged(
    runs: Sequence[subprocess.Popen[bytes]], logs: Sequence[Path], text: str, timeout: float
) -> None:
    """Until every log holds ``text``; fails (showing the logs) when a run ends first or
    ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while not all(text in log.read_text() for log in logs):
        shown = [log.read_text() for log in logs]
        assert all(run.poll() is None for run in runs), shown
        assert time.monotonic() < deadline, shown
        time.sleep(0.5)


def finish(runs: Sequence[subprocess.Popen[bytes]], logs: Sequence[Path]) -> list[str]:
    """Wait for ``runs``, which must succeed; their logs' text."""
    codes = [run.wait(timeout=600) for run in runs]
    texts = [log.read_text() for log in logs]
    assert codes == [0] * len(runs), texts
    return texts
