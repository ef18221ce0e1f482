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


def model_folder_problems(reference: str, workflow_dir: Path) -> list[str]:
    """What keeps ``reference`` from being a folder this trainer wrote."""
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
    return []


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


def load_tokenizer(folder: Path) -> Any:
    from transformers import AutoTokenizer

    with transformers_quiet():
        tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    if not tokenizer.is_fast:
        raise ValueError(
            f"{folder}: the tokenizer is not a fast tokenizer (no tokenizer.json); labels go "
            "on each word's first piece, which only a fast tokenizer tells"
        )
    return tokenizer


def load_model(folder: Path) -> LoadedModel:
    """The model folder on the CPU, in eval mode."""
    from transformers import AutoModelForTokenClassification

    with transformers_quiet():
        model = AutoModelForTokenClassification.from_pretrained(str(folder), local_files_only=True)
    model.eval()
    id2label = model.config.id2label
    tags = [str(id2label[i]) for i in range(len(id2label))]
    return LoadedModel(model, load_tokenizer(folder), tags)
