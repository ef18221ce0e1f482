"""AnatEM 1.0.2 in its CoNLL and NERsuite forms.

- ``conll/<split>/<doc>.conll``: ``token<TAB>tag`` (BIO, 12 classes), blank line
  between sentences; read with :mod:`.bio`.
- ``nersuite/<split>/<doc>.nersuite``: ``tag<TAB>begin<TAB>end<TAB>token<TAB>lemma<TAB>POS<TAB>chunk``
  with character offsets into the original document; blank line between sentences.

Document text: rebuilt from the NERsuite offsets, each token at its offsets and
every gap filled with spaces. The distribution has no text files, so which gaps
were newlines is unknown; in the corpus every gap between sentences is 1 or 2
characters (never 0) and gaps inside sentences are 0 to 2 (a gap of more than
:data:`MAX_GAP` is an error: a wrong offset). By default all gaps
become spaces (putting a newline at every gold sentence end would hand a
pipeline's sentence splitter the gold boundaries); ``sentence_break="\\n"``
makes the first gap character after each sentence a newline instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from casflow.components.formats.bio import parse as bio
from casflow.components.formats.bio.parse import Mention
from casflow.components.formats.common import (
    STRING_SOURCE,
    FormatError,
    FormatWarning,
    read_text_file,
    split_lines,
    without_bom,
    write_text_file,
)

__all__ = [
    "MAX_GAP",
    "FormatError",
    "FormatWarning",
    "ANATEM_CLASSES",
    "AnatemDocument",
    "AnatemSentence",
    "NersuiteToken",
    "check_agreement",
    "document_ids",
    "format_conll",
    "format_nersuite",
    "parse_conll",
    "parse_nersuite",
    "read_conll",
    "read_document",
    "read_nersuite",
    "write_conll",
    "write_nersuite",
]

ANATEM_CLASSES = (
    "Anatomical_system",
    "Cancer",
    "Cell",
    "Cellular_component",
    "Developing_anatomical_structure",
    "Immaterial_anatomical_entity",
    "Multi-tissue_structure",
    "Organ",
    "Organism_subdivision",
    "Organism_substance",
    "Pathological_formation",
    "Tissue",
)

_NERSUITE_COLUMNS = 7


@dataclass(slots=True)
class NersuiteToken:
    text: str
    begin: int
    end: int
    #: BIO tag as read; writers rebuild tags from the sentence's mentions
    tag: str = bio.OUTSIDE
    lemma: str = "_"
    pos: str = "_"
    chunk: str = "O"
    line: int | None = None


@dataclass
class AnatemSentence:
    tokens: list[NersuiteToken]
    #: character spans in the document text; ``tokens`` holds the token range in this sentence
    mentions: list[Mention] = field(default_factory=list)
    line: int | None = None

    @property
    def begin(self) -> int:
        return self.tokens[0].begin

    @property
    def end(self) -> int:
        return self.tokens[-1].end


@dataclass
class AnatemDocument:
    id: str
    text: str
    sentences: list[AnatemSentence]
    source: str = STRING_SOURCE

    @property
    def mentions(self) -> list[Mention]:
        return [m for s in self.sentences for m in s.mentions]


def _check_label(label: str, classes: Iterable[str] | None, source: str, line: int | None) -> None:
    if classes is not None and label not in classes:
        raise FormatError(
            f"class {label!r} is not one of the AnatEM classes (pass classes=None to accept any)",
            source=source,
            line=line,
        )


def _sentence_mentions(
    tokens: list[NersuiteToken], classes: Iterable[str] | None, source: str
) -> list[Mention]:
    mentions = []
    for first, last, label in bio.bio_to_spans([t.tag for t in tokens]):
        _check_label(label, classes, source, tokens[first].line)
        mentions.append(Mention(tokens[first].begin, tokens[last - 1].end, label, (first, last)))
    return mentions


#: The widest gap between tokens (or before the first) accepted; AnatEM has 0 to 2.
MAX_GAP = 1000


def parse_nersuite(
    text: str,
    source: str = STRING_SOURCE,
    *,
    doc_id: str | None = None,
    sentence_break: str = " ",
    classes: Iterable[str] | None = ANATEM_CLASSES,
) -> AnatemDocument:
    """Read a NERsuite file; rebuild the document text from the offsets (see module doc)."""
    if len(sentence_break) != 1:
        raise ValueError("sentence_break must be one character")
    classes = tuple(classes) if classes is not None else None
    sentences: list[AnatemSentence] = []
    chars: list[str] = []
    tokens: list[NersuiteToken] = []
    sentence_line: int | None = None

    def close() -> None:
        nonlocal tokens
        if tokens:
            sentences.append(
                AnatemSentence(tokens, _sentence_mentions(tokens, classes, source), sentence_line)
            )
            tokens = []

    for number, line in enumerate(split_lines(text), 1):
        if not line.strip():
            close()
            continue
        fields = line.split("\t")
        if len(fields) != _NERSUITE_COLUMNS:
            raise FormatError(
                f"{len(fields)} tab-separated columns, expected {_NERSUITE_COLUMNS} "
                "(tag begin end token lemma POS chunk)",
                source=source,
                line=number,
            )
        tag, begin_text, end_text, token_text, lemma, pos, chunk = fields
        try:
            begin, end = int(begin_text), int(end_text)
            bio.split_tag(tag)
        except ValueError as exc:
            raise FormatError(f"bad offset or tag: {exc}", source=source, line=number) from None
        if end - begin != len(token_text):
            raise FormatError(
                f"offsets {begin}-{end} do not fit token {token_text!r} ({len(token_text)} chars)",
                source=source,
                line=number,
            )
        if begin < len(chars):
            raise FormatError(
                f"token {token_text!r} at {begin} overlaps or precedes the previous token "
                f"(which ends at {len(chars)})",
                source=source,
                line=number,
            )
        gap = begin - len(chars)
        if gap > MAX_GAP:
            # a wrong offset would otherwise make a document of that many spaces
            raise FormatError(
                f"token {token_text!r} at {begin} leaves {gap} characters after the previous "
                f"token (which ends at {len(chars)}); AnatEM gaps are 0 to 2 characters, more "
                f"than {MAX_GAP} means a wrong offset",
                source=source,
                line=number,
            )
        if gap and not tokens and sentences:
            chars.append(sentence_break)
            gap -= 1
        chars.extend(" " * gap)
        chars.extend(token_text)
        if not tokens:
            sentence_line = number
        tokens.append(NersuiteToken(token_text, begin, end, tag, lemma, pos, chunk, number))
    close()
    if doc_id is None:
        doc_id = Path(source).stem if source != STRING_SOURCE else ""
    return AnatemDocument(doc_id, "".join(chars), sentences, source)


def read_nersuite(path: str | os.PathLike[str], **options) -> AnatemDocument:
    """:func:`parse_nersuite` on a file; the document id is the file stem."""
    return parse_nersuite(*read_text_file(path), **options)


def _tags(sentence: AnatemSentence) -> list[str]:
    return bio.spans_to_bio(sentence.tokens, sentence.mentions)


def format_nersuite(document: AnatemDocument) -> str:
    """NERsuite lines, tags rebuilt from the mentions."""
    rows = []
    for sentence in document.sentences:
        rows.append(
            [
                (tag, str(t.begin), str(t.end), t.text, t.lemma, t.pos, t.chunk)
                for t, tag in zip(sentence.tokens, _tags(sentence), strict=True)
            ]
        )
    return bio.format_bio_rows(rows)


def format_conll(document: AnatemDocument) -> str:
    """CoNLL (``token<TAB>tag``) lines, tags rebuilt from the mentions."""
    rows = []
    for sentence in document.sentences:
        rows.append(
            [(t.text, tag) for t, tag in zip(sentence.tokens, _tags(sentence), strict=True)]
        )
    return bio.format_bio_rows(rows)


def write_nersuite(document: AnatemDocument, path: str | os.PathLike[str]) -> None:
    write_text_file(path, format_nersuite(document))


def write_conll(document: AnatemDocument, path: str | os.PathLike[str]) -> None:
    write_text_file(path, format_conll(document))


def parse_conll(
    text: str, source: str = STRING_SOURCE, *, classes: Iterable[str] | None = ANATEM_CLASSES
) -> bio.BioDocument:
    """A CoNLL file as a :class:`bio.BioDocument` (text rebuilt with single spaces)."""
    document = bio.parse_bio(text, source, token_column=0, tag_column=1)
    classes = tuple(classes) if classes is not None else None
    for sentence in document.sentences:
        for mention in sentence.mentions:
            first = mention.tokens[0] if mention.tokens is not None else 0  # parse_bio sets them
            _check_label(mention.label, classes, source, sentence.tokens[first].line)
    return document


def read_conll(path: str | os.PathLike[str], **options) -> bio.BioDocument:
    return parse_conll(*read_text_file(path), **options)


def check_agreement(document: AnatemDocument, conll: bio.BioDocument) -> None:
    """Raise FormatError at the first sentence, token or mention where the CoNLL
    file differs from the NERsuite one."""
    if len(document.sentences) != len(conll.sentences):
        raise FormatError(
            f"{len(conll.sentences)} sentences where {document.source} has "
            f"{len(document.sentences)}",
            source=conll.source,
        )
    for ours, theirs in zip(document.sentences, conll.sentences, strict=True):
        if [t.text for t in ours.tokens] != [t.text for t in theirs.tokens]:
            raise FormatError(
                f"tokens differ from the sentence at {document.source}:{ours.line}",
                source=conll.source,
                line=theirs.line,
            )
        ours_mentions = [(m.tokens, m.label) for m in ours.mentions]
        their_mentions = [(m.tokens, m.label) for m in theirs.mentions]
        if ours_mentions != their_mentions:
            raise FormatError(
                f"mentions {their_mentions} differ from {ours_mentions} in the sentence at "
                f"{document.source}:{ours.line}",
                source=conll.source,
                line=theirs.line,
            )


def read_document(
    nersuite_path: str | os.PathLike[str],
    conll_path: str | os.PathLike[str] | None = None,
    **options,
) -> AnatemDocument:
    """Read a NERsuite file and, when given, check that the CoNLL twin agrees."""
    document = read_nersuite(nersuite_path, **options)
    if conll_path is not None:
        check_agreement(
            document, read_conll(conll_path, classes=options.get("classes", ANATEM_CLASSES))
        )
    return document


def document_ids(anatem_dir: str | os.PathLike[str], split: str) -> list[str]:
    """Document ids of a split (``splits/<split>-documents.list``)."""
    path = Path(anatem_dir) / "splits" / f"{split}-documents.list"
    text, _ = read_text_file(path)
    # a byte-order mark would end up, invisible, in the first id
    return [line.strip() for line in split_lines(without_bom(text)) if line.strip()]
