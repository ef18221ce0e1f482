"""Shared base of the importers: processors that read one file per document into a view.

A workflow reads a document (e.g. CRAFT gold into view ``gold``) and then
imports precomputed annotations of the same document into another view
(``system``) with an importer such as ``conllu.import.v1``. The importer finds
its file from a pattern with a placeholder:

- ``{doc_id}``: the document id (``DocumentMetaData.documentId``);
- ``{doc_stem}``: the file-name-safe form of the id, as casflow's writers name
  their files (so the outputs of an earlier casflow run can be imported).

A relative pattern is taken from the working directory first, then from the
workflow's folder (as readers take their inputs). A document without a file is
an error naming the document and the path tried, unless ``missing: empty``
(a system that produced nothing for that document: the view stays empty).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, TypeVar

import cassis
from pydantic import Field

from casflow.cas.metadata import find_document_id
from casflow.pipeline.component import ComponentConfig, DocumentError, Processor, RunContext
from casflow.pipeline.files import safe_file_stem

PLACEHOLDERS = ("{doc_id}", "{doc_stem}")


class ImportFileMissing(DocumentError, FileNotFoundError):
    hint = (
        "check the importer's 'path' pattern (relative paths are taken from the working "
        "directory, then the workflow's folder), or set missing: empty when a system "
        "produced nothing for some documents"
    )


class ImportFormatError(DocumentError, ValueError):
    hint = "the imported file does not fit the document's text; check that it belongs to it"


def document_id(view: cassis.Cas) -> str:
    """The document id from DocumentMetaData of the view or the initial view."""
    found = find_document_id(view)
    if found is not None:
        return found
    raise ValueError(
        "the document has no DocumentMetaData.documentId; importers find files by document id"
    )


def fill_pattern(pattern: str, doc_id: str) -> str:
    return pattern.replace("{doc_id}", doc_id).replace("{doc_stem}", safe_file_stem(doc_id))


def resolve_document_path(pattern: str, doc_id: str, workflow_dir: Path) -> tuple[Path, list[Path]]:
    """The file for ``doc_id`` and the candidates tried (the first existing one wins)."""
    path = Path(fill_pattern(pattern, doc_id)).expanduser()
    if path.is_absolute():
        return path, [path]
    tried = [path, workflow_dir / path]
    return next((p for p in tried if p.is_file()), path), tried


class FileImportConfig(ComponentConfig):
    path: str = Field(
        description="File for each document; '{doc_id}' (or '{doc_stem}', the file-safe id) "
        "is replaced, e.g. runs/parser-x/{doc_id}.conllu. Relative: working directory, "
        "then the workflow's folder."
    )
    missing: Literal["error", "empty"] = Field(
        "error",
        description="A document without a file: an error, or an empty view (the system "
        "produced nothing).",
    )
    encoding: str = Field("utf-8", description="Text encoding of the files.")


FileImportConfigT = TypeVar("FileImportConfigT", bound=FileImportConfig)


class FileImport(Processor[FileImportConfigT]):
    """Finds and reads the file of a document; subclasses turn its text into annotations."""

    @classmethod
    def check_config(cls, config: FileImportConfigT, context: RunContext) -> list[str]:
        if not any(p in config.path for p in PLACEHOLDERS):
            return [
                f"path {config.path!r} has no '{{doc_id}}' placeholder, so every document "
                "would read the same file; e.g. runs/system/{doc_id}.ann"
            ]
        return []

    def document_path(self, view: cassis.Cas) -> tuple[str, Path | None]:
        """``(document id, its file)``; the file is None when it is missing and
        ``missing: empty``."""
        doc_id = document_id(view)
        path, tried = resolve_document_path(self.config.path, doc_id, self.context.workflow_dir)
        if path.is_file():
            return doc_id, path
        if self.config.missing == "empty":
            return doc_id, None
        raise ImportFileMissing(
            f"document {doc_id}: no file {' or '.join(str(p) for p in tried)} "
            f"(from path {self.config.path!r})"
        )

    def read_document_file(self, view: cassis.Cas) -> tuple[str, Path | None, str | None]:
        """``(document id, file, its text)``; file and text are None for a missing file
        with ``missing: empty``."""
        doc_id, path = self.document_path(view)
        if path is None:
            return doc_id, None, None
        try:
            return doc_id, path, path.read_text(encoding=self.config.encoding)
        except UnicodeDecodeError as exc:
            raise ImportFormatError(
                f"document {doc_id}: {path} is not valid {self.config.encoding} ({exc})"
            ) from exc
