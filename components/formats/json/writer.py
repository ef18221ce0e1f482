"""cassis JSON writer (the UIMA JSON CAS format, readable by cassis and INCEpTION)."""

from __future__ import annotations

from pathlib import Path

import cassis
from pydantic import Field

from casflow.components.formats.view_writer import FolderWriter, FolderWriterConfig
from casflow.pipeline.files import atomic_write_bytes


class JsonWriterConfig(FolderWriterConfig):
    folder: str = Field("json", description="Sub-folder of the run's output folder.")
    pretty_print: bool = Field(False, description="Indent the JSON.")


class JsonWriter(FolderWriter[JsonWriterConfig]):
    name = "json.writer.v1"
    description = "UIMA CAS JSON (cassis), type system embedded."
    extension = ".json"

    def write(self, cas: cassis.Cas, doc_id: str) -> list[Path]:
        (path,) = self.output_paths(doc_id)
        data = cas.to_json(pretty_print=self.config.pretty_print)
        atomic_write_bytes(path, data.encode("utf-8"))
        return [path]
