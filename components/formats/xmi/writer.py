"""XMI writer: one ``<doc>.xmi`` per document (or ``.xmi.gz``, or a ``.tar`` per batch)
and ``TypeSystem.xml`` beside them.

The type system written is casflow's, or, when the documents came with more
(xmi.reader.v1 merges the DKPro Core or INCEpTION type system beside its input:
``POS_NOUN``, ``Token.morph``), the documents' own, so that every file written loads
strictly with the ``TypeSystem.xml`` beside it. Documents of one run are expected to
share one type system; with several, the last one written that adds to casflow's
is kept.
"""

from __future__ import annotations

from pathlib import Path

import cassis
from pydantic import Field

from casflow.cas.xmi import cas_to_xmi_bytes
from casflow.components.formats.view_writer import PackedFolderWriter, PackedWriterConfig
from casflow.pipeline.files import atomic_write_text
from casflow.typesystem import load_typesystem, typesystem_xml

TYPESYSTEM_FILE = "TypeSystem.xml"


class XmiWriterConfig(PackedWriterConfig):
    folder: str = Field("xmi", description="Sub-folder of the run's output folder.")
    pretty_print: bool = Field(False, description="Indent the XML (larger files, easier to read).")


class XmiWriter(PackedFolderWriter[XmiWriterConfig]):
    name = "xmi.writer.v1"
    description = (
        "UIMA XMI (all views) with the TypeSystem.xml beside it, loadable by Apache UIMA Java "
        "and DKPro Core (for INCEpTION, xmi.dkpro.writer.v1)."
    )
    extension = ".xmi"

    _casflow_features: frozenset[tuple[str, str]] | None = None
    _kept: frozenset[tuple[str, str]] | None = None

    def serialize(self, cas: cassis.Cas, doc_id: str) -> bytes:
        self._keep_typesystem(cas.typesystem)
        if self.config.pretty_print:
            return cas.to_xmi(pretty_print=True).encode("utf-8")
        return cas_to_xmi_bytes(cas)  # the same bytes as cassis, much sooner

    def _keep_typesystem(self, typesystem: cassis.TypeSystem) -> None:
        """Write the documents' type system beside them when it adds to casflow's."""
        if self._casflow_features is None:
            self._casflow_features = _declared(load_typesystem())
        declared = _declared(typesystem)
        if declared == self._kept or declared <= self._casflow_features:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.folder / TYPESYSTEM_FILE, typesystem.to_xml())
        self._kept = declared

    def finish(self) -> list[Path]:
        super().finish()
        path = self.folder / TYPESYSTEM_FILE
        if not _holds(path, _declared(load_typesystem())):
            atomic_write_text(path, typesystem_xml())
        return [path]


def _declared(typesystem: cassis.TypeSystem) -> frozenset[tuple[str, str]]:
    """Every type, as (type, ""), and every feature it declares, as (type, feature)."""
    types = list(typesystem.get_types())
    return frozenset((t.name, "") for t in types) | frozenset(
        (t.name, f.name) for t in types for f in t.features
    )


def _holds(path: Path, declared: frozenset[tuple[str, str]]) -> bool:
    """Whether the type system at ``path`` (written by a worker for documents that
    came with more types) declares all of ``declared``."""
    if not path.is_file():
        return False
    try:
        with path.open("rb") as xml:
            return declared <= _declared(cassis.load_typesystem(xml))
    except Exception:  # damaged or foreign: write casflow's over it
        return False
