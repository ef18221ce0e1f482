"""PubMed Central NXML (JATS) articles as plain text with structure spans (no CAS).

`read_jats` parses an article with a hardened lxml parser (no DTD, no entity
expansion, no network) and lays its text out in this order:

1. the article title (and subtitle, if any);
2. each abstract (title, sections, paragraphs), except ``SKIPPED_ABSTRACT_TYPES``;
3. the body: paragraphs, sections with their headings, nested sections;
4. the back matter (``include_back_matter``, default on): acknowledgements,
   back sections (PLoS puts Materials and Methods there), glossary as
   ``term: definition`` paragraphs, footnote groups, appendices;
5. the captions of figures, tables and supplementary material, in document
   order: label, caption title, caption paragraphs, table footnotes;
6. the reference list (``include_references``, default off).

Separators. Every block (title, heading, paragraph, caption label, caption
title, caption paragraph, reference) is one line, and consecutive blocks are
separated by exactly ``"\\n\\n"``, so every heading, title and caption line ends
with a line break followed by an empty line and a sentence splitter that splits
at blank lines never joins a heading with the paragraph below it. Blocks never
contain a newline, and the text neither starts nor ends with whitespace.

Inside a block, inline markup (italic, bold, sup, sub, xref, ext-link,
named-content, inline formulas, ...) contributes its text with no added
characters, and every run of ASCII whitespace (space, tab, CR, LF, FF, VT) is
collapsed into one space. Other Unicode spaces (no-break, thin) are content,
e.g. in ``10\\u2009mM``, and are kept, except at a block's or span's ends.
Display formulas inside a paragraph contribute their text (MathML text; TeX is
dropped) with a space either side, and one outside a paragraph is a paragraph of
its own; their labels (formula numbers such as ``(1)``) are not text. Figures,
tables and supplementary material inside a paragraph are moved to the captions,
so the paragraph stays one contiguous run of text, with a space where the float
stood (``"Table 1.<table-wrap>...</table-wrap>The next"`` is two sentences); a
list, definition list, quote or box that is a direct child of a paragraph ends
it, is laid out as its own paragraphs, and the text after it starts a new
paragraph. Text outside any ``<p>`` beside blocks (a ``<caption>``, ``<fn>`` or
``<sec>`` with loose text: not valid JATS, but in files) makes paragraphs of its
own; list and footnote labels stay out. Table cells (``<table>``, ``<array>``),
graphics, TeX, sub-articles and references to entities the file declares
contribute no text.

Entities. No DTD is loaded, so in a file that names one an HTML/MathML named
entity (``&alpha;``, ``&ndash;``, ``&nbsp;``) would be left out; it is read as its
character. Other entity references contribute no text and are named in a
`FormatWarning`.

Empty articles. An article with no text at all is refused (`DocumentFormatError`);
one with no body text (scanned, PDF-only, abstract-only) is read with a
`FormatWarning`.

Headings: a section's label and title make one heading (``"2.1 Methods"``).
Abstract sections and an abstract's own title have depth 1, as do the titled
back-matter parts. A section with nothing but its heading and floats (PLoS
puts all figures in a back section "Figures and Tables") is left out, heading
included. Only the main article is laid out: sub-articles and responses are
left out. In a caption, the caption title, each caption paragraph and each
table footnote are paragraph spans and the label line is not, so a splitter
that keeps sentences inside paragraphs keeps the label on its own.

Pretty-printed files: some PMC files have a line break plus indentation
inserted before every inline tag (``Sox9\\n\\t\\t<sup>flox</sup>``). Where that
is detected, such breaks are dropped rather than read as spaces
(``pretty_printed`` forces either reading).

Spans use half-open character offsets ``[begin, end)`` into ``text``, never
start or end on whitespace and are never empty. Their ``features`` keys are the
feature names of the matching casflow.structure types, so a CAS reader can pass
them straight through: section ``depth`` (1 for a top-level section) and
``sectionType`` (``sec-type``; the element name for titled ``ack``,
``glossary``, ``app``, ``notes``, ``fn-group``, ``boxed-text``); heading
``depth``; caption ``captionOf`` (figure/table/supplementary) and ``label``;
citation ``target`` (the ``rid`` of ``<xref ref-type="bibr">``, as given, so it
can hold several ids); reference ``refId``; typography ``style`` (the JATS
element name: italic, bold, sup, sub, sc, underline, monospace, ...).
Features without a value are left out.
"""

from __future__ import annotations

import html.entities
import os
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from lxml import etree

from casflow.components.formats.common import FormatWarning
from casflow.pipeline.component import DocumentError

SPAN_TITLE = "title"
SPAN_ABSTRACT = "abstract"
SPAN_SECTION = "section"
SPAN_HEADING = "heading"
SPAN_CAPTION = "caption"
SPAN_PARAGRAPH = "paragraph"
SPAN_REFERENCE = "reference"
SPAN_CITATION = "citation"
SPAN_TYPOGRAPHY = "typography"

#: Every span type key, outermost first; spans with equal offsets sort in this order.
SPAN_TYPES = (
    SPAN_TITLE,
    SPAN_ABSTRACT,
    SPAN_SECTION,
    SPAN_HEADING,
    SPAN_CAPTION,
    SPAN_PARAGRAPH,
    SPAN_REFERENCE,
    SPAN_CITATION,
    SPAN_TYPOGRAPHY,
)
_SPAN_RANK = {name: rank for rank, name in enumerate(SPAN_TYPES)}

#: Abstract types left out by default: table-of-contents blurbs and teasers
#: restate the abstract for listings and are not part of the article's text.
SKIPPED_ABSTRACT_TYPES = frozenset({"toc", "teaser"})

BLOCK_SEPARATOR = "\n\n"

_ASCII_WHITESPACE = re.compile(r"[ \t\n\r\f\v]+")
_TRAILING_INDENTATION = re.compile(r"\r?\n[\t ]+$")
_SPACE_THEN_INDENTATION = re.compile(r" \r?\n[\t ]+$")
_LXML_POSITION_SUFFIX = re.compile(r",? line \d+, column \d+$")

_TYPOGRAPHY_TAGS = frozenset(
    {
        "italic",
        "bold",
        "sup",
        "sub",
        "sc",
        "underline",
        "overline",
        "strike",
        "monospace",
        "roman",
        "sans-serif",
    }
)
# Floats: their captions go to the captions block, their content nowhere.
_FLOAT_CAPTION_OF = {
    "fig": "figure",
    "fig-group": "figure",
    "table-wrap": "table",
    "table-wrap-group": "table",
    "supplementary-material": "supplementary",
}
# lxml tag filters matching these elements with or without a namespace (JATS 1.3
# files may declare xmlns="http://jats.nlm.nih.gov/ns/archiving/1.3/").
_FLOAT_TAGS = tuple(f"{{*}}{name}" for name in _FLOAT_CAPTION_OF)
_NOT_LAID_OUT_TAGS = ("{*}sub-article", "{*}response", "{*}ref-list")
_NO_TEXT_TAGS = frozenset(
    {
        "graphic",
        "inline-graphic",
        "media",
        "table",
        "array",
        "alt-text",
        "long-desc",
        "object-id",
        "tex-math",
        "annotation",
        "annotation-xml",
        "sec-meta",
        "ref-list",
        "sub-article",
        "response",
        "chem-struct-wrap",
    }
)
# Footnotes inside running text would interrupt it; footnote groups are laid out.
_NO_TEXT_INLINE = _NO_TEXT_TAGS | {"fn"}
# Block elements that, as direct children of a <p>, end the paragraph.
_BLOCKS_IN_PARAGRAPH = frozenset(
    {
        "list",
        "def-list",
        "disp-quote",
        "boxed-text",
        "preformat",
        "code",
        "statement",
        "speech",
        "verse-group",
    }
)
# Rendered inline (deeper inside markup), these get a space either side so
# their words do not run into the neighbours.
_SPACED_INLINE = frozenset(
    {
        "p",
        "list-item",
        "def-item",
        "term",
        "def",
        "disp-formula",
        "break",
        "title",
        "label",
        "caption",
    }
    | _BLOCKS_IN_PARAGRAPH
)
# Titled parts outside <sec> that become sections when they have a title.
_WRAPPERS = frozenset(
    {"ack", "app-group", "app", "glossary", "notes", "fn-group", "boxed-text", "bio"}
)
_CONTAINERS = frozenset(
    {"disp-quote", "statement", "caption", "fn", "list-item", "def", "speech", "verse-group"}
)
_BLOCKISH_CHILDREN = frozenset({"p", "sec", "list", "def-list", "disp-quote", "statement", "fn"})
# Where text sits loose beside blocks (a <caption>, <fn> or <sec> with text outside
# any <p>: not valid JATS, but found in files), these children stay blocks and the
# loose text around them makes paragraphs of its own.
_BLOCK_LEVEL = (
    _BLOCKISH_CHILDREN
    | _BLOCKS_IN_PARAGRAPH
    | _WRAPPERS
    | _CONTAINERS
    | {"title", "table-wrap-foot", "disp-formula-group"}
)
# Left out of running text, but they stand between words or sentences: a space.
_SPACED_NO_TEXT = frozenset(_FLOAT_CAPTION_OF) | {"table", "array", "chem-struct-wrap"}


class DocumentFormatError(DocumentError, ValueError):
    """The input is not a well-formed NXML/JATS article (``hint``: what to do)."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint or (
            "the file is not a complete NXML/JATS article; re-download it or remove it from "
            "the input"
        )


@dataclass(frozen=True)
class StructureSpan:
    """One structure annotation over `JatsDocument.text`, offsets ``[begin, end)``."""

    type: str
    begin: int
    end: int
    features: dict[str, str | int] = field(default_factory=dict)


@dataclass
class JatsDocument:
    text: str
    spans: list[StructureSpan]
    pmcid: str | None = None
    pmid: str | None = None
    doi: str | None = None
    title: str | None = None
    journal: str | None = None
    source: str = "<bytes>"

    def spans_of(self, span_type: str) -> list[StructureSpan]:
        return [span for span in self.spans if span.type == span_type]

    def covered_text(self, span: StructureSpan) -> str:
        return self.text[span.begin : span.end]


def secure_parser(huge_tree: bool = False) -> etree.XMLParser:
    """The only parser this module uses: no DTD, no entity expansion, no network.

    ``huge_tree`` lifts libxml2's limits on nesting depth (256) and text node size
    (10 MB), for trusted files only.
    """
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=huge_tree,
    )


def normalise_pmcid(value: str | None) -> str | None:
    """``"1234567"``, ``"PMC1234567"``, ``"pmc1234567"`` -> ``"PMC1234567"``; else None."""
    if value is None:
        return None
    match = re.fullmatch(r"(?:PMC)?\s*(\d+)", value.strip(), flags=re.IGNORECASE)
    return f"PMC{match.group(1)}" if match else None


def read_jats(
    source: str | os.PathLike[str] | bytes | bytearray | BinaryIO,
    *,
    name: str | None = None,
    include_back_matter: bool = True,
    include_references: bool = False,
    skipped_abstract_types: Iterable[str] = SKIPPED_ABSTRACT_TYPES,
    pretty_printed: bool | None = None,
    huge_tree: bool = False,
) -> JatsDocument:
    """Parse an NXML article from a path, bytes or a binary file object.

    ``name`` is what error messages and `JatsDocument.source` call the input
    (e.g. ``"archive.tar.gz:PMC123.nxml"`` for an archive member); it defaults to
    the path or the file object's name. ``pretty_printed`` says whether a line
    break plus indentation right before a tag is layout to drop (True) or a
    space (False); None detects it (see `_indented_by_pretty_printer`).
    ``huge_tree`` lifts the parser's size limits (see `secure_parser`).
    """
    data, source_name = _read_source(source, name)
    root = _parse(data, source_name, huge_tree)
    article = _find_article(root, source_name)
    unknown_entities = _expand_named_entities(root)
    if unknown_entities:
        warnings.warn(
            FormatWarning(
                "entity references left out of the text: "
                f"{', '.join(f'&{n};' for n in unknown_entities)} (neither an HTML/MathML "
                "name nor expanded: the DTD is never loaded, nor are the file's own entity "
                "declarations used); replace them with numeric character references "
                "(&#x3B1; for α) for their text to be read",
                source=source_name,
            ),
            stacklevel=2,
        )
    layout = _Layout(include_back_matter, include_references, frozenset(skipped_abstract_types))
    layout.strip_indentation = (
        _indented_by_pretty_printer(article) if pretty_printed is None else pretty_printed
    )
    text, spans, title = layout.lay_out(article)
    if not text:
        raise DocumentFormatError(
            f"{source_name}: the article has no text: no title, abstract, body or back matter "
            "with text in it",
            "PMC's scanned and PDF-only articles have no text in their XML: leave the file out "
            "of the input (or read its PDF with another tool)",
        )
    if not layout.body_has_text:
        warnings.warn(
            FormatWarning(
                "the article has no body text, only the text of its front and back matter "
                "(title, abstract, ...) is read; PMC's scanned and PDF-only articles have "
                "none, nor do some letters and corrections",
                source=source_name,
            ),
            stacklevel=2,
        )
    ids = _article_ids(article)
    return JatsDocument(
        text=text,
        spans=spans,
        pmcid=normalise_pmcid(ids.get("pmc") or ids.get("pmcid")),
        pmid=ids.get("pmid"),
        doi=ids.get("doi"),
        title=title,
        journal=_journal_title(article),
        source=source_name,
    )


# ---------------------------------------------------------------- input and parsing


def _read_source(source: object, name: str | None) -> tuple[bytes, str]:
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source), name or "<bytes>"
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        return path.read_bytes(), name or str(path)
    read = getattr(source, "read", None)
    if callable(read):
        data = read()
        source_name = name or str(getattr(source, "name", "<stream>"))
        if isinstance(data, str):
            raise TypeError(
                f"{source_name}: the file object returned text; open NXML files in binary "
                "mode ('rb') so the XML encoding declaration is honoured"
            )
        return bytes(data), source_name
    raise TypeError(
        f"cannot read NXML from {type(source).__name__}; pass a path, bytes or a binary file object"
    )


def _parse(data: bytes, source_name: str, huge_tree: bool = False) -> etree._Element:
    if not data.strip():
        raise DocumentFormatError(
            f"{source_name}: the file is empty",
            "the download or extraction stopped before writing the article: fetch or extract "
            "it again, or leave it out of the input",
        )
    try:
        return etree.fromstring(data, secure_parser(huge_tree))
    except etree.XMLSyntaxError as error:
        message, hint = _syntax_error_message(error, source_name, data)
        raise DocumentFormatError(message, hint) from error


_LIMITS = (
    ("excessive depth", "nesting depth (256 levels)"),
    ("text node too long", "text node size (10 MB)"),
    ("huge input lookup", "input lookup size"),
    ("xml_parse_huge", "document size"),
)


def _syntax_error_message(
    error: etree.XMLSyntaxError, source_name: str, data: bytes = b""
) -> tuple[str, str]:
    """The error (where, what libxml2 said, what it means) and what to do about it."""
    message = _LXML_POSITION_SUFFIX.sub("", error.msg or str(error)).strip()
    line, column = error.position if error.position else (error.lineno, None)
    where = (
        f"line {line}" + (f", column {column}" if column else "") if line else "unknown position"
    )
    lowered = message.lower()
    limit = next((name for key, name in _LIMITS if key in lowered), None)
    if limit is not None:
        advice = (
            f"the file exceeds the XML parser's safety limit on {limit}; this says nothing "
            "about whether it is well-formed"
        )
        hint = (
            "if you trust the file, set huge_tree: true in the reader's config to lift the "
            "parser's limits; otherwise leave the file out"
        )
    elif "encoding" in lowered or "utf-8" in lowered or "bytes" in lowered:
        advice = (
            "the bytes do not match the declared encoding (UTF-8 when none is declared); "
            "re-encode the file or correct its <?xml encoding=...?> declaration"
        )
        hint = (
            "downloading it again gives the same bytes: convert the file to UTF-8 (e.g. iconv "
            "-f LATIN1 -t UTF-8) or correct its <?xml encoding=...?> declaration"
        )
    elif "entity" in lowered and ("loop" in lowered or "amplification" in lowered):
        used = _entity_use_line(data)
        if used is not None:
            where = f"line {used}"
        advice = (
            "the document declares recursively expanding entities (an entity-expansion "
            "attack); such files are refused, obtain a clean copy of the article"
        )
        hint = (
            "the file is built to exhaust memory and is never expanded: obtain a clean copy "
            "of the article from its publisher or PMC, or leave it out"
        )
    elif "entity" in lowered and "not defined" in lowered:
        advice = (
            "named entities are only defined by DTDs, which are never loaded; "
            "replace them with numeric character references (&#x00A0; for &nbsp;)"
        )
        hint = advice
    elif "document is empty" in lowered or "start tag expected" in lowered:
        advice = (
            "the content is not XML (binary, compressed or another format?); "
            "pass the extracted .nxml file of the article"
        )
        hint = (
            "check what the file is (the `file` command): decompress or extract it if it is "
            "an archive, or leave it out of the input (--input, the reader's pattern)"
        )
    elif "premature end" in lowered or "end of data" in lowered:
        advice = "the file looks truncated; re-download or re-extract the article"
        hint = "the file ends inside an element: download or extract the article again"
    else:
        advice = "this is not well-formed XML; check that it is a complete PMC NXML/JATS article"
        hint = (
            "the file is not a complete NXML/JATS article; re-download it or remove it from "
            "the input"
        )
    return f"{source_name}: cannot parse XML at {where}: {message}; {advice}", hint


def _entity_use_line(data: bytes) -> int | None:
    """The line where the document first uses an entity its internal DTD subset declares
    (libxml2 reports an expansion attack at the declarations, not at the use)."""
    names = set(re.findall(rb"<!ENTITY\s+([^\s%]+)\s", data))
    end = data.find(b"]>")
    if not names or end < 0:
        return None
    for match in re.finditer(rb"&([A-Za-z_:][\w.:-]*);", data[end:]):
        if match.group(1) in names:
            return data.count(b"\n", 0, end + match.start()) + 1
    return None


def _find_article(root: etree._Element, source_name: str) -> etree._Element:
    if _local(root) == "article":
        return root
    # PMC's efetch and some dumps wrap one article in <pmc-articleset>.
    articles = [child for child in root if _local(child) == "article"]
    if len(articles) == 1:
        return articles[0]
    if not articles:
        raise DocumentFormatError(
            f"{source_name}: root element is <{_local(root)}>, not a JATS <article>: this is "
            "not a PMC NXML/JATS file",
            "leave the file out of the input (the reader's pattern selects which files are "
            "read), or convert it to JATS",
        )
    raise DocumentFormatError(
        f"{source_name}: root element is <{_local(root)}> holding {len(articles)} <article> "
        "elements; expected one JATS <article> (split article sets into one file per article)"
    )


def _expand_named_entities(root: etree._Element) -> list[str]:
    """Put the characters of unexpanded HTML/MathML named entities (``&alpha;``,
    ``&ndash;``, ``&nbsp;``) into the text; the names it does not know, sorted.

    The parser never loads a DTD, so in a file that names one (``<!DOCTYPE article
    PUBLIC ...>``) an entity reference stays a node that would otherwise contribute
    nothing: ``TNF-&alpha;`` read as ``TNF-``. Entities the file declares itself
    stay unexpanded (see `secure_parser`).
    """
    dtd = root.getroottree().docinfo.internalDTD
    declared = {entity.name for entity in dtd.iterentities()} if dtd is not None else set()
    unknown: set[str] = set()
    for node in list(root.iter(etree.Entity)):
        name = node.name
        character = None if name in declared else html.entities.html5.get(f"{name};")
        parent = node.getparent()
        if character is None or parent is None:
            unknown.add(name)
            continue
        text = character + (node.tail or "")
        previous = node.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "") + text
        else:
            parent.text = (parent.text or "") + text
        parent.remove(node)
    return sorted(unknown)


def _local(element: etree._Element) -> str:
    tag = element.tag
    if not isinstance(tag, str):
        return ""
    return tag.rsplit("}", 1)[-1]


def _children(element: etree._Element, *names: str) -> list[etree._Element]:
    return [child for child in element if _local(child) in names]


def _first(element: etree._Element | None, *path: str) -> etree._Element | None:
    for step in path:
        if element is None:
            return None
        found = _children(element, step)
        element = found[0] if found else None
    return element


def _plain_text(element: etree._Element | None, strip_indentation: bool = False) -> str | None:
    if element is None:
        return None
    buffer = _InlineBuffer(strip_indentation)
    _Layout.render_inline_content(element, buffer, spans=False)
    text, _ = buffer.finish()
    return text or None


def _indented_by_pretty_printer(article: etree._Element) -> bool:
    """Whether a pretty-printer put a line break and indentation before inline tags.

    Some PMC files (PLoS, 2006) have ``"between \\n\\t\\t<italic>Sox9</italic>\\n\\t\\t<sup>"``:
    the original space is kept before the added line break, and the break is
    added even where no space was (``Sox9`` + ``flox``). Its signature is text
    that ends with a space, then a line break and indentation, before a tag; in
    such files every trailing line break plus indentation of a text node is
    dropped. In other files a line break stays a space, since it may be the
    only separator between two words.
    """
    indented = after_space = 0
    for element in article.iter():
        own_text = element.text if isinstance(element.tag, str) else None
        for text in (own_text, element.tail):
            if text and not text.isspace() and _TRAILING_INDENTATION.search(text):
                indented += 1
                after_space += bool(_SPACE_THEN_INDENTATION.search(text))
    return after_space >= 3 and after_space >= 0.3 * indented


def _has_own_text(element: etree._Element) -> bool:
    """Whether text sits directly in ``element`` rather than in its children."""
    return bool((element.text or "").strip()) or any((c.tail or "").strip() for c in element)


def _article_ids(article: etree._Element) -> dict[str, str]:
    ids: dict[str, str] = {}
    meta = _first(article, "front", "article-meta")
    if meta is None:
        return ids
    for article_id in _children(meta, "article-id"):
        id_type = article_id.get("pub-id-type", "")
        value = "".join(article_id.itertext()).strip()
        if value and id_type not in ids:
            ids[id_type] = value
    return ids


def _journal_title(article: etree._Element) -> str | None:
    journal_meta = _first(article, "front", "journal-meta")
    if journal_meta is None:
        return None
    title = _first(journal_meta, "journal-title-group", "journal-title")
    if title is None:
        title = _first(journal_meta, "journal-title")
    if title is None:
        nlm = [
            j for j in _children(journal_meta, "journal-id") if j.get("journal-id-type") == "nlm-ta"
        ]
        title = nlm[0] if nlm else None
    return _plain_text(title)


# ---------------------------------------------------------------- text assembly


class _InlineBuffer:
    """The text of one block being built, with whitespace collapsed as it comes."""

    def __init__(self, strip_indentation: bool = False) -> None:
        self.strip_indentation = strip_indentation
        self.chunks: list[str] = []
        self.length = 0
        self.ends_with_space = True  # so leading whitespace is dropped
        self.spans: list[list] = []  # [type, begin, end, features]

    def add(self, text: str | None) -> None:
        if not text:
            return
        text = _ASCII_WHITESPACE.sub(" ", text)
        if text.startswith(" ") and self.ends_with_space:
            text = text[1:]
        if not text:
            return
        self.chunks.append(text)
        self.length += len(text)
        self.ends_with_space = text.endswith(" ")

    def add_source(self, text: str | None) -> None:
        """Add a text node of the XML; every text node ends right before a tag."""
        if text and self.strip_indentation:
            text = _TRAILING_INDENTATION.sub("", text)
        self.add(text)

    def open_span(self, span_type: str, features: dict[str, str | int]) -> list:
        span = [span_type, self.length, None, features]
        self.spans.append(span)
        return span

    def close_span(self, span: list) -> None:
        span[2] = self.length

    def trim_trailing_space(self) -> None:
        if self.length and self.ends_with_space:
            self.chunks[-1] = self.chunks[-1][:-1]
            self.length -= 1
            self.ends_with_space = False
            for span in self.spans:
                if span[2] is not None and span[2] > self.length:
                    span[2] = self.length

    def finish(self) -> tuple[str, list[tuple[str, int, int, dict[str, str | int]]]]:
        """The block's text and inline spans, both trimmed of whitespace at their ends.

        Unicode spaces (no-break, thin) inside the block are kept, but neither a
        block nor a span starts or ends with one.
        """
        raw = "".join(self.chunks)
        text = raw.lstrip()
        shift = len(raw) - len(text)
        text = text.rstrip()
        spans = []
        for span_type, begin, end, features in self.spans:
            begin, end = max(begin - shift, 0), min(end - shift, len(text))
            while begin < end and text[begin].isspace():
                begin += 1
            while end > begin and text[end - 1].isspace():
                end -= 1
            if begin < end:
                spans.append((span_type, begin, end, features))
        return text, spans


class _Layout:
    def __init__(
        self,
        include_back_matter: bool,
        include_references: bool,
        skipped_abstract_types: frozenset[str],
    ) -> None:
        self.include_back_matter = include_back_matter
        self.include_references = include_references
        self.skipped_abstract_types = skipped_abstract_types
        self.chunks: list[str] = []
        self.length = 0
        self.block_begins: list[int] = []
        self.spans: list[StructureSpan] = []
        self.strip_indentation = False
        self.body_has_text = False

    # ----- the document

    def lay_out(self, article: etree._Element) -> tuple[str, list[StructureSpan], str | None]:
        meta = _first(article, "front", "article-meta")
        title = self._title(meta)
        for abstract in _children(meta, "abstract") if meta is not None else []:
            if abstract.get("abstract-type") not in self.skipped_abstract_types:
                self._abstract(abstract)
        body = _first(article, "body")
        if body is not None:
            before = len(self.block_begins)
            self._blocks(body, depth=0)
            self.body_has_text = len(self.block_begins) > before
        back = _first(article, "back")
        if back is not None and self.include_back_matter:
            self._blocks(back, depth=0)
        self._captions(article)
        if back is not None and self.include_references:
            for ref_list in back.iter("{*}ref-list"):
                self._references(ref_list)
        spans = sorted(self.spans, key=lambda s: (s.begin, -s.end, _SPAN_RANK[s.type]))
        return "".join(self.chunks), spans, title

    def _title(self, meta: etree._Element | None) -> str | None:
        title_group = _first(meta, "title-group")
        if title_group is None:
            return None
        start = self._mark()
        article_title = _first(title_group, "article-title")
        if article_title is not None:
            self._inline_block(article_title)
        for subtitle in _children(title_group, "subtitle"):
            self._inline_block(subtitle)
        self._wrap(start, SPAN_TITLE, {})
        return self._plain(article_title)

    def _abstract(self, abstract: etree._Element) -> None:
        start = self._mark()
        for title in _children(abstract, "title"):
            self._heading(title, None, depth=1)
        # Its sections have depth 1, as <sec> children of the body.
        self._blocks(abstract, depth=0, skip=frozenset({"title"}))
        self._wrap(start, SPAN_ABSTRACT, {})

    # ----- block structure

    def _blocks(
        self, container: etree._Element, depth: int, skip: frozenset[str] = frozenset()
    ) -> None:
        if _has_own_text(container):
            self._mixed(container, depth, _BLOCK_LEVEL, skip)
            return
        for child in container:
            if _local(child) not in skip:
                self._block(child, depth)

    def _mixed(
        self,
        element: etree._Element,
        depth: int,
        blocks: frozenset[str],
        skip: frozenset[str] = frozenset(),
    ) -> None:
        """Text and inline children as paragraphs, split by the children named in
        ``blocks``, which are laid out as blocks in between; ``skip`` children give
        only their tails."""
        buffer = self._buffer()
        buffer.add_source(element.text)
        for child in element:
            name = _local(child)
            if name in skip:
                pass
            elif name in blocks:
                self._emit_paragraph(buffer)
                self._block(child, depth)
                buffer = self._buffer()
            else:
                self._render_inline(child, buffer, spans=True)
            buffer.add_source(child.tail)
        self._emit_paragraph(buffer)

    def _block(self, element: etree._Element, depth: int) -> None:
        name = _local(element)
        if not name or name in _NO_TEXT_TAGS or name in _FLOAT_CAPTION_OF:
            return
        if name == "sec":
            self._section(element, depth + 1)
        elif name in _WRAPPERS:
            self._wrapper(element, depth)
        elif name == "p":
            self._paragraphs(element, depth)
        elif name == "list":
            self._blocks(element, depth, skip=frozenset({"label"}))
        elif name == "def-list":
            for child in element:
                if _local(child) == "def-item":
                    self._definition(child)
                elif _local(child) == "def-list":
                    self._block(child, depth)
                elif _local(child) == "title":
                    self._paragraph_of(child)
        elif name in _CONTAINERS:
            self._blocks(element, depth, skip=frozenset({"label"}))
        elif name == "label":
            return  # list, footnote and formula numbers are not text
        elif name == "disp-formula":
            # As inside a paragraph: its text without the formula number.
            buffer = self._buffer()
            self._render_inline(element, buffer, spans=True)
            self._emit_paragraph(buffer)
        elif any(_local(c) in _BLOCKISH_CHILDREN for c in element):
            self._blocks(element, depth, skip=frozenset({"label"}))
        else:
            self._paragraph_of(element)

    def _section(self, section: etree._Element, depth: int) -> None:
        start = self._mark()
        self._heading(_first(section, "title"), _first(section, "label"), depth)
        after_heading = len(self.block_begins)
        self._blocks(section, depth, skip=frozenset({"title", "label"}))
        if len(self.block_begins) == after_heading:
            # Only floats (PLoS "Figures and Tables") or nothing: a bare heading
            # would head text that lives elsewhere.
            self._rollback(start)
            return
        features: dict[str, str | int] = {"depth": depth}
        if section.get("sec-type"):
            features["sectionType"] = section.get("sec-type")
        self._wrap(start, SPAN_SECTION, features)

    def _wrapper(self, wrapper: etree._Element, depth: int) -> None:
        title = _first(wrapper, "title")
        if title is None and _local(wrapper) == "boxed-text":
            title = _first(wrapper, "caption", "title")
        if title is None or not self._plain(title):
            self._blocks(wrapper, depth, skip=frozenset({"title", "label"}))
            return
        start = self._mark()
        self._heading(title, None, depth + 1)
        after_heading = len(self.block_begins)
        if _has_own_text(wrapper):
            self._mixed(wrapper, depth + 1, _BLOCK_LEVEL, frozenset({"title", "label"}))
        else:
            for child in wrapper:
                if child is title or _local(child) in ("title", "label"):
                    continue
                if _local(child) == "caption":
                    self._blocks(child, depth + 1, skip=frozenset({"title"}))
                else:
                    self._block(child, depth + 1)
        if len(self.block_begins) == after_heading:
            self._rollback(start)
            return
        section_type = wrapper.get("sec-type") or wrapper.get("notes-type") or _local(wrapper)
        self._wrap(start, SPAN_SECTION, {"depth": depth + 1, "sectionType": section_type})

    def _heading(
        self, title: etree._Element | None, label: etree._Element | None, depth: int
    ) -> None:
        buffer = self._buffer()
        for part in (label, title):
            if part is not None:
                self.render_inline_content(part, buffer)
                buffer.add(" ")
        extent = self._add_block(buffer)
        if extent is not None:
            self.spans.append(StructureSpan(SPAN_HEADING, *extent, {"depth": depth}))

    def _paragraphs(self, paragraph: etree._Element, depth: int) -> None:
        self._mixed(paragraph, depth, _BLOCKS_IN_PARAGRAPH)

    def _paragraph_of(self, element: etree._Element) -> None:
        buffer = self._buffer()
        self.render_inline_content(element, buffer)
        self._emit_paragraph(buffer)

    def _definition(self, def_item: etree._Element) -> None:
        """A glossary entry as one ``term: definition`` paragraph."""
        buffer = self._buffer()
        terms = _children(def_item, "term")
        definitions = _children(def_item, "def")
        for term in terms:
            self.render_inline_content(term, buffer)
            buffer.add(" ")
        if terms and definitions:
            buffer.trim_trailing_space()
            buffer.add(": ")
        for definition in definitions:
            self.render_inline_content(definition, buffer)
            buffer.add(" ")
        self._emit_paragraph(buffer)

    def _emit_paragraph(self, buffer: _InlineBuffer) -> tuple[int, int] | None:
        extent = self._add_block(buffer)
        if extent is not None:
            self.spans.append(StructureSpan(SPAN_PARAGRAPH, *extent))
        return extent

    def _inline_block(self, element: etree._Element) -> tuple[int, int] | None:
        buffer = self._buffer()
        self.render_inline_content(element, buffer)
        return self._add_block(buffer)

    # ----- captions and references

    def _captions(self, article: etree._Element) -> None:
        for element in article.iter(*_FLOAT_TAGS):
            if any(True for _ in element.iterancestors(*_NOT_LAID_OUT_TAGS)):
                continue
            self._caption(element, _FLOAT_CAPTION_OF[_local(element)])

    def _caption(self, float_element: etree._Element, caption_of: str) -> None:
        start = self._mark()
        label = _first(float_element, "label")
        label_text = self._plain(label)
        if label_text is not None:
            self._inline_block(label)
        caption = _first(float_element, "caption")
        if caption is None and caption_of == "supplementary":
            # BMC puts the description on the <media>; a caption on both is
            # description plus "Click here for file", so the outer one wins.
            caption = _first(float_element, "media", "caption")
        if caption is not None:
            for title in _children(caption, "title"):
                self._paragraph_of(title)
            self._blocks(caption, depth=0, skip=frozenset({"title"}))
        for foot in _children(float_element, "table-wrap-foot"):
            self._blocks(foot, depth=0)
        features: dict[str, str | int] = {"captionOf": caption_of}
        if label_text is not None:
            features["label"] = label_text
        self._wrap(start, SPAN_CAPTION, features)

    def _references(self, ref_list: etree._Element) -> None:
        for child in ref_list:
            name = _local(child)
            if name == "title":
                self._heading(child, None, depth=1)
            elif name == "ref":
                buffer = self._buffer()
                label = _first(child, "label")
                if label is not None:
                    self.render_inline_content(label, buffer, spans=False)
                    buffer.add(" ")
                for citation in child:
                    if _local(citation) == "citation-alternatives":
                        citation = next(iter(citation), None)
                    if citation is not None and _local(citation) in (
                        "citation",
                        "mixed-citation",
                        "element-citation",
                        "nlm-citation",
                    ):
                        _render_citation(citation, buffer)
                        buffer.add(" ")
                extent = self._add_block(buffer)
                if extent is not None:
                    features = {"refId": child.get("id")} if child.get("id") else {}
                    self.spans.append(StructureSpan(SPAN_REFERENCE, *extent, features))

    # ----- inline content

    @classmethod
    def render_inline_content(
        cls, element: etree._Element, buffer: _InlineBuffer, spans: bool = True
    ) -> None:
        buffer.add_source(element.text)
        for child in element:
            cls._render_inline(child, buffer, spans)
            buffer.add_source(child.tail)

    @classmethod
    def _render_inline(cls, element: etree._Element, buffer: _InlineBuffer, spans: bool) -> None:
        name = _local(element)
        if name in _SPACED_NO_TEXT:
            buffer.add(" ")  # "in Table 1.<table-wrap>...</table-wrap>The next" is two sentences
            return
        if not name or name in _NO_TEXT_INLINE:
            return  # comments, unexpanded entities, graphics: tails only
        if name == "alternatives":
            for alternative in element:
                before = buffer.length
                cls._render_inline(alternative, buffer, spans)
                if buffer.length > before:
                    break
            return
        spaced = name in _SPACED_INLINE
        if spaced:
            buffer.add(" ")
        span = None
        if spans and name in _TYPOGRAPHY_TAGS:
            span = buffer.open_span(SPAN_TYPOGRAPHY, {"style": name})
        elif spans and name == "xref" and element.get("ref-type") == "bibr":
            target = element.get("rid")
            span = buffer.open_span(SPAN_CITATION, {"target": target} if target else {})
        if name == "disp-formula":
            for child in element:
                if _local(child) != "label":
                    cls._render_inline(child, buffer, spans)
                    buffer.add_source(child.tail)
        else:
            cls.render_inline_content(element, buffer, spans)
        if span is not None:
            buffer.close_span(span)
        if spaced:
            buffer.add(" ")

    # ----- the text being built

    def _buffer(self) -> _InlineBuffer:
        return _InlineBuffer(self.strip_indentation)

    def _plain(self, element: etree._Element | None) -> str | None:
        return _plain_text(element, self.strip_indentation)

    def _add_block(self, buffer: _InlineBuffer) -> tuple[int, int] | None:
        text, inline_spans = buffer.finish()
        if not text:
            return None
        if self.length:
            self._append(BLOCK_SEPARATOR)
        begin = self.length
        self._append(text)
        self.block_begins.append(begin)
        for span_type, span_begin, span_end, features in inline_spans:
            self.spans.append(
                StructureSpan(span_type, begin + span_begin, begin + span_end, features)
            )
        return begin, self.length

    def _append(self, text: str) -> None:
        self.chunks.append(text)
        self.length += len(text)

    def _mark(self) -> tuple[int, int, int, int]:
        return len(self.chunks), self.length, len(self.block_begins), len(self.spans)

    def _rollback(self, mark: tuple[int, int, int, int]) -> None:
        chunks, length, blocks, spans = mark
        del self.chunks[chunks:]
        self.length = length
        del self.block_begins[blocks:]
        del self.spans[spans:]

    def _wrap(
        self, mark: tuple[int, int, int, int], span_type: str, features: dict[str, str | int]
    ) -> None:
        """A span over every block added since ``mark`` (none if there were none)."""
        first_block = mark[2]
        if len(self.block_begins) > first_block:
            self.spans.append(
                StructureSpan(span_type, self.block_begins[first_block], self.length, features)
            )


def _render_citation(citation: etree._Element, buffer: _InlineBuffer) -> None:
    if _has_own_text(citation):
        # A mixed citation carries its own punctuation and spacing.
        _Layout.render_inline_content(citation, buffer, spans=False)
        return

    # A structured citation is bare fields: lay them out as
    # "Authors. Title. Source. Publisher. Year;Volume(Issue):First-Last. Comment."
    def field_text(*names: str, sep: str = " ") -> str:
        texts = (_plain_text(c, buffer.strip_indentation) for c in citation if _local(c) in names)
        return sep.join(t for t in texts if t)

    names = []
    for person in (p for group in _children(citation, "person-group") for p in group):
        if _local(person) == "name":
            parts = (
                _plain_text(_first(person, part), buffer.strip_indentation)
                for part in ("surname", "given-names")
            )
            names.append(" ".join(p for p in parts if p))
        elif _local(person) in ("collab", "string-name"):
            names.append(_plain_text(person, buffer.strip_indentation) or "")
        elif _local(person) == "etal":
            names.append("et al.")
    names.append(field_text("collab", sep=", "))
    locator = field_text("year")
    if field_text("volume"):
        locator += f";{field_text('volume')}"
    if field_text("issue"):
        locator += f"({field_text('issue')})"
    pages = "-".join(p for p in (field_text("fpage"), field_text("lpage")) if p) or field_text(
        "elocation-id"
    )
    if pages:
        locator += f":{pages}"
    sentences = [
        ", ".join(n for n in names if n),
        field_text("article-title", "chapter-title"),
        field_text("source", "edition"),
        field_text("publisher-loc", "publisher-name", sep=": "),
        locator.lstrip(";:"),
        field_text("comment"),
    ]
    buffer.add(" ".join(s.rstrip(".") + "." for s in sentences if s))
