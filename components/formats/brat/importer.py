"""``brat.import.v1``: a brat ``.ann`` file per document into a view.

Text-bound annotations (``T``) become mentions over the view's text: the type is
``types[label]`` (full or short name of ``NamedEntity`` or a subtype), else
``default_type`` (none: the annotation is skipped), ``value`` the brat label. A
discontinuous annotation (``0 5;9 12``) covers its first to last piece and lists
the pieces, sorted, in ``fragments``. A normalization (``N``) sets the
mention's ``identifier`` (``UBERON:0000948``; the first one wins). The text of
each ``T`` line is checked against the view's text (brat joins fragment texts
with a space); a difference is an error naming the file and line.

Not imported: relations, events, attributes, notes and equivalences.
"""

from __future__ import annotations

import cassis
from pydantic import Field, field_validator

from casflow.components.formats.brat.parse import Normalization, OtherLine, TextBound, parse_ann
from casflow.components.formats.cas_builders import (
    MentionSpec,
    add_mentions,
    resolve_mention_type,
)
from casflow.components.formats.common import FormatError, warn
from casflow.components.formats.document_files import (
    FileImport,
    FileImportConfig,
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
        True, description="Check each T line's text against the view's text at its offsets."
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
        if ann is None:
            return
        text = view.sofa_string or ""
        try:
            document = parse_ann(ann, source=str(path))
        except FormatError as exc:
            raise ImportFileMalformed(f"document {doc_id}: {exc}") from exc
        if self.config.check_text:
            # parsed again against the text, so that a line that does not fit it is told
            # apart (another document's file) from a line of the wrong shape (above)
            try:
                parse_ann(ann, text=text, source=str(path))
            except FormatError as exc:
                raise ImportFormatError(f"document {doc_id}: {exc}") from exc
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
            spans = tuple(sorted(annotation.spans))
            if any(end > len(text) for _, end in spans):
                raise ImportFormatError(
                    f"document {doc_id}: {path} line {annotation.line}: {annotation.id} span "
                    f"{spans} beyond the {len(text)}-character text"
                )
            by_type.setdefault(type_name, []).append(
                MentionSpec(
                    annotation.begin,
                    annotation.end,
                    annotation.label,
                    fragments=spans if len(spans) > 1 else (),
                    identifier=identifiers.get(annotation.id),
                )
            )
        for type_name, specs in by_type.items():
            add_mentions(view, type_name, specs)
