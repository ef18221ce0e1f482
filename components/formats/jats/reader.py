"""PubMed Central NXML (JATS) reader: article text with its structure.

The text layout and the structure spans come from
:mod:`casflow.components.formats.jats.parse` (hardened parser: no DTD, no entity
expansion, no network); this module only lists the files and turns the spans
into casflow.structure annotations.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Literal

import cassis
from pydantic import Field

from casflow.cas.metadata import set_document_metadata
from casflow.cas.sofa import set_sofa_text
from casflow.components.formats.jats.parse import DocumentFormatError, read_jats
from casflow.components.inputs import (
    document_id,
    input_problems,
    iter_input_items,
    read_document_bytes,
    resolve_input,
)
from casflow.pipeline.component import ComponentConfig, DocumentRef, Reader, RunContext
from casflow.typesystem import (
    ABSTRACT,
    CAPTION,
    CITATION,
    HEADING,
    PARAGRAPH,
    REFERENCE,
    SECTION,
    TITLE,
    TYPOGRAPHY,
)

SPAN_TYPE_TO_CAS = {
    "title": TITLE,
    "abstract": ABSTRACT,
    "section": SECTION,
    "heading": HEADING,
    "paragraph": PARAGRAPH,
    "caption": CAPTION,
    "citation": CITATION,
    "reference": REFERENCE,
    "typography": TYPOGRAPHY,
}

# The PMCID is read from the head of the file in the parent process, where a
# full parse of every article only to name it would double the reading cost.
_ARTICLE_ID = {
    "pmcid": re.compile(
        rb"<article-id[^>]*pub-id-type=.pmc(?:id)?.[^>]*>\s*(?:PMC)?(\d+)\s*<", re.I
    ),
    "pmid": re.compile(rb"<article-id[^>]*pub-id-type=.pmid.[^>]*>\s*(\d+)\s*<", re.I),
}


def sniff_article_id(head: bytes, kind: str = "pmcid") -> str | None:
    """The PMCID (``PMC123``) or PMID (``123``) from the head of an NXML file."""
    match = _ARTICLE_ID[kind].search(head)
    if match is None:
        return None
    number = match.group(1).decode()
    return f"PMC{number}" if kind == "pmcid" else number


class NxmlDocumentError(DocumentFormatError):
    """A DocumentFormatError raised by the reader; its ``hint`` is the parser's."""


class NxmlReaderConfig(ComponentConfig):
    input: str | None = Field(None, description="An .nxml/.xml file, folder, glob or @list file.")
    pattern: str = Field("**/*.nxml", description="Files to take from a folder (recursive glob).")
    id_style: Literal["pmcid", "stem", "relative_path"] = Field(
        "pmcid",
        description="Document id: the article's PMCID (file stem when it has none), the stem, or the relative path.",
    )
    back_matter: bool = Field(
        True, description="Include acknowledgements, back sections and appendices."
    )
    references: bool = Field(
        False, description="Include the reference list as Reference annotations."
    )
    citations: bool = Field(True, description="Annotate in-text bibliography citations (Citation).")
    typography: bool = Field(False, description="Annotate italic/bold/sub/sup markup (Typography).")
    language: str = Field("en", description="Document language written to the CAS.")
    huge_tree: bool = Field(
        False,
        description="Lift the XML parser's limits on nesting depth (256) and text node size "
        "(10 MB); for trusted files only.",
    )


class NxmlReader(Reader):
    name = "nxml.reader.v1"
    description = "PubMed Central NXML/JATS articles: title, abstract, sections, headings, paragraphs, captions."
    Config = NxmlReaderConfig
    produces = (TITLE, ABSTRACT, SECTION, HEADING, PARAGRAPH, CAPTION)

    config: NxmlReaderConfig

    @classmethod
    def requirements(cls, config: NxmlReaderConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:  # type: ignore[override]
        produces = list(cls.produces)
        if config.citations:
            produces.append(CITATION)
        if config.references:
            produces.append(REFERENCE)
        if config.typography:
            produces.append(TYPOGRAPHY)
        return (), tuple(produces)

    def __init__(self, config: NxmlReaderConfig, context: RunContext) -> None:
        super().__init__(config, context)
        self.input = resolve_input(config.input or "", context.workflow_dir)
        self._types = {}

    @classmethod
    def check_config(cls, config: NxmlReaderConfig, context: RunContext) -> list[str]:  # type: ignore[override]
        return input_problems(
            resolve_input(config.input, context.workflow_dir) if config.input else None,
            config.pattern,
        )

    def iter_documents(self) -> Iterator[DocumentRef]:
        for item in iter_input_items(self.input, self.config.pattern):
            doc_id = None
            error = item.error
            if self.config.id_style in ("pmcid", "pmid") and error is None:
                try:
                    if item.data is not None:
                        head = item.data[:65536]
                    else:
                        with open(item.path, "rb") as f:
                            head = f.read(65536)
                    doc_id = sniff_article_id(head, self.config.id_style)
                except OSError as exc:  # vanished or unreadable since it was listed
                    error = f"{item.uri}: cannot read: {exc}"
            if doc_id is None:
                style = "relative_path" if self.config.id_style == "relative_path" else "stem"
                doc_id = document_id(item.path, item.root, style)
            yield DocumentRef(doc_id, item.uri, item.data, item.size, error)

    def load(self, ref: DocumentRef, cas: cassis.Cas) -> None:
        source = ref.data if ref.data is not None else read_document_bytes(ref.uri)
        try:
            doc = read_jats(
                source,
                name=ref.uri,
                include_back_matter=self.config.back_matter,
                include_references=self.config.references,
                huge_tree=self.config.huge_tree,
            )
        except DocumentFormatError as exc:
            raise NxmlDocumentError(str(exc), exc.hint) from exc
        set_sofa_text(cas, doc.text)
        cas.sofa_mime = "text/plain"
        set_document_metadata(
            cas, ref.doc_id, ref.uri, title=doc.title, language=self.config.language
        )
        wanted = {"title", "abstract", "section", "heading", "paragraph", "caption"}
        if self.config.citations:
            wanted.add("citation")
        if self.config.references:
            wanted.add("reference")
        if self.config.typography:
            wanted.add("typography")
        ts = cas.typesystem
        annotations = []
        for span in doc.spans:
            if span.type not in wanted:
                continue
            type_ = self._types.get(span.type)
            if type_ is None:
                type_ = self._types[span.type] = ts.get_type(SPAN_TYPE_TO_CAS[span.type])
            annotations.append(type_(begin=span.begin, end=span.end, **span.features))
        cas.add_all(annotations)
