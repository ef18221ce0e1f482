"""cassis JSON writer (the UIMA JSON CAS format, readable by cassis and INCEpTION)."""

from __future__ import annotations

from pathlib import Path

import cassis
from pydantic import Field

from casflow.pipeline.component import ComponentConfig, RunContext, Writer
from casflow.pipeline.files import atomic_write_bytes, safe_file_stem


class JsonWriterConfig(ComponentConfig):
    folder: str = Field("json", description="Sub-folder of the run's output folder.")
    pretty_print: bool = Field(False, description="Indent the JSON.")


class JsonWriter(Writer):
    name = "json.writer.v1"
    description = "UIMA CAS JSON (cassis), type system embedded."
    Config = JsonWriterConfig

    config: JsonWriterConfig

    def __init__(self, config: JsonWriterConfig, context: RunContext) -> None:
        super().__init__(config, context)
        self.folder = Path(context.output_dir) / config.folder

    def output_paths(self, doc_id: str) -> list[Path]:
        return [self.folder / f"{safe_file_stem(doc_id)}.json"]

    def write(self, cas: cassis.Cas, doc_id: str) -> list[Path]:
        (path,) = self.output_paths(doc_id)
        data = cas.to_json(pretty_print=self.config.pretty_print)
        atomic_write_bytes(path, data.encode("utf-8"))
        return [path]
