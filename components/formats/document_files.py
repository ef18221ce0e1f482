"""Shared base of the importers: processors that read one file per document into a view.

A workflow reads a document (e.g. CRAFT gold into view ``gold``) and then
imports precomputed annotations of the same document into another view
(``system``) with an importer such as ``conllu.import.v1``. The importer finds
its file from a pattern with a placeholder:

- ``{doc_id}``: the document id (``DocumentMetaData.documentId``);
- ``{doc_stem}``: the file-name-safe form of the id, as casflow's writers name
  their files (so the outputs of an earlier casflow run can be imported).

An id put in as ``{doc_id}`` may be nested (``sub/doc1``) but not absolute nor hold a
``..`` part: such an id (from an archive member, a list file or another tool's XMI)
fails the document with :class:`ImportPathError` instead of reading a file outside the
pattern's folder.

A relative pattern is taken from the working directory first, then from the
workflow's folder (as readers take their inputs). A document without a file is
an error naming the document and the path tried, unless ``missing: empty``
(a system that produced nothing for that document: the view stays empty, with a
warning the run report lists the documents under).

Files are decoded with ``encoding`` (a byte that does not decode fails the document,
naming the file and line) and a leading byte-order mark is dropped. A file that
breaks its format fails with :class:`ImportFileMalformed`, one that does not fit
the document's text with :class:`ImportFormatError`: each says what to do.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal, TypeVar

import cassis
from pydantic import Field

from casflow.cas.metadata import find_document_id
from casflow.components.formats.common import warn, without_bom
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


class ImportFileMalformed(DocumentError, ValueError):
    """The file breaks its own format (a line of the wrong shape), whatever the text."""

    hint = (
        "the imported file breaks its format at the line the message names: fix or "
        "regenerate that file, or check the importer's options (e.g. encoding, separator)"
    )


class ImportDecodeError(DocumentError, ValueError):
    hint = (
        "convert the file to the importer's encoding (e.g. iconv -f latin1 -t utf-8), "
        "or set the importer's encoding to the one the file is in"
    )


def document_id(view: cassis.Cas) -> str:
    """The document id from DocumentMetaData of the view or the initial view."""
    found = find_document_id(view)
    if found is not None:
        return found
    raise ValueError(
        "the document has no DocumentMetaData.documentId; importers find files by document id"
    )


class ImportPathError(DocumentError, ValueError):
    """The document id cannot stand in a path as ``{doc_id}``: it would leave the folder."""

    hint = (
        "the document id is not a relative file path below the pattern's folder (it comes "
        "from the input: a file, archive member or XMI metadata); use '{doc_stem}' in the "
        "importer's path (the file-safe id casflow's writers name files by), or give the "
        "documents plain ids"
    )


def _escape_in_id(doc_id: str) -> str | None:
    """Why ``doc_id`` put in a path would name a file outside the pattern's folder, or None.

    Nested ids (``sub/doc1``, from ``id_style: relative_path``) stay below the folder and
    are allowed; an id from an archive member, a list file or another tool's XMI can
    climb out with ``..`` or be absolute, and would read any file the user can read.
    """
    if "\0" in doc_id:
        return "holds a NUL character"
    if doc_id.startswith("/"):
        return "is an absolute path"
    if ".." in doc_id.split("/"):
        return "holds a '..' part"
    return None


def fill_pattern(pattern: str, doc_id: str) -> str:
    if "{doc_id}" in pattern:
        escape = _escape_in_id(doc_id)
        if escape is not None:
            raise ImportPathError(
                f"document {doc_id!r}: the id {escape}, so path {pattern!r} would name a "
                "file outside its folder; not read"
            )
    return pattern.replace("{doc_id}", doc_id).replace("{doc_stem}", safe_file_stem(doc_id))


def resolve_document_path(pattern: str, doc_id: str, workflow_dir: Path) -> tuple[Path, list[Path]]:
    """The file for ``doc_id`` and the candidates tried (the first existing one wins)."""
    # '~' is expanded in the pattern before the id goes in: an id that starts with
    # '~user' must not name that user's home folder.
    path = Path(fill_pattern(os.path.expanduser(pattern), doc_id))
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
            # One message for every such document, so the run report lists them under
            # it: a mistyped pattern would otherwise leave every view empty unnoticed.
            warn(
                "no file for the document (missing: empty): its view is left empty",
                source=f"path {self.config.path!r}",
                line=None,
            )
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
            content = path.read_text(encoding=self.config.encoding)
        except UnicodeDecodeError as exc:
            line = exc.object[: exc.start].count(b"\n") + 1
            raise ImportDecodeError(
                f"document {doc_id}: {path}:{line}: not valid {self.config.encoding}: byte "
                f"{exc.start} ({exc.object[exc.start : exc.start + 1]!r}) cannot be decoded"
            ) from exc
        # A byte-order mark is not content: left in, it sticks to the first line's first
        # field (a CoNLL-U id, a brat id, a token) and that line fails or is not read.
        return doc_id, path, without_bom(content)


def warn_uncovered_text(text: str, position: int, path: Path, unit: str) -> None:
    """Warn when ``text`` has more than whitespace after ``position``, where a token file's
    last ``unit`` (sentence, token) ended: a truncated or empty file (a tool stopped
    early) would otherwise leave the rest of the document without annotations unnoticed."""
    rest = text[position:]
    if not rest.strip():
        return
    offset = position + len(rest) - len(rest.lstrip())
    warn(
        f"the text from offset {offset} of {len(text)} ({text[offset : offset + 30]!r}) is in "
        f"no {unit} of the file, so it has no annotations in this view; check that the file "
        "is complete (a tool that stopped early writes a truncated file)",
        source=str(path),
        line=None,
    )
