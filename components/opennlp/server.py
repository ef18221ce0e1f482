"""The JVM side of the OpenNLP wrapper: one long-lived Java process per worker process.

``java/OpenNlpServer.java`` (package data) is compiled once against Debian's
``opennlp-tools.jar`` into ``$XDG_CACHE_HOME/casflow/opennlp/<hash>/`` (as
:mod:`casflow.pipeline.uima_java` compiles its checker) and started on the first
request. It reads one JSON object per line on stdin and answers one JSON line on
stdout; OpenNLP's own printing goes to stderr, which is kept in a temporary file
and quoted when something fails. Every component and trainer of a process shares
the one JVM (:func:`shared_server`); the last one to :func:`release` it stops it.

Java counts offsets in UTF-16 units, Python in code points: :func:`to_code_points`
converts the spans Java returns for a text with characters outside the BMP.
"""

from __future__ import annotations

import os
import shutil
import zipfile
from importlib import resources
from pathlib import Path

from casflow.pipeline.jvm import JsonLinesJvm, SharedJvm, cache_dir, compile_java

JAR_ENV = "CASFLOW_OPENNLP_JAR"
DEFAULT_JAR = Path("/usr/share/java/opennlp-tools.jar")
SERVER_CLASS = "OpenNlpServer"


class OpenNlpError(RuntimeError):
    """The OpenNLP server refused a request or died."""


def find_jar() -> Path | None:
    """``$CASFLOW_OPENNLP_JAR`` or Debian's ``opennlp-tools.jar``; None if absent."""
    configured = os.environ.get(JAR_ENV)
    jar = Path(configured) if configured else DEFAULT_JAR
    return jar if jar.is_file() else None


def opennlp_missing() -> str | None:
    """Why OpenNLP cannot run here, or None."""
    if shutil.which("java") is None or shutil.which("javac") is None:
        return "java and javac must be on PATH to run Apache OpenNLP"
    if find_jar() is None:
        return (
            f"Apache OpenNLP not found (looked at ${JAR_ENV} and {DEFAULT_JAR}); install the "
            f"Debian package opennlp (apt-get install opennlp) or set {JAR_ENV} to "
            "an opennlp-tools 2.x jar"
        )
    return None


#: A class every opennlp-tools 2 jar holds (the chunking parser casflow trains and runs).
_PROBE_CLASS = "opennlp/tools/parser/chunking/Parser.class"


def opennlp_problem() -> str | None:
    """Why OpenNLP cannot run here, or None: :func:`opennlp_missing`, then whether the
    jar is an OpenNLP jar and casflow's server compiles against it (once per jar, in
    the cache), so a bad jar is found before any document is read."""
    problem = opennlp_missing()
    if problem:
        return problem
    jar = find_jar()
    assert jar is not None
    where = f"${JAR_ENV}" if os.environ.get(JAR_ENV) else "the Debian package opennlp"
    fix = (
        f"set {JAR_ENV} to an opennlp-tools 2.x jar"
        if os.environ.get(JAR_ENV)
        else "reinstall the Debian package opennlp (apt-get install --reinstall opennlp)"
    )
    try:
        with zipfile.ZipFile(jar) as archive:
            if _PROBE_CLASS not in archive.namelist():
                return (
                    f"{jar} ({where}) is not an Apache OpenNLP 2 jar: it has no "
                    f"{_PROBE_CLASS}; {fix}"
                )
    except (OSError, zipfile.BadZipFile) as exc:
        return f"{jar} ({where}) cannot be read as a jar ({exc}); {fix}"
    try:
        compile_server(jar)
    except OpenNlpError as exc:
        return f"casflow's OpenNLP server does not compile against {jar} ({where}): {exc}; {fix}"
    return None


def server_source() -> Path:
    return Path(str(resources.files(__package__).joinpath("java", f"{SERVER_CLASS}.java")))


def default_build_dir() -> Path:
    return cache_dir("opennlp")


def compile_server(jar: Path, build_dir: Path | None = None) -> Path:
    """Compile the server once per source and jar; return the folder of its classes."""
    return compile_java(
        [server_source()], [jar], build_dir or default_build_dir(), SERVER_CLASS, OpenNlpError
    )


class OpenNlpServer(JsonLinesJvm):
    """One JVM running ``OpenNlpServer``, started on the first request."""

    error = OpenNlpError
    label = "OpenNLP"

    def __init__(self, jar: Path | None = None, build_dir: Path | None = None) -> None:
        super().__init__()
        self.jar = jar
        self.build_dir = build_dir
        self._loaded: set[tuple[str, str]] = set()
        self._loaded_generation = 0

    def command(self) -> list[str]:
        problem = opennlp_missing() if self.jar is None else None
        if problem:
            raise OpenNlpError(problem)
        jar = self.jar or find_jar()
        assert jar is not None
        class_dir = compile_server(jar, self.build_dir)
        # One GC thread: the machine is shared.
        classpath = os.pathsep.join([str(class_dir), str(jar)])
        return ["java", "-XX:+UseSerialGC", "-cp", classpath, SERVER_CLASS]

    def load(self, kind: str, path: Path) -> str:
        """Load a model once per JVM; its key for later requests."""
        key = str(Path(path).resolve())
        if not self.running or self._loaded_generation != self.generation:
            self._loaded.clear()
        if (kind, key) not in self._loaded:
            try:
                self.request("load", kind=kind, path=key)
                self._loaded_generation = self.generation
            except OpenNlpError as exc:
                raise OpenNlpError(
                    f"{path}: not an OpenNLP {kind} model OpenNLP 2 can load ({exc})"
                ) from exc
            self._loaded.add((kind, key))
        return key

    def close(self) -> None:
        self._loaded.clear()
        super().close()


_SHARED: SharedJvm[OpenNlpServer] = SharedJvm(OpenNlpServer)


def shared_server() -> OpenNlpServer:
    """The process's one JVM of this kind (not started until its first request)."""
    return _SHARED.acquire()


def release(server: OpenNlpServer) -> None:
    """A user of :func:`shared_server` is done; the last one stops the JVM."""
    _SHARED.release(server)


def to_code_points(text: str, spans: list[list[int]]) -> list[tuple[int, int]]:
    """Spans in UTF-16 units of ``text`` as code-point offsets."""
    if text.isascii() or all(ord(c) < 0x10000 for c in text):
        return [(b, e) for b, e in spans]
    index = []
    for position, char in enumerate(text):
        index.append(position)
        if ord(char) >= 0x10000:
            index.append(position)  # the low surrogate: never a span boundary
    index.append(len(text))
    return [(index[b], index[e]) for b, e in spans]
