"""What casflow's Stanza trainers share: their ``vectors``, ``threads`` and pass-through
option fields, Stanza's pretrain made from casflow's word vectors (or from word2vec
vectors trained first on unlabelled text), checking the Stanza options a workflow
passes through, the versions a checkpoint depends on, and saving a file so that a
kill leaves the previous one."""

from __future__ import annotations

import argparse
import hashlib
import random
import shutil
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import Field

from casflow.components.gensim.word2vec import (
    Word2VecParameters,
    fit_word2vec,
    gensim_missing,
    write_word2vec_text,
)
from casflow.components.models import is_shipped, model_path, shipped_model_path
from casflow.components.stanza.constituency import PRETRAIN_FILE
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
from casflow.pipeline.fingerprints import fingerprint, forget, mark_done, read_marker

#: a value in a pass-through option field (true: a flag)
OptionValue = str | int | float | bool
StanzaOptions = Mapping[str, OptionValue]


def vectors_field(more: str = "") -> Any:
    """The ``vectors`` config field (what :func:`build_pretrain` reads); ``more``: what
    else a trainer's field takes."""
    return Field(
        "casflow:craft_syntax",
        description="Word vectors for Stanza's pretrain: a spaCy pipeline with vectors "
        "(casflow:NAME or a folder), a word2vec text file (.txt/.vec), or a Stanza "
        "pretrain file (.pt)." + more,
    )


class Word2VecText(Word2VecParameters):
    """word2vec (skip-gram) on unlabelled text, for Stanza's pretrain."""

    text: list[TextSource | DefinitionText] = text_field()
    ontologies: str | None = Field(None, description=ONTOLOGIES_DESCRIPTION)
    max_words: int = Field(
        100000, gt=0, description="Keep the vectors of this many most frequent words."
    )
    seed: int = Field(
        0,
        description="word2vec's seed (the vectors are a resource: the model's seed "
        "does not change them).",
    )


class TrainedVectors(ComponentConfig):
    word2vec: Word2VecText = Field(description="Train word2vec vectors (needs gensim).")


def word2vec_problems(vectors: TrainedVectors, context: RunContext) -> list[str]:
    """gensim is installed and the text can be read."""
    problems = [f"vectors: {missing}"] if (missing := gensim_missing()) else []
    settings = vectors.word2vec
    return problems + [
        f"vectors: word2vec text: {p}"
        for p in text_problems(settings.text, settings.ontologies, context)
    ]


def word2vec_file(
    vectors: TrainedVectors,
    context: RunContext,
    tokenize: Callable[[str], Sequence[str]],
    data: Path,
    log: Callable[[str], None],
) -> Path:
    """word2vec vectors of ``vectors.word2vec`` as a text file in ``data`` (trained once
    per settings; a finished file is kept), the sentences cut into tokens by
    ``tokenize``, which must cut as the model's input is cut, or words miss their
    vectors."""
    settings = vectors.word2vec
    target = data / "word2vec.txt"
    marker = data / "word2vec.json"
    # The settings name the gold sources (reader and config) the text comes from; the
    # text itself is not read to check it, which would cost every rerun that reading.
    key = fingerprint(settings.model_dump(mode="json"))
    if target.exists() and read_key(marker) == key:
        return target
    forget(marker)  # a run killed while rewriting the file must not find it trusted
    sentences = [
        tokens
        for line in read_texts(settings.text, settings.ontologies, context, log)
        if (tokens := list(tokenize(line)))
    ]
    log(f"word vectors: word2vec on {len(sentences)} sentences, {sum(map(len, sentences))} tokens")
    words, table = fit_word2vec(sentences, **settings.fit_arguments(), seed=settings.seed)
    save_atomically(lambda path: write_word2vec_text(words, table, path), target)
    mark_done(marker, key)
    log(f"word vectors: {len(words)} words -> {target}")
    return target


def threads_field() -> Any:
    """The ``threads`` config field."""
    return Field(1, ge=1, description="PyTorch threads (results depend on it; keep it fixed).")


def options_field(program: str, module: str, examples: str = "") -> Any:
    """A config field (annotated ``dict[str, OptionValue]``) of options passed through
    to ``program``, Stanza's argument parser in ``module``; check it with
    :func:`option_problems`. ``examples``: option names worth naming."""
    such_as = f", e.g. {examples}" if examples else ""
    return Field(
        default_factory=dict,
        description=f"Other options of {program} ({module}: name without dashes -> value; "
        f"true for a flag){such_as}; checked against Stanza's argument parser.",
    )


def vectors_problems(vectors: str, workflow_dir: Path) -> list[str]:
    """The configured vectors exist (shipped models are checked when loaded)."""
    if is_shipped(vectors):
        return []
    path = model_path(vectors, workflow_dir)
    return [] if path.exists() else [f"vectors: nothing at {path}"]


def build_pretrain(
    vectors: str, workflow_dir: Path, data: Path, log: Callable[[str], None]
) -> Path:
    """Stanza's pretrain file from ``vectors`` (made once per data folder): a spaCy
    pipeline with vectors (``casflow:NAME`` or a folder), a word2vec text file
    (.txt/.vec), or a Stanza pretrain file (.pt, used as it is)."""
    if vectors.endswith(".pt") and not is_shipped(vectors):
        return model_path(vectors, workflow_dir)
    target = data / PRETRAIN_FILE
    text = data / "vectors.txt"
    if vectors.endswith((".txt", ".vec")):
        shutil.copyfile(model_path(vectors, workflow_dir), text)
    else:
        spacy_vectors_text(vectors, workflow_dir, text)
    if target.exists() and read_key(data / "pretrain.json") == fingerprint(files=[text]):
        return target
    from stanza.models.common.pretrain import Pretrain

    target.unlink(missing_ok=True)
    Pretrain(str(target), str(text)).load()
    mark_done(data / "pretrain.json", fingerprint(files=[text]))
    log(f"Stanza pretrain from {vectors}: {target}")
    return target


def spacy_vectors_text(source: str, workflow_dir: Path, target: Path) -> None:
    """A spaCy pipeline's vectors as a word2vec text file (words with spaces skipped)."""
    import spacy

    folder = shipped_model_path(source) if is_shipped(source) else model_path(source, workflow_dir)
    nlp = spacy.load(folder)
    vectors = nlp.vocab.vectors
    if not vectors.shape[0]:
        raise ValueError(f"vectors: the spaCy pipeline {source} has no word vectors")
    rows = sorted(vectors.key2row.items(), key=lambda item: item[1])
    words = [nlp.vocab.strings[key] for key, _ in rows]
    write_word2vec_text(words, vectors.data[[row for _, row in rows]], target, decimals=6)


#: Stanza options that make a model read character language models from other files:
#: refused before any document by the trainers whose model folders would not carry them
#: (a 100-minute NER training with them failed at its final scoring). The NER trainer
#: sets them itself from its ``charlm`` key and copies the files into its folder.
_CHARLM_OPTIONS = frozenset({"charlm", "charlm_forward_file", "charlm_backward_file"})


def option_settings(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Each option of Stanza's argument ``parser`` (without dashes) -> the setting it
    sets (its argparse destination): ``multistage`` and ``no_multistage`` both set
    ``multistage``; ``no_check_valid_states`` sets ``check_valid_states``, which is no
    option."""
    return {
        option.lstrip("-"): action.dest
        for action in parser._actions
        for option in action.option_strings
    }


def option_problems(
    options: StanzaOptions,
    parser: argparse.ArgumentParser,
    own: Collection[str],
    key: str = "stanza_options",
    trainer: str = "Stanza's trainer",
) -> list[str]:
    """Options that Stanza's argument ``parser`` does not take (a setting's name that is
    no option string, such as ``check_valid_states``, fails on Stanza's command line),
    that set what casflow sets (``own``, or another option of the same setting), or
    that make the model need files its folder would not carry."""
    settings = option_settings(parser)
    owned = {settings.get(name, name) for name in own}
    problems = []
    for name, value in options.items():
        if name in own or settings.get(name) in owned:
            problems.append(f"{key}.{name}: set by casflow (use the config's own key)")
        elif name not in settings:
            setting_of = sorted(option for option, dest in settings.items() if dest == name)
            hint = (
                f"; {name} is the setting that {' and '.join(setting_of)} set: give one of those"
                if setting_of
                else ""
            )
            problems.append(f"{key}.{name}: not an option of {trainer}{hint}")
        elif name in _CHARLM_OPTIONS and value is not False:
            problems.append(
                f"{key}.{name}: {trainer} cannot use character language models in casflow "
                "yet (Stanza's model file keeps only their paths and the model folder would "
                "not carry them, so the final model could be neither scored nor run; only "
                f"train.stanza.ner.v1 has a charlm key); leave {name} out"
            )
    return problems


def with_defaults(
    defaults: StanzaOptions, options: StanzaOptions, parser: argparse.ArgumentParser
) -> dict[str, OptionValue]:
    """casflow's ``defaults`` for Stanza's ``parser`` with a workflow's ``options``: an
    option the workflow gives replaces casflow's default of the same option, or of
    another option of the same setting (``multistage: true`` over casflow's
    ``no_multistage``; on the command line, sorted by name, the later would win). An
    option set to false is left out, so it replaces only a default of its own name."""
    settings = option_settings(parser)
    given = {settings.get(name, name) for name, value in options.items() if value is not False}
    kept = {
        name: value
        for name, value in defaults.items()
        if name not in options and settings.get(name, name) not in given
    }
    return {**kept, **options}


def command_line(options: StanzaOptions) -> list[str]:
    """Options as Stanza's argument parsers take them (true: a flag; false: left out)."""
    args = []
    for name, value in sorted(options.items()):
        if value is True:
            args.append(f"--{name}")
        elif value is not False:
            args.append(f"--{name}={value}")
    return args


def read_key(path: Path) -> str | None:
    return (read_marker(path) or {}).get("fingerprint")


def library_versions() -> dict[str, str]:
    from importlib.metadata import version

    return {name: version(name) for name in ("stanza", "torch")}


def seed_streams(seed: int, *where: object) -> None:
    """Python's, NumPy's and torch's random streams seeded from ``seed`` and where in a
    run they are (a step name, an epoch), so a resumed run draws what an unbroken one
    would."""
    import numpy as np
    import torch

    text = ":".join(str(w) for w in (seed, *where))
    random.seed(text)
    number = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
    torch.manual_seed(number)
    np.random.seed(number)
