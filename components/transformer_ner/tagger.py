"""``transformers.ner.v1``: a token-classification model fine-tuned by
``train.transformers.ner.v1`` over the view's sentences and tokens.

Each Sentence's Tokens are the words (casflow's fine tokens, ``tokens.fine.v1``, as the
model was trained on); :func:`~.decoding.tag_sentences` tags them (windows of at most
``max_length`` pieces cut at word boundaries, batches by length, each word's first
piece, BIO), and each mention is written as the model's mention type (meta.json's
``mention_type``: AnatomyMention or GeneMention) with its class as ``value``, from the
first token's begin to the last token's end. Tokens outside every Sentence are not
tagged. CPU only; ``threads`` is PyTorch's thread count while the step runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import cassis
from pydantic import Field

from casflow.components.layers import add_annotations
from casflow.components.models import model_path
from casflow.components.stanza.model import run_threads_field, torch_threads
from casflow.components.transformer_ner.decoding import tag_sentences
from casflow.components.transformer_ner.model import (
    load_model,
    model_folder_problems,
    read_meta,
    transformers_missing,
)
from casflow.pipeline.component import ComponentConfig, Processor, RunContext
from casflow.typesystem import ANATOMY_MENTION, GENE_MENTION, SENTENCE, TOKEN


class TransformerNerConfig(ComponentConfig):
    model: str = Field(
        description="Model folder written by train.transformers.ner.v1 (final/model in its "
        "output; casflow:NAME for a shipped one; relative paths from the workflow's folder)."
    )
    threads: int = run_threads_field()
    batch_size: int = Field(32, ge=1, description="Sentence windows per forward pass.")
    max_length: int | None = Field(
        None,
        ge=8,
        description="Word pieces per window, special tokens included (longer sentences are "
        "cut at word boundaries); null: the model's, from its meta.json.",
    )


class TransformerNer(Processor[TransformerNerConfig]):
    name = "transformers.ner.v1"
    description = (
        "A transformer NER tagger fine-tuned by train.transformers.ner.v1 (Hugging Face "
        "transformers, CPU) over the view's sentences and tokens: gene or anatomy mentions."
    )
    requires: ClassVar[tuple[str, ...]] = (SENTENCE, TOKEN)
    # the model folder decides which (meta.json's mention_type), as ner.crf.v1's model
    produces: ClassVar[tuple[str, ...]] = (GENE_MENTION, ANATOMY_MENTION)

    def __init__(self, config: TransformerNerConfig, context: RunContext | None = None) -> None:
        super().__init__(config, context)
        problem = transformers_missing()
        if problem:
            raise ImportError(f"{self.name}: {problem}")
        problems = model_folder_problems(config.model, self.context.workflow_dir, config.max_length)
        folder = model_path(config.model, self.context.workflow_dir)
        if problems:
            error = ValueError if folder.is_dir() else FileNotFoundError
            raise error(f"{self.name}: {'; '.join(problems)}")
        meta = read_meta(folder)
        self.mention_type: str = meta["mention_type"]
        self.max_length: int = config.max_length or int(meta["max_length"])
        with torch_threads(config.threads):
            self.loaded = load_model(folder)

    @classmethod
    def modules_used(cls, config: TransformerNerConfig, context: RunContext) -> frozenset[str]:
        return frozenset({"torch"})

    @classmethod
    def check_config(cls, config: TransformerNerConfig, context: RunContext) -> list[str]:
        problem = transformers_missing()
        problems = [problem] if problem else []
        problems += model_folder_problems(config.model, context.workflow_dir, config.max_length)
        return [f"{cls.name}: {p}" for p in problems]

    def process(self, view: cassis.Cas) -> None:
        self.process_batch([view])

    def process_batch(self, views: Sequence[cassis.Cas]) -> None:
        # every sentence of the batch in one call: windows of similar length batch well
        sentences: list[tuple[int, list[Any]]] = []
        for number, view in enumerate(views):
            for sentence in view.select(SENTENCE):
                tokens = list(view.select_covered(TOKEN, sentence))
                if tokens:
                    sentences.append((number, tokens))
        loaded = self.loaded
        with torch_threads(self.config.threads):
            found = tag_sentences(
                loaded.model,
                loaded.tokenizer,
                loaded.tags,
                [[t.get_covered_text() for t in tokens] for _, tokens in sentences],
                self.max_length,
                self.config.batch_size,
            )
        new: list[list[Any]] = [[] for _ in views]
        for (number, tokens), mentions in zip(sentences, found, strict=True):
            mention = views[number].typesystem.get_type(self.mention_type)
            for first, last, label in mentions:
                new[number].append(
                    mention(begin=tokens[first].begin, end=tokens[last - 1].end, value=label)
                )
        for view, written in zip(views, new, strict=True):
            add_annotations(view, written)
