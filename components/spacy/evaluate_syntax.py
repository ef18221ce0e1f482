"""Score a spaCy pipeline from raw text against gold syntax documents with casflow's evaluators.

Each gold document's whole text goes through ``nlp``; whitespace tokens are dropped;
tokens and sentences are scored by :mod:`casflow.components.metrics.segmentation`,
XPOS by :mod:`~casflow.components.metrics.pos` (accuracy over tokens aligned by
span) and dependencies by :mod:`~casflow.components.metrics.dependency` (CoNLL 2018
scoring on words aligned by characters, full CLEAR labels, punctuation included).
spaCy's parser calls every root ``ROOT``; it is compared as CRAFT's ``root``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from spacy.language import Language
from spacy.tokens import Doc

from casflow.components.metrics.dependency import (
    DepWord,
    dependency_counts,
    full_deprel,
    score_dependencies,
    sentence_from_heads,
)
from casflow.components.metrics.pos import TaggedToken, pos_counts, score_pos
from casflow.components.metrics.segmentation import (
    score_segmentation,
    segmentation_counts,
)
from casflow.components.spacy.gold import GoldSyntaxDocument
from casflow.pipeline.counts import Counts, add_counts


def crafty_label(label: str) -> str:
    return "root" if label == "ROOT" else label


def gold_dependencies(gold: GoldSyntaxDocument) -> list[list[DepWord]]:
    sentences = []
    for first, end in gold.sentence_token_ranges():
        heads = [0 if gold.heads[i] == i else gold.heads[i] - first + 1 for i in range(first, end)]
        sentences.append(
            sentence_from_heads(
                gold.tokens[first:end], heads, gold.deprels[first:end], xpos=gold.tags[first:end]
            )
        )
    return sentences


def system_dependencies(doc: Doc) -> list[list[DepWord]]:
    sentences = []
    for sent in doc.sents:
        words = []
        for token in sent:
            if token.is_space:
                continue
            head = token.head
            # A word whose head is a whitespace token (rare) is scored as a root.
            root = head.i == token.i or head.is_space
            words.append(
                DepWord(
                    token.idx,
                    token.idx + len(token.text),
                    None if root else (head.idx, head.idx + len(head.text)),
                    crafty_label(token.dep_),
                    xpos=token.tag_,
                )
            )
        if words:
            sentences.append(words)
    return sentences


def system_sentence_spans(doc: Doc) -> list[tuple[int, int]]:
    return [(sent.start_char, sent.end_char) for sent in doc.sents]


def system_token_spans(doc: Doc) -> list[tuple[int, int]]:
    return [(t.idx, t.idx + len(t.text)) for t in doc if not t.is_space]


@dataclass
class SyntaxScores:
    counts: Counts = field(default_factory=dict)
    tokens: int = 0
    seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        segmentation = score_segmentation(self.counts)
        summary: dict[str, Any] = {
            "tokens_f": segmentation.get("token", {}).get("f1"),
            "sentences_f": segmentation.get("sentence", {}).get("f1"),
        }
        if "pos/aligned" in self.counts:
            summary["xpos_accuracy"] = score_pos(self.counts)["accuracy"]
        if "uas/gold" in self.counts:
            dependencies = score_dependencies(self.counts)
            summary["uas"] = dependencies["uas"]["f1"]
            summary["las"] = dependencies["las"]["f1"]
        summary["tokens_per_second"] = self.tokens / self.seconds if self.seconds else None
        return summary


def score_docs(
    golds: Sequence[GoldSyntaxDocument], docs: Iterable[Doc], *, syntax: bool = True
) -> Counts:
    """Summed counts of predicted ``docs`` (parallel to ``golds``)."""
    counts: Counts = {}
    for gold, doc in zip(golds, docs, strict=True):
        if doc.text != gold.text:
            raise ValueError(f"document {gold.doc_id}: the Doc's text is not the gold text")
        has_sents = doc.has_annotation("SENT_START") or doc.has_annotation("DEP")
        system_sentences = system_sentence_spans(doc) if has_sents else []
        add_counts(
            counts,
            segmentation_counts(
                gold.text, gold.sentences, system_sentences, gold.tokens, system_token_spans(doc)
            ).counts,
        )
        if not syntax:
            continue
        add_syntax_counts(
            counts,
            gold,
            [TaggedToken(t.idx, t.idx + len(t.text), t.tag_) for t in doc if not t.is_space],
            system_dependencies(doc) if doc.has_annotation("DEP") else None,
        )
    return counts


def add_syntax_counts(
    counts: Counts,
    gold: GoldSyntaxDocument,
    tagged: Sequence[TaggedToken],
    dependencies: Sequence[Sequence[DepWord]] | None,
) -> None:
    """Add the XPOS counts of ``tagged`` and, when given, the dependency counts of the
    system's sentences (full CLEAR labels) against ``gold`` to ``counts``."""
    gold_tagged = [TaggedToken(b, e, t) for (b, e), t in zip(gold.tokens, gold.tags, strict=True)]
    add_counts(counts, pos_counts(gold_tagged, tagged).counts)
    if dependencies is not None:
        add_counts(
            counts,
            dependency_counts(gold_dependencies(gold), dependencies, label_key=full_deprel).counts,
        )


def evaluate_pipeline(
    nlp: Language, golds: Sequence[GoldSyntaxDocument], *, batch_size: int = 1
) -> SyntaxScores:
    """Run ``nlp`` on every gold text (raw text in, timed) and score it."""
    for gold in golds:
        if len(gold.text) >= nlp.max_length:
            nlp.max_length = len(gold.text) + 1
    start = time.perf_counter()
    docs = list(nlp.pipe((gold.text for gold in golds), batch_size=batch_size))
    seconds = time.perf_counter() - start
    counts = score_docs(golds, docs)
    return SyntaxScores(counts, sum(len(d) for d in docs), seconds)
