"""XMI writer: one ``<doc>.xmi`` per document (or ``.xmi.gz``, or a ``.tar`` per batch)
and ``TypeSystem.xml`` beside them."""

from __future__ import annotations

from pathlib import Path

import cassis
from pydantic import Field

from casflow.cas.xmi import cas_to_xmi_bytes
from casflow.components.formats.view_writer import PackedFolderWriter, PackedWriterConfig
from casflow.pipeline.files import atomic_write_text
from casflow.typesystem import typesystem_xml

TYPESYSTEM_FILE = "TypeSystem.xml"


class XmiWriterConfig(PackedWriterConfig):
    folder: str = Field("xmi", description="Sub-folder of the run's output folder.")
    pretty_print: bool = Field(False, description="Indent the XML (larger files, easier to read).")


class XmiWriter(PackedFolderWriter[XmiWriterConfig]):
    name = "xmi.writer.v1"
    description = "UIMA XMI (all views), loadable by Apache UIMA Java, DKPro Core and INCEpTION."
    extension = ".xmi"

    def serialize(self, cas: cassis.Cas, doc_id: str) -> bytes:
        if self.config.pretty_print:
            return cas.to_xmi(pretty_print=True).encode("utf-8")
        return cas_to_xmi_bytes(cas)  # the same bytes as cassis, much sooner

    def finish(self) -> list[Path]:
        super().finish()
        path = self.folder / TYPESYSTEM_FILE
        atomic_write_text(path, typesystem_xml())
        return [path]
