"""PubMed Central NXML (JATS) reader: article text with its structure.

The text layout and the structure spans come from
:mod:`casflow.components.formats.jats.parse` (hardened parser: no DTD, no entity
expansion, no network); this module only lists the files and turns the spans
into casflow.structure annotations.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Literal, Protocol

import cassis
from pydantic import Field

from casflow.cas.metadata import set_document_metadata
from casflow.cas.sofa import set_sofa_text
from casflow.components.formats.jats.parse import DocumentFormatError, JatsDocument, read_jats
from casflow.components.inputs import (
    count_input_items,
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


#: Which article ids an id_style takes, in order of preference (the file stem last).
_ID_PREFERENCE = {"pmcid": ("pmcid", "pmid"), "pmid": ("pmid", "pmcid")}


def sniff_document_id(head: bytes, id_style: str) -> str | None:
    """The id ``id_style`` (pmcid or pmid) gives an article: the preferred kind of id
    when its head has it, else the other kind, else None (the file stem is used)."""
    for kind in _ID_PREFERENCE[id_style]:
        found = sniff_article_id(head, kind)
        if found is not None:
            return found
    return None


class NxmlDocumentError(DocumentFormatError):
    """A DocumentFormatError raised by the reader; its ``hint`` is the parser's."""


class NxmlReaderConfig(ComponentConfig):
    input: str | None = Field(None, description="An .nxml/.xml file, folder, glob or @list file.")
    pattern: str = Field(
        "**/*.{nxml,xml}",
        description="Files to take from a folder or archive (recursive glob; {a,b} for either).",
    )
    id_style: Literal["pmcid", "pmid", "stem", "relative_path"] = Field(
        "pmcid",
        description="Document id: pmcid = the article's PMCID, else its PMID (PMID-only "
        "articles), else the file stem; pmid = the PMID, else the PMCID, else the stem; the "
        "stem; or the path relative to the input folder.",
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


class NxmlReader(Reader[NxmlReaderConfig]):
    name = "nxml.reader.v1"
    description = "PubMed Central NXML/JATS articles: title, abstract, sections, headings, paragraphs, captions."
    produces = (TITLE, ABSTRACT, SECTION, HEADING, PARAGRAPH, CAPTION)

    @classmethod
    def requirements(cls, config: NxmlReaderConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
        return (), jats_produces(config)

    def __init__(self, config: NxmlReaderConfig, context: RunContext | None = None) -> None:
        super().__init__(config, context)
        self.input = resolve_input(config.input or "", self.context.workflow_dir)
        self.jats = JatsLoader(config)

    @classmethod
    def check_config(cls, config: NxmlReaderConfig, context: RunContext) -> list[str]:
        return input_problems(
            resolve_input(config.input, context.workflow_dir) if config.input else None,
            config.pattern,
            context.output_dir,
        )

    def count_documents(self) -> int | None:
        return count_input_items(self.input, self.config.pattern)

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
                    doc_id = sniff_document_id(head, self.config.id_style)
                except OSError as exc:  # vanished or unreadable since it was listed
                    error = f"{item.uri}: cannot read: {exc}"
            if doc_id is None:
                style: Literal["stem", "relative_path"] = (
                    "relative_path" if self.config.id_style == "relative_path" else "stem"
                )
                doc_id = document_id(item.path, item.root, style)
            yield DocumentRef(doc_id, item.uri, item.data, item.size, error)

    def load(self, ref: DocumentRef, cas: cassis.Cas) -> None:
        source = ref.data if ref.data is not None else read_document_bytes(ref.uri)
        self.jats.load(cas, source, ref.doc_id, ref.uri)


class JatsOptions(Protocol):
    """What a JATS reader's config says about the text and annotations it makes
    (read-only, as the frozen configs give them)."""

    @property
    def back_matter(self) -> bool: ...

    @property
    def references(self) -> bool: ...

    @property
    def citations(self) -> bool: ...

    @property
    def typography(self) -> bool: ...

    @property
    def language(self) -> str: ...

    @property
    def huge_tree(self) -> bool: ...


def jats_produces(options: JatsOptions) -> tuple[str, ...]:
    """The types a JATS article read with ``options`` is annotated with."""
    produces = [TITLE, ABSTRACT, SECTION, HEADING, PARAGRAPH, CAPTION]
    if options.citations:
        produces.append(CITATION)
    if options.references:
        produces.append(REFERENCE)
    if options.typography:
        produces.append(TYPOGRAPHY)
    return tuple(produces)


class JatsLoader:
    """Fills a CAS from the bytes of a JATS article: text, DocumentMetaData, structure.

    Shared by the readers of JATS files (``nxml.reader.v1``) and of PMC's Cloud
    Service layout (``pmc.reader.v1``).
    """

    def __init__(self, options: JatsOptions) -> None:
        self.options = options
        self._types: dict[str, Any] = {}
        wanted = {"title", "abstract", "section", "heading", "paragraph", "caption"}
        if options.citations:
            wanted.add("citation")
        if options.references:
            wanted.add("reference")
        if options.typography:
            wanted.add("typography")
        self._wanted = frozenset(wanted)

    def load(self, cas: cassis.Cas, source: bytes, doc_id: str, uri: str) -> JatsDocument:
        try:
            doc = read_jats(
                source,
                name=uri,
                include_back_matter=self.options.back_matter,
                include_references=self.options.references,
                huge_tree=self.options.huge_tree,
            )
        except DocumentFormatError as exc:
            raise NxmlDocumentError(str(exc), exc.hint) from exc
        set_sofa_text(cas, doc.text)
        cas.sofa_mime = "text/plain"
        set_document_metadata(cas, doc_id, uri, title=doc.title, language=self.options.language)
        ts = cas.typesystem
        annotations = []
        for span in doc.spans:
            if span.type not in self._wanted:
                continue
            type_ = self._types.get(span.type)
            if type_ is None:
                type_ = self._types[span.type] = ts.get_type(SPAN_TYPE_TO_CAS[span.type])
            annotations.append(type_(begin=span.begin, end=span.end, **span.features))
        cas.add_all(annotations)
        return doc
