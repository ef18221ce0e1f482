"""``casflow.pipeline.locks.building``: one process builds what several share, the others
wait for it and then find it built; and ``built_once``, which the CRF trainer's caches use."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from casflow.pipeline.locks import building, built_once, lock_file

REPO = Path(__file__).resolve().parent.parent


def hold(target: Path, seconds: float, then_write: str | None = None) -> subprocess.Popen[str]:
    """Another process holding the lock on building ``target`` for ``seconds`` (writing
    ``then_write`` into ``target`` before letting go); returns once it holds it."""
    script = textwrap.dedent(
        f"""\
        import sys, time
        from pathlib import Path
        from casflow.pipeline.locks import building
        with building(Path({str(target)!r}), print):
            print("holding", flush=True)
            time.sleep({seconds})
            if {then_write!r} is not None:
                Path({str(target)!r}).write_text({then_write!r})
        """
    )
    process = subprocess.Popen(
        [sys.executable, "-c", script], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "holding"
    return process


def test_a_second_process_waits_for_the_first_and_is_told_who(tmp_path: Path) -> None:
    target = tmp_path / "clusters.tsv"
    holder = hold(target, 1.5, then_write="built")
    waiting: list[str] = []
    started = time.monotonic()
    with building(target, waiting.append):
        # the block starts once the holder has finished, and sees what it built
        assert target.read_text() == "built"
    assert time.monotonic() - started > 1.0
    assert holder.wait(timeout=10) == 0
    assert len(waiting) == 1
    assert f"pid {holder.pid}" in waiting[0] and str(target) in waiting[0]
    # the lock file is hidden beside the target and stays (see the module's docstring)
    assert lock_file(target) == tmp_path / ".clusters.tsv.lock"
    assert lock_file(target).is_file()


def test_a_free_lock_is_taken_without_waiting(tmp_path: Path) -> None:
    waiting: list[str] = []
    with building(tmp_path / "folder", waiting.append):
        pass
    with building(tmp_path / "folder", waiting.append):
        pass
    assert waiting == []


def test_a_killed_holder_releases_the_lock(tmp_path: Path) -> None:
    target = tmp_path / "vectors"
    holder = hold(target, 60)
    holder.kill()
    holder.wait(timeout=10)
    waiting: list[str] = []
    with building(target, waiting.append):
        pass
    assert waiting == []


def test_a_cache_is_built_once_and_never_left_half_written(tmp_path: Path) -> None:
    target = tmp_path / "cache" / "pos.crfsuite"
    calls: list[str] = []

    def failing(name: str) -> None:
        calls.append(name)
        Path(name).write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        built_once(target, failing, print)
    # the interrupted build left nothing under the cache's name for a later run to trust
    assert not target.exists()
    assert calls == [f"{target}.partial"]

    def whole(name: str) -> None:
        calls.append(name)
        Path(name).write_text("whole")

    assert built_once(target, whole, print) == target
    assert target.read_text() == "whole"
    # built: kept, not built again
    built_once(target, whole, print)
    assert len(calls) == 2


def test_a_cache_another_process_is_building_is_waited_for_and_read(tmp_path: Path) -> None:
    target = tmp_path / "clusters.tsv"
    holder = hold(target, 1.0, then_write="theirs")
    lines: list[str] = []

    def ours(name: str) -> None:
        raise AssertionError("built twice")

    assert built_once(target, ours, lines.append) == target
    assert target.read_text() == "theirs"
    assert any(f"waiting for pid {holder.pid}" in line for line in lines)
    holder.wait(timeout=10)


def test_a_file_system_without_flock_builds_without_the_lock_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import fcntl

    def no_locks(fd: int, operation: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    lines: list[str] = []
    with building(tmp_path / "vectors", lines.append):
        (tmp_path / "vectors").mkdir()
    assert (tmp_path / "vectors").is_dir()
    assert len(lines) == 1
    assert "No locks available" in lines[0] and "without a lock" in lines[0]
