"""Loading a Stanza pipeline from local files only (never a download).

Two ways to name the models, combinable:

- ``resources_dir``: a Stanza resources directory (``stanza.download(...)`` wrote it on
  some machine: ``resources.json`` plus ``<lang>/<processor>/<package>.pt``), with
  ``package`` / ``processor_packages`` choosing the packages (``craft``, ``genia``,
  ``anatem``, ...) as ``stanza.Pipeline`` does;
- ``model_files``: per processor the model file and its pretrain / charlm files (e.g.
  models trained with Stanza's own trainers). Without ``resources_dir`` an empty
  resources file in a folder of the user's own (``~/.cache/casflow/stanza/empty-resources``)
  stands in for ``resources.json``, so Stanza resolves nothing by itself and looks for
  nothing on the network.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import os
import stat
import tempfile
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from casflow.components.models import model_path, where_looked
from casflow.pipeline.component import ComponentConfig
from casflow.pipeline.jvm import cache_dir

StanzaProcessor = Literal["tokenize", "mwt", "pos", "lemma", "depparse", "ner", "constituency"]


def run_threads_field() -> Any:
    """The ``threads`` field of a step running Stanza's models."""
    return Field(
        1,
        ge=1,
        description="PyTorch threads while this step runs, in each worker. The run already "
        "parallelises over documents (run.jobs); raise it only with cores to spare. More "
        "threads than free cores make PyTorch's threads wait on one another (AnatEM devel's "
        "Stanza NER step took 450 s instead of 13 s beside one busy core).",
    )


@contextlib.contextmanager
def torch_threads(threads: int) -> Iterator[None]:
    """PyTorch's intra-op thread count set to ``threads`` for the block, then restored:
    the count is per process, shared by every step and trainer in it."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


class ModelFiles(ComponentConfig):
    """One processor's files (relative paths also from the workflow's folder)."""

    model: str = Field(description="The processor's model file (.pt).")
    pretrain: str | None = Field(
        None,
        description="Word vectors in Stanza's pretrain format (pos, depparse, ner, constituency).",
    )
    forward_charlm: str | None = Field(
        None, description="Forward character LM, if trained with one."
    )
    backward_charlm: str | None = Field(
        None, description="Backward character LM, if trained with one."
    )


def as_read_from_treebank(word: str) -> str:
    """A word of a bracketed tree as Stanza's tree reader hands it to the parser: it turns
    ``-LRB-`` / ``-RRB-`` back into round brackets and leaves every other escape
    (``-LCB-``, ``-LSB-``) as written. Parsers trained from treebank files know words so."""
    return word.replace("-LRB-", "(").replace("-RRB-", ")")


def stanza_missing() -> str | None:
    if importlib.util.find_spec("stanza") is None:
        return (
            "Stanza is not installed: install PyTorch's CPU build first "
            "(pip install torch==2.13.0; a plain torch requirement pulls 2.8 GB of CUDA "
            "wheels), then pip install 'casflow[stanza]'"
        )
    return None


def file_problems(
    lang: str,
    processors: Mapping[StanzaProcessor, str],
    resources_dir: str | None,
    model_files: Mapping[StanzaProcessor, ModelFiles],
    workflow_dir: Path,
    pretokenized: bool = False,
) -> list[str]:
    """Every missing file, each with what to download or train and where it goes."""
    problems: list[str] = []
    for name, files in model_files.items():
        for role, value in files.model_dump().items():
            if value is not None and not model_path(value, workflow_dir).is_file():
                problems.append(
                    f"model_files.{name}.{role}: no file at {where_looked(value, workflow_dir)}"
                )
        problems += _charlm_problems(name, files, workflow_dir)
        problems += _pretrain_problems(name, files, workflow_dir)
    # lemma: identity is Stanza's model-free lemmatizer (the word itself).
    from_resources = [
        p
        for p in processors
        if p not in model_files and not (p == "lemma" and processors[p] == "identity")
    ]
    if not from_resources:
        return problems
    if resources_dir is None:
        problems.append(
            f"processors {', '.join(from_resources)} have no model_files and no resources_dir "
            "is set: give each a model file, or a Stanza resources directory"
        )
        return problems
    root = model_path(resources_dir, workflow_dir)
    if not (root / "resources.json").is_file():
        problems.append(
            f"resources_dir {root} has no resources.json: on a machine with network run "
            f"python -c \"import stanza; stanza.download('{lang}', model_dir='{root}', "
            f'processors={dict((p, processors[p]) for p in from_resources)!r})" and copy the '
            "folder here (casflow never downloads at run time)"
        )
        return problems
    for name in from_resources:
        package = processors[name]
        if package == "default":
            continue  # the language's default package: Stanza resolves it at load
        model = root / lang / name / f"{package}.pt"
        if not model.is_file():
            problems.append(
                f"no Stanza {name} model {package!r} at {model}: download it with "
                f"stanza.download('{lang}', model_dir='{root}', package=None, "
                f"processors={{'{name}': '{package}'}}) on a machine with network"
            )
    return problems


def _charlm_problems(name: str, files: ModelFiles, workflow_dir: Path) -> list[str]:
    """A model from casflow's NER trainer whose folder names character language models
    (its meta.json) needs them given: Stanza would otherwise look for them where they
    were at training time, and fail at load time on any other machine."""
    folder = model_path(files.model, workflow_dir).parent
    try:
        pair = json.loads((folder / "meta.json").read_text(encoding="utf-8")).get("charlm", {})
    except (OSError, ValueError, AttributeError):
        return []
    given = {d: getattr(files, f"{d}_charlm") for d in ("forward", "backward")}
    missing = [
        f"model_files.{name}.{direction}_charlm: {files.model} was trained with character "
        f"language models; give {folder / pair[direction]} (its folder carries it)"
        for direction in ("forward", "backward")
        if direction in pair and given[direction] is None
    ]
    return missing + given_charlm_problems(
        given, workflow_dir, lambda direction: f"model_files.{name}.{direction}_charlm"
    )


def _pretrain_problems(name: str, files: ModelFiles, workflow_dir: Path) -> list[str]:
    """A constituency model saves the path of the word vectors it was trained with.
    Given no pretrain, Stanza looks for them at that path and, not finding them there,
    downloads its default vectors when the pipeline is built: in every worker, after
    validation, and without network it fails with a traceback."""
    if name != "constituency" or files.pretrain is not None:
        return []
    path = model_path(files.model, workflow_dir)
    if not path.is_file():
        return []  # reported as missing
    trained_with = constituency_pretrain_of(path)
    if trained_with is None:
        return []
    return [
        f"model_files.{name}.pretrain: {files.model} was trained with word vectors "
        f"({trained_with} when it was trained); give that file (Stanza's pretrain format) "
        "as pretrain, or Stanza would try to download its default vectors at run time"
    ]


def constituency_pretrain_of(path: Path) -> str | None:
    """The word-vector file a Stanza constituency model was trained with (its saved
    ``wordvec_pretrain_file``), or None: none, or not a file torch reads (reported when
    Stanza loads it)."""
    try:
        import torch
    except ImportError:
        return None  # the missing stanza extra is reported on its own
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
        value = checkpoint["params"]["config"].get("wordvec_pretrain_file")
    except Exception:  # torch raises many kinds for a file that is not its own
        return None
    return str(value) if value else None


def given_charlm_problems(
    given: Mapping[str, str | None], workflow_dir: Path, key: Callable[[str], str]
) -> list[str]:
    """:func:`charlm_file_problem` of each given file that exists (direction -> path as
    written), each after its config ``key``; a missing file is reported elsewhere."""
    problems = []
    for direction, value in given.items():
        path = model_path(value, workflow_dir) if value is not None else None
        if path is not None and path.is_file():
            problem = charlm_file_problem(path, direction)
            if problem is not None:
                problems.append(f"{key(direction)}: {problem}")
    return problems


def charlm_file_problem(path: Path, direction: str) -> str | None:
    """What is wrong with ``path`` as the ``direction`` character language model, or
    None. A swapped pair loads and tags without an error, only worse, so the direction
    each file was trained in (Stanza keeps it in the file) is checked before the run."""
    try:
        import torch
    except ImportError:
        return None  # the missing stanza extra is reported on its own
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
        # Stanza's own files hold the model's state at the top (older ones) or under
        # "model" (what its trainer and casflow's save)
        model = state if "state_dict" in state else state["model"]
        forward = bool(model["is_forward_lm"])
    except Exception as error:  # torch raises many kinds for a file that is not its own
        return f"{path} is not a Stanza character language model ({type(error).__name__}: {error})"
    if forward != (direction == "forward"):
        trained = "forward" if forward else "backward"
        return f"{path} is a {trained} character language model: swap forward and backward"
    return None


_PRIVATE_RESOURCES: Path | None = None


def _empty_resources_dir() -> Path:
    """A folder holding an empty resources.json, which Stanza insists on: it then
    resolves nothing itself. One folder per user in casflow's cache, made once and kept
    (a folder made per process was left behind by every worker of every run: worker
    processes end without running clean-up code). Not a name known in advance in the
    shared temporary directory: another user could make it first (every Stanza step
    then failed) or fill it with a resources.json of their own, naming models Stanza
    would load. A folder in the cache that is not this user's alone is not used either:
    each process then makes a private one in the temporary directory."""
    folder = cache_dir("stanza") / "empty-resources"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        problem = _not_private(folder)
        if problem is None:
            resources = folder / "resources.json"
            if not (resources.is_file() and resources.read_text(encoding="utf-8") == "{}"):
                _write_empty_resources(folder)
            return folder
    except OSError as error:
        problem = f"cannot be written ({error})"
    global _PRIVATE_RESOURCES
    if _PRIVATE_RESOURCES is None or not (_PRIVATE_RESOURCES / "resources.json").is_file():
        _PRIVATE_RESOURCES = Path(tempfile.mkdtemp(prefix="casflow-stanza-resources-"))
        _write_empty_resources(_PRIVATE_RESOURCES)
        # Said once per process, in the run report where a document was being read.
        warnings.warn(
            f"{folder} {problem}; Stanza's empty resources.json is in {_PRIVATE_RESOURCES} "
            "for this process instead (one such folder per process is left behind): make "
            f"{folder} a folder of yours that only you can write to, or set XDG_CACHE_HOME "
            "to a folder of yours",
            RuntimeWarning,
            stacklevel=2,
        )
    return _PRIVATE_RESOURCES


def _not_private(folder: Path) -> str | None:
    """Why ``folder`` may hold what another user wrote, or None."""
    status = folder.lstat()
    if stat.S_ISLNK(status.st_mode) or not stat.S_ISDIR(status.st_mode):
        return "is not a folder but a link or a file"
    if os.name == "nt":  # no uid; the mode bits say nothing of who may write there
        return None
    if status.st_uid != os.getuid():
        return f"belongs to another user (uid {status.st_uid})"
    if status.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"can be written by others (mode {stat.S_IMODE(status.st_mode):o})"
    return None


def _write_empty_resources(folder: Path) -> None:
    # workers start together: each writes its own file and renames it into place
    with tempfile.NamedTemporaryFile(
        "w", dir=folder, prefix=".resources-", suffix=".json", delete=False
    ) as part:
        part.write("{}")
    os.replace(part.name, folder / "resources.json")


def build_pipeline(
    lang: str,
    processors: Mapping[StanzaProcessor, str],
    resources_dir: str | None,
    model_files: Mapping[StanzaProcessor, ModelFiles],
    workflow_dir: Path,
    options: Mapping[str, Any],
    pretokenized: bool = False,
) -> Any:
    """A ``stanza.Pipeline`` on the CPU with ``download_method=None``."""
    problems = file_problems(
        lang, processors, resources_dir, model_files, workflow_dir, pretokenized
    )
    if problems:
        raise FileNotFoundError("; ".join(problems))
    import stanza

    kwargs: dict[str, Any] = dict(options)
    processors = dict[StanzaProcessor, str](processors)
    if pretokenized:
        # Stanza's taggers require a tokenize processor; pretokenized, it loads no model.
        processors.setdefault("tokenize", "default")
        kwargs["tokenize_pretokenized"] = True
    if processors.get("lemma") == "identity" and "lemma" not in model_files:
        # Without a resources.json entry Stanza would look for a lemma model file.
        kwargs["lemma_use_identity"] = True
    for name, files in model_files.items():
        kwargs[f"{name}_model_path"] = str(model_path(files.model, workflow_dir))
        if files.pretrain:
            kwargs[f"{name}_pretrain_path"] = str(model_path(files.pretrain, workflow_dir))
        if files.forward_charlm:
            kwargs[f"{name}_forward_charlm_path"] = str(
                model_path(files.forward_charlm, workflow_dir)
            )
        if files.backward_charlm:
            kwargs[f"{name}_backward_charlm_path"] = str(
                model_path(files.backward_charlm, workflow_dir)
            )
    if resources_dir is not None:
        folder = model_path(resources_dir, workflow_dir)
        unknown_language = not _language_known(folder, lang)
    else:
        folder = _empty_resources_dir()
        unknown_language = True
    # With casflow's empty resources.json every language is "unknown" to Stanza, which
    # warns so for each pipeline; that says nothing about the model files given.
    level = logging.ERROR if resources_dir is None else logging.WARNING
    return stanza.Pipeline(
        lang=lang,
        dir=str(folder),
        processors=dict(processors),
        download_method=None,
        use_gpu=False,
        logging_level=logging.getLevelName(level),
        allow_unknown_language=unknown_language,
        **kwargs,
    )


def _language_known(folder: Path, lang: str) -> bool:
    try:
        return lang in json.loads((folder / "resources.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
