"""``train.stanza.syntax.v1``: Stanza's POS tagger and dependency parser from gold views.

Each gold view is written as CoNLL-U by casflow's own CoNLL-U code (what
``conllu.writer.v1`` writes: FORM, UPOS, XPOS, HEAD, DEPREL; inner whitespace of a
token as no-break spaces, as ``stanza.pipeline.v1`` sends it), casflow's word vectors
become Stanza's pretrain (by default those of the shipped ``casflow:craft_syntax``
model), and Stanza's own models learn from it in-process: first the tagger
(``stanza.models.pos``: BiLSTM over words and characters, biaffine UPOS/XPOS
classifiers), then the graph parser (``stanza.models.depparse``: BiLSTM, biaffine
arcs and labels). By default the parser learns from the tags the trained tagger
predicts (Stanza's own recipe: it meets predicted tags at run time).

With ``layers: [dependencies]`` and ``parser_tags: gold`` no tagger is trained: the
parser alone learns from the gold tags, for text another tagger tags
(``stanza.pipeline.v1`` with ``use_existing_pos``, e.g. after the shipped spaCy
tagger). Its scores are then on the gold tags of the development documents, above
what it reaches with a tagger's tags; a workflow that tags first measures those.

The epochs are casflow's, over Stanza's trainers, data loaders and models, for
reasons in Stanza's own loops (``stanza.models.tagger.train`` has no checkpoint at
all; ``stanza.models.parser.train`` saves one but resumes with its data order and
random streams started afresh and its second-optimizer stage forgotten):

- **Deterministic and resumable.** Every epoch reseeds Python's and PyTorch's
  random streams from (seed, stage, epoch) and reshuffles from them; after each epoch
  the model, optimizer and scheduler states and the dev curve are saved (written to a
  temporary file and renamed, so a kill while saving keeps the previous checkpoint).
  Stopped and started again, training continues after the last finished epoch and
  ends with the weights of a run that never stopped. More epochs can be asked for
  later: the checkpoint stays valid (fewer than it has start training again, so the
  model is a fresh run's).
- **Selection by casflow's evaluators.** After each epoch the development sentences
  are tagged (parsed) and scored with casflow's metrics: XPOS accuracy (``pos_counts``,
  as ``eval.pos.v1``), UAS and LAS (``dependency_counts`` with full labels and
  punctuation included, as ``eval.dependencies.v1`` in ``craft-eval.yaml``); the
  best epoch (XPOS for the tagger, LAS for the parser) is kept.

The model folder holds ``tagger.pt``, ``parser.pt`` (Stanza's own model files),
``pretrain.pt`` and ``meta.json``; ``stanza.pipeline.v1`` loads it with
``processors: {pos: default, lemma: identity, depparse: default}``, ``model_files:
{pos: {model: F/tagger.pt, pretrain: F/pretrain.pt}, depparse: {model: F/parser.pt,
pretrain: F/pretrain.pt}}``, ``layers: [pos, dependencies]`` and
``use_existing_sentences`` / ``use_existing_tokens`` (Stanza's parser requires a
lemmatizer: the model-free identity one, whose lemma, the word, is what the parser
learnt from). The trainer's scores run that pipeline over the gold
sentences and tokens of the development documents (tags predicted by the tagger).
"""

from __future__ import annotations

import contextlib
import functools
import json
import shutil
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import cassis
from pydantic import Field

from casflow.components.formats.conllu.parse import format_conllu
from casflow.components.formats.conllu.writer import view_sentences
from casflow.components.metrics.dependency import (
    dependency_counts,
    full_deprel,
    score_dependencies,
    sentence_from_heads,
)
from casflow.components.metrics.pos import TaggedToken, pos_counts, score_pos
from casflow.components.spacy.evaluate_syntax import gold_dependencies
from casflow.components.spacy.gold import GoldSyntaxDocument
from casflow.components.spacy.gold_cas import gold_syntax_from_view
from casflow.components.stanza.constituency import META_FILE, PRETRAIN_FILE
from casflow.components.stanza.model import (
    ModelFiles,
    StanzaProcessor,
    stanza_missing,
    torch_threads,
)
from casflow.components.stanza.shared_training import (
    OptionValue,
    StanzaOptions,
    build_pretrain,
    command_line,
    library_versions,
    option_problems,
    options_field,
    read_key,
    seed_streams,
    threads_field,
    vectors_field,
    vectors_problems,
)
from casflow.pipeline.component import ComponentConfig, RunContext, Trainer, TrainingContext
from casflow.pipeline.counts import Counts, add_counts
from casflow.pipeline.files import save_atomically
from casflow.pipeline.fingerprints import fingerprint, forget, mark_done, step_status
from casflow.typesystem import DEPENDENCY, POS, SENTENCE, TOKEN

TAGGER_FILE = "tagger.pt"
PARSER_FILE = "parser.pt"
#: Stanza options casflow sets itself (the rest may go in tagger_options/parser_options).
_OWN_OPTIONS = frozenset(
    {
        "mode",
        "lang",
        "shorthand",
        "train_file",
        "eval_file",
        "output_file",
        "wordvec_pretrain_file",
        "wordvec_file",
        "save_dir",
        "save_name",
        "checkpoint_save_name",
        "seed",
        "device",
        "cpu",
        "cuda",
        "max_steps",
        "eval_interval",
    }
)


def parser_form(text: str) -> str:
    """A token as casflow's Stanza models see it: inner whitespace as no-break spaces."""
    return "\u00a0".join(text.split()) or text


@dataclass
class SyntaxExample:
    """One gold document: its syntax for scoring, its CoNLL-U for Stanza (picklable)."""

    gold: GoldSyntaxDocument
    conllu: str


class StanzaSyntaxTrainerConfig(ComponentConfig):
    vectors: str = vectors_field()
    tagger_epochs: int = Field(
        20, ge=1, description="Passes of the tagger over the training sentences."
    )
    parser_epochs: int = Field(
        20, ge=1, description="Passes of the parser over the training sentences."
    )
    parser_tags: Literal["predicted", "gold"] = Field(
        "predicted",
        description="Tags the parser learns from: predicted (the trained tagger's, as at run "
        "time; Stanza's recipe) or gold.",
    )
    threads: int = threads_field()
    tagger_options: dict[str, OptionValue] = options_field(
        "Stanza's tagger", "stanza.models.tagger", "hidden_dim, batch_size, lr"
    )
    parser_options: dict[str, OptionValue] = options_field(
        "Stanza's parser", "stanza.models.parser", "hidden_dim, batch_size (tokens), optim, lr"
    )


class StanzaSyntaxTrainer(Trainer[StanzaSyntaxTrainerConfig]):
    name = "train.stanza.syntax.v1"
    description = (
        "Stanza's POS tagger (UPOS, XPOS) and graph dependency parser trained from gold "
        "views written as CoNLL-U, casflow's vectors as pretrain; deterministic, resumable "
        "per epoch; epochs selected with casflow's XPOS accuracy and LAS."
    )
    libraries = ("stanza", "torch")
    layers: ClassVar[dict[str, tuple[str, ...]]] = {
        "pos": (SENTENCE, TOKEN, POS),
        "dependencies": (SENTENCE, TOKEN, DEPENDENCY),
    }

    def __init__(self, config: StanzaSyntaxTrainerConfig, context: TrainingContext) -> None:
        super().__init__(config, context)
        self.seed = context.seed
        self.chosen = tuple(context.layers or self.layers)
        self.curve: list[dict[str, Any]] = []

    @classmethod
    def check_layers(cls, config: StanzaSyntaxTrainerConfig, layers: Sequence[str]) -> list[str]:
        if "pos" in layers or (config.parser_tags == "gold" and "dependencies" in layers):
            return []
        return [
            "Stanza's parser reads the tagger's tags: learn pos too, or set parser_tags: gold "
            "for a parser alone, of text another tagger tags (stanza.pipeline.v1 with "
            "use_existing_pos)"
        ]

    @classmethod
    def check_config(cls, config: StanzaSyntaxTrainerConfig, context: RunContext) -> list[str]:
        problem = stanza_missing()
        if problem:
            return [f"{cls.name}: {problem}"]
        from stanza.models import parser, tagger

        problems = option_problems(
            config.tagger_options,
            tagger.build_argparse(),
            _OWN_OPTIONS,
            "tagger_options",
            "Stanza's tagger",
        )
        problems += option_problems(
            config.parser_options,
            parser.build_argparse(),
            _OWN_OPTIONS,
            "parser_options",
            "Stanza's parser",
        )
        problems += vectors_problems(config.vectors, context.workflow_dir)
        return [f"{cls.name}: {p}" for p in problems]

    def example(self, view: cassis.Cas, doc_id: str) -> SyntaxExample:
        parse = "dependencies" in self.chosen
        gold = gold_syntax_from_view(view, doc_id, pos=True, dependencies=parse)
        sentences = view_sentences(view, doc_id)
        words = [w for s in sentences for w in s.words]
        if len(words) != len(gold.tokens):
            raise ValueError(
                f"document {doc_id}: {len(gold.tokens)} tokens but {len(words)} in sentences; "
                "every token of the gold view must lie inside a Sentence"
            )
        for word in words:
            word.form = parser_form(word.form)
            # Stanza's parser reads lemmas; the lemma is the word itself, which is what
            # Stanza's model-free identity lemmatizer gives it at run time.
            word.lemma = word.form
            word.feats = word.deps = word.misc = "_"
            if not parse:
                word.head, word.deprel = "_", "_"
        return SyntaxExample(gold, format_conllu(sentences))

    # -- training ------------------------------------------------------------------------

    def train(
        self,
        train: Sequence[SyntaxExample],
        dev: Sequence[SyntaxExample],
        output_dir: Path,
        log: Callable[[str], None],
    ) -> Path:
        output_dir = Path(output_dir)
        data = output_dir / "data"
        data.mkdir(parents=True, exist_ok=True)
        # Without development documents the last training document stands in (the
        # epoch kept is then simply the best on it).
        dev = list(dev) or list(train[-1:])
        train_file, dev_file = data / "train.conllu", data / "dev.conllu"
        _write_if_changed(train_file, "".join(e.conllu for e in train))
        _write_if_changed(dev_file, "".join(e.conllu for e in dev))
        pretrain = build_pretrain(self.config.vectors, self.context.workflow_dir, data, log)
        model = output_dir / "model"
        marker = output_dir / "done.json"
        key = fingerprint(
            self.config.model_dump(mode="json"),
            list(self.chosen),
            self.seed,
            library_versions(),
            files=[train_file, dev_file, pretrain],
        )
        self.curve_file = output_dir / "curve.json"
        if step_status(marker, key, model / META_FILE) == "done":
            self.curve = _read_curve(self.curve_file)
            log(f"Stanza syntax model already trained with these settings ({model}); reused")
            return model
        forget(marker)
        parse = "dependencies" in self.chosen
        tag = "pos" in self.chosen
        log(
            f"Stanza syntax: {sum(len(e.gold.sentences) for e in train)} training sentences, "
            f"{sum(len(e.gold.sentences) for e in dev)} development sentences; "
            + (f"tagger {self.config.tagger_epochs} epochs" if tag else "no tagger")
            + (f", parser {self.config.parser_epochs} epochs" if parse else "")
        )
        with torch_threads(self.config.threads):
            tagger_model = None
            curve: list[dict[str, Any]] = []
            if tag:
                tagger = _Stage(
                    "tagger", self.config.tagger_epochs, self.seed, output_dir / "tagger", log
                )
                tagger_model = tagger.run(
                    _TaggerRun(self._args("tagger", train_file, dev_file, pretrain), dev),
                    key=[self.config.model_dump(mode="json", include={"tagger_options"})],
                    files=[train_file, dev_file, pretrain],
                )
                curve += tagger.curve
            parser_model = None
            if parse:
                parser_train, parser_dev = train_file, dev_file
                if self.config.parser_tags == "predicted":
                    # check_layers lets a run without a tagger learn from gold tags only
                    assert tagger_model is not None
                    parser_train = data / "train.tagged.conllu"
                    parser_dev = data / "dev.tagged.conllu"
                    _retag(
                        tagger_model,
                        pretrain,
                        [(train_file, parser_train), (dev_file, parser_dev)],
                        log,
                    )
                parser = _Stage(
                    "parser", self.config.parser_epochs, self.seed, output_dir / "parser", log
                )
                parser_model = parser.run(
                    _ParserRun(
                        self._args("parser", parser_train, parser_dev, pretrain),
                        dev,
                        gold_tags=self.config.parser_tags == "gold",
                    ),
                    key=[
                        self.config.model_dump(
                            mode="json", include={"parser_options", "parser_tags"}
                        )
                    ],
                    files=[parser_train, parser_dev, pretrain],
                )
                curve += parser.curve
        if model.exists():
            shutil.rmtree(model)
        model.mkdir(parents=True)
        if tagger_model is not None:
            shutil.copyfile(tagger_model, model / TAGGER_FILE)
        if parser_model is not None:
            shutil.copyfile(parser_model, model / PARSER_FILE)
        shutil.copyfile(pretrain, model / PRETRAIN_FILE)
        meta = {
            "trainer": self.name,
            "processors": {
                **({"pos": TAGGER_FILE} if tag else {}),
                **({"depparse": PARSER_FILE} if parse else {}),
            },
            "pretrain": PRETRAIN_FILE,
            "parser_tags": self.config.parser_tags,
        }
        (model / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        self.curve = curve
        self.curve_file.write_text(json.dumps(curve, indent=2) + "\n", encoding="utf-8")
        mark_done(marker, key)
        size = sum(p.stat().st_size for p in model.iterdir())
        log(f"Stanza syntax model: {model} ({size / 1e6:.1f} MB)")
        return model

    def _args(self, stage: str, train_file: Path, dev_file: Path, pretrain: Path) -> list[str]:
        options: StanzaOptions
        options = self.config.tagger_options if stage == "tagger" else self.config.parser_options
        return [
            "--mode=train",
            "--lang=en",
            "--shorthand=en_casflow",
            f"--train_file={train_file}",
            f"--eval_file={dev_file}",
            f"--wordvec_pretrain_file={pretrain}",
            f"--seed={self.seed}",
            "--cpu",
            *command_line(options),
        ]

    # -- scoring -------------------------------------------------------------------------

    def evaluate(self, model_dir: Path, examples: Sequence[SyntaxExample]) -> dict[str, float]:
        from stanza.models.common.doc import ID, TEXT, UPOS, XPOS, Document

        nlp = load_pipeline(Path(model_dir))
        # a parser without a tagger parses the gold tags (pretagged), as it learned
        pretagged = "pos" not in nlp.processors
        counts: Counts = {}
        for example in examples:
            gold = example.gold
            documents = []
            for first, end in gold.sentence_token_ranges():
                words = [parser_form(gold.text[b:e]) for b, e in gold.tokens[first:end]]
                sentence: list[dict[str, Any]] = [
                    {ID: (i,), TEXT: w} for i, w in enumerate(words, 1)
                ]
                if pretagged:
                    for entry, k in zip(sentence, range(first, end), strict=True):
                        entry[XPOS] = gold.tags[k]
                        if gold.pos:
                            entry[UPOS] = gold.pos[k]
                documents.append(Document([sentence], text=" ".join(words)))
            analysed = [d.sentences[0] for d in nlp.bulk_process(documents)]
            xpos = [w.xpos or "" for s in analysed for w in s.words]
            heads = [[w.head for w in s.words] for s in analysed]
            deprels = [[w.deprel or "" for w in s.words] for s in analysed]
            parsed = "depparse" in nlp.processors
            add_counts(
                counts,
                _scores_counts(gold, xpos, heads if parsed else None, deprels if parsed else None),
            )
        scores = _percentages(counts)
        if pretagged:
            scores.pop("xpos", None)
        return scores

    def describe(self) -> str:
        if "pos" in self.chosen:
            text = (
                "Stanza's POS tagger (BiLSTM over words and characters, biaffine UPOS and XPOS "
                "classifiers) and graph dependency parser (BiLSTM, biaffine arcs and labels), "
                "trained by casflow's epochs over Stanza's trainers from the gold views written "
                "as CoNLL-U, casflow's word vectors as pretrain; the parser "
                f"learns from {self.config.parser_tags} tags. The epoch kept for each is the "
                "best on the development documents by casflow's XPOS accuracy (tagger) and LAS "
                "(parser). Scores tag and parse the gold sentences and tokens of the "
                "development documents (stanza.pipeline.v1 with use_existing_tokens): XPOS "
                "accuracy, UAS and LAS (full labels, punctuation included), as eval.pos.v1 and "
                "eval.dependencies.v1."
            )
        else:
            text = (
                "Stanza's graph dependency parser (BiLSTM, biaffine arcs and labels) alone, "
                "without a tagger, trained by casflow's epochs over Stanza's trainer from the "
                "gold views written as CoNLL-U (gold tags), casflow's word vectors as "
                "pretrain; it parses text another tagger tags (stanza.pipeline.v1 with "
                "use_existing_pos). The epoch kept is the best on the development documents "
                "by LAS. Scores parse the gold sentences, tokens and tags of the development "
                "documents: UAS and LAS (full labels, punctuation included), as "
                "eval.dependencies.v1; with a tagger's tags it scores lower."
            )
        if not self.curve:
            return text
        lines = [text, "", "Development curve (casflow's scores after each epoch):", ""]
        lines += [
            "| stage | epoch | xpos | uas | las | seconds |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for point in self.curve:
            cells = [
                f"{point[k]:.2f}" if isinstance(point.get(k), float) else "-"
                for k in ("xpos", "uas", "las")
            ]
            lines.append(
                f"| {point['stage']} | {point['epoch']} | "
                + " | ".join(cells)
                + f" | {point.get('seconds', 0):.0f} |"
            )
        return "\n".join(lines)


def model_files(folder: Path) -> dict[StanzaProcessor, ModelFiles]:
    """The ``model_files`` of ``stanza.pipeline.v1`` for a folder this trainer wrote."""
    meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
    pretrain = str(folder / meta.get("pretrain", PRETRAIN_FILE))
    return {
        name: ModelFiles(model=str(folder / file), pretrain=pretrain)
        for name, file in meta["processors"].items()
    }


def load_pipeline(folder: Path) -> Any:
    """A pretokenized Stanza pipeline (pos, depparse; or depparse alone, pretagged) over a
    model folder."""
    from casflow.components.stanza.model import build_pipeline

    files = model_files(folder)
    processors: dict[StanzaProcessor, str] = dict.fromkeys(files, "default")
    if "depparse" in files:
        processors["lemma"] = "identity"
    options: dict[str, Any] = {"pos_batch_size": 1000, "depparse_batch_size": 1000}
    if "pos" not in files:
        options["pretagged"] = True  # a parser alone reads the tags it is given
    return build_pipeline("en", processors, None, files, folder, options, pretokenized=True)


# -- scores -------------------------------------------------------------------------------


def _scores_counts(
    gold: GoldSyntaxDocument,
    xpos: Sequence[str],
    heads: Sequence[Sequence[int | None]] | None,
    deprels: Sequence[Sequence[str]] | None,
) -> Counts:
    """casflow's counts for one document's predictions over its gold tokens, in order:
    tags for every token; heads (1-based in the sentence, 0 the root) and labels per
    sentence."""
    if len(xpos) != len(gold.tokens):
        raise ValueError(
            f"document {gold.doc_id}: {len(xpos)} predicted tags for {len(gold.tokens)} tokens"
        )
    counts: Counts = {}
    add_counts(
        counts,
        pos_counts(
            [TaggedToken(b, e, t) for (b, e), t in zip(gold.tokens, gold.tags, strict=True)],
            [TaggedToken(b, e, t) for (b, e), t in zip(gold.tokens, xpos, strict=True)],
        ).counts,
    )
    if heads is not None and deprels is not None:
        system = []
        ranges = gold.sentence_token_ranges()
        for (first, end), sentence_heads, labels in zip(ranges, heads, deprels, strict=True):
            system.append(
                sentence_from_heads(
                    gold.tokens[first:end],
                    [h or 0 for h in sentence_heads],
                    list(labels),
                    xpos=list(xpos[first:end]),
                )
            )
        add_counts(
            counts,
            dependency_counts(gold_dependencies(gold), system, label_key=full_deprel).counts,
        )
    return counts


def _percentages(counts: Counts) -> dict[str, float]:
    scores: dict[str, float] = {}
    if "pos/aligned" in counts:
        scores["xpos"] = float(score_pos(counts)["accuracy"])
    if "uas/gold" in counts:
        dependencies = score_dependencies(counts)
        scores["uas"] = float(dependencies["uas"]["f1"])
        scores["las"] = float(dependencies["las"]["f1"])
    return {k: round(100 * v, 2) for k, v in scores.items()}


# -- the epochs ---------------------------------------------------------------------------


class _Run(ABC):
    """One Stanza model's training: built from Stanza's argument list, trained one
    epoch at a time, scored on the development documents."""

    #: The score that selects the epoch kept.
    selects: ClassVar[str]

    def __init__(self, argv: list[str], dev: Sequence[SyntaxExample]) -> None:
        self.argv = argv
        self.dev = dev

    @abstractmethod
    def setup(self) -> None:
        """Data, vocabularies and a fresh model (the same for the same seed)."""

    @abstractmethod
    def state(self) -> dict[str, Any]:
        """Model, optimizer and scheduler states."""

    @abstractmethod
    def load_state(self, state: dict[str, Any]) -> None: ...

    @abstractmethod
    def epoch(self, progress: Callable[[int, int], None]) -> int:
        """Train one epoch, calling ``progress(step, steps)`` after each step; return the
        number of optimizer steps."""

    @abstractmethod
    def score(self, steps: int) -> dict[str, float]:
        """casflow's scores on the development documents (percentages)."""

    @abstractmethod
    def save(self, path: str) -> None:
        """The model as Stanza's own model file."""


class _Stage:
    """Epochs of one model, reseeded each epoch, checkpointed after each."""

    def __init__(
        self, name: str, epochs: int, seed: int, folder: Path, log: Callable[[str], None]
    ) -> None:
        self.name = name
        self.epochs = epochs
        self.seed = seed
        self.folder = folder
        self.log = log
        self.curve: list[dict[str, Any]] = []

    def _progress(self, epoch: int, start: float) -> Callable[[int, int], None]:
        def progress(step: int, steps: int) -> None:
            # a line at each quarter of an epoch
            if step % max(1, steps // 4) == 0 and step < steps:
                seconds = time.monotonic() - start
                self.log(f"{self.name} epoch {epoch}: step {step}/{steps}, {seconds:.0f} s")

        return progress

    def run(self, run: _Run, key: list[Any], files: list[Path]) -> Path:
        import torch

        folder = self.folder
        best = folder / "best.pt"
        checkpoint = folder / "checkpoint.pt"
        settings = folder / "settings.json"
        # What a checkpoint depends on; the number of epochs is not part of it (nothing in
        # an epoch depends on how many follow), so a finished stage can be continued.
        resumable = fingerprint(key, self.seed, library_versions(), files=files)
        if folder.exists() and read_key(settings) != resumable:
            self.log(
                f"{self.name}: the settings or data changed since the last checkpoint: training from scratch"
            )
            shutil.rmtree(folder)
        folder.mkdir(parents=True, exist_ok=True)
        mark_done(settings, resumable)
        state = (
            torch.load(checkpoint, map_location="cpu", weights_only=False)
            if checkpoint.exists()
            else None
        )
        if state is not None and state["epoch"] > self.epochs:
            # Fewer epochs than the checkpoint has must give the model a fresh run of
            # that many gives (best.pt may be a later epoch's): start again.
            self.log(
                f"{self.name}: the checkpoint is after epoch {state['epoch']}, more than "
                f"{self.epochs} epochs: training from scratch"
            )
            checkpoint.unlink()
            best.unlink(missing_ok=True)
            state = None
        seed_streams(self.seed, self.name, "setup")
        run.setup()
        done = 0
        if state is not None:
            run.load_state(state["run"])
            done = state["epoch"]
            self.curve = state["curve"]
            self.log(
                f"{self.name}: continuing from the checkpoint after epoch {done} ({checkpoint})"
            )
        for epoch in range(done + 1, self.epochs + 1):
            start = time.monotonic()
            seed_streams(self.seed, self.name, epoch)
            steps = run.epoch(self._progress(epoch, start))
            scores = run.score(steps)
            point = {
                "stage": self.name,
                "epoch": epoch,
                **scores,
                "seconds": round(time.monotonic() - start, 1),
            }
            previous = max((p[run.selects] for p in self.curve), default=None)
            if previous is None or scores[run.selects] > previous or not best.exists():
                save_atomically(run.save, best)
                point["kept"] = True
            self.curve.append(point)
            state = {"run": run.state(), "epoch": epoch, "curve": self.curve}
            save_atomically(functools.partial(torch.save, state), checkpoint)
            shown = ", ".join(f"{k} {v:.2f}" for k, v in scores.items())
            self.log(
                f"{self.name} epoch {epoch}/{self.epochs} in {point['seconds']:.0f} s: dev {shown}"
                + (" (best so far, kept)" if point.get("kept") else "")
            )
        if not best.exists():
            raise RuntimeError(f"{self.name}: no model at {best} after training")
        kept = max(self.curve, key=lambda p: (p[run.selects], -p["epoch"]))
        self.log(f"{self.name}: epoch {kept['epoch']} kept ({run.selects} {kept[run.selects]:.2f})")
        return best


class _TaggerRun(_Run):
    selects = "xpos"

    def setup(self) -> None:
        from stanza.models import tagger
        from stanza.models.common import utils
        from stanza.models.pos.data import Dataset
        from stanza.models.pos.trainer import Trainer as PosTrainer
        from stanza.utils.conll import CoNLL

        args = tagger.parse_args(self.argv)
        pretrain = tagger.load_pretrain(args)
        args["word_cutoff"] = utils.update_word_cutoff(pretrain, args["word_cutoff"])
        with _quiet():
            vocab, _, self.batches = tagger.load_training_data(args, pretrain)
        dev_doc = CoNLL.conll2doc(input_file=args["eval_file"])
        self.dev_data = Dataset(
            dev_doc, args, pretrain, vocab=vocab, evaluation=True, sort_during_eval=True
        )
        self.dev_loader = self.dev_data.to_loader(batch_size=args["batch_size"])
        self.trainer = PosTrainer(args=args, vocab=vocab, pretrain=pretrain, device="cpu")

    def state(self) -> dict[str, Any]:
        t = self.trainer
        return {
            "model": t.model.state_dict(),
            "optimizers": {k: o.state_dict() for k, o in t.optimizers.items()},
            "schedulers": {k: s.state_dict() for k, s in t.schedulers.items()},
        }

    def load_state(self, state: dict[str, Any]) -> None:
        t = self.trainer
        t.model.load_state_dict(state["model"])
        for k, o in t.optimizers.items():
            o.load_state_dict(state["optimizers"][k])
        for k, s in t.schedulers.items():
            s.load_state_dict(state["schedulers"][k])

    def epoch(self, progress: Callable[[int, int], None]) -> int:
        steps = 0
        for batch in self.batches:
            self.trainer.update(batch, eval=False)
            steps += 1
            progress(steps, self.batches.num_batches())
        return steps

    def score(self, steps: int) -> dict[str, float]:
        from stanza.models.common.doc import XPOS

        doc = tag_dataset(self.trainer, self.dev_data, self.dev_loader)
        xpos = doc.get([XPOS])
        counts: Counts = {}
        position = 0
        for example in self.dev:
            n = len(example.gold.tokens)
            add_counts(
                counts, _scores_counts(example.gold, xpos[position : position + n], None, None)
            )
            position += n
        return _percentages(counts)

    def save(self, path: str) -> None:
        self.trainer.save(path)


def tag_dataset(trainer: Any, data: Any, loader: Any) -> Any:
    """The Stanza document of ``data`` with the tagger's UPOS and XPOS set."""
    import torch
    from stanza.models import tagger
    from stanza.models.common import utils

    predictions, indices = [], []
    with torch.no_grad():
        for batch in loader:
            predictions += trainer.predict(batch)
            indices.extend(batch.idx)
    tagger.set_predictions(data.doc, trainer, utils.unsort(predictions, indices))
    return data.doc


def _retag(
    model: Path, pretrain: Path, files: list[tuple[Path, Path]], log: Callable[[str], None]
) -> None:
    """Each CoNLL-U file with the tagger's UPOS and XPOS in place of the gold ones."""
    from stanza.models.common.pretrain import Pretrain
    from stanza.models.pos.data import Dataset
    from stanza.models.pos.trainer import Trainer as PosTrainer
    from stanza.utils.conll import CoNLL

    marker = model.parent / "retagged.json"
    key = fingerprint(files=[model, pretrain, *[source for source, _ in files]])
    if read_key(marker) == key and all(target.exists() for _, target in files):
        return
    vectors = Pretrain(str(pretrain))
    trainer = PosTrainer(pretrain=vectors, model_file=str(model), device="cpu")
    for source, target in files:
        doc = CoNLL.conll2doc(input_file=str(source))
        data = Dataset(
            doc, trainer.args, vectors, vocab=trainer.vocab, evaluation=True, sort_during_eval=True
        )
        tagged = tag_dataset(trainer, data, data.to_loader(batch_size=trainer.args["batch_size"]))
        text = f"{tagged:C}\n\n"
        save_atomically(functools.partial(_write_text, text=text), target)
    mark_done(marker, key)
    log(f"parser data: {', '.join(str(t) for _, t in files)} tagged by {model}")


class _ParserRun(_Run):
    selects = "las"

    def __init__(
        self, argv: list[str], dev: Sequence[SyntaxExample], *, gold_tags: bool = False
    ) -> None:
        super().__init__(argv, dev)
        # Parsing the gold tags, the tags are not the model's: no XPOS accuracy.
        self.gold_tags = gold_tags

    def setup(self) -> None:
        from stanza.models import parser
        from stanza.models.common import utils
        from stanza.models.common.doc import Document
        from stanza.models.depparse.data import DataLoader
        from stanza.models.depparse.trainer import GraphTrainer
        from stanza.utils.conll import CoNLL

        args = parser.parse_args(self.argv)
        if args["augment_nopunct"] is None:
            args["augment_nopunct"] = 0.1  # what Stanza's own parser defaults to
        pretrain = parser.load_pretrain(args)
        args["word_cutoff"] = utils.update_word_cutoff(pretrain, args["word_cutoff"])
        train_data, _, _ = CoNLL.conll2dict(input_file=args["train_file"])
        self.train = DataLoader(
            Document(train_data), args["batch_size"], args, pretrain, evaluation=False
        )
        self.dev_loader = DataLoader(
            CoNLL.conll2doc(input_file=args["eval_file"]),
            args["batch_size"],
            args,
            pretrain,
            vocab=self.train.vocab,
            evaluation=True,
            sort_during_eval=True,
        )
        self.trainer = GraphTrainer(
            args=args, vocab=self.train.vocab, pretrain=pretrain, device="cpu"
        )

    def state(self) -> dict[str, Any]:
        t = self.trainer
        return {
            "model": t.model.state_dict(),
            "optimizers": {k: o.state_dict() for k, o in t.optimizer.items()},
            "schedulers": {k: s.state_dict() for k, s in t.scheduler.items()},
            "global_step": t.global_step,
        }

    def load_state(self, state: dict[str, Any]) -> None:
        t = self.trainer
        t.model.load_state_dict(state["model"])
        for k, o in t.optimizer.items():
            o.load_state_dict(state["optimizers"][k])
        for k, s in t.scheduler.items():
            s.load_state_dict(state["schedulers"][k])
        t.global_step = state["global_step"]

    def epoch(self, progress: Callable[[int, int], None]) -> int:
        self.train.reshuffle()
        steps = 0
        for batch in self.train:
            self.trainer.global_step += 1
            self.trainer.update(batch, eval=False)
            steps += 1
            progress(steps, len(self.train))
        return steps

    def score(self, steps: int) -> dict[str, float]:
        from stanza.models.common.doc import XPOS
        from stanza.models.depparse.utils import predict_dataset

        predictions = predict_dataset(self.trainer, self.dev_loader)
        xpos = self.dev_loader.doc.get([XPOS])
        counts: Counts = {}
        sentence = word = 0
        for example in self.dev:
            count = len(example.gold.sentence_token_ranges())
            parsed = predictions[sentence : sentence + count]
            heads = [[int(h) for h, _ in s] for s in parsed]
            labels = [[d for _, d in s] for s in parsed]
            n = len(example.gold.tokens)
            add_counts(counts, _scores_counts(example.gold, xpos[word : word + n], heads, labels))
            sentence += count
            word += n
        scores = _percentages(counts)
        if self.gold_tags:
            scores.pop("xpos", None)
        for scheduler in self.trainer.scheduler.values():
            scheduler.step(num_steps=steps, metrics=scores["las"] / 100)
        return scores

    def save(self, path: str) -> None:
        self.trainer.save(path)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    import logging

    stanza_log = logging.getLogger("stanza")
    level = stanza_log.level
    stanza_log.setLevel(logging.WARNING)
    try:
        yield
    finally:
        stanza_log.setLevel(level)


def _write_text(path: str, text: str) -> None:
    Path(path).write_text(text, encoding="utf-8")


def _write_if_changed(path: Path, text: str) -> None:
    # Rewriting the same bytes would be harmless, but unchanged files keep their times.
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def _read_curve(path: Path) -> list[dict[str, Any]]:
    try:
        return list(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return []
