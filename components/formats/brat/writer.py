"""``brat.writer.v1``: brat standoff, ``<doc>.txt`` (the view's text) and ``<doc>.ann``.

Mentions of ``type`` (and its subtypes), in text order, become ``T1``, ``T2``, ...
with the label their class (``value``, else the short type name); a mention with
``fragments`` is written discontinuous (``0 5;9 12``, texts joined by a space, as
brat does). With ``normalizations`` (default) a mention's ``identifier`` of the
form ``DB:ID`` adds ``N<k>\tReference T<i> DB:ID\t<text>``.

Round trip with ``brat.import.v1``: T and N lines come back renumbered in text
order; other lines (relations, events, attributes, notes) are not kept. A mention
spanning a line break (``\n`` or ``\r``) cannot be written (brat's .ann is
line-based): the document fails naming it. A brat type is one word, so whitespace
in a class is written as ``_`` (``cell line`` -> ``cell_line``); an identifier
with whitespace in it cannot stand in an N line, which is then left out with a
warning naming it.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import cassis
from pydantic import Field, field_validator

from casflow.components.formats.brat.parse import (
    Annotation,
    Normalization,
    TextBound,
    format_ann,
    fragments_text,
)
from casflow.components.formats.cas_builders import resolve_mention_type
from casflow.components.formats.view_writer import (
    ViewContentError,
    ViewWriter,
    ViewWriterConfig,
    mention_label,
)
from casflow.pipeline.component import DocumentWarning
from casflow.pipeline.files import atomic_write_text, safe_file_stem
from casflow.typesystem import NAMED_ENTITY


class BratWriterConfig(ViewWriterConfig):
    folder: str = Field("brat", description="Sub-folder of the run's output folder.")
    type: str = Field(NAMED_ENTITY, description="Mentions to write (type and its subtypes).")
    normalizations: bool = Field(
        True, description="Write identifiers (DB:ID) as brat normalization (N) lines."
    )

    @field_validator("type")
    @classmethod
    def _mention_type(cls, name: str) -> str:
        return resolve_mention_type(name)


class BratWriter(ViewWriter[BratWriterConfig]):
    """brat .txt and .ann per document (see the module docstring)."""

    name = "brat.writer.v1"
    description = "brat standoff (.txt + .ann) of the mentions of one type."

    def output_paths(self, doc_id: str) -> list[Path]:
        stem = safe_file_stem(doc_id)
        return [self.folder / f"{stem}.ann", self.folder / f"{stem}.txt"]

    def write(self, cas: cassis.Cas, doc_id: str) -> list[Path]:
        view = self.source_view(cas, doc_id)
        text = view.sofa_string or ""
        annotations: list[Annotation] = []
        normalizations: list[Annotation] = []
        # select() lists a type's own annotations before its subtypes': sort by position.
        mentions = sorted(view.select(self.config.type), key=lambda m: (m.begin, m.end))
        for number, mention in enumerate(mentions, start=1):
            fragments = getattr(mention, "fragments", None)
            pieces = sorted((f.begin, f.end) for f in fragments.elements) if fragments else []
            spans = tuple(pieces) or ((mention.begin, mention.end),)
            ann_id = f"T{number}"
            covered = fragments_text(text, spans)
            if "\n" in covered or "\r" in covered:
                # \r too: the .ann is read back with universal newlines, where it ends a line.
                raise ViewContentError(
                    f"document {doc_id}: mention {covered!r} at {spans} spans a line break, "
                    "which brat's line-based .ann cannot store; split the mention at the "
                    "line break or write it in another format"
                )
            # A type is one word: the text after its first space would be taken for offsets.
            label = "_".join(mention_label(mention).split()) or "_"
            annotations.append(TextBound(ann_id, label, spans, covered))
            identifier = getattr(mention, "identifier", None)
            if self.config.normalizations and identifier and ":" in identifier:
                if len(identifier.split()) != 1:
                    warnings.warn(
                        DocumentWarning(
                            f"document {doc_id}: identifier {identifier!r} of mention "
                            f"{covered!r} holds whitespace, which a brat N line cannot; "
                            "its N line is left out"
                        ),
                        stacklevel=2,
                    )
                    continue
                resource, _, resource_id = identifier.partition(":")
                normalizations.append(
                    Normalization(
                        f"N{len(normalizations) + 1}",
                        "Reference",
                        ann_id,
                        resource,
                        resource_id,
                        covered,
                    )
                )
        try:
            ann = format_ann(annotations + normalizations)
        except ValueError as exc:
            raise ViewContentError(f"document {doc_id}: {exc}") from exc
        ann_path, txt_path = self.output_paths(doc_id)
        atomic_write_text(txt_path, text)
        atomic_write_text(ann_path, ann)
        return [ann_path, txt_path]
