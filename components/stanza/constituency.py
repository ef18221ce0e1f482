"""``parse.constituency.v1``: constituency trees from a Stanza parser over the view's
sentences, tokens and POS tags.

The parser is Stanza's (an in-order transition parser with LSTM encoders, Yang and
Deng 2020 / Bauer et al.), run in Stanza's pretokenized and pretagged modes: the words
are the view's Tokens grouped by its Sentences, their tags the view's POS, so the
trees attach to whatever tokenizer and tagger came before. The trees are written as
``stanza.pipeline.v1`` writes them: one DKPro ``ROOT`` per sentence with
``TreebankConstituent`` children (constituentType; syntacticFunction where the model
predicts function tags, which casflow's CRAFT model does not), parent and children,
the Tokens as leaves, and a ``PennTree``. The tokens' POS is left as it is (Stanza's
parser does not tag).

``model`` is ``casflow:craft_constituency`` (shipped, trained on CRAFT by
``train.stanza.constituency.v1``), a folder holding ``model.pt`` and ``pretrain.pt``
(what that trainer writes), or any Stanza constituency model file (``.pt``) with its
``pretrain`` (e.g. a downloaded Stanza package such as ``en/constituency/wsj.pt``).

What casflow's models learn (see :func:`treebank_line`): the trees of the gold view
without empty elements (``-NONE-`` and the nodes left empty), labels without function
tags and indices (``NP-SBJ-1`` -> ``NP``), brackets in words as Penn Treebank escapes
(which Stanza's tree reader turns back into round brackets for ``-LRB-``/``-RRB-`` only;
the component sends words the same way, ``ptb_brackets``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import cassis
from pydantic import Field

from casflow.components.formats.penn.parse import Tree, escape_token, training_line
from casflow.components.models import is_shipped, model_path, where_looked
from casflow.components.stanza.model import ModelFiles, run_threads_field, stanza_missing
from casflow.components.stanza.pipeline import (
    DEFAULT_MAX_SENTENCE_WORDS,
    StanzaConfig,
    StanzaPipeline,
)
from casflow.pipeline.component import ComponentConfig, Processor, RunContext
from casflow.typesystem import POS, SENTENCE, TOKEN

#: The files of a model folder written by ``train.stanza.constituency.v1``.
MODEL_FILE = "model.pt"
PRETRAIN_FILE = "pretrain.pt"
META_FILE = "meta.json"
#: The label of every training tree's root (Stanza's trees have one root label).
ROOT = "ROOT"


def parser_word(text: str) -> str:
    """A token as casflow's constituency models see it: inner whitespace as no-break
    spaces (as ``stanza.pipeline.v1`` sends it), brackets as Penn escapes."""
    joined = "\u00a0".join(text.split()) or text
    return joined if joined == '"' else escape_token(joined)


def treebank_line(tree: Tree) -> str | None:
    """A gold tree as a training line: ``(ROOT ...)`` without empty elements, labels
    without function tags, words as :func:`parser_word`; None when nothing is left."""
    return training_line(tree, ROOT, parser_word)


def resolve_model(model: str, workflow_dir: Path | None) -> Path:
    """``casflow:NAME`` -> the shipped folder; otherwise a path (relative paths also from
    the workflow's folder)."""
    return model_path(model, workflow_dir)


def model_files(model: str, pretrain: str | None, workflow_dir: Path | None) -> ModelFiles:
    """The Stanza files ``model`` names (a casflow model folder, or a ``.pt`` file)."""
    path = resolve_model(model, workflow_dir)
    # pretrain: resolved as the model is (casflow:NAME/pretrain.pt names a shipped file)
    given = str(resolve_model(pretrain, workflow_dir)) if pretrain is not None else None
    if path.is_dir():
        pretrain_path = given or (
            str(path / PRETRAIN_FILE) if (path / PRETRAIN_FILE).exists() else None
        )
        return ModelFiles(model=str(path / MODEL_FILE), pretrain=pretrain_path)
    return ModelFiles(model=str(path), pretrain=given)


def model_meta(model: str, workflow_dir: Path | None) -> dict[str, Any]:
    """The folder's ``meta.json`` (settings the parser needs, e.g. ``ptb_brackets``)."""
    path = resolve_model(model, workflow_dir)
    try:
        return json.loads((path / META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


class ConstituencyConfig(ComponentConfig):
    model: str = Field(
        "casflow:craft_constituency",
        description="casflow:craft_constituency, a folder written by "
        "train.stanza.constituency.v1, or a Stanza constituency model file (.pt).",
    )
    pretrain: str | None = Field(
        None,
        description="The model's word vectors in Stanza's pretrain format (default: the "
        "folder's pretrain.pt).",
    )
    ptb_brackets: bool | None = Field(
        None,
        description="Send square and curly brackets as Penn escapes (-LSB-, -LCB-, ...), as "
        "a parser trained by Stanza from treebank files saw them; default: as the model "
        "folder's meta.json says (casflow's models: yes), else no.",
    )
    batch_size: int = Field(50, ge=1, description="Sentences per batch of the parser.")
    max_sentence_words: int = Field(
        DEFAULT_MAX_SENTENCE_WORDS,
        ge=1,
        description="A longer sentence is parsed in pieces of at most this many words, each "
        "with a tree of its own, with a warning (the parser's time grows faster than the "
        "length: 55 s for one sentence of 5,000 words).",
    )
    threads: int = run_threads_field()


class ConstituencyParser(Processor[ConstituencyConfig]):
    name = "parse.constituency.v1"
    description = (
        "Constituency trees (DKPro ROOT/TreebankConstituent, PennTree) from a Stanza parser "
        "over the view's sentences, tokens and POS tags (default: casflow:craft_constituency)."
    )

    def __init__(self, config: ConstituencyConfig, context: RunContext | None = None) -> None:
        super().__init__(config, context)
        self.pipeline = StanzaPipeline(_stanza_config(config, self.context), self.context)

    @classmethod
    def requirements(cls, config: ConstituencyConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
        produces = StanzaPipeline.requirements(_stanza_config(config, None))[1]
        return (SENTENCE, TOKEN, POS), produces

    @classmethod
    def check_config(cls, config: ConstituencyConfig, context: RunContext) -> list[str]:
        problem = stanza_missing()
        if problem:
            return [f"{cls.name}: {problem}"]
        path = resolve_model(config.model, context.workflow_dir)
        if path.is_dir():
            if not (path / MODEL_FILE).is_file():
                return [
                    f"{cls.name}: model folder {path} has no {MODEL_FILE} (train one with "
                    "train.stanza.constituency.v1, or give a Stanza .pt file)"
                ]
        elif not path.is_file():
            hint = (
                "reinstall casflow (the shipped model is package data)"
                if is_shipped(config.model)
                else "give a folder written by train.stanza.constituency.v1 or a .pt file"
            )
            return [
                f"{cls.name}: no model at {where_looked(config.model, context.workflow_dir)}: {hint}"
            ]
        # The wrapped pipeline's messages name its own keys; this step's are its own.
        theirs = f"{StanzaPipeline.name}: model_files.constituency.pretrain: "
        return [
            f"{cls.name}: pretrain: {p.removeprefix(theirs)}" if p.startswith(theirs) else p
            for p in StanzaPipeline.check_config(_stanza_config(config, context), context)
        ]

    def process(self, view: cassis.Cas) -> None:
        self.pipeline.process_batch([view])

    def process_batch(self, views: Sequence[cassis.Cas]) -> None:
        self.pipeline.process_batch(views)


def _stanza_config(config: ConstituencyConfig, context: RunContext | None) -> StanzaConfig:
    workflow_dir = context.workflow_dir if context is not None else None
    brackets = config.ptb_brackets
    if brackets is None:
        brackets = bool(model_meta(config.model, workflow_dir).get("ptb_brackets", False))
    return StanzaConfig(
        processors={"constituency": "default"},
        model_files={"constituency": model_files(config.model, config.pretrain, workflow_dir)},
        use_existing_sentences=True,
        use_existing_tokens=True,
        use_existing_pos=True,
        ptb_brackets=brackets,
        layers=["constituents"],
        batch_size=config.batch_size,
        max_sentence_words=config.max_sentence_words,
        threads=config.threads,
    )
