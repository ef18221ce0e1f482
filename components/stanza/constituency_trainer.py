"""``train.stanza.constituency.v1``: a Stanza constituency parser from gold treebank views.

casflow writes the gold trees of each view as Penn bracketings (:func:`treebank_line`:
no empty elements, no function tags, brackets escaped) and Stanza's own trainer
(``stanza.models.constituency.parser_training``) learns an in-order transition parser
from them, with casflow's word vectors as Stanza's pretrain (by default those of the
shipped ``casflow:craft_syntax`` model, learned from the CRAFT training text). The POS
tags of the gold trees are the parser's input tags; at run time ``parse.constituency.v1``
gives it the view's tags (e.g. casflow's tagger's).

Three things differ from running Stanza's command line, each for a reason:

- **Scoring.** Stanza scores the development trees after each epoch with CoreNLP's
  EVALB (Java, not installed here); casflow's PARSEVAL (COLLINS.prm, equal to EVALB)
  stands in, so the checkpoint kept is the best on the development articles by the
  figure casflow reports.
- **Resumable and deterministic.** Stanza saves a checkpoint (model, optimizer,
  scheduler, best score) after every epoch and continues from it when restarted, but
  its random streams (the shuffling of the training trees, dropout, the oracle's
  choices) run on from wherever the process was. Here each epoch reseeds them from
  (seed, epoch) and shuffles a fixed order, so a run stopped and restarted any number
  of times ends with the same model as one that never stopped; checkpoints are written
  to a temporary file and renamed, so a kill while saving leaves the previous one.
  More epochs continue a finished run; fewer than its checkpoint has start again.
- **One settings surface.** The settings are this config (checked before reading any
  document); ``stanza_options`` passes any other option of Stanza's trainer, checked
  against Stanza's own argument parser (its option strings: ``no_check_valid_states``,
  not the setting ``check_valid_states``). An option given there replaces casflow's
  default of the same setting (``multistage: true`` over casflow's one stage).

Scores (percentages): PARSEVAL bracket F over the development trees (``parseval_f``,
EVALB's corpus figure, and ``mean_sentence_f``, the CRAFT paper's figure), parsing the
gold words with their gold tags (the CRAFT paper's setting for parsers).
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import shutil
import time
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import cassis
from pydantic import Field

from casflow.components.evaluators.adapters import constituent_trees
from casflow.components.formats.penn.parse import Tree, parse_tree
from casflow.components.metrics.parseval import parseval_counts, score_parseval
from casflow.components.stanza.constituency import (
    META_FILE,
    MODEL_FILE,
    PRETRAIN_FILE,
    treebank_line,
)
from casflow.components.stanza.model import (
    as_read_from_treebank,
    stanza_missing,
    torch_threads,
)
from casflow.components.stanza.shared_training import (
    OptionValue,
    build_pretrain,
    command_line,
    library_versions,
    option_problems,
    options_field,
    read_key,
    threads_field,
    vectors_field,
    vectors_problems,
    with_defaults,
)
from casflow.pipeline.component import ComponentConfig, RunContext, Trainer, TrainingContext
from casflow.pipeline.counts import Counts, add_counts
from casflow.pipeline.files import save_atomically
from casflow.pipeline.fingerprints import fingerprint, forget, mark_done, step_status
from casflow.typesystem import CONSTITUENT, POS, TOKEN

#: The "retag package" of casflow's models: the gold trees' tags, not retagged.
GOLD_TAGS = "casflow_gold_tags"
#: Stanza's trainer options casflow sets itself (the rest may go in stanza_options).
_OWN_OPTIONS = frozenset(
    {
        "train_file",
        "eval_file",
        "save_dir",
        "save_name",
        "checkpoint_save_name",
        "wordvec_pretrain_file",
        "seed",
        "epochs",
        "hidden_size",
        "train_batch_size",
        "mode",
        "shorthand",
        "lang",
    }
)


@dataclass
class TreebankExample:
    """One gold document's trees as training lines (picklable)."""

    doc_id: str
    lines: list[str] = field(default_factory=list)


class StanzaConstituencyTrainerConfig(ComponentConfig):
    vectors: str = vectors_field()
    epochs: int = Field(30, ge=1, description="Passes over the training trees.")
    hidden_size: int = Field(
        512, ge=16, description="Size of the parser's output layers (Stanza's hidden_size)."
    )
    batch_size: int = Field(30, ge=1, description="Trees per optimizer step.")
    threads: int = threads_field()
    stanza_options: dict[str, OptionValue] = options_field(
        "Stanza's constituency trainer", "stanza.models.constituency_parser"
    )


class StanzaConstituencyTrainer(Trainer[StanzaConstituencyTrainerConfig]):
    name = "train.stanza.constituency.v1"
    description = (
        "Stanza's constituency parser (in-order transitions, LSTMs) trained from gold "
        "treebank views with casflow's vectors; resumable; scored with casflow's PARSEVAL."
    )
    libraries = ("stanza", "torch")
    layers: ClassVar[dict[str, tuple[str, ...]]] = {
        "constituents": (TOKEN, POS, CONSTITUENT),
    }

    def __init__(self, config: StanzaConstituencyTrainerConfig, context: TrainingContext) -> None:
        super().__init__(config, context)
        self.seed = context.seed

    @classmethod
    def check_config(
        cls, config: StanzaConstituencyTrainerConfig, context: RunContext
    ) -> list[str]:
        problem = stanza_missing()
        if problem:
            return [f"{cls.name}: {problem}"]
        from stanza.models import constituency_parser

        problems = option_problems(
            config.stanza_options,
            constituency_parser.build_argparse(),
            _OWN_OPTIONS,
            trainer="Stanza's constituency parser",
        )
        problems += vectors_problems(config.vectors, context.workflow_dir)
        return [f"{cls.name}: {p}" for p in problems]

    def example(self, view: cassis.Cas, doc_id: str) -> TreebankExample:
        lines = [
            line
            for _, tree in constituent_trees(view, require_tags=True)
            if (line := treebank_line(tree))
        ]
        if not lines:
            raise ValueError(f"document {doc_id}: the gold view has no constituent trees")
        return TreebankExample(doc_id, lines)

    # -- training ------------------------------------------------------------------------

    def train(
        self,
        train: Sequence[TreebankExample],
        dev: Sequence[TreebankExample],
        output_dir: Path,
        log: Callable[[str], None],
    ) -> Path:
        output_dir = Path(output_dir)
        data = output_dir / "data"
        data.mkdir(parents=True, exist_ok=True)
        train_file = data / "train.mrg"
        dev_file = data / "dev.mrg"
        train_file.write_text(_lines(train), encoding="utf-8")
        # Without development documents Stanza still needs trees to score: the last
        # training document's (the checkpoint kept is then simply the best on those).
        dev_file.write_text(_lines(dev) if dev else _lines(train[-1:]), encoding="utf-8")
        pretrain = build_pretrain(self.config.vectors, self.context.workflow_dir, data, log)
        args = self._arguments(train_file, dev_file, pretrain, output_dir / "checkpoints")
        model = output_dir / "model"
        marker = output_dir / "done.json"
        key = fingerprint(
            self.config.model_dump(mode="json"),
            args,
            self.seed,
            library_versions(),
            files=[train_file, dev_file, pretrain],
        )
        if step_status(marker, key, *_model_files(model)) == "done":
            log(f"Stanza constituency model already trained with these settings ({model}); reused")
            return model
        forget(marker)
        checkpoints = output_dir / "checkpoints"
        progress = checkpoints / "settings.json"
        # The checkpoint stays valid when only the number of epochs changes: nothing in
        # an epoch depends on how many follow (one stage, seeds from the epoch number),
        # so a finished run can be continued for more epochs.
        resumable = fingerprint(
            self.config.model_dump(mode="json", exclude={"epochs"}),
            [a for a in args if not a.startswith("--epochs=")],
            self.seed,
            library_versions(),
            files=[train_file, dev_file, pretrain],
        )
        if checkpoints.exists() and read_key(progress) != resumable:
            log("the settings or data changed since the last checkpoint: training from scratch")
            shutil.rmtree(checkpoints)
        elif _epochs_trained(checkpoints / "checkpoint.pt") > self.config.epochs:
            # Fewer epochs than the checkpoint has must give the model a fresh run of that
            # many gives (best.pt may be a later epoch's): start again.
            log(
                f"the checkpoint in {checkpoints} is after more than {self.config.epochs} "
                "epochs: training from scratch"
            )
            shutil.rmtree(checkpoints)
        checkpoints.mkdir(parents=True, exist_ok=True)
        mark_done(progress, resumable)
        if (checkpoints / "checkpoint.pt").exists():
            log("continuing from the checkpoint in " + str(checkpoints))
        log(
            f"Stanza constituency parser: {sum(len(e.lines) for e in train)} training trees, "
            f"{sum(len(e.lines) for e in dev)} development trees, {self.config.epochs} epochs"
        )
        with _stanza_training(self.seed, self.config.threads, log):
            from stanza.models import constituency_parser

            constituency_parser.main(args)
        best = checkpoints / "best.pt"
        if not best.is_file():
            raise RuntimeError(f"Stanza's trainer finished without a model at {best}")
        if model.exists():
            shutil.rmtree(model)
        model.mkdir(parents=True)
        shutil.copyfile(best, model / MODEL_FILE)
        shutil.copyfile(pretrain, model / PRETRAIN_FILE)
        meta = {
            "ptb_brackets": True,
            "trainer": self.name,
            "epochs": self.config.epochs,  # trained; the model is that of kept_epoch
            "kept_epoch": _epochs_trained(best),  # the best on the development trees
        }
        (model / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        mark_done(marker, key, outputs=_model_files(model))
        size = (model / MODEL_FILE).stat().st_size + (model / PRETRAIN_FILE).stat().st_size
        log(f"Stanza constituency model: {model} ({size / 1e6:.1f} MB)")
        return model

    def _arguments(
        self, train_file: Path, dev_file: Path, pretrain: Path, checkpoints: Path
    ) -> list[str]:
        from stanza.models import constituency_parser

        config = self.config
        defaults: dict[str, OptionValue] = {
            # CPU-sized defaults: no transformer, no attention layers, one stage.
            "no_multistage": True,
            "pattn_num_layers": 0,
            "lattn_d_proj": 0,
            # The trees' own (gold) tags are the input tags, and they are Penn XPOS: a
            # retag package name (no retagging is done, see _stanza_training) is what
            # makes a Stanza model read XPOS at run time, which it would not for English.
            "retag_package": GOLD_TAGS,
            "retag_method": "xpos",
            # Categories seen only in development trees (CRAFT dev has INTJ) are allowed.
            "no_check_valid_states": True,
        }
        options = with_defaults(
            defaults, config.stanza_options, constituency_parser.build_argparse()
        )
        args = [
            "--mode=train",
            "--shorthand=en_casflow",
            f"--train_file={train_file}",
            f"--eval_file={dev_file}",
            f"--wordvec_pretrain_file={pretrain}",
            f"--save_dir={checkpoints}",
            f"--save_name={checkpoints / 'best.pt'}",
            f"--checkpoint_save_name={checkpoints / 'checkpoint.pt'}",
            f"--seed={self.seed}",
            f"--epochs={config.epochs}",
            f"--hidden_size={config.hidden_size}",
            f"--train_batch_size={config.batch_size}",
        ]
        return args + command_line(options)

    # -- scoring -------------------------------------------------------------------------

    def evaluate(self, model_dir: Path, examples: Sequence[TreebankExample]) -> dict[str, float]:
        from casflow.components.stanza.model import ModelFiles, build_pipeline

        model_dir = Path(model_dir)
        nlp = build_pipeline(
            "en",
            {"constituency": "default"},
            None,
            {
                "constituency": ModelFiles(
                    model=str(model_dir / MODEL_FILE), pretrain=str(model_dir / PRETRAIN_FILE)
                )
            },
            model_dir,
            {"pretagged": True, "constituency_batch_size": 50},
            pretokenized=True,
        )
        gold = [parse_tree(line) for e in examples for line in e.lines]
        counts: Counts = {}
        for tree, predicted in zip(gold, parse_tagged(nlp, gold), strict=True):
            add_counts(counts, parseval_counts(_unrooted(tree), _unrooted(predicted)))
        scores = score_parseval(counts)
        return {
            "parseval_f": round(100 * float(scores["f1"]), 2),
            "mean_sentence_f": round(100 * float(scores.get("mean_sentence_f1", 0.0)), 2),
        }

    def describe(self) -> str:
        return (
            "Stanza's constituency parser (in-order transition system, LSTM word and "
            "constituent encoders, no transformer, no attention layers), trained by "
            "Stanza's trainer from the gold trees (no empty elements, no function tags), "
            "the gold POS as input tags, casflow's word vectors as pretrain; the best "
            "epoch on the development trees is kept (casflow's PARSEVAL, COLLINS.prm). "
            "Scores parse the gold words with their gold tags."
        )


def parse_tagged(nlp: Any, trees: Sequence[Tree]) -> list[Tree]:
    """Parse the words and tags of ``trees`` (Penn words, already escaped) with a
    pretagged, pretokenized Stanza pipeline; the parses as casflow trees."""
    from stanza.models.common.doc import ID, TEXT, XPOS, Document

    from casflow.components.stanza.pipeline import penn_tree

    documents = []
    for tree in trees:
        sentence = [
            {ID: (i,), TEXT: as_read_from_treebank(leaf.word or ""), XPOS: leaf.label}
            for i, leaf in enumerate(tree.preterminals(), 1)
        ]
        documents.append(Document([sentence], text=" ".join(str(w[TEXT]) for w in sentence)))
    parsed = nlp.bulk_process(documents)
    return [penn_tree(document.sentences[0].constituency) for document in parsed]


def _model_files(model: Path) -> list[Path]:
    """The files of a model folder its marker records (not the model card, written
    after it)."""
    return [model / MODEL_FILE, model / PRETRAIN_FILE, model / META_FILE]


def _unrooted(tree: Tree) -> Tree:
    """The tree as EVALB reads CRAFT's files: the root as the unlabelled outer bracket."""
    return Tree("", list(tree.children)) if tree.label in ("ROOT", "TOP") else tree


def _lines(examples: Sequence[TreebankExample]) -> str:
    return "".join(line + "\n" for e in examples for line in e.lines)


# -- running Stanza's trainer resumably and deterministically -------------------------


def _epochs_trained(checkpoint: Path) -> int:
    """The epochs Stanza's checkpoint holds (0 without one)."""
    if not checkpoint.is_file():
        return 0
    import torch

    state = torch.load(checkpoint, map_location="cpu", weights_only=False)
    return int(state["epochs_trained"])


class _Evaluator:
    """Stands in for Stanza's CoreNLP EVALB: casflow's PARSEVAL on the dev trees."""

    def __enter__(self) -> _Evaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def process(self, results: Sequence[Any]) -> Any:
        counts: Counts = {}
        for result in results:
            gold = parse_tree(f"{result.gold}")
            test = parse_tree(f"{result.predictions[0].tree}")
            add_counts(counts, parseval_counts(_unrooted(gold), _unrooted(test)))
        f1 = float(score_parseval(counts)["f1"])
        return types.SimpleNamespace(f1=f1, treeF1=0.0, HasField=lambda name: False)


@contextlib.contextmanager
def _stanza_training(seed: int, threads: int, log: Callable[[str], None]) -> Iterator[None]:
    import torch
    from stanza.models.constituency import base_trainer, parser_training, retagging

    epoch: dict[str, Any] = {"n": 0}
    original_update = parser_training.update_bert_learning_rate
    original_next = parser_training.next_epoch_data
    original_evaluator = parser_training.EvaluateParser
    original_save = base_trainer.BaseTrainer.save
    original_retag = retagging.build_retag_pipeline

    def update(args: Any, optimizer: Any, epochs_trained: int) -> Any:
        # Called at the start of every epoch with its number: reseed every stream.
        epoch["n"] = epochs_trained
        random.seed(f"{seed}:{epochs_trained}")
        torch.manual_seed(seed * 100_003 + epochs_trained)
        epoch["start"] = time.monotonic()
        return original_update(args, optimizer, epochs_trained)

    def next_epoch(leftover: Any, train_data: list[Any], epoch_size: int) -> Any:
        # A permutation of the fixed order (Stanza shuffles its list in place, so its
        # order would depend on every earlier epoch of this process).
        if not train_data:
            return [], []
        order = list(train_data)
        random.Random(f"{seed}:{epoch['n']}:order").shuffle(order)
        return [], order[:epoch_size]

    def retag_pipeline(args: Any) -> Any:
        if args.get("retag_package") == GOLD_TAGS:
            return None  # train on the trees' own tags (Stanza would download a tagger)
        return original_retag(args)

    def evaluator(kbest: Any = None) -> _Evaluator:
        return _Evaluator()

    def save(self: Any, filename: str, save_optimizer: bool = True) -> None:
        save_atomically(lambda path: original_save(self, path, save_optimizer), filename)

    handler = _ProgressHandler(log, epoch)
    trainer_log = logging.getLogger("stanza.constituency.trainer")
    stanza_log = logging.getLogger("stanza")
    # Stanza logs every transition count to the console: one line per epoch goes to
    # casflow's log instead, Stanza's own warnings still show.
    saved_levels = (trainer_log.level, trainer_log.propagate, stanza_log.level)
    trainer_log.setLevel(logging.INFO)
    trainer_log.propagate = False
    stanza_log.setLevel(logging.WARNING)
    parser_training.update_bert_learning_rate = update
    parser_training.next_epoch_data = next_epoch
    parser_training.EvaluateParser = evaluator
    base_trainer.BaseTrainer.save = save
    retagging.build_retag_pipeline = retag_pipeline
    trainer_log.addHandler(handler)
    try:
        with torch_threads(threads):
            yield
    finally:
        parser_training.update_bert_learning_rate = original_update
        parser_training.next_epoch_data = original_next
        parser_training.EvaluateParser = original_evaluator
        base_trainer.BaseTrainer.save = original_save
        retagging.build_retag_pipeline = original_retag
        trainer_log.removeHandler(handler)
        trainer_log.setLevel(saved_levels[0])
        trainer_log.propagate = saved_levels[1]
        stanza_log.setLevel(saved_levels[2])


class _ProgressHandler(logging.Handler):
    """One line per epoch in casflow's training log (Stanza logs much more)."""

    def __init__(self, log: Callable[[str], None], epoch: dict[str, Any]) -> None:
        super().__init__(logging.INFO)
        self.log = log
        self.epoch = epoch

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("Epoch ") and "finished" in message:
            lines = [line.strip() for line in message.splitlines()]
            dev = [line for line in lines if line.startswith(("Dev score", "Best dev score"))]
            seconds = time.monotonic() - self.epoch.get("start", time.monotonic())
            self.log(f"{lines[0]} in {seconds:.0f} s; " + "; ".join(dev))
        elif message.startswith("Found checkpoint"):
            self.log(message)
