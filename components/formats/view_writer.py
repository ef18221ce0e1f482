"""Shared bases of the writers: one file per document in a sub-folder of the run's
output (:class:`FolderWriter`), from one view of the CAS (:class:`ViewWriter`).

The chain hands writers the whole CAS; which view a format writer writes is its
config's ``view`` (default ``_InitialView``), so one workflow can write the gold
and the system view side by side (two steps with different ``view``/``folder``).
Writers declare no requirements: the workflow validator checks a step's
requirements in the step-level ``view:``, which a writer does not read, so the
writer checks its view itself and fails the document with a message naming the
view and what is missing.

Sentences and tokens: a writer of token formats takes the ``Token`` annotations
of each ``Sentence`` (in text order); a view without sentences is one sentence.
"""

from __future__ import annotations

import bisect
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import cassis
from pydantic import Field

from casflow.pipeline.component import INITIAL_VIEW, ComponentConfig, RunContext, Writer
from casflow.pipeline.files import safe_file_stem
from casflow.typesystem import LEMMA, POS, SENTENCE, TOKEN, short_name


class ViewContentError(ValueError):
    hint = (
        "the view lacks what this format needs; check the writer's 'view' and that an "
        "earlier step writes those annotations there"
    )


class FolderWriterConfig(ComponentConfig):
    folder: str = Field("out", description="Sub-folder of the run's output folder.")


FolderWriterConfigT = TypeVar("FolderWriterConfigT", bound=FolderWriterConfig)


class FolderWriter(Writer[FolderWriterConfigT]):
    """Writes ``<folder>/<doc>{extension}``, one file per document."""

    extension: ClassVar[str] = ""

    def __init__(self, config: FolderWriterConfigT, context: RunContext) -> None:
        super().__init__(config, context)
        self.folder = Path(context.output_dir) / config.folder

    def output_paths(self, doc_id: str) -> list[Path]:
        return [self.folder / f"{safe_file_stem(doc_id)}{self.extension}"]


class ViewWriterConfig(FolderWriterConfig):
    view: str = Field(INITIAL_VIEW, description="The CAS view to write.")


ViewWriterConfigT = TypeVar("ViewWriterConfigT", bound=ViewWriterConfig)


class ViewWriter(FolderWriter[ViewWriterConfigT]):
    """Writes ``<folder>/<doc>{extension}`` from the configured view."""

    @classmethod
    def views_read(cls, config: ViewWriterConfigT) -> dict[str, tuple[str, ...]]:
        # The writer checks what its format needs itself (see the module docstring).
        return {config.view: ()}

    def source_view(self, cas: cassis.Cas, doc_id: str) -> cassis.Cas:
        try:
            return cas.get_view(self.config.view)
        except KeyError:
            views = ", ".join(sorted(s.sofaID for s in cas.sofas))
            raise ViewContentError(
                f"document {doc_id}: no view {self.config.view!r} to write (views: {views})"
            ) from None


def mention_label(mention: Any) -> str:
    """A mention's class: its ``value``, else its short type name."""
    return getattr(mention, "value", None) or short_name(mention.type.name)


def _position(annotation: Any) -> tuple[int, int]:
    return annotation.begin, annotation.end


def sentences_with_tokens(view: cassis.Cas, doc_id: str) -> list[tuple[Any | None, list[Any]]]:
    """``(sentence, its tokens)`` in text order; ``(None, all tokens)`` without sentences.

    A token outside every sentence is an error (it would be lost).
    """
    # select() lists subtypes after their supertype; a token format needs text order.
    tokens = sorted(view.select(TOKEN), key=_position)
    sentences = sorted(view.select(SENTENCE), key=_position)
    if not sentences:
        return [(None, list(tokens))] if tokens else []
    starts = [s.begin for s in sentences]
    grouped: list[list[Any]] = [[] for _ in sentences]
    for token in tokens:
        index = bisect.bisect_right(starts, token.begin) - 1
        if index < 0 or token.end > sentences[index].end:
            raise ViewContentError(
                f"document {doc_id}: token {token.get_covered_text()!r} at ({token.begin}, "
                f"{token.end}) is in no sentence of view {view.get_sofa().sofaID!r}"
            )
        grouped[index].append(token)
    return list(zip(sentences, grouped, strict=True))


class TokenFeatures:
    """POS and lemma of tokens: ``Token.pos``/``Token.lemma``, else an annotation with the
    same span (readers that do not link them)."""

    def __init__(self, view: cassis.Cas) -> None:
        self.view = view
        self._pos: dict[tuple[int, int], Any] | None = None
        self._lemma: dict[tuple[int, int], Any] | None = None

    def pos(self, token: Any) -> Any:
        pos = token.get("pos")
        if pos is None:
            if self._pos is None:
                self._pos = {(p.begin, p.end): p for p in self.view.select(POS)}
            pos = self._pos.get((token.begin, token.end))
        return pos

    def lemma(self, token: Any) -> str | None:
        lemma = token.get("lemma")
        if lemma is None:
            if self._lemma is None:
                self._lemma = {(m.begin, m.end): m for m in self.view.select(LEMMA)}
            lemma = self._lemma.get((token.begin, token.end))
        return lemma.get("value") if lemma is not None else None
