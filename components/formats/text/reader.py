"""Plain-text reader: one document per UTF-8 file."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Literal

import cassis
from pydantic import Field

from casflow.cas.metadata import set_document_metadata
from casflow.cas.sofa import line_column, set_sofa_text
from casflow.cas.xmi import XML_INCOMPATIBLE
from casflow.components.formats.common import warn
from casflow.components.inputs import (
    IdStyle,
    count_input_items,
    document_id,
    input_problems,
    iter_input_items,
    read_document_bytes,
    resolve_input,
)
from casflow.pipeline.component import (
    ComponentConfig,
    DocumentError,
    DocumentRef,
    Reader,
    RunContext,
)


class DocumentDecodeError(DocumentError, ValueError):
    hint = "convert the file to UTF-8 (e.g. iconv -f latin1 -t utf-8), or set the reader's encoding"


class NotPlainTextError(DocumentError, ValueError):
    hint = (
        "extract the text first (gunzip a .gz file, unzip a .zip, convert a PDF to text), "
        "or pack the text files as a .tar.gz archive, which the reader opens"
    )


#: Leading bytes of files that are not text in any encoding, so that such a file is
#: named for what it is rather than reported as a text in a wrong encoding.
#: Whole headers, so that a text that happens to begin "BZh" or "%PDF-" is still read:
#: bzip2's "BZh", block size and block magic; a PDF's version number.
_NOT_TEXT_MAGIC = {
    re.compile(rb"\x1f\x8b"): "gzip-compressed",
    re.compile(rb"PK\x03\x04"): "a zip archive",
    re.compile(rb"BZh[1-9](1AY&SY|\x17rE8P\x90)"): "bzip2-compressed",
    re.compile(rb"\xfd7zXZ\x00"): "xz-compressed",
    re.compile(rb"%PDF-[12]\.[0-9]"): "a PDF file",
}


class XmlForbiddenCharacterError(DocumentError, ValueError):
    hint = (
        "remove the character from the file, or set the reader's control_characters: space "
        "to read each such character as a space (offsets keep)"
    )


class TextReaderConfig(ComponentConfig):
    input: str | None = Field(None, description="A file, folder, glob or @list file.")
    pattern: str = Field("**/*.txt", description="Files to take from a folder (recursive glob).")
    encoding: str = Field("utf-8", description="Text encoding of the files.")
    id_style: IdStyle = Field(
        "stem", description="Document id: file stem, or path relative to the input folder."
    )
    language: str = Field("en", description="Document language written to the CAS.")
    control_characters: Literal["fail", "space"] = Field(
        "fail",
        description="Characters XML 1.0 forbids, which no XMI can hold (control characters "
        "other than tab and line breaks, e.g. U+000C form feed from PDF extraction; U+FFFE "
        "and U+FFFF): fail the document naming the first, or read each as a space (offsets "
        "keep).",
    )


class TextReader(Reader[TextReaderConfig]):
    name = "text.reader.v1"
    description = "Plain-text files, one document each."
    produces = ()

    def __init__(self, config: TextReaderConfig, context: RunContext | None = None) -> None:
        super().__init__(config, context)
        self.input = resolve_input(config.input or "", self.context.workflow_dir)

    @classmethod
    def check_config(cls, config: TextReaderConfig, context: RunContext) -> list[str]:
        return input_problems(
            resolve_input(config.input, context.workflow_dir) if config.input else None,
            config.pattern,
            context.output_dir,
        )

    def count_documents(self) -> int | None:
        return count_input_items(self.input, self.config.pattern)

    def iter_documents(self) -> Iterator[DocumentRef]:
        for item in iter_input_items(self.input, self.config.pattern):
            yield DocumentRef(
                document_id(item.path, item.root, self.config.id_style),
                item.uri,
                item.data,
                item.size,
                item.error,
            )

    def load(self, ref: DocumentRef, cas: cassis.Cas) -> None:
        data = ref.data if ref.data is not None else read_document_bytes(ref.uri)
        kind = next((k for magic, k in _NOT_TEXT_MAGIC.items() if magic.match(data)), None)
        if kind is not None:
            raise NotPlainTextError(f"{ref.uri} is {kind}, not plain text")
        try:
            text = data.decode(self.config.encoding)
        except UnicodeDecodeError as exc:
            utf16 = (
                " (it starts with a UTF-16 byte-order mark: set the reader's encoding: utf-16)"
                if data[:2] in (b"\xff\xfe", b"\xfe\xff")
                else ""
            )
            raise DocumentDecodeError(
                f"{ref.uri} is not valid {self.config.encoding}: byte {exc.start} "
                f"({data[exc.start : exc.start + 1]!r}) cannot be decoded{utf16}"
            ) from exc
        # A byte-order mark is not text; CRLF is normalised so offsets match what other tools see.
        text = text.removeprefix("\ufeff").replace("\r\n", "\n")
        # Checked here, not when the XMI writer meets it after the whole chain has run.
        forbidden = XML_INCOMPATIBLE.search(text)
        if forbidden is not None:
            if self.config.control_characters == "space":
                text = XML_INCOMPATIBLE.sub(" ", text)
            else:
                offset = forbidden.start()
                line, column = line_column(text, offset)
                raise XmlForbiddenCharacterError(
                    f"{ref.uri}: line {line}, column {column} (character {offset}): "
                    f"U+{ord(forbidden.group()):04X} is a character XML 1.0 forbids, so no "
                    "XMI can hold the document"
                )
        if not text.strip():
            # kept (an empty document is valid), but a failed text extraction often
            # leaves empty files behind, and the run would count them as done
            warn("the file has no text (empty or whitespace only)", source=ref.uri, line=None)
        set_sofa_text(cas, text)
        cas.sofa_mime = "text/plain"
        set_document_metadata(cas, ref.doc_id, ref.uri, language=self.config.language)
