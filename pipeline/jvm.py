"""One long-lived JVM per worker process, spoken to in JSON lines.

Tool wrappers that run Java (OpenNLP, the UIMA engine bridge) ship a server class as
package data. :func:`compile_java` compiles it once, together with the shared
``java/Json.java`` beside this module, into ``$XDG_CACHE_HOME/casflow/<name>/<hash>/``
(the hash covers the sources and the class path, so an edited source recompiles and
concurrent workers never see a half-written folder). :class:`JsonLinesJvm` starts the
JVM on its first request, writes one JSON object per line on its stdin and reads one
JSON line back; the server's own printing goes to stderr, kept in a temporary file and
quoted when something fails. ``{"error": ...}`` answers become the wrapper's error class.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Generic, TypeVar


class JvmError(RuntimeError):
    """A Java server could not be compiled, refused a request or died."""


def json_source() -> Path:
    """``Json.java``: the small JSON reader/writer every server compiles with."""
    return Path(str(resources.files("casflow.pipeline").joinpath("java", "Json.java")))


def cache_dir(name: str) -> Path:
    """``$XDG_CACHE_HOME/casflow/<name>`` (``~/.cache/casflow/<name>`` by default)."""
    cache_root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache_root) / "casflow" / name


def compile_java(
    sources: Sequence[Path],
    classpath: Sequence[Path],
    build_dir: Path,
    main_class: str,
    error: type[Exception] = JvmError,
) -> Path:
    """Compile ``sources`` (plus ``Json.java``) once; return the folder of their classes."""
    sources = [*sources, json_source()]
    digest = hashlib.sha256()
    for source in sources:
        digest.update(source.read_bytes())
    for jar in classpath:
        digest.update(str(Path(jar).resolve()).encode())
    class_dir = build_dir / digest.hexdigest()[:16]
    if (class_dir / f"{main_class}.class").is_file():
        return class_dir
    build_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="compiling-", dir=build_dir))
    try:
        command = ["javac", "-encoding", "UTF-8", "-d", str(staging)]
        if classpath:
            command += ["-cp", os.pathsep.join(str(jar) for jar in classpath)]
        result = subprocess.run([*command, *map(str, sources)], capture_output=True, text=True)
        if result.returncode != 0:
            names = ", ".join(s.name for s in sources)
            raise error(
                f"javac failed on {names} against {list(map(str, classpath))}:\n{result.stderr}"
            )
        try:
            staging.rename(class_dir)
        except OSError:
            # Another process compiled the same sources first; its classes are identical.
            if not (class_dir / f"{main_class}.class").is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return class_dir


class JsonLinesJvm:
    """One JVM running a JSON-lines server class, started on the first request.

    Subclasses say what to run in :meth:`command` (compiling there, so nothing is
    compiled until the JVM is needed) and may set ``error`` and ``label``.
    """

    error: type[Exception] = JvmError
    label = "Java"

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: Any = None
        self._lock = threading.Lock()
        #: Counts JVM starts: what a caller loaded into the JVM is gone when it changes
        #: (a JVM that died is started again by the next request).
        self.generation = 0

    def command(self) -> list[str]:
        """The ``java ...`` command line of the server."""
        raise NotImplementedError

    def _start(self) -> subprocess.Popen[bytes]:
        command = self.command()
        self.generation += 1
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the JVM
        self._process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            # The JVM encodes file names with the locale's charset; under LANG=C it cannot
            # open a non-ASCII path.
            env={**os.environ, "LC_ALL": "C.UTF-8"},
        )
        return self._process

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def stderr_tail(self, limit: int = 4000) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0, os.SEEK_END)
        size = self._stderr.tell()
        self._stderr.seek(max(0, size - limit))
        return self._stderr.read().decode("utf-8", errors="replace")

    def request(self, op: str, **fields: Any) -> dict[str, Any]:
        """Send one request; its answer, or ``self.error`` with the server's message."""
        line = json.dumps({"op": op, **fields}) + "\n"
        with self._lock:
            process = self._process
            if process is None or process.poll() is not None:
                process = self._start()
            assert process.stdin is not None and process.stdout is not None
            try:
                process.stdin.write(line.encode("utf-8"))
                process.stdin.flush()
                answer = process.stdout.readline()
            except BrokenPipeError:
                answer = b""
        if not answer:
            raise self.error(
                f"the {self.label} JVM stopped during {op!r}; its stderr:\n{self.stderr_tail()}"
            )
        result: dict[str, Any] = json.loads(answer)
        if "error" in result:
            raise self.error(f"{self.label} {op}: {result['error']}")
        return result

    def close(self) -> None:
        """Stop the JVM (closing its stdin ends the server's loop)."""
        process, self._process = self._process, None
        if process is not None:
            if process.stdin is not None:
                process.stdin.close()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


JvmT = TypeVar("JvmT", bound=JsonLinesJvm)


class SharedJvm(Generic[JvmT]):
    """One JVM per process shared by every component that asks for it.

    Components acquire it in ``__init__`` and release it in ``close``; the last
    release stops the JVM, so a worker never keeps a JVM nobody uses and never
    starts a second one while another component holds the first.
    """

    def __init__(self, factory: Callable[[], JvmT]) -> None:
        self._factory = factory
        self._jvm: JvmT | None = None
        self._users = 0
        self._lock = threading.Lock()

    @property
    def current(self) -> JvmT | None:
        """The JVM while someone holds it, else None."""
        return self._jvm

    def acquire(self) -> JvmT:
        """The process's JVM (not started until its first request)."""
        with self._lock:
            if self._jvm is None:
                self._jvm = self._factory()
            self._users += 1
            return self._jvm

    def release(self, jvm: JvmT) -> None:
        """A user of :meth:`acquire` is done; the last one stops the JVM."""
        with self._lock:
            if jvm is not self._jvm:
                jvm.close()
                return
            self._users -= 1
            if self._users <= 0:
                jvm.close()
                self._jvm, self._users = None, 0
