"""cassis JSON writer (the UIMA JSON CAS format, readable by cassis and INCEpTION)."""

from __future__ import annotations

import cassis
from pydantic import Field

from casflow.components.formats.view_writer import PackedFolderWriter, PackedWriterConfig


class JsonWriterConfig(PackedWriterConfig):
    folder: str = Field("json", description="Sub-folder of the run's output folder.")
    pretty_print: bool = Field(False, description="Indent the JSON.")


class JsonWriter(PackedFolderWriter[JsonWriterConfig]):
    name = "json.writer.v1"
    description = "UIMA CAS JSON (cassis), type system embedded."
    extension = ".json"

    def serialize(self, cas: cassis.Cas, doc_id: str) -> bytes:
        return cas.to_json(pretty_print=self.config.pretty_print).encode("utf-8")
