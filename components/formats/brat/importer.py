"""``brat.import.v1``: a brat ``.ann`` file per document into a view.

Text-bound annotations (``T``) become mentions over the view's text: the type is
``types[label]`` (full or short name of ``NamedEntity`` or a subtype), else
``default_type`` (none: the annotation is skipped), ``value`` the brat label. A
discontinuous annotation (``0 5;9 12``) covers its first to last piece and lists
the pieces, sorted, in ``fragments``. A normalization (``N``) sets the
mention's ``identifier`` (``UBERON:0000948``; the first one wins).

Offsets count the characters of brat's ``.txt`` beside the ``.ann`` (same stem), as
brat reads it: the CR of a CRLF line end and a leading byte-order mark count one
each, which the view's text (``text.reader.v1``: CRLF read as LF, the mark dropped)
does not hold, so they are mapped onto it (:mod:`.offsets`). Only the ``.txt`` up to the
end of the last ``T`` annotation must be the document's text: a difference after it (an
editor's final newline) is a warning naming the ``.txt`` and where. One before it fails
the document, naming line and column; with ``check_text: false`` the offsets are counted
on the view's text instead, with that warning. With no ``.txt`` beside, the offsets are
taken on the view's text.

The text of each ``T`` line is checked against the text its offsets count (brat
joins fragment texts with a space); a difference is an error naming the file and
line.

Not imported: relations, events, attributes, notes and equivalences.
"""

from __future__ import annotations

from pathlib import Path

import cassis
from pydantic import Field, field_validator

from casflow.components.formats.brat.offsets import FileOffsets, align
from casflow.components.formats.brat.parse import (
    Normalization,
    OtherLine,
    TextBound,
    parse_ann,
    read_brat_text,
)
from casflow.components.formats.cas_builders import (
    MentionSpec,
    add_mentions,
    resolve_mention_type,
)
from casflow.components.formats.common import FormatError, warn
from casflow.components.formats.document_files import (
    FileImport,
    FileImportConfig,
    ImportDecodeError,
    ImportFileMalformed,
    ImportFormatError,
)
from casflow.typesystem import FRAGMENT, NAMED_ENTITY

#: What brat lines of these kinds hold is documented as not imported (relations,
#: events, equivalences); any other line the parser keeps verbatim is damage.
_NOT_IMPORTED = ("R", "E", "*")


class BratImportConfig(FileImportConfig):
    types: dict[str, str] = Field(
        default_factory=dict,
        description="brat label -> mention type (full or short name, e.g. {Gene: GeneMention}).",
    )
    default_type: str | None = Field(
        NAMED_ENTITY, description="Type of labels not in 'types' (none: skip them)."
    )
    check_text: bool = Field(
        True,
        description="Check each T line's text at its offsets in the text they count: the .txt "
        "beside the .ann (brat's), else the view's text. With false, a .txt beside that is not "
        "the view's text before the last T annotation's end is a warning, and the offsets count "
        "the view's text.",
    )

    @field_validator("types")
    @classmethod
    def _mention_types(cls, value: dict[str, str]) -> dict[str, str]:
        return {label: resolve_mention_type(name) for label, name in value.items()}

    @field_validator("default_type")
    @classmethod
    def _default_type(cls, value: str | None) -> str | None:
        return None if value is None else resolve_mention_type(value)


class BratImport(FileImport[BratImportConfig]):
    """Text-bound brat annotations as mentions (see the module docstring)."""

    name = "brat.import.v1"
    description = "Import brat standoff (.ann) text-bound annotations per document into a view."

    @classmethod
    def requirements(cls, config: BratImportConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
        types = list(dict.fromkeys(getattr(config, "types", {}).values()))
        default = getattr(config, "default_type", NAMED_ENTITY)
        if default is not None and default not in types:
            types.append(default)
        return (), (*types, FRAGMENT)

    def process(self, view: cassis.Cas) -> None:
        doc_id, path, ann = self.read_document_file(view)
        if path is None or ann is None:  # missing: empty
            return
        text = view.sofa_string or ""
        try:
            document = parse_ann(ann, source=str(path))
        except FormatError as exc:
            raise ImportFileMalformed(f"document {doc_id}: {exc}") from exc
        # only the .txt up to the last annotation's end counts any offset, so only that
        # part must be the document's text (an editor may have added a final newline)
        last_end = max((a.end for a in document.annotations if isinstance(a, TextBound)), default=0)
        counted, offsets, counted_name = self._counted_text(doc_id, path, text, last_end)
        if self.config.check_text:
            # parsed again against the text, so that a line that does not fit it is told
            # apart (another document's file) from a line of the wrong shape (above)
            try:
                parse_ann(ann, text=counted, source=str(path))
            except FormatError as exc:
                raise ImportFormatError(
                    f"document {doc_id}: {exc}; offsets counted on {counted_name}"
                ) from exc
        identifiers: dict[str, str] = {}
        for annotation in document.annotations:
            if isinstance(annotation, Normalization):
                identifiers.setdefault(
                    annotation.target, f"{annotation.resource}:{annotation.resource_id}"
                )
        by_type: dict[str, list[MentionSpec]] = {}
        for annotation in document.annotations:
            if isinstance(annotation, OtherLine) and annotation.id[:1] not in _NOT_IMPORTED:
                # e.g. a "t1" or "X1" line: brat itself would refuse the file
                warn(
                    f"{annotation.id!r} is not a brat annotation id (T, R, E, A, M, N, # "
                    "or * and a number), so the line is not read; correct its id",
                    source=str(path),
                    line=annotation.line,
                )
            if not isinstance(annotation, TextBound):
                continue
            type_name = self.config.types.get(annotation.label, self.config.default_type)
            if type_name is None:
                continue
            if any(end > len(counted) for _, end in annotation.spans):
                raise ImportFormatError(
                    f"document {doc_id}: {path} line {annotation.line}: {annotation.id} span "
                    f"{annotation.spans} beyond the end of {counted_name} ({len(counted)} characters)"
                )
            spans = tuple(sorted(offsets.span(begin, end) for begin, end in annotation.spans))
            if len(spans) > 1 and not _has_fragments(view, type_name):
                # NamedEntity (the default type) has no feature for the pieces: the
                # mention covers them all, as every discontinuous mention's begin/end does.
                warn(
                    f"{annotation.id} is discontinuous but {type_name} has no 'fragments' "
                    "feature, so it covers its pieces and the text between them; map its "
                    "label in 'types' to a casflow.ner.ConceptMention type (e.g. "
                    "AnatomyMention) to keep the pieces",
                    source=str(path),
                    line=annotation.line,
                )
                spans = ((spans[0][0], spans[-1][1]),)
            by_type.setdefault(type_name, []).append(
                MentionSpec(
                    min(begin for begin, _ in spans),
                    max(end for _, end in spans),
                    annotation.label,
                    fragments=spans if len(spans) > 1 else (),
                    identifier=identifiers.get(annotation.id),
                )
            )
        for type_name, specs in by_type.items():
            add_mentions(view, type_name, specs)

    def _counted_text(
        self, doc_id: str, path: Path, text: str, last_end: int
    ) -> tuple[str, FileOffsets, str]:
        """The text the ``.ann``'s offsets (up to ``last_end``) count, their map onto the
        view's ``text`` and the name of that text for messages."""
        txt_path = path.with_suffix(".txt")
        if txt_path == path or not txt_path.is_file():
            return text, FileOffsets(), f"the document's text (no {txt_path.name} beside the .ann)"
        try:
            file_text = read_brat_text(txt_path, self.config.encoding)
        except FormatError as exc:
            raise ImportDecodeError(f"document {doc_id}: {exc}") from exc
        try:
            offsets = align(file_text, text, up_to=last_end)
        except ValueError as exc:
            if self.config.check_text:
                raise ImportFormatError(
                    f"document {doc_id}: {txt_path} beside {path.name} is not the document's "
                    f"text ({exc}; the last annotation ends at character {last_end}); brat "
                    "counts the offsets of a .ann on its .txt, so import the .ann made on this "
                    "document's text, with its .txt (check_text: false counts them on the "
                    "document's text instead)"
                ) from exc
            # the user asked for no text checks: the offsets are taken as the document's,
            # as with no .txt beside, but not silently
            warn(
                f"not the document's text ({exc}; the last annotation of {path.name} ends "
                f"at character {last_end}); check_text is false, so the offsets are "
                "counted on the document's text instead",
                source=str(txt_path),
                line=None,
            )
            return text, FileOffsets(), f"the document's text ({txt_path.name} differs from it)"
        if offsets.later_difference is not None:
            warn(
                f"differs from the document's text after the end of the last annotation of "
                f"{path.name} (character {last_end}): {offsets.later_difference}; no offset "
                "counts there, so the annotations are imported",
                source=str(txt_path),
                line=None,
            )
        return file_text, offsets, str(txt_path)


def _has_fragments(view: cassis.Cas, type_name: str) -> bool:
    return view.typesystem.get_type(type_name).get_feature("fragments") is not None
