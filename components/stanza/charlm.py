"""Character language models for casflow's Stanza NER trainer: two given files, or a
forward and a backward model trained first on unlabelled text.

Stanza's NER tagger can read each word through a pair of character LSTM language
models (Akbik et al.'s contextual string embeddings), frozen while the tagger trains;
Stanza's published biomedical taggers lean on pairs trained on PubMed. Those cannot be
downloaded here, so ``charlm: {train: {...}}`` trains a pair on the same kind of
unlabelled text as the word2vec vectors (:mod:`casflow.components.unlabelled_text`).

Stanza's own charlm loop (``stanza.models.charlm``) resumes at the start of the epoch
its checkpoint was written in, with fresh random streams and no memory of the best dev
loss, so a resumed run differs from one that never stopped. The loop here is casflow's
over Stanza's pieces (its model, optimizer, annealing scheduler, batching, BPTT
lengths drawn around ``bptt_size``, gradient clipping), with the NER trainer's
discipline: random streams reseeded from (seed, epoch), the full state written after
every epoch, the best epoch by development perplexity kept. Stopped and started again,
it ends with the same files as a run that never stopped.
"""

from __future__ import annotations

import functools
import json
import math
import random
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

from casflow.components.models import model_path, where_looked
from casflow.components.stanza.model import given_charlm_problems, torch_threads
from casflow.components.stanza.shared_training import (
    read_key,
    seed_streams,
)
from casflow.components.unlabelled_text import (
    ONTOLOGIES_DESCRIPTION,
    DefinitionText,
    TextSource,
    read_texts,
    text_field,
    text_problems,
)
from casflow.pipeline.component import ComponentConfig, RunContext
from casflow.pipeline.files import save_atomically
from casflow.pipeline.fingerprints import fingerprint, forget, mark_done
from casflow.pipeline.locks import building

Log = Callable[[str], None]
Direction = Literal["forward", "backward"]
DIRECTIONS: tuple[Direction, Direction] = ("forward", "backward")
#: the file names of the pair in a model folder
FILES = {"forward": "forward_charlm.pt", "backward": "backward_charlm.pt"}


class CharlmFiles(ComponentConfig):
    """A pair trained elsewhere (e.g. by ``python -m stanza.models.charlm``)."""

    forward: str = Field(description="The forward character language model (.pt).")
    backward: str = Field(description="The backward character language model (.pt).")


class CharlmSettings(BaseModel):
    """Training a pair with Stanza's character language model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: list[TextSource | DefinitionText] = text_field()
    ontologies: str | None = Field(None, description=ONTOLOGIES_DESCRIPTION)
    dev_share: float = Field(
        0.01,
        gt=0,
        lt=0.5,
        description="Share of the text's lines (after a seeded shuffle) held out to pick "
        "the epoch by perplexity.",
    )
    epochs: int = Field(10, ge=1, description="Passes over the training text.")
    # Stanza's default is 1024, made for PubMed-sized text on a GPU: an epoch over the
    # 7.8 M characters of the default text took about 48 min on one thread here, 256
    # about 5.5 min.
    hidden_dim: int = Field(256, ge=8, description="LSTM size (Stanza's char_hidden_dim).")
    emb_dim: int = Field(100, ge=4, description="Character embedding size (char_emb_dim).")
    batch_size: int = Field(100, ge=1, description="Parallel streams of text.")
    bptt_size: int = Field(250, ge=10, description="Characters per backpropagation step.")
    lr: float = Field(5.0, gt=0, description="SGD learning rate (Stanza's lr0).")
    anneal: float = Field(
        0.25, gt=0, lt=1, description="Learning rate factor when dev perplexity rises."
    )
    # Stanza's default (1000) assumes a very large corpus; with a few million characters
    # it would drop letters with accents and Greek letters that anatomy names use.
    cutoff: int = Field(
        5, ge=0, description="Characters seen fewer times become unknown (Stanza's cutoff)."
    )
    seed: int = Field(
        0,
        description="The language models' seed (a resource: the tagger's seed does not "
        "change them).",
    )
    jobs: Literal[1, 2] = Field(
        1,
        description="2: the two directions side by side in two processes (twice the cores, "
        "half the time); 1: one after the other. The files are the same.",
    )

    def identity(self, exclude: set[str] | None = None) -> dict[str, Any]:
        """The settings that decide the files (not ``jobs``), for fingerprints."""
        return self.model_dump(mode="json", exclude={*NOT_IDENTITY, *(exclude or ())})


#: settings that change how the pair is trained, not what it is
NOT_IDENTITY = frozenset({"jobs"})


class TrainedCharlm(ComponentConfig):
    train: CharlmSettings = Field(description="Train the pair first (on one thread).")


def _charlm_kind(value: Any) -> str:
    if isinstance(value, TrainedCharlm) or (isinstance(value, dict) and "train" in value):
        return "TrainedCharlm"
    # anything else must be the pair of files (a single path is reported as not a mapping)
    return "CharlmFiles"


#: a given pair or one to train, told apart by the ``train`` key, so a mistake in one is
#: reported against that one only
Charlm = Annotated[
    Annotated[CharlmFiles, Tag("CharlmFiles")] | Annotated[TrainedCharlm, Tag("TrainedCharlm")],
    Discriminator(_charlm_kind),
]
#: the settings that make the text files (the rest make the models)
_TEXT_SETTINGS = {"text", "ontologies", "dev_share", "seed"}


def charlm_field() -> Any:
    return Field(
        None,
        description="Character language models read by the tagger (Stanza's --charlm): "
        "{forward: FILE, backward: FILE} trained elsewhere, or {train: {text: [...], "
        "epochs, hidden_dim, ...}} to train a pair first on unlabelled text. They are "
        "copied into the model folder. null: none.",
    )


def charlm_problems(charlm: Charlm | None, context: RunContext) -> list[str]:
    """The given files exist; the text to train on can be read."""
    if charlm is None:
        return []
    if isinstance(charlm, CharlmFiles):
        given = {"forward": charlm.forward, "backward": charlm.backward}
        missing = [
            f"charlm.{direction}: no file at {where_looked(value, context.workflow_dir)}"
            for direction, value in given.items()
            if not model_path(value, context.workflow_dir).is_file()
        ]
        return missing + given_charlm_problems(
            given, context.workflow_dir, lambda direction: f"charlm.{direction}"
        )
    settings = charlm.train
    return [
        f"charlm.train.text: {p}"
        for p in text_problems(settings.text, settings.ontologies, context)
    ]


def charlm_folder(context: RunContext) -> Path:
    """Where a training run keeps the pair it trains: beside its folds and final model,
    which all read the same pair (the text does not depend on the folds)."""
    return Path(context.output_dir).resolve() / "charlm"


def charlm_pair(
    charlm: Charlm, context: RunContext, threads: int, log: Log
) -> dict[Direction, Path]:
    """The forward and backward files of ``charlm``: the given ones, or the pair trained
    (or already trained with these settings) in :func:`charlm_folder`."""
    if isinstance(charlm, CharlmFiles):
        return {
            "forward": model_path(charlm.forward, context.workflow_dir),
            "backward": model_path(charlm.backward, context.workflow_dir),
        }
    settings = charlm.train
    folder = charlm_folder(context)
    # the --fold K runs of one training may start together: one trains the pair
    with building(folder, lambda line: log(f"charlm: {line}")):
        train_file, dev_file = _text_files(settings, context, folder, log)
        vocab = _vocab_file(settings, train_file, folder)
        if settings.jobs == 1 or _trained(settings, "backward", folder):
            with torch_threads(threads):
                return {
                    direction: train_direction(
                        settings, direction, train_file, dev_file, vocab, log
                    )
                    for direction in DIRECTIONS
                }
        return _side_by_side(settings, train_file, dev_file, vocab, threads, log)


def _side_by_side(
    settings: CharlmSettings,
    train_file: Path,
    dev_file: Path,
    vocab: Path,
    threads: int,
    log: Log,
) -> dict[Direction, Path]:
    """The backward model in a second process while this one trains the forward model;
    the worker's lines are logged as they come (after each of this process's lines, then
    while waiting for it). Each direction is seeded on its own, so the files are those
    of one process."""
    import multiprocessing
    import queue as queues

    context = multiprocessing.get_context("spawn")
    lines = context.Queue()
    worker = context.Process(
        target=_direction_worker,
        args=(settings, "backward", train_file, dev_file, vocab, threads, lines),
        daemon=True,  # ends with this process (Ctrl-C, an error here)
    )
    worker.start()
    failure: list[str] = []

    def drain(wait: float = 0.0) -> None:
        while True:
            try:
                kind, line = lines.get(timeout=wait) if wait else lines.get_nowait()
            except queues.Empty:
                return
            (failure.append if kind == "error" else log)(line)
            wait = 0.0

    def log_both(line: str) -> None:
        log(line)
        drain()

    try:
        with torch_threads(threads):
            forward = train_direction(settings, "forward", train_file, dev_file, vocab, log_both)
        while worker.is_alive():
            drain(wait=5.0)
        worker.join()
        drain()
    finally:
        if worker.is_alive():
            worker.terminate()
    if worker.exitcode != 0:
        raise RuntimeError(
            "charlm: the backward model's process failed"
            + (f": {failure[0]}" if failure else f" (exit code {worker.exitcode})")
        )
    return {"forward": forward, "backward": vocab.parent / FILES["backward"]}


def _direction_worker(
    settings: CharlmSettings,
    direction: Direction,
    train_file: Path,
    dev_file: Path,
    vocab: Path,
    threads: int,
    lines: Any,
) -> None:
    import traceback

    try:
        with torch_threads(threads):
            train_direction(
                settings, direction, train_file, dev_file, vocab, lambda m: lines.put(("log", m))
            )
    except BaseException:
        lines.put(("error", traceback.format_exc(limit=-3)))
        raise SystemExit(1) from None


def _text_files(
    settings: CharlmSettings, context: RunContext, folder: Path, log: Log
) -> tuple[Path, Path]:
    """The text as lines, shuffled by the seed, split into training and dev files (written
    once per text settings; other text starts both models again)."""
    key = fingerprint(settings.model_dump(mode="json", include=_TEXT_SETTINGS))
    train_file = folder / "train.txt"
    dev_file = folder / "dev.txt"
    marker = folder / "text.json"
    if read_key(marker) == key and train_file.is_file():
        return train_file, dev_file
    if folder.exists():
        log("charlm: the text settings changed: the character language models start again")
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    lines = [
        line
        for text in read_texts(settings.text, settings.ontologies, context, log)
        for raw in text.split("\n")
        if (line := raw.strip())
    ]
    if len(lines) < 2:
        raise ValueError(
            f"charlm.train.text: {len(lines)} non-empty line(s); a character language model "
            "needs a training and a development part: give more text"
        )
    random.Random(settings.seed).shuffle(lines)
    held_out = max(1, int(len(lines) * settings.dev_share))
    dev_file.write_text("\n".join(lines[:held_out]) + "\n", encoding="utf-8")
    train_file.write_text("\n".join(lines[held_out:]) + "\n", encoding="utf-8")
    mark_done(marker, key)
    characters = sum(map(len, lines))
    log(
        f"charlm: {len(lines)} lines, {characters} characters; {held_out} lines held out "
        "for the development perplexity"
    )
    return train_file, dev_file


def _vocab_file(settings: CharlmSettings, train_file: Path, folder: Path) -> Path:
    """The characters both directions know (built once, before either starts: two
    processes must not both write it)."""
    import torch
    from stanza.models.common.char_model import build_charlm_vocab

    vocab_file = folder / "vocab.pt"
    # the text (its files are rewritten when it changes) and the cutoff decide it
    key = fingerprint(settings.model_dump(mode="json", include={*_TEXT_SETTINGS, "cutoff"}))
    if not vocab_file.is_file() or read_key(folder / "vocab.json") != key:
        char_vocab = build_charlm_vocab(str(train_file), cutoff=settings.cutoff)
        save_atomically(functools.partial(torch.save, char_vocab.state_dict()), vocab_file)
        mark_done(folder / "vocab.json", key)
    return vocab_file


def _stanza_args(settings: CharlmSettings, direction: Direction, folder: Path) -> dict[str, Any]:
    from stanza.models import charlm

    return charlm.parse_args(
        [
            f"--direction={direction}",
            f"--char_emb_dim={settings.emb_dim}",
            f"--char_hidden_dim={settings.hidden_dim}",
            f"--batch_size={settings.batch_size}",
            f"--bptt_size={settings.bptt_size}",
            f"--lr0={settings.lr}",
            f"--anneal={settings.anneal}",
            f"--cutoff={settings.cutoff}",
            f"--seed={settings.seed}",
            f"--save_dir={folder}",
            "--shorthand=en_casflow",
        ]
    )


def train_direction(
    settings: CharlmSettings,
    direction: Direction,
    train_file: Path,
    dev_file: Path,
    vocab_file: Path,
    log: Log,
) -> Path:
    """One direction's model (``FILES[direction]``) beside the character vocabulary
    ``vocab_file`` (:func:`_vocab_file`), resumed from its checkpoint; the epoch with the
    lowest development perplexity is kept."""
    import numpy as np
    import torch
    from stanza.models.charlm import (
        batchify,
        evaluate_epoch,
        get_batch,
        load_char_vocab,
        load_file,
        repackage_hidden,
    )
    from stanza.models.common.char_model import CharacterLanguageModelTrainer

    folder = vocab_file.parent
    target = folder / FILES[direction]
    marker = folder / f"{direction}.json"
    if _trained(settings, direction, folder):
        log(f"charlm: the {direction} model is already trained with these settings")
        return target
    forget(marker)
    checkpoint = folder / f"{direction}_checkpoint.pt"
    # The checkpoint stays valid when only the number of epochs changes (nothing in an
    # epoch depends on how many follow), so a finished run can be continued.
    resumable = fingerprint(settings.identity(exclude={"epochs"}), direction)
    settings_file = folder / f"{direction}_settings.json"
    if read_key(settings_file) != resumable:
        for stale in (checkpoint, target, folder / f"{direction}_history.json"):
            stale.unlink(missing_ok=True)
        mark_done(settings_file, resumable)
    args = _stanza_args(settings, direction, folder)
    vocab = load_char_vocab(str(vocab_file))
    seed_streams(settings.seed, "charlm", direction, "setup")
    trainer = CharacterLanguageModelTrainer.from_new_model(args, vocab)
    history: list[dict[str, Any]] = []
    if checkpoint.is_file():
        state = torch.load(checkpoint, map_location="cpu", weights_only=False)
        trainer.model.load_state_dict(state["model"])
        trainer.optimizer.load_state_dict(state["optimizer"])
        trainer.scheduler.load_state_dict(state["scheduler"])
        trainer.global_step = state["steps"]
        history = state["history"]
        log(f"charlm: {direction} continues after epoch {len(history)}")
    train_data = load_file(str(train_file), vocab, direction)
    dev_data = load_file(str(dev_file), vocab, direction)
    n_chars = len(vocab["char"])
    for epoch in range(len(history) + 1, settings.epochs + 1):
        start = time.monotonic()
        seed_streams(settings.seed, "charlm", direction, epoch)
        lr = trainer.optimizer.param_groups[0]["lr"]
        batches = batchify(train_data, settings.batch_size, "cpu")
        hidden = None
        total = 0.0
        steps = 0
        i = 0
        reported = 0
        trainer.model.train()
        # Stanza's loop: sequence lengths drawn around bptt_size (half of it 5% of the
        # time), so the cut points differ between epochs
        while i < batches.size(1) - 2:
            bptt = settings.bptt_size if np.random.random() < 0.95 else settings.bptt_size / 2
            seq_len = min(max(5, int(np.random.normal(bptt, 5))), int(settings.bptt_size * 1.2))
            data, target_ids = get_batch(batches, i, seq_len)
            lens = [data.size(1)] * data.size(0)
            trainer.optimizer.zero_grad()
            _, hidden, decoded = trainer.model.forward(data, lens, hidden)
            loss = trainer.criterion(decoded.view(-1, n_chars), target_ids)
            total += loss.item()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trainer.params, args["max_grad_norm"])
            trainer.optimizer.step()
            hidden = repackage_hidden(hidden)
            trainer.global_step += 1
            steps += 1
            i += seq_len
            # an epoch over millions of characters takes minutes: say how far it is
            quarter = 4 * i // batches.size(1)
            if quarter > reported and quarter < 4:
                reported = quarter
                log(
                    f"charlm: {direction} epoch {epoch}: {25 * quarter}% "
                    f"({time.monotonic() - start:.0f} s, train perplexity "
                    f"{math.exp(total / steps):.3f})"
                )
        dev_loss = evaluate_epoch(args, vocab, dev_data, trainer.model, trainer.criterion)
        trainer.scheduler.step(dev_loss)
        improved = not history or dev_loss < min(h["dev_loss"] for h in history)
        if improved:
            save_atomically(functools.partial(trainer.save, full=False), target)
        seconds = round(time.monotonic() - start, 1)
        history.append(
            {
                "epoch": epoch,
                "lr": lr,
                "train_ppl": round(math.exp(total / max(steps, 1)), 4),
                "dev_loss": dev_loss,
                "dev_ppl": round(math.exp(dev_loss), 4),
                "seconds": seconds,
            }
        )
        state = {
            "model": trainer.model.state_dict(),
            "optimizer": trainer.optimizer.state_dict(),
            "scheduler": trainer.scheduler.state_dict(),
            "steps": trainer.global_step,
            "history": history,
        }
        save_atomically(functools.partial(torch.save, state), checkpoint)
        (folder / f"{direction}_history.json").write_text(json.dumps(history, indent=1) + "\n")
        log(
            f"charlm: {direction} epoch {epoch} in {seconds:.0f} s: train perplexity "
            f"{history[-1]['train_ppl']:.3f}, dev {history[-1]['dev_ppl']:.3f}"
            + (" (best)" if improved else "")
        )
    if not target.is_file():
        raise RuntimeError(f"charlm: training finished without a {direction} model at {target}")
    mark_done(marker, fingerprint(settings.identity(), direction))
    return target


def _trained(settings: CharlmSettings, direction: Direction, folder: Path) -> bool:
    """Whether ``direction``'s model is finished with these settings."""
    marker = folder / f"{direction}.json"
    return (
        read_key(marker) == fingerprint(settings.identity(), direction)
        and (folder / FILES[direction]).is_file()
    )


def read_history(folder: Path, direction: Direction) -> list[dict[str, Any]]:
    try:
        return list(json.loads((folder / f"{direction}_history.json").read_text("utf-8")))
    except (OSError, ValueError):
        return []
