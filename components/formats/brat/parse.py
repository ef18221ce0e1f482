"""brat standoff: ``.ann`` annotations over a ``.txt`` text (character offsets, end exclusive).

Kept, parsed:

- ``T``: text-bound ``T1<TAB>Label 0 5;9 12<TAB>text``; discontinuous fragments are
  ``;``-separated and the text is the fragment texts joined by one space (brat's
  ``DISCONT_SEP``). Checked against the ``.txt`` when one is given.
- ``#``: notes ``#1<TAB>AnnotatorNotes T1<TAB>note``.
- ``A`` / ``M``: attributes ``A1<TAB>Negated T1`` (binary) or ``A1<TAB>Level T1 High``.
- ``N``: normalizations ``N1<TAB>Reference T1 UBERON:0000948<TAB>heart``.

Kept verbatim, not parsed: relations (``R``), events (``E``), equivalences (``*``)
and anything else, so a file round-trips line for line.

Offsets count every character of the ``.txt`` as brat reads it (no newline
translation): the CR of a CRLF line end and a leading byte-order mark count one each
(:func:`read_brat_text`; :mod:`.offsets` maps them onto a text read without them).

Lines of the ``.ann`` end where brat's end: at every character ``str.splitlines``
breaks on (:data:`LINE_BREAKS`: U+2028, U+0085, a form feed ... too), so no text of a
``T``, ``N`` or ``#`` line may hold one. brat stores a selection across lines as one
fragment per line (:func:`split_at_line_breaks`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from casflow.components.formats.common import (
    LINE_BREAKS,
    STRING_SOURCE,
    FormatError,
    FormatWarning,
    read_text_file,
    without_bom,
    write_text_file,
)

__all__ = [
    "FormatError",
    "FormatWarning",
    "Attribute",
    "BratDocument",
    "Normalization",
    "Note",
    "OtherLine",
    "TextBound",
    "fragments_text",
    "format_ann",
    "parse_ann",
    "split_at_line_breaks",
    "read_brat",
    "read_brat_text",
    "write_brat",
]

#: brat joins the texts of discontinuous fragments with this
FRAGMENT_SEPARATOR = " "

_SPAN = re.compile(r"(\d+) (\d+)")
_LINE_BREAK = re.compile(f"[{re.escape(LINE_BREAKS)}]")
_BETWEEN_LINE_BREAKS = re.compile(f"[^{re.escape(LINE_BREAKS)}]+")
#: what ends a line of an .ann as editors and universal newlines also see it
_USUAL_LINE_ENDS = ("\n", "\r\n", "\r")
_NORMALIZATION = re.compile(r"(\S+) (\S+) (\S+?):(\S+)")


@dataclass(frozen=True)
class TextBound:
    id: str
    label: str
    #: (begin, end) fragments in file order; one for a contiguous annotation
    spans: tuple[tuple[int, int], ...]
    text: str
    line: int | None = None

    @property
    def begin(self) -> int:
        return min(b for b, _ in self.spans)

    @property
    def end(self) -> int:
        return max(e for _, e in self.spans)

    @property
    def is_discontinuous(self) -> bool:
        return len(self.spans) > 1


@dataclass(frozen=True)
class Note:
    id: str
    kind: str  # "AnnotatorNotes" in brat-written files
    target: str
    text: str
    line: int | None = None


@dataclass(frozen=True)
class Attribute:
    id: str
    name: str
    target: str
    #: None for a binary attribute (present = true)
    value: str | None = None
    line: int | None = None


@dataclass(frozen=True)
class Normalization:
    id: str
    kind: str  # "Reference"
    target: str
    resource: str
    resource_id: str
    text: str = ""
    line: int | None = None


@dataclass(frozen=True)
class OtherLine:
    """A line kept as is (relation, event, equivalence, ...)."""

    raw: str
    line: int | None = None

    @property
    def id(self) -> str:
        return self.raw.split("\t", 1)[0]


Annotation = TextBound | Note | Attribute | Normalization | OtherLine


@dataclass
class BratDocument:
    annotations: list[Annotation] = field(default_factory=list)
    #: the .txt content as brat counts it (CRs and a byte-order mark kept), when read with it
    text: str | None = None
    source: str = STRING_SOURCE

    def _of(self, kind: type) -> list:
        return [a for a in self.annotations if isinstance(a, kind)]

    @property
    def textbounds(self) -> list[TextBound]:
        return self._of(TextBound)

    @property
    def notes(self) -> list[Note]:
        return self._of(Note)

    @property
    def attributes(self) -> list[Attribute]:
        return self._of(Attribute)

    @property
    def normalizations(self) -> list[Normalization]:
        return self._of(Normalization)

    def by_id(self) -> dict[str, Annotation]:
        return {a.id: a for a in self.annotations if a.id != "*"}


def fragments_text(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """The T-line text brat writes for these fragments."""
    return FRAGMENT_SEPARATOR.join(text[b:e] for b, e in spans)


def split_at_line_breaks(
    text: str, spans: Iterable[tuple[int, int]]
) -> tuple[tuple[int, int], ...]:
    """``spans`` of ``text`` cut at its line breaks into the pieces between them, in text
    order, without the line breaks and empty pieces: what brat stores for a selection
    across lines (one fragment per line), its ``.ann`` holding one line per annotation.
    An empty span is kept (it holds no line break); spans of line breaks only give ()."""
    pieces: list[tuple[int, int]] = []
    for begin, end in spans:
        if begin == end:
            pieces.append((begin, end))
        else:
            pieces.extend(m.span() for m in _BETWEEN_LINE_BREAKS.finditer(text, begin, end))
    return tuple(sorted(pieces))


def _parse_textbound(
    ann_id: str, data: str, tail: str | None, source: str, number: int
) -> TextBound:
    label, _, offsets = data.partition(" ")
    spans = []
    for piece in offsets.split(";"):
        match = _SPAN.fullmatch(piece.strip())
        if match is None:
            raise FormatError(
                f"{ann_id}: fragment {piece!r} is not 'start end' "
                "(fragments are ';'-separated; a tab must precede the text)",
                source=source,
                line=number,
            )
        begin, end = int(match.group(1)), int(match.group(2))
        if end < begin:
            raise FormatError(
                f"{ann_id}: end {end} before start {begin}", source=source, line=number
            )
        spans.append((begin, end))
    if not label:
        raise FormatError(f"{ann_id}: no label", source=source, line=number)
    if tail is None:
        raise FormatError(
            f"{ann_id}: no tab-separated text after the offsets", source=source, line=number
        )
    return TextBound(ann_id, label, tuple(spans), tail, number)


def _parse_line(line: str, source: str, number: int) -> Annotation:
    ann_id, tab, rest = line.partition("\t")
    if not tab or not ann_id:
        raise FormatError(
            f"expected 'ID<TAB>...', got {line!r} (brat separates the id with a tab)",
            source=source,
            line=number,
        )
    data, tab, tail = rest.partition("\t")
    text = tail if tab else None
    kind = ann_id[0]
    if kind == "T":
        return _parse_textbound(ann_id, data, text, source, number)
    if kind == "#":
        parts = data.split(" ")
        if len(parts) != 2:
            raise FormatError(
                f"{ann_id}: expected 'Kind TARGET' before the note text", source=source, line=number
            )
        return Note(ann_id, parts[0], parts[1], text or "", number)
    if kind in ("A", "M"):
        parts = data.split(" ")
        if len(parts) not in (2, 3) or text is not None:
            raise FormatError(
                f"{ann_id}: expected 'Name TARGET [VALUE]'", source=source, line=number
            )
        return Attribute(ann_id, parts[0], parts[1], parts[2] if len(parts) == 3 else None, number)
    if kind == "N":
        match = _NORMALIZATION.fullmatch(data)
        if match is None:
            raise FormatError(
                f"{ann_id}: expected 'Reference TARGET DB:ID'", source=source, line=number
            )
        kind_name, target, resource, resource_id = match.groups()
        return Normalization(ann_id, kind_name, target, resource, resource_id, text or "", number)
    return OtherLine(line, number)


def parse_ann(ann: str, *, text: str | None = None, source: str = STRING_SOURCE) -> BratDocument:
    """Parse ``.ann`` content; with ``text`` the T-line texts are checked against it."""
    document = BratDocument(text=text, source=source)
    seen: set[str] = set()
    # Split as brat splits (str.splitlines): a T text holding U+2028 is two lines to
    # brat, so reading it as one here would accept a file brat reads otherwise.
    lines = without_bom(ann).splitlines(keepends=True)
    ends = [line[len(line.rstrip(LINE_BREAKS)) :] for line in lines]
    for number, (line, end) in enumerate(zip(lines, ends, strict=True), 1):
        line = line.removesuffix(end)
        if not line.strip():
            continue
        try:
            annotation = _parse_line(line, source, number)
            if annotation.id != "*":
                if annotation.id in seen:
                    raise FormatError(f"id {annotation.id} used twice", source=source, line=number)
                seen.add(annotation.id)
            if text is not None and isinstance(annotation, TextBound):
                _check_textbound(annotation, text, source)
        except FormatError as exc:
            raise _with_line_end_hint(exc, ends, number) from exc
        document.annotations.append(annotation)
    return document


def _with_line_end_hint(error: FormatError, ends: list[str], number: int) -> FormatError:
    """``error`` at line ``number``, saying so when that line or the one before ends with
    a line break that editors do not show as one (a text split there, by its writer's
    mistake, is the likely cause)."""
    for line in (number - 1, number):
        end = ends[line - 1] if line >= 1 else ""
        if end and end not in _USUAL_LINE_ENDS:
            return FormatError(
                f"{error.detail} (line {line} ends with U+{ord(end):04X}, a line break to "
                "brat, which splits lines as str.splitlines does; the text of a brat line "
                "cannot hold one: write such a mention as one fragment per line)",
                source=error.source,
                line=error.line,
            )
    return error


def _check_textbound(annotation: TextBound, text: str, source: str) -> None:
    for begin, end in annotation.spans:
        if end > len(text):
            raise FormatError(
                f"{annotation.id}: span {begin}-{end} beyond the {len(text)}-character text",
                source=source,
                line=annotation.line,
            )
    expected = fragments_text(text, annotation.spans)
    if expected != annotation.text:
        raise FormatError(
            f"{annotation.id}: text {annotation.text!r} differs from {expected!r} at its offsets",
            source=source,
            line=annotation.line,
        )


def read_brat_text(path: str | os.PathLike[str], encoding: str = "utf-8") -> str:
    """A brat ``.txt`` with every character its offsets count: read without newline
    translation (which would make each CRLF one character) and with its byte-order
    mark, as brat reads it."""
    path = Path(path)
    data = path.read_bytes()
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise FormatError(
            f"not valid {encoding} at byte {exc.start} "
            f"({data[exc.start : exc.start + 1]!r}); convert the file to {encoding}",
            source=str(path),
            line=line,
        ) from exc


def read_brat(
    ann_path: str | os.PathLike[str], txt_path: str | os.PathLike[str] | None = None
) -> BratDocument:
    """Read an ``.ann`` and its ``.txt`` (default: same stem; skipped if absent)."""
    ann_path = Path(ann_path)
    txt = Path(txt_path) if txt_path is not None else ann_path.with_suffix(".txt")
    text = None
    if txt_path is not None or txt.is_file():
        text = read_brat_text(txt)
    ann, source = read_text_file(ann_path)
    return parse_ann(ann, text=text, source=source)


def _format(annotation: Annotation) -> str:
    if isinstance(annotation, TextBound):
        offsets = ";".join(f"{b} {e}" for b, e in annotation.spans)
        return f"{annotation.id}\t{annotation.label} {offsets}\t{annotation.text}"
    if isinstance(annotation, Note):
        return f"{annotation.id}\t{annotation.kind} {annotation.target}\t{annotation.text}"
    if isinstance(annotation, Attribute):
        value = f" {annotation.value}" if annotation.value is not None else ""
        return f"{annotation.id}\t{annotation.name} {annotation.target}{value}"
    if isinstance(annotation, Normalization):
        return (
            f"{annotation.id}\t{annotation.kind} {annotation.target} "
            f"{annotation.resource}:{annotation.resource_id}\t{annotation.text}"
        )
    return annotation.raw


def format_ann(annotations: BratDocument | Iterable[Annotation]) -> str:
    items = list(annotations.annotations if isinstance(annotations, BratDocument) else annotations)
    lines = [_format(a) for a in items]
    for annotation, line in zip(items, lines, strict=True):
        found = _LINE_BREAK.search(line)
        if found is not None:
            raise ValueError(
                f"{annotation.id}: {line!r} holds a line break ({found.group()!r}), which "
                "would end the line where brat reads the .ann (it splits lines as "
                "str.splitlines does); split a text-bound annotation at line breaks into "
                "fragments (split_at_line_breaks), or take the line break out of the text"
            )
    return "".join(line + "\n" for line in lines)


def write_brat(
    document: BratDocument,
    ann_path: str | os.PathLike[str],
    txt_path: str | os.PathLike[str] | None = None,
) -> None:
    """Write the ``.ann`` and, when the document has a text, the ``.txt`` (same stem by default)."""
    ann_path = Path(ann_path)
    write_text_file(ann_path, format_ann(document))
    if document.text is not None:
        write_text_file(txt_path or ann_path.with_suffix(".txt"), document.text)
