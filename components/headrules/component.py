"""``convert.dependencies.v1``: the view's constituency trees as dependency trees.

Runs after a constituency parser (``parse.constituency.v1``, ``opennlp.pipeline.v1``,
``penn.import.v1`` of another tool's trees) and writes one basic dependency tree
per constituency tree into the same view, as the dependency parsers' wrappers write
theirs (DKPro ``Dependency``, the root a ``ROOT``), so the view can be scored by
``eval.dependencies.v1`` and vote in ``combine.dependencies.v1`` beside dependency
parsers. The conversion is :mod:`casflow.components.headrules.rules` with a model
learned by ``train.headrules.v1`` (default ``casflow:craft_headrules``, learned from
the CRAFT training treebank and its dependencies).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from functools import lru_cache
from pathlib import Path
from typing import Any

import cassis
from pydantic import Field

from casflow.components.evaluators.adapters import CasInputError, constituent_trees, document_id
from casflow.components.formats.cas_builders import dependency_annotation
from casflow.components.formats.penn.parse import Tree
from casflow.components.headrules.rules import ROOT, Converter, prepared
from casflow.components.models import is_shipped, model_path, where_looked
from casflow.pipeline.component import ComponentConfig, Processor, RunContext
from casflow.typesystem import CONSTITUENT, DEPENDENCY, DEPENDENCY_ROOT, POS, TOKEN

MODEL_FILE = "model.json"


class ConvertDependenciesConfig(ComponentConfig):
    model: str = Field(
        "casflow:craft_headrules",
        description="casflow:craft_headrules, a folder written by train.headrules.v1, or "
        "its model.json.",
    )


def model_file(model: str, workflow_dir: Path | None) -> Path:
    path = model_path(model, workflow_dir)
    return path / MODEL_FILE if path.is_dir() else path


@lru_cache(maxsize=4)
def _load(path: Path) -> Converter:
    # one model per process, however many steps or worker batches use it
    return Converter.load(path)


class ConvertDependencies(Processor[ConvertDependenciesConfig]):
    name = "convert.dependencies.v1"
    description = (
        "Dependency trees from the view's constituency trees by head rules and labels "
        "learned from a treebank (default casflow:craft_headrules, CRAFT's conversion)."
    )

    def __init__(
        self, config: ConvertDependenciesConfig, context: RunContext | None = None
    ) -> None:
        super().__init__(config, context)
        workflow_dir = context.workflow_dir if context is not None else None
        self.converter = _load(model_file(config.model, workflow_dir).resolve())

    @classmethod
    def requirements(
        cls, config: ConvertDependenciesConfig
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        return (TOKEN, POS, CONSTITUENT), (DEPENDENCY, DEPENDENCY_ROOT)

    @classmethod
    def check_config(cls, config: ConvertDependenciesConfig, context: RunContext) -> list[str]:
        path = model_file(config.model, context.workflow_dir)
        if not path.is_file():
            hint = (
                "reinstall casflow (the shipped model is package data)"
                if is_shipped(config.model)
                else "give a folder written by train.headrules.v1 or its model.json"
            )
            folder = model_path(config.model, context.workflow_dir).is_dir()
            looked = where_looked(
                config.model, context.workflow_dir, MODEL_FILE if folder else None
            )
            return [f"{cls.name}: no head-rules model at {looked}: {hint}"]
        try:
            _load(path.resolve())
        except ValueError as error:
            return [f"{cls.name}: {error}"]
        return []

    def process(self, view: cassis.Cas) -> None:
        doc = document_id(view)
        if view.select(DEPENDENCY):
            raise CasInputError(
                f"document {doc}: the view already has dependencies; convert the trees in "
                "a view of their own (view.copy.v1 the tokens and trees) so that no token "
                "gets two heads"
            )
        dep_type = view.typesystem.get_type(DEPENDENCY)
        root_type = view.typesystem.get_type(DEPENDENCY_ROOT)
        trees = trees_with_tokens(view)
        if not trees and view.select(TOKEN):
            raise CasInputError(
                f"document {doc}: the view has tokens but no constituency trees to convert; "
                "run a constituency parser in this view first, or copy the trees with every "
                "constituent type (view.copy.v1 copies a subtype only when it is listed: "
                "constituent.ROOT, Constituent and casflow.syntax.TreebankConstituent)"
            )
        out = []
        for tree, words in trees:
            heads, labels, _ = self.converter.convert(tree)
            for word, head, label in zip(words, heads, labels, strict=True):
                governor = None if head == ROOT else words[head - 1]
                out.append(dependency_annotation(dep_type, root_type, word, governor, label))
        view.add_all(out)


def trees_with_tokens(view: cassis.Cas) -> list[tuple[Tree, list[Any]]]:
    """Each constituency tree of the view, :func:`prepared`, with the Tokens it spans in
    text order, one per leaf (else a CasInputError naming the tree); trees over no
    tokens are left out. The tags are read: a token without one is an error naming it."""
    doc = document_id(view)
    tokens = sorted(view.select(TOKEN), key=lambda t: (t.begin, t.end))
    begins = [t.begin for t in tokens]
    ends = [t.end for t in tokens]
    found = []
    for (begin, end), tree in constituent_trees(view, require_tags=True):
        words = tokens[bisect_left(begins, begin) : bisect_right(ends, end)]
        ready = prepared(tree)
        if ready is None or not words:
            continue
        leaves = sum(1 for _ in ready.preterminals())
        if leaves != len(words):
            raise CasInputError(
                f"document {doc}: the constituency tree at ({begin}, {end}) has {leaves} "
                f"words but the view has {len(words)} tokens there; the trees must have the "
                "view's tokens as leaves"
            )
        found.append((ready, words))
    return found
