"""A model folder of ``train.transformers.ner.v1``: checking it, reading its meta.json,
loading it on the CPU with transformers' own logging and progress bars held back."""

from __future__ import annotations

import contextlib
import importlib.util
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from casflow.components.models import model_path, where_looked
from casflow.components.transformer_ner.encoder import (
    CONFIG_FILE,
    TOKENIZER_FILE,
    WEIGHTS_FILE,
    encoder_config,
    positions_problem,
)
from casflow.typesystem import ANATOMY_MENTION, GENE_MENTION

META_FILE = "meta.json"
#: the trainer whose folders transformers.ner.v1 runs (meta.json's ``trainer``)
TRAINER = "train.transformers.ner.v1"


def transformers_missing() -> str | None:
    """Why transformers.ner.v1 cannot run here (a library missing), or None."""
    missing = [m for m in ("torch", "transformers") if importlib.util.find_spec(m) is None]
    if not missing:
        return None
    return (
        f"{' and '.join(missing)} not installed: install PyTorch's CPU build first "
        "(pip install torch==2.13.0; a plain torch requirement pulls 2.8 GB of CUDA "
        "wheels), then pip install 'casflow[transformers]'"
    )


def model_folder_problems(
    reference: str, workflow_dir: Path, max_length: int | None = None
) -> list[str]:
    """What keeps ``reference`` from being a folder this trainer wrote, whose windows of
    ``max_length`` pieces (None: the one it was trained with) the model can take."""
    folder = model_path(reference, workflow_dir)
    if not folder.is_dir():
        return [
            f"model: no folder at {where_looked(reference, workflow_dir)}; give the model "
            f"folder {TRAINER} wrote (final/model in its output)"
        ]
    try:
        meta = read_meta(folder)
    except (OSError, ValueError) as error:
        return [
            f"model: {folder / META_FILE} cannot be read ({error}); is it a model of {TRAINER}?"
        ]
    if meta.get("trainer") != TRAINER:
        return [
            f"model: {folder} was not written by {TRAINER} (its {META_FILE} says trainer "
            f"{meta.get('trainer')!r}); give a folder that {TRAINER} wrote"
        ]
    again = f"train it again with {TRAINER}"
    missing = [
        name
        for name in (CONFIG_FILE, WEIGHTS_FILE, TOKENIZER_FILE)
        if not (folder / name).is_file()
    ]
    if missing:
        return [
            f"model: {folder} has no {' and no '.join(missing)}; copy the whole folder "
            f"{TRAINER} wrote, or {again}"
        ]
    if meta.get("mention_type") not in (ANATOMY_MENTION, GENE_MENTION) or not isinstance(
        meta.get("max_length"), int
    ):
        return [f"model: {folder / META_FILE} lacks mention_type or max_length; {again}"]
    try:
        settings = encoder_config(folder)
    except (OSError, ValueError) as error:
        return [f"model: {folder / CONFIG_FILE} cannot be read as JSON ({error}); {again}"]
    # the tagger decodes with config.json's labels; meta.json's are what was trained
    labels = settings.get("id2label")
    found = (
        [str(labels.get(str(i))) for i in range(len(labels))] if isinstance(labels, dict) else None
    )
    if found != meta.get("tags"):
        return [
            f"model: the tags of {folder / CONFIG_FILE} (id2label: {found}) are not those "
            f"{META_FILE} says the model was trained on ({meta.get('tags')}); the two files come "
            f"from different trainings: copy the whole folder {TRAINER} wrote, or {again}"
        ]
    problem = positions_problem(max_length or meta["max_length"], settings, folder / CONFIG_FILE)
    return [problem] if problem else []


def read_meta(folder: Path) -> dict[str, Any]:
    meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
    if not isinstance(meta, dict):
        raise ValueError("not a JSON object")
    return meta


@contextlib.contextmanager
def transformers_quiet() -> Iterator[None]:
    """transformers' warnings (a load report of the weights a new head initialises) and
    progress bars off for the block, then as they were: a casflow run logs its own."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if bars:
            hf_logging.enable_progress_bar()


@dataclass
class LoadedModel:
    """A token-classification model in eval mode with its fast tokenizer and tag list."""

    model: Any
    tokenizer: Any
    #: tag per output index ("O", "B-Cell", "I-Cell", ...)
    tags: list[str]


def load_tokenizer(folder: Path, *, as_saved: bool = False) -> Any:
    """The folder's fast tokenizer, ready for words (``is_split_into_words``).

    A byte-level BPE tokenizer (RoBERTa, GPT-2 and their kin) marks a word that follows
    a space with a leading ``Ġ``; given words one by one it sees no space before any of
    them unless ``add_prefix_space`` is on, and cuts each word as if it were glued to
    the one before ("the" as "t" + "he" where running text has "Ġthe"): pieces the
    encoder was never pretrained on. So it is switched on for such a tokenizer, both as
    the setting (which the RoBERTa and GPT-2 classes build their pre-tokenizer from and
    save_pretrained records) and in the pre-tokenizer itself (which a generic
    ``PreTrainedTokenizerFast`` reads from tokenizer.json and the setting leaves as it
    is). ``as_saved``: the tokenizer as the folder has it, for a fine-tuned model
    folder, whose tokenizer was saved as it was trained (with the setting on, or, for a
    model of before casflow switched it on, without)."""
    from transformers import AutoTokenizer

    byte_level = is_byte_level(folder) and not as_saved
    options = {"add_prefix_space": True} if byte_level else {}
    with transformers_quiet():
        tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True, **options)
    if not tokenizer.is_fast:
        raise ValueError(
            f"{folder}: the tokenizer is not a fast tokenizer (no tokenizer.json); labels go "
            "on each word's first piece, which only a fast tokenizer tells"
        )
    if byte_level:
        _prefix_space_on(tokenizer)
    return tokenizer


def is_byte_level(folder: Path) -> bool:
    """Whether the folder's tokenizer.json pre-tokenizes byte-level (RoBERTa, GPT-2)."""
    return _byte_level_file(folder / TOKENIZER_FILE)


def _byte_level_file(path: Path) -> bool:
    """Whether the tokenizer.json at ``path`` pre-tokenizes byte-level (no file: no)."""
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False  # the tokenizer's own loading says what is wrong with it
    return isinstance(state, dict) and _byte_level_nodes(state.get("pre_tokenizer")) != []


def _byte_level_nodes(node: object) -> list[dict[str, Any]]:
    """The ByteLevel pre-tokenizers in a tokenizer.json ``pre_tokenizer`` (a Sequence
    holds others)."""
    if not isinstance(node, dict):
        return []
    if node.get("type") == "ByteLevel":
        return [node]
    return [
        found for inner in node.get("pretokenizers") or [] for found in _byte_level_nodes(inner)
    ]


def _prefix_space_on(tokenizer: Any) -> None:
    from tokenizers import Tokenizer

    backend = tokenizer.backend_tokenizer
    state = json.loads(backend.to_str())
    nodes = _byte_level_nodes(state.get("pre_tokenizer"))
    if all(node.get("add_prefix_space") for node in nodes):
        return
    for node in nodes:
        node["add_prefix_space"] = True
    backend.pre_tokenizer = Tokenizer.from_str(json.dumps(state)).pre_tokenizer
    tokenizer.add_prefix_space = True
    tokenizer.init_kwargs["add_prefix_space"] = True


def load_model(folder: Path) -> LoadedModel:
    """The model folder on the CPU, in eval mode."""
    from transformers import AutoModelForTokenClassification

    with transformers_quiet():
        model = AutoModelForTokenClassification.from_pretrained(str(folder), local_files_only=True)
    model.eval()
    id2label = model.config.id2label
    tags = [str(id2label[i]) for i in range(len(id2label))]
    return LoadedModel(model, load_tokenizer(folder, as_saved=True), tags)
