"""``train.headrules.v1``: head rules and labels for ``convert.dependencies.v1``.

Learns from gold views that hold both a treebank's constituency trees and its
dependency trees over the same tokens (CRAFT: ``craft.reader.v1`` with layers
``pos``, ``constituents`` and ``dependencies``: the rules read the tags); see :mod:`casflow.components.headrules.rules`
for what is learned. Learning takes 1-1.5 min for CRAFT's 60 training articles, reading them about as long.

Scores (percentages) convert the gold trees of the scored documents and compare with
their gold dependencies (``uas``, ``las``, every token counted): how faithfully the
learned conversion reproduces the treebank's own. A parser's converted trees are
scored as any parser's, by ``eval.dependencies.v1`` in a run.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import cassis

from casflow.components.evaluators.adapters import dependency_sentences
from casflow.components.formats.penn.parse import Tree
from casflow.components.headrules.component import MODEL_FILE, trees_with_tokens
from casflow.components.headrules.rules import ROOT, Converter, learn_converter
from casflow.pipeline.component import ComponentConfig, Trainer
from casflow.typesystem import CONSTITUENT, DEPENDENCY, POS, TOKEN


@dataclass
class ConvertedSentence:
    tree: Tree  # prepared: no empty elements, no function tags
    heads: list[int]  # gold, 1-based, 0 for the root
    labels: list[str]


@dataclass
class TreeDependencyExample:
    """One gold document's trees with the gold dependencies of their words (picklable)."""

    doc_id: str
    sentences: list[ConvertedSentence] = field(default_factory=list)


class HeadRulesTrainerConfig(ComponentConfig):
    pass


class HeadRulesTrainer(Trainer[HeadRulesTrainerConfig]):
    name = "train.headrules.v1"
    description = (
        "Head rules and dependency labels learned from gold views holding a treebank's "
        "constituency and dependency trees, for convert.dependencies.v1."
    )
    layers: ClassVar[dict[str, tuple[str, ...]]] = {
        "dependencies": (TOKEN, POS, CONSTITUENT, DEPENDENCY),
    }

    def example(self, view: cassis.Cas, doc_id: str) -> TreeDependencyExample:
        arcs = {
            word.span: (word.head, word.deprel)
            for sentence in dependency_sentences(view)
            for word in sentence
        }
        example = TreeDependencyExample(doc_id)
        for tree, tokens in trees_with_tokens(view):
            words = [(t.begin, t.end) for t in tokens]
            number = {span: i for i, span in enumerate(words, start=1)}
            heads, labels = [], []
            for span in words:
                if span not in arcs:
                    raise ValueError(
                        f"document {doc_id}: token {span} has no gold dependency; the gold "
                        "view needs a dependency tree over every tree's words"
                    )
                head, label = arcs[span]
                heads.append(ROOT if head is None or head == span else number.get(head, ROOT))
                labels.append(label)
            example.sentences.append(ConvertedSentence(tree, heads, labels))
        if not example.sentences:
            raise ValueError(f"document {doc_id}: the gold view has no constituent trees")
        return example

    def train(
        self,
        train: Sequence[TreeDependencyExample],
        dev: Sequence[TreeDependencyExample],
        output_dir: Path,
        log: Callable[[str], None],
    ) -> Path:
        sentences = [s for example in train for s in example.sentences]
        log(f"learning head rules and labels from {len(sentences)} gold trees")
        converter = learn_converter((s.tree, s.heads, s.labels) for s in sentences)
        model = Path(output_dir) / "model"
        model.mkdir(parents=True, exist_ok=True)
        converter.save(model / MODEL_FILE)
        meta = {"trainer": self.name, "training_trees": len(sentences)}
        (model / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        rules = sum(len(r) for r in converter.rules.rules.values())
        log(f"{rules} head rules for {len(converter.rules.rules)} labels: {model}")
        return model

    def evaluate(
        self, model_dir: Path, examples: Sequence[TreeDependencyExample]
    ) -> dict[str, float]:
        converter = Converter.load(Path(model_dir) / MODEL_FILE)
        words = attached = labelled = 0
        for example in examples:
            for sentence in example.sentences:
                heads, labels, _ = converter.convert(sentence.tree)
                for head, label, gold_head, gold_label in zip(
                    heads, labels, sentence.heads, sentence.labels, strict=True
                ):
                    words += 1
                    if head == gold_head:
                        attached += 1
                        # the root's label is the relation's name in the gold (root, ROOT)
                        labelled += head == ROOT or label == gold_label
        if not words:
            return {"uas": 0.0, "las": 0.0}
        return {
            "uas": round(100 * attached / words, 2),
            "las": round(100 * labelled / words, 2),
        }

    def describe(self) -> str:
        return (
            "Head rules (per constituent label, a decision list of child labels or label "
            "groups, leftmost or rightmost; coordination headed by its first conjunct with "
            "conjuncts chained) and a backoff table of dependency labels by attachment "
            "context, learned from gold constituency trees paired with gold dependency "
            "trees. Scores convert the gold trees and compare with the gold dependencies."
        )
