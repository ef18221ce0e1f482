"""Locks between casflow processes: ``flock`` on a file, released by the kernel when
the holding process ends, however it ends (kill -9 included), so a stale lock never
blocks a resume.

- :class:`OutputLock`: one run per output folder; a second run is refused.
- :func:`building`: one process builds a file or folder that several runs may need
  at the same time (a training's folds and final model; what its ``--fold K`` runs
  share: the character language models, the word vectors, the CRF trainer's word
  clusters and POS tagger); the others wait for it, then find it built.
  :func:`built_once` is that for one file, written under a temporary name.

Each lock file names its holder (pid, host, start, command) for the message the
others print. The files stay: removing one would let a third process lock a new
file while a second still waits on the old one.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
import socket
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from casflow.pipeline.files import save_atomically
from casflow.pipeline.journal import STATE_DIR


class OutputFolderBusy(Exception):
    """Another casflow run holds the output folder's lock."""


class OutputLock:
    """One run per output folder: an exclusive ``flock`` on ``.casflow/lock``."""

    def __init__(self, output_dir: Path) -> None:
        self.path = Path(output_dir) / STATE_DIR / "lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = _open(self.path)
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
        _write_holder(fd)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing releases the flock
            self._fd = None


def lock_file(target: Path) -> Path:
    """The lock file of :func:`building` ``target``: beside it, hidden."""
    target = Path(target)
    return target.parent / f".{target.name}.lock"


@contextlib.contextmanager
def building(target: Path, waiting: Callable[[str], None]) -> Iterator[None]:
    """Hold the lock on building ``target`` for the block. When another process holds
    it, ``waiting`` gets a line naming that process, and the block starts once it has
    finished; the block must then check again whether ``target`` is built."""
    fd = _open(lock_file(target))
    try:
        if _wait_for_lock(fd, target, waiting):
            _write_holder(fd)
        yield
    finally:
        os.close(fd)


def built_once(path: Path, build: Callable[[str], object], log: Callable[[str], None]) -> Path:
    """``path``, built by ``build(temporary name)`` when it is not there, then renamed:
    a build that is killed leaves no partial file for later runs to read, and a process
    building it at the same time (another ``--fold K`` run, another training sharing
    the cache) is waited for, then its file is read."""
    if not path.is_file():
        with building(path, log):
            if not path.is_file():
                path.parent.mkdir(parents=True, exist_ok=True)
                save_atomically(build, path)
    return path


def _wait_for_lock(fd: int, target: Path, waiting: Callable[[str], None]) -> bool:
    """Lock ``fd``, waiting for its holder; False where the file system has no locks."""
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            waiting(f"waiting for {_read_holder(fd)}, which is building {target}")
            fcntl.flock(fd, fcntl.LOCK_EX)
        return True
    except OSError as error:
        # some network file systems have no flock (ENOLCK): one run alone still works
        waiting(
            f"cannot lock {lock_file(target)} ({error.strerror}); building {target} "
            "without a lock: do not start runs that build it at the same time here"
        )
        return False


def _open(path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    return os.open(path, os.O_RDWR | os.O_CREAT, 0o666)


def _write_holder(fd: int) -> None:
    record = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": " ".join(sys.argv),
    }
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(record).encode("utf-8"), 0)


def _read_holder(fd: int) -> str:
    try:
        holder = json.loads(os.pread(fd, 4096, 0).decode("utf-8"))
        return (
            f"pid {holder['pid']} on {holder['host']}, started {holder['started']}: "
            f"{holder['command']}"
        )
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that has not yet written its name"
