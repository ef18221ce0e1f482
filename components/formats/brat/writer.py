r"""``brat.writer.v1``: brat standoff, ``<doc>.txt`` (the view's text) and ``<doc>.ann``.

Mentions of ``type`` (and its subtypes), in text order, become ``T1``, ``T2``, ...
with the label their class (``value``, else the short type name); a mention with
``fragments`` is written discontinuous (``0 5;9 12``, texts joined by a space, as
brat does). With ``normalizations`` (default) a mention's ``identifier`` of the
form ``DB:ID`` adds ``N<k>\tReference T<i> DB:ID\t<text>``.

A mention across line breaks is written as brat stores a selection across lines
(brat's .ann holds one line per annotation): one fragment per line, the line breaks
left out (``Left\nventricle`` at 0-14 is ``0 4;5 14\tLeft ventricle``). Line breaks
are every character brat splits lines at (``str.splitlines``: ``\n``, ``\r``, U+2028,
U+0085, a form feed ...). A mention of line breaks only is left out with a warning.

Round trip with ``brat.import.v1``: T and N lines come back renumbered in text
order; other lines (relations, events, attributes, notes) are not kept. A contiguous
mention across a line break comes back discontinuous, covering the same begin/end,
its pieces in ``fragments`` (into a type without that feature, such as
``NamedEntity``, it comes back contiguous, with a warning); line breaks at its edges
are no longer part of it. A brat type is one word, so whitespace in a class is
written as ``_`` (``cell line`` -> ``cell_line``); an identifier with whitespace in
it cannot stand in an N line, which is then left out with a warning naming it.
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
    split_at_line_breaks,
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
        for mention in mentions:
            fragments = getattr(mention, "fragments", None)
            pieces = sorted((f.begin, f.end) for f in fragments.elements) if fragments else []
            spans = split_at_line_breaks(text, tuple(pieces) or ((mention.begin, mention.end),))
            # A type is one word: the text after its first space would be taken for offsets.
            label = "_".join(mention_label(mention).split()) or "_"
            if not spans:
                warnings.warn(
                    DocumentWarning(
                        f"document {doc_id}: {label} mention "
                        f"{text[mention.begin : mention.end]!r} at {mention.begin}-"
                        f"{mention.end} holds only line breaks, which brat cannot annotate "
                        "(its .ann has one line per annotation); it is left out"
                    ),
                    stacklevel=2,
                )
                continue
            ann_id = f"T{len(annotations) + 1}"
            covered = fragments_text(text, spans)
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
