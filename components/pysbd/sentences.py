"""``sentences.pysbd.v1``: pySBD's rule-based sentence boundaries (Golden Rules, no model).

pySBD is given one structure block at a time (see :mod:`casflow.components.segmenters`)
with ``clean=False``, so it returns the text's own characters; its sentence
strings are placed back on the text by :func:`~casflow.components.segmenters.align_sentences`
(its own ``char_span`` option searches each sentence with a regular
expression and can land on an earlier copy of a repeated sentence).
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import Field

from casflow.components.segmenters import (
    SegmenterConfig,
    SentenceSplitter,
    Span,
    align_sentences,
    import_library,
)
from casflow.pipeline.component import RunContext


class PysbdSentencesConfig(SegmenterConfig):
    language: str = Field("en", description="pySBD language code (its rule set).")


class PysbdSentences(SentenceSplitter[PysbdSentencesConfig]):
    name = "sentences.pysbd.v1"
    description = "pySBD rule-based sentence splitter (no model), per structure block."
    library = ("pysbd", "pysbd")

    def __init__(self, config: PysbdSentencesConfig, context: RunContext | None = None) -> None:
        super().__init__(config, context)
        pysbd = import_library(*self.library)
        self.segmenter = pysbd.Segmenter(language=config.language, clean=False)

    def split(self, text: str) -> Iterable[Span]:
        return align_sentences(text, self.segmenter.segment(text))
