"""``train.stanza.ner.v1``: a Stanza NER tagger from gold mention views.

Each gold view's mentions of one type (AnatomyMention with its AnatEM class, or
GeneMention under one label) become Stanza's NER training data: a JSON list of
sentences of ``{"text", "ner"}`` tokens with BIOES (or BIO) tags, on the
tokens ``tokens.fine.v1`` writes at run time (casflow's fine tokenization: a run of
letters, a run of digits, each other character alone) over the gold sentences.
casflow's word vectors are Stanza's pretrain (the ``vectors`` option and the code of
``train.stanza.constituency.v1``). The model is Stanza's NER tagger (character LSTM,
word BiLSTM, CRF output; ``stanza.models.ner``), trained by Stanza's own Trainer and
DataLoader in this process.

Stanza's training loop (``stanza.models.ner_tagger.train``) saves only the best model:
no checkpoint to resume from, its random streams run on across the whole run, and it
scores the dev set by its own token-sequence F. So the loop is casflow's, over Stanza's
pieces, with the same steps (SGD updates with gradient clipping, ReduceLROnPlateau on
the dev F, stop at the minimum learning rate) and three differences, each for a reason:

- **Epochs.** The dev set is scored after every pass over the training sentences
  (Stanza: every ``eval_interval`` steps), so the curve and the checkpoints are per
  epoch.
- **Resumable and deterministic.** Each epoch reseeds Python's and torch's random
  streams from (seed, epoch) and shuffles a fixed order; after every epoch the full
  state (weights, optimizer, scheduler, scores) is written to a temporary file and
  renamed. A run stopped and started again any number of times ends with the same
  model as one that never stopped, and a finished run continues when ``epochs`` grows
  (when it shrinks below the checkpoint's, training starts again: a fresh run's model).
- **casflow's scores.** The epoch kept is the best by strict span match (exact span
  and class, micro-averaged) on the development documents tagged from their raw text
  as at run time: sentences from the rule-based splitter (``sentences.rules.v1``),
  tokens as ``tokens.fine.v1``, mentions decoded as Stanza's pipeline decodes them,
  counted by casflow's mention metrics (``eval.mentions.v1``'s strict criterion);
  ``eval_sentences: gold`` takes the gold sentences instead (BC2GM, where a document
  is one sentence), and gold with BioCreative alternatives also gets alt_eval scores.
  ``evaluate`` then runs the model folder through ``stanza.pipeline.v1`` on CASes.

With ``charlm`` the tagger also reads each word through a forward and a backward
character language model (given, or trained first on unlabelled text by
:mod:`casflow.components.stanza.charlm`); the folder carries both.

Run the model folder (``model.pt``, ``pretrain.pt``, ``meta.json``, with ``charlm``
also ``forward_charlm.pt`` and ``backward_charlm.pt``) with ``sentences.rules.v1``,
``tokens.fine.v1`` (``use_existing_sentences: true``) and ``stanza.pipeline.v1``
(``processors: {ner: default}``, ``model_files: {ner: {model: FOLDER/model.pt,
pretrain: FOLDER/pretrain.pt}}``, with ``charlm`` also ``forward_charlm:
FOLDER/forward_charlm.pt, backward_charlm: FOLDER/backward_charlm.pt``,
``use_existing_sentences`` and ``use_existing_tokens``, ``ner_preset: casflow_anatem``
or ``casflow_gene``).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import random
import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import cassis
from pydantic import Field, Tag

from casflow.cas.sofa import set_sofa_text
from casflow.components.crfsuite.evaluate import unit_counts
from casflow.components.crfsuite.gold_view import (
    MENTION_LAYER_TYPES,
    MENTION_LAYERS,
    GoldMention,
    MentionDocument,
    mention_document,
    mention_layer_problems,
    one_mention_layer,
)
from casflow.components.crfsuite.labels import encode, token_range
from casflow.components.crfsuite.tokenize import Span, tokenize
from casflow.components.metrics.mentions import score_mentions
from casflow.components.rules.sentences import split_sentences
from casflow.components.stanza.charlm import (
    DIRECTIONS,
    FILES,
    Charlm,
    CharlmFiles,
    Direction,
    TrainedCharlm,
    charlm_field,
    charlm_folder,
    charlm_pair,
    charlm_problems,
    read_history,
)
from casflow.components.stanza.constituency import META_FILE, MODEL_FILE, PRETRAIN_FILE
from casflow.components.stanza.model import ModelFiles, stanza_missing, torch_threads
from casflow.components.stanza.shared_training import (
    OptionValue,
    TrainedVectors,
    build_pretrain,
    library_versions,
    option_problems,
    options_field,
    threads_field,
    vectors_field,
    vectors_problems,
    word2vec_file,
    word2vec_problems,
)
from casflow.components.unlabelled_text import TextSource
from casflow.pipeline.component import (
    ComponentConfig,
    Processor,
    RunContext,
    Trainer,
    TrainingContext,
    mapping_is,
)
from casflow.pipeline.counts import Counts, add_counts
from casflow.pipeline.files import save_atomically
from casflow.pipeline.fingerprints import fingerprint, forget, mark_done, read_marker, step_status
from casflow.pipeline.training import TrainingDataError
from casflow.typesystem import SENTENCE, load_typesystem

Log = Callable[[str], None]
#: the ner_preset of stanza.pipeline.v1 that maps each layer's labels
PRESETS = {"genes": "casflow_gene", "anatomy": "casflow_anatem"}
#: Stanza's NER options casflow sets itself (the rest may go in stanza_options).
_OWN_OPTIONS = frozenset(
    {
        "train_file",
        "eval_file",
        "save_dir",
        "save_name",
        "wordvec_pretrain_file",
        "wordvec_file",
        "seed",
        "mode",
        "shorthand",
        "scheme",
        "train_scheme",
        "batch_size",
        "hidden_dim",
        "char_hidden_dim",
        "lr",
        "optim",
        "finetune",
        "max_steps",
        "eval_interval",
        "charlm",
        "charlm_shorthand",
        "charlm_forward_file",
        "charlm_backward_file",
    }
)


@dataclass
class NerDocument:
    """One gold document (picklable): text, gold mentions, gold sentences' tokens."""

    id: str
    text: str
    mentions: list[GoldMention]
    #: per gold sentence, its fine tokens and their tags are made in ``train``
    sentences: list[list[Span]]
    #: the gold sentences' spans (``eval_sentences: gold``)
    sentence_spans: list[Span] = field(default_factory=list)
    #: every accepted alternative span (BioCreative), for alt_eval scores
    accepted: tuple[Span, ...] = ()


class StanzaNerTrainerConfig(ComponentConfig):
    vectors: Annotated[
        Annotated[TrainedVectors, Tag("TrainedVectors")] | Annotated[str, Tag("str")],
        mapping_is("TrainedVectors"),
    ] = vectors_field(
        " Or {word2vec: {text: [...], ...}}: word2vec vectors trained first on unlabelled "
        "text cut into casflow's fine tokens, as the tagger reads it (needs gensim)."
    )
    label: str | None = Field(
        None,
        description="The class of every mention (e.g. GENE for BC2GM); null: each mention's "
        "value (the AnatEM class).",
    )
    scheme: Literal["bioes", "bio"] = Field("bioes", description="Tagging scheme.")
    charlm: Charlm | None = charlm_field()
    epochs: int = Field(
        40,
        ge=1,
        description="Most passes over the training sentences (fewer when the "
        "learning rate reaches min_lr).",
    )
    batch_size: int = Field(32, ge=1, description="Sentences per optimizer step.")
    hidden_dim: int = Field(256, ge=4, description="Word BiLSTM size (Stanza's hidden_dim).")
    char_hidden_dim: int = Field(
        100, ge=4, description="Character LSTM size (Stanza's char_hidden_dim)."
    )
    optim: Literal["sgd", "adam", "adamw", "adamax", "adagrad"] = Field(
        "sgd", description="Optimizer (Stanza's default: sgd)."
    )
    lr: float = Field(0.1, gt=0, description="Learning rate (Stanza's default for sgd: 0.1).")
    patience: int = Field(
        3, ge=1, description="Epochs without a better dev F before the learning rate is halved."
    )
    min_lr: float = Field(
        1e-4, gt=0, description="Training stops when the learning rate falls to this."
    )
    threads: int = threads_field()
    eval_sentences: Literal["rules", "gold"] = Field(
        "rules",
        description="Sentences of the development documents when scoring: rules "
        "(sentences.rules.v1 on the raw text, as at run time) or gold (the gold view's, "
        "e.g. BC2GM, where a document is one sentence).",
    )
    stanza_options: dict[str, OptionValue] = options_field(
        "Stanza's NER tagger", "stanza.models.ner_tagger"
    )


class StanzaNerTrainer(Trainer[StanzaNerTrainerConfig]):
    name = "train.stanza.ner.v1"
    description = (
        "Stanza's NER tagger (char LSTM, word BiLSTM, CRF) trained from gold GeneMention or "
        "AnatomyMention views with casflow's vectors; resumable; epochs selected by "
        "casflow's strict mention F on the development documents."
    )
    libraries = ("stanza", "torch")
    layers: ClassVar[dict[str, tuple[str, ...]]] = MENTION_LAYER_TYPES

    def __init__(self, config: StanzaNerTrainerConfig, context: TrainingContext) -> None:
        super().__init__(config, context)
        self.seed = context.seed
        self.layer = one_mention_layer(self.name, context.layers)
        self.mention_type = MENTION_LAYERS[self.layer]
        self.history: list[dict[str, Any]] = []
        #: per direction, the curve of the character language models trained first
        self.charlm_history: dict[str, list[dict[str, Any]]] = {}

    @classmethod
    def check_layers(cls, config: ComponentConfig, layers: Sequence[str]) -> list[str]:
        return mention_layer_problems("a Stanza NER model", layers)

    @classmethod
    def check_config(cls, config: StanzaNerTrainerConfig, context: RunContext) -> list[str]:
        problem = stanza_missing()
        if problem:
            return [f"{cls.name}: {problem}"]
        from stanza.models import ner_tagger

        problems = option_problems(
            config.stanza_options,
            ner_tagger.build_argparse(),
            _OWN_OPTIONS,
            trainer="Stanza's NER tagger",
        )
        if isinstance(config.vectors, TrainedVectors):
            problems += word2vec_problems(config.vectors, context)
        else:
            problems += vectors_problems(config.vectors, context.workflow_dir)
        problems += charlm_problems(config.charlm, context)
        return [f"{cls.name}: {p}" for p in problems]

    def example(self, view: cassis.Cas, doc_id: str) -> NerDocument:
        return ner_document(view, doc_id, self.mention_type, self.config.label)

    # -- training ------------------------------------------------------------------------

    def train(
        self,
        train: Sequence[NerDocument],
        dev: Sequence[NerDocument],
        output_dir: Path,
        log: Log,
    ) -> Path:
        output_dir = Path(output_dir)
        labels = training_labels(train, self.mention_type, self.layer)
        data = output_dir / "data"
        data.mkdir(parents=True, exist_ok=True)
        train_file = data / "train.json"
        dev_file = data / "dev.json"
        train_file.write_text(_stanza_json(train, self.config.scheme), encoding="utf-8")
        # Stanza's loader wants development sentences; casflow scores the dev documents
        # itself (without any, the last training document stands in).
        dev = list(dev) or list(train[-1:])
        dev_file.write_text(_stanza_json(dev, self.config.scheme), encoding="utf-8")
        vectors = self.config.vectors
        if isinstance(vectors, TrainedVectors):
            vectors = str(word2vec_file(vectors, self.context, fine_words, data, log))
        pretrain = build_pretrain(vectors, self.context.workflow_dir, data, log)
        charlm = (
            charlm_pair(self.config.charlm, self.context, self.config.threads, log)
            if self.config.charlm is not None
            else {}
        )
        if self.config.charlm is not None and not isinstance(self.config.charlm, CharlmFiles):
            folder = charlm_folder(self.context)
            self.charlm_history = {d: read_history(folder, d) for d in DIRECTIONS}
        args = self._arguments(train_file, dev_file, pretrain, charlm)
        inputs = [train_file, dev_file, pretrain, *charlm.values()]
        model = output_dir / "model"
        marker = output_dir / "done.json"
        key = fingerprint(
            _settings(self.config),
            args,
            self.seed,
            library_versions(),
            files=inputs,
        )
        checkpoints = output_dir / "checkpoints"
        if step_status(marker, key, model / MODEL_FILE) == "done":
            self.history = read_epoch_history(checkpoints)
            log(f"Stanza NER model already trained with these settings ({model}); reused")
            return model
        forget(marker)
        # The checkpoint stays valid when only the number of epochs changes: nothing in
        # an epoch depends on how many follow, so a finished run can be continued.
        resumable = fingerprint(
            _settings(self.config, exclude={"epochs"}),
            args,
            self.seed,
            library_versions(),
            files=inputs,
        )
        settings = checkpoints / "settings.json"
        if checkpoints.exists() and (read_marker(settings) or {}).get("fingerprint") != resumable:
            log("the settings or data changed since the last checkpoint: training from scratch")
            shutil.rmtree(checkpoints)
        checkpoints.mkdir(parents=True, exist_ok=True)
        mark_done(settings, resumable)
        n_train = sum(len(d.sentences) for d in train)
        log(
            f"Stanza NER tagger: {n_train} training sentences, {len(dev)} development "
            f"documents, up to {self.config.epochs} epochs"
        )
        with _stanza_quiet(self.config.threads):
            self.history = _train_loop(
                args,
                dev_documents(dev, self.config.eval_sentences),
                checkpoints,
                self.seed,
                self.config.epochs,
                self.config.patience,
                log,
            )
        best = checkpoints / "best.pt"
        if not best.is_file():
            raise RuntimeError(f"training finished without a model at {best}")
        if model.exists():
            shutil.rmtree(model)
        model.mkdir(parents=True)
        shutil.copyfile(best, model / MODEL_FILE)
        shutil.copyfile(pretrain, model / PRETRAIN_FILE)
        # Stanza's model file keeps only the paths of its character language models: the
        # folder carries them, so it can be moved, shipped and run anywhere
        for direction, source in charlm.items():
            shutil.copyfile(source, model / FILES[direction])
        best_epoch = max(self.history, key=lambda h: h["f"])["epoch"] if self.history else None
        meta = {
            "trainer": self.name,
            "mention_type": self.mention_type,
            "labels": labels,
            "ner_preset": PRESETS[self.layer],
            "tokens": "tokens.fine.v1",
            "scheme": self.config.scheme,
            "best_epoch": best_epoch,
        }
        if charlm:
            meta["charlm"] = {direction: FILES[direction] for direction in charlm}
        (model / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        mark_done(marker, key)
        size = sum(f.stat().st_size for f in model.iterdir() if f.suffix == ".pt")
        log(f"Stanza NER model: {model} ({size / 1e6:.1f} MB), best epoch {best_epoch}")
        return model

    def _arguments(
        self, train_file: Path, dev_file: Path, pretrain: Path, charlm: Mapping[Direction, Path]
    ) -> list[str]:
        config = self.config
        args = [
            "--mode=train",
            "--shorthand=en_casflow",
            f"--train_file={train_file}",
            f"--eval_file={dev_file}",
            f"--wordvec_pretrain_file={pretrain}",
            f"--seed={self.seed}",
            f"--scheme={config.scheme}",
            f"--batch_size={config.batch_size}",
            f"--hidden_dim={config.hidden_dim}",
            f"--char_hidden_dim={config.char_hidden_dim}",
            f"--optim={config.optim}",
            f"--lr={config.lr}",
            f"--min_lr={config.min_lr}",
            f"--patience={config.patience}",
            "--cpu",
        ]
        if charlm:
            args += [
                "--charlm",
                "--charlm_shorthand=en_casflow",
                f"--charlm_forward_file={charlm['forward']}",
                f"--charlm_backward_file={charlm['backward']}",
            ]
        for name, value in sorted(config.stanza_options.items()):
            if value is True:
                args.append(f"--{name}")
            elif value is not False:
                args.append(f"--{name}={value}")
        return args

    # -- scoring -------------------------------------------------------------------------

    def evaluate(self, model_dir: Path, examples: Sequence[NerDocument]) -> dict[str, float]:
        """The model folder through ``stanza.pipeline.v1`` over ``sentences.rules.v1`` and
        ``tokens.fine.v1`` on each document's raw text, scored strictly per class."""
        from casflow.components.rules.sentences import (
            SentenceRulesConfig,
            SentenceRulesSplitter,
        )
        from casflow.components.rules.tokens import FineTokens, FineTokensConfig
        from casflow.components.stanza.pipeline import StanzaConfig, StanzaPipeline

        model_dir = Path(model_dir).resolve()
        context = RunContext(output_dir=model_dir)
        gold_sentences = self.config.eval_sentences == "gold"
        chain: list[Processor[Any]] = [
            *([] if gold_sentences else [SentenceRulesSplitter(SentenceRulesConfig(), context)]),
            FineTokens(FineTokensConfig(use_existing_sentences=True), context),
            # the training's thread count: the scores that choose the epoch depend on it
            StanzaPipeline(run_config(model_dir, StanzaConfig, self.config.threads), context),
        ]
        typesystem = load_typesystem()
        sentence = typesystem.get_type(SENTENCE)
        systems = []
        for document in examples:
            cas = cassis.Cas(typesystem=typesystem)
            set_sofa_text(cas, document.text)
            if gold_sentences:
                cas.add_all([sentence(begin=b, end=e) for b, e in document.sentence_spans])
            for component in chain:
                component.process(cas)
            systems.append([(m.begin, m.end, m.value) for m in cas.select(self.mention_type)])
        for component in chain:
            component.close()
        return mention_scores(examples, systems)

    def describe(self) -> str:
        sentences = (
            "the gold sentences" if self.config.eval_sentences == "gold" else "sentences.rules.v1"
        )
        lines = [
            "Stanza's NER tagger (character LSTM, word BiLSTM, CRF output layer; "
            f"{_charlm_said(self.config.charlm)}, no transformer) trained by Stanza's "
            "Trainer in casflow's resumable epoch loop, on casflow's fine tokens of the gold "
            f"sentences, {self.config.scheme.upper()} tags, {_vectors_said(self.config)} "
            "as pretrain. The epoch kept is the best by strict "
            "mention F on the development documents. Scores tag each document from its "
            f"raw text ({sentences}, tokens.fine.v1, stanza.pipeline.v1) and count "
            "strict matches (exact span and class): p, r, f micro-averaged, macro_f the "
            "mean F over the gold classes, f_CLASS per class; alt_* with BioCreative's "
            "accepted alternatives where the gold has them (percentages). Run it with "
            "those components (see the module's documentation).",
        ]
        for direction, history in self.charlm_history.items():
            lines += [
                "",
                f"The {direction} character language model (perplexity per character; "
                "lr at the epoch's start):",
                "",
                "| epoch | lr | train | dev | seconds |",
                "| --- | --- | --- | --- | --- |",
            ]
            for h in history:
                lines.append(
                    f"| {h['epoch']} | {h['lr']:g} | {h['train_ppl']:.3f} | "
                    f"{h['dev_ppl']:.3f} | {h['seconds']:.0f} |"
                )
        if self.history:
            lines += [
                "",
                "Development curve (strict, from raw text; lr at the epoch's start):",
                "",
                "| epoch | steps | loss | lr | p | r | f | seconds |",
                "| --- | --- | --- | --- | --- | --- | --- | --- |",
            ]
            for h in self.history:
                lines.append(
                    f"| {h['epoch']} | {h['steps']} | {h['loss']:.3f} | {h['lr']:g} | "
                    f"{h['p']:.2f} | {h['r']:.2f} | {h['f']:.2f} | {h['seconds']:.0f} |"
                )
        return "\n".join(lines)


def run_config(model_dir: Path, config_class: Any, threads: int = 1) -> Any:
    """``stanza.pipeline.v1``'s config for a folder written by this trainer."""
    meta = json.loads((model_dir / META_FILE).read_text(encoding="utf-8"))
    charlm = {
        f"{direction}_charlm": str(model_dir / name)
        for direction, name in meta.get("charlm", {}).items()
    }
    return config_class(
        processors={"ner": "default"},
        model_files={
            "ner": ModelFiles(
                model=str(model_dir / MODEL_FILE),
                pretrain=str(model_dir / PRETRAIN_FILE),
                **charlm,
            )
        },
        use_existing_sentences=True,
        use_existing_tokens=True,
        layers=["entities"],
        ner_preset=meta["ner_preset"],
        unmapped_entities="drop",
        threads=threads,
    )


def ner_document(
    view: cassis.Cas, doc_id: str, mention_type: str, label: str | None
) -> NerDocument:
    """A gold view's training example: its mentions of ``mention_type`` (under ``label``,
    or each one's class) and its gold sentences cut into casflow's fine tokens."""
    document: MentionDocument = mention_document(view, doc_id, mention_type, label)
    return NerDocument(
        doc_id,
        document.text,
        document.mentions,
        [tokenize(document.text, b, e) for b, e in document.sentences],
        list(document.sentences),
        document.accepted,
    )


def training_labels(documents: Sequence[NerDocument], mention_type: str, layer: str) -> list[str]:
    """The classes of the training documents' mentions, sorted; refuses documents with
    nothing to learn (no sentence with a word, or no mention of ``mention_type``, the
    ``layer`` layer's type): a tagger trained on them tags every word O and is saved as
    if it had learnt, and with dev mentions its zero F looks like a training failure."""
    if not any(tokens for document in documents for tokens in document.sentences):
        raise TrainingDataError(
            f"the {len(documents)} training documents hold no sentence with a word (their "
            "text is empty): check that the reader reads the gold view, with its text"
        )
    labels = sorted({m.label for d in documents for m in d.mentions})
    if not labels:
        short = mention_type.rsplit(".", 1)[-1]
        raise TrainingDataError(
            f"the {len(documents)} training documents hold no {short} (the {layer} layer): "
            f"check that the gold view has {short} annotations and that the reader's views "
            f"config lists {short}"
        )
    return labels


def mention_scores(
    examples: Sequence[NerDocument], systems: Sequence[Sequence[tuple[int, int, str]]]
) -> dict[str, float]:
    """Strict scores (:func:`strict_scores`) of each document's system mentions
    ``(begin, end, class)`` against its gold, and with BioCreative's accepted
    alternatives (alt_p, alt_r, alt_f) where the gold has them."""
    alternatives = any(d.accepted or any(m.alternatives for m in d.mentions) for d in examples)
    total: Counts = {}
    for document, system in zip(examples, systems, strict=True):
        add_counts(
            total,
            unit_counts(
                document.mentions,
                list(system),
                with_alternatives=alternatives,
                accepted=document.accepted,
            ),
        )
    scores = strict_scores(total)
    if alternatives:
        # BioCreative II's rule (alt_eval.perl): a gold mention's accepted alternatives
        # match too; reported beside the strict scores the epochs were selected by
        alt = score_mentions(total)["alt_eval"]["micro"]
        scores.update(
            alt_p=_percent(alt["precision"]),
            alt_r=_percent(alt["recall"]),
            alt_f=_percent(alt["f1"]),
        )
    return scores


def strict_scores(counts: Counts) -> dict[str, float]:
    """Strict micro P/R/F, macro F and F per class (percentages) from mention counts."""
    strict = score_mentions(counts).get("strict")
    if strict is None:
        return {"p": 0.0, "r": 0.0, "f": 0.0}
    micro = strict["micro"]
    out = {
        "p": _percent(micro["precision"]),
        "r": _percent(micro["recall"]),
        "f": _percent(micro["f1"]),
    }
    if strict["macro"]["classes"] > 1:
        out["macro_f"] = _percent(strict["macro"]["f1"])
        for label, prf in strict["class"].items():
            out[f"f_{label}"] = _percent(prf["f1"])
    return out


def _percent(value: float) -> float:
    return round(100 * float(value), 2)


def sentence_tags(document: NerDocument, tokens: list[Span], scheme: str) -> list[str]:
    """The tags (``scheme``: BIO or BIOES) of one gold sentence's fine tokens."""
    ranges = []
    for mention in document.mentions:
        found = token_range(tokens, mention.begin, mention.end)
        if found is not None:
            ranges.append((*found, mention.label))
    return encode(len(tokens), ranges, scheme.upper())


def _stanza_json(documents: Sequence[NerDocument], scheme: str) -> str:
    """Stanza's NER data: sentences of {"text", "ner"} tokens, documents one after another."""
    sentences = []
    for document in documents:
        for tokens in document.sentences:
            if not tokens:
                continue
            tags = sentence_tags(document, tokens, scheme)
            sentences.append(
                [
                    {"text": document.text[b:e], "ner": tag}
                    for (b, e), tag in zip(tokens, tags, strict=True)
                ]
            )
    return json.dumps(sentences, ensure_ascii=False) + "\n"


#: Settings added after models were trained with this trainer, left out of the
#: fingerprints at their defaults so those runs' checkpoints stay valid.
_LATER_SETTINGS = ("eval_sentences", "charlm")


def _vectors_said(config: StanzaNerTrainerConfig) -> str:
    if isinstance(config.vectors, TrainedVectors):
        sources = [
            item.component
            if isinstance(item, TextSource)
            else "definitions of " + "/".join(item.definitions)
            for item in config.vectors.word2vec.text
        ]
        return (
            "word2vec vectors trained first on the unlabelled text of "
            + ", ".join(sources)
            + " (casflow's fine tokens)"
        )
    return f"casflow's word vectors ({config.vectors})"


def _charlm_said(charlm: Charlm | None) -> str:
    if charlm is None:
        return "no character language model"
    if isinstance(charlm, CharlmFiles):
        return f"character language models {charlm.forward} and {charlm.backward}"
    settings = charlm.train
    return (
        f"character language models (hidden size {settings.hidden_dim}, {settings.epochs} "
        "epochs) trained first on unlabelled text"
    )


def fine_words(text: str) -> list[str]:
    """``text`` cut as ``tokens.fine.v1`` cuts it (the words the tagger reads)."""
    return [text[b:e] for b, e in tokenize(text)]


def _settings(config: StanzaNerTrainerConfig, exclude: set[str] | None = None) -> dict[str, Any]:
    default = StanzaNerTrainerConfig()
    skip = set(exclude or ()) | {
        name for name in _LATER_SETTINGS if getattr(config, name) == getattr(default, name)
    }
    settings = config.model_dump(mode="json", exclude=skip)
    if isinstance(config.charlm, TrainedCharlm):
        # how the pair is trained (jobs) does not change it
        settings["charlm"] = {"train": config.charlm.train.identity()}
    return settings


# -- the training loop ------------------------------------------------------------------


@dataclass
class DevDocument:
    """A development document as tagged at run time: rule sentences, fine tokens."""

    document: NerDocument
    sentences: list[list[Span]]


def dev_documents(dev: Sequence[NerDocument], sentences: str) -> list[DevDocument]:
    """The dev documents cut as at run time: rule (or gold) sentences, fine tokens."""
    out = []
    for document in dev:
        text = document.text
        regions = document.sentence_spans if sentences == "gold" else split_sentences(text)
        spans = [tokenize(text, b, e) for b, e in regions]
        out.append(DevDocument(document, [s for s in spans if s]))
    return out


def _dev_counts(trainer: Any, args: dict[str, Any], dev: Sequence[DevDocument]) -> Counts:
    """Tag the dev documents with the model in training; strict mention counts."""
    import torch
    from stanza.models.common.doc import Document
    from stanza.models.ner.data import DataLoader
    from stanza.models.ner.utils import decode_from_bioes

    sentences = [(d, tokens) for d in dev for tokens in d.sentences]
    doc = Document(
        [
            [{"id": (i,), "text": d.document.text[b:e]} for i, (b, e) in enumerate(tokens, 1)]
            for d, tokens in sentences
        ]
    )
    loader = DataLoader(
        doc,
        args["batch_size"],
        trainer.args,
        vocab=trainer.vocab,
        evaluation=True,
        preprocess_tags=False,
    )
    predictions: list[list[str]] = []
    with torch.no_grad():
        for batch in loader:
            predictions += trainer.predict(batch)
    system: dict[int, list[tuple[int, int, str]]] = {}
    for (d, tokens), tags in zip(sentences, predictions, strict=True):
        found = system.setdefault(id(d), [])
        for entity in decode_from_bioes(tags):
            found.append((tokens[entity["start"]][0], tokens[entity["end"]][1], entity["type"]))
    total: Counts = {}
    for d in dev:
        add_counts(
            total,
            unit_counts(d.document.mentions, system.get(id(d), []), with_alternatives=False),
        )
    return total


# Not shared_training.seed_streams: other numbers from the same seed, and the checkpoints
# and models trained with these (casflow:anatem_stanza among them) would not resume alike.
def _reseed(seed: int, epoch: int) -> None:
    import numpy as np
    import torch

    random.seed(f"{seed}:{epoch}")
    np.random.seed((seed * 100_003 + epoch) % 2**32)
    torch.manual_seed(seed * 100_003 + epoch)


def read_epoch_history(checkpoints: Path) -> list[dict[str, Any]]:
    """The dev curve a training loop wrote beside its checkpoints (none: empty)."""
    try:
        return list(json.loads((checkpoints / "history.json").read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return []


def _train_loop(
    argv: list[str],
    dev: Sequence[DevDocument],
    checkpoints: Path,
    seed: int,
    epochs: int,
    patience: int,
    log: Log,
) -> list[dict[str, Any]]:
    import torch
    from stanza.models import ner_tagger
    from stanza.models.common.doc import Document
    from stanza.models.ner.data import DataLoader
    from stanza.models.ner.trainer import Trainer as NerTrainer

    args = ner_tagger.parse_args(argv)
    pretrain = ner_tagger.load_pretrain(args)
    args["word_emb_dim"] = pretrain.emb.shape[1]
    # The vocabularies, the model's initial weights and the base order of the training
    # sentences come from the seed alone, so a resumed run rebuilds them identically.
    _reseed(seed, -1)
    with open(args["train_file"], encoding="utf-8") as handle:
        train_doc = Document(json.load(handle))
    train_batch = DataLoader(
        train_doc,
        args["batch_size"],
        args,
        pretrain,
        evaluation=False,
        scheme=args.get("train_scheme"),
        max_batch_words=args["max_batch_words"],
    )
    base_order = [item for batch in train_batch.data for item in batch]
    trainer = NerTrainer(args=args, vocab=train_batch.vocab, pretrain=pretrain, device="cpu")
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(
        trainer.optimizer,
        mode="max",
        factor=args["lr_decay"],
        patience=patience,
        min_lr=args["min_lr"],
    )
    checkpoint = checkpoints / "checkpoint.pt"
    best = checkpoints / "best.pt"
    history: list[dict[str, Any]] = []
    steps = 0
    state = (
        torch.load(checkpoint, map_location="cpu", weights_only=False)
        if checkpoint.is_file()
        else None
    )
    if state is not None and len(state["history"]) > epochs:
        # A run of fewer epochs than the checkpoint has must end with the model a fresh
        # run of that many epochs gives (best.pt may be a later epoch's): start again.
        log(
            f"the checkpoint in {checkpoints} is after epoch {len(state['history'])}, more "
            f"than epochs ({epochs}): training from scratch"
        )
        for stale in (checkpoint, best, checkpoints / "history.json"):
            stale.unlink(missing_ok=True)
        state = None
    if state is not None:
        trainer.model.load_state_dict(state["model"])
        trainer.optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        history = state["history"]
        steps = state["steps"]
        log(f"continuing from the checkpoint in {checkpoints} (after epoch {len(history)})")
    for epoch in range(len(history) + 1, epochs + 1):
        lr = trainer.optimizer.param_groups[0]["lr"]
        if lr <= args["min_lr"]:
            log(f"the learning rate reached min_lr ({args['min_lr']:g}): training ends")
            break
        start = time.monotonic()
        _reseed(seed, epoch)
        order = list(base_order)
        random.Random(f"{seed}:{epoch}:order").shuffle(order)
        train_batch.data = train_batch.chunk_batches(order)
        loss = 0.0
        for batch in train_batch:
            loss += trainer.update(batch, eval=False)
            steps += 1
        loss /= max(len(train_batch), 1)
        scores = strict_scores(_dev_counts(trainer, args, dev))
        improved = not history or scores["f"] > max(h["f"] for h in history)
        if improved:
            save_atomically(trainer.save, best)
        scheduler.step(scores["f"])
        seconds = round(time.monotonic() - start, 1)
        history.append(
            {"epoch": epoch, "steps": steps, "loss": loss, "lr": lr, **scores, "seconds": seconds}
        )
        state = {
            "model": trainer.model.state_dict(),
            "optimizer": trainer.optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "history": history,
            "steps": steps,
        }
        save_atomically(functools.partial(torch.save, state), checkpoint)
        (checkpoints / "history.json").write_text(json.dumps(history, indent=1) + "\n")
        best_h = max(history, key=lambda h: h["f"])
        log(
            f"epoch {epoch} finished in {seconds:.0f} s: {steps} steps, loss {loss:.3f}, lr "
            f"{lr:g}; dev strict P {scores['p']:.2f} R {scores['r']:.2f} F {scores['f']:.2f} "
            f"(best {best_h['f']:.2f} at epoch {best_h['epoch']})"
        )
    return history


@contextlib.contextmanager
def _stanza_quiet(threads: int) -> Iterator[None]:
    """One PyTorch thread count for the run; Stanza's per-step logging off."""
    stanza_log = logging.getLogger("stanza")
    level = stanza_log.level
    stanza_log.setLevel(logging.WARNING)
    try:
        with torch_threads(threads):
            yield
    finally:
        stanza_log.setLevel(level)
