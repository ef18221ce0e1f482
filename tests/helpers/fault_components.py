"""Components that inject faults, for tests/test_faults.py and tests/test_dask_backend.py.

A fault fires when the document text contains its marker (``FAULT-RAISE``,
``FAULT-SEGFAULT``, ...), so one workflow over a folder mixes good documents
with every kind of failure. Faults that end or freeze the process refuse to
fire in ``protect_pid`` (the pytest process), so a test that runs them
in-process by mistake fails instead of killing the test session.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import resource
import signal
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import cassis
from pydantic import Field

from casflow.components.formats.jats.reader import NxmlReader, NxmlReaderConfig
from casflow.pipeline.component import (
    ComponentConfig,
    DocumentRef,
    DocumentWarning,
    Processor,
    Writer,
)
from casflow.pipeline.files import atomic_write_text, safe_file_stem
from casflow.typesystem import SENTENCE, TOKEN

#: Marker -> what the fault injector does when the text contains it.
FAULTS = {
    "FAULT-RAISE": "raise RuntimeError",
    "FAULT-SYSEXIT": "call sys.exit(4)",
    "FAULT-HANG": "sleep in Python (SIGALRM interrupts it)",
    "FAULT-NATIVE-HANG": "block SIGALRM and sleep in C holding the GIL",
    "FAULT-OOM": "allocate past an RLIMIT_AS limit (MemoryError)",
    "FAULT-EXIT": "os._exit(3)",
    "FAULT-SEGFAULT": "read address 0 (SIGSEGV)",
    "FAULT-SIGKILL": "SIGKILL itself (as the OOM killer does)",
}
#: Not a fault: the document is processed, with a DocumentWarning about it.
WARN_MARKER = "DATA-WARN"
_KILLS_PROCESS = {"FAULT-NATIVE-HANG", "FAULT-EXIT", "FAULT-SEGFAULT", "FAULT-SIGKILL"}


class FaultInjectorConfig(ComponentConfig):
    protect_pid: int = Field(0, description="Never end or freeze this process (pytest's).")
    tokenize_up_to: int = Field(
        1_000_000, description="Whitespace-tokenize documents up to this many characters."
    )


class FaultInjector(Processor[FaultInjectorConfig]):
    """Tokenizes on whitespace, after doing whatever fault the text asks for."""

    name = "test.fault_injector.v1"
    produces = (TOKEN, SENTENCE)

    def process(self, view: cassis.Cas) -> None:
        text = view.sofa_string or ""
        for marker in FAULTS:
            if marker in text:
                self._fault(marker)
        if WARN_MARKER in text:
            warnings.warn(DocumentWarning(f"{WARN_MARKER} in the text"), stacklevel=1)
        if len(text) > self.config.tokenize_up_to:
            return
        token_type = view.typesystem.get_type(TOKEN)
        view.add_all(token_type(begin=m.start(), end=m.end()) for m in re.finditer(r"\S+", text))

    def _fault(self, marker: str) -> None:
        if marker in _KILLS_PROCESS and os.getpid() == self.config.protect_pid:
            raise RuntimeError(f"{marker} would end or freeze the test process; not fired")
        if marker == "FAULT-RAISE":
            raise RuntimeError("injected failure")
        if marker == "FAULT-SYSEXIT":
            sys.exit(4)
        if marker == "FAULT-HANG":
            time.sleep(3600)
        if marker == "FAULT-NATIVE-HANG":
            native_hang()
        if marker == "FAULT-OOM":
            allocate_past_limit()
        if marker == "FAULT-EXIT":
            os._exit(3)
        if marker == "FAULT-SEGFAULT":
            ctypes.string_at(0)
        if marker == "FAULT-SIGKILL":
            os.kill(os.getpid(), signal.SIGKILL)


def native_hang(seconds: int = 3600) -> None:
    """A hang SIGALRM cannot end: the signal is blocked and C code holds the GIL."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    # PyDLL keeps the GIL during the call, so no Python thread could run either.
    ctypes.PyDLL(None).sleep(seconds)


def allocate_past_limit() -> None:
    """Run out of memory safely: cap this process's address space, then exceed it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    page = os.sysconf("SC_PAGE_SIZE")
    with open("/proc/self/statm") as f:
        in_use = int(f.read().split()[0]) * page
    cap = in_use + (256 << 20)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        blob = bytearray(1 << 30)  # more than the 256 MB left
        del blob
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


class HangingWriterConfig(ComponentConfig):
    marker: str = Field("WRITER-HANG", description="Hang (natively) on texts containing this.")
    protect_pid: int = Field(0, description="Never freeze this process (pytest's).")


class HangingWriter(Writer[HangingWriterConfig]):
    """Writes nothing; hangs where no per-document limit applies (writers have none)."""

    name = "test.hanging_writer.v1"

    def output_paths(self, doc_id: str) -> list[Path]:
        return []

    def write(self, cas: cassis.Cas, doc_id: str) -> list[Path]:
        if self.config.marker in (cas.sofa_string or ""):
            if os.getpid() == self.config.protect_pid:
                raise RuntimeError("would freeze the test process; not fired")
            native_hang()
        return []


def peak_rss_kb() -> int:
    """This process's own peak resident memory in KiB: VmHWM, the high-water mark of its
    address space since its exec. Not ru_maxrss: Linux carries that over fork and exec,
    so a worker spawned by a large parent (a test session that trained models) reports
    the parent's size."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux


class MemoryProbe(Writer[ComponentConfig]):
    """Records the worker's peak memory after the document's other writers ran."""

    name = "test.memory_probe.v1"

    def output_paths(self, doc_id: str) -> list[Path]:
        return [Path(self.context.output_dir) / "memory" / f"{safe_file_stem(doc_id)}.json"]

    def write(self, cas: cassis.Cas, doc_id: str) -> list[Path]:
        (path,) = self.output_paths(doc_id)
        peak_kb = peak_rss_kb()
        atomic_write_text(path, json.dumps({"pid": os.getpid(), "peak_mb": peak_kb / 1024}))
        return [path]


class VanishingNxmlReaderConfig(NxmlReaderConfig):
    vanish: list[str] = Field(
        default_factory=list,
        description="File names deleted right after they are listed (before a worker reads them).",
    )


class VanishingNxmlReader(NxmlReader):
    """The NXML reader, deleting chosen files between listing and loading."""

    name = "test.vanishing_nxml_reader.v1"
    Config = VanishingNxmlReaderConfig

    config: VanishingNxmlReaderConfig

    def iter_documents(self) -> Iterator[DocumentRef]:
        for ref in super().iter_documents():
            if Path(ref.uri).name in self.config.vanish:
                Path(ref.uri).unlink()
            yield ref


FAULT_COMPONENTS = [FaultInjector, HangingWriter, MemoryProbe, VanishingNxmlReader]


def register_fault_components() -> None:
    """Register the components above in this process (workers learn them from the runner)."""
    from casflow.pipeline.registry import registry

    reg = registry()
    for cls in FAULT_COMPONENTS:
        if cls.name not in reg.names():
            reg.register(cls.name, cls, origin="tests")
