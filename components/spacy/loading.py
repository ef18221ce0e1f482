"""Finding and loading spaCy pipelines, once per process.

A pipeline is named by an installed package (``en_core_sci_md``) or a folder
written by ``nlp.to_disk`` (one holding ``config.cfg``). Loading is cached per
process, keyed by where the pipeline lives and by the options that change it
(disabled pipes, tokenizer), so every component of a worker that asks for the
same pipeline shares one copy.

A missing package is never installed by guessing its name on PyPI: the
scispaCy models (``en_core_sci_*``, ``en_ner_*``) are distributed by the
scispaCy project, and the PyPI project ``en-core-sci-md`` is a name-squatting
placeholder. The error says where the model really comes from.
"""

from __future__ import annotations

import functools
import importlib.metadata
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from casflow.components.models import is_shipped, shipped_model_path
from casflow.pipeline.component import DocumentError

if TYPE_CHECKING:
    from spacy.language import Language

TokenizerChoice = Literal["pipeline", "scispacy_combined"]

SCISPACY_MODELS_URL = "https://allenai.github.io/scispacy/"
_SCISPACY_MODEL = re.compile(r"en_(core_sci|ner)_\w+")
_SPACY_MODEL = re.compile(r"[a-z]{2,3}_(core|dep|ent|sent)_\w+")


class ModelNotFoundError(DocumentError, LookupError):
    """The pipeline is neither an installed package nor a pipeline folder."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(f"{message}; {hint}" if hint else message)
        self.hint = hint


def looks_like_path(model: str) -> bool:
    """A model given as a path rather than a package name."""
    return any(sep in model for sep in ("/", "\\")) or model.startswith((".", "~"))


def resolve_model_path(model: str, base_dir: Path | None = None) -> Path | None:
    """The folder ``model`` names, if it is one (relative to ``base_dir`` when not in the cwd)."""
    path = Path(model).expanduser()
    if path.exists():
        return path
    if not path.is_absolute() and base_dir is not None and (base_dir / path).exists():
        return base_dir / path
    return None


def is_installed_package(name: str) -> bool:
    """Whether ``name`` is an installed pipeline package (without importing it)."""
    # spacy.load only takes packages installed with metadata (pip), not bare modules.
    # This is spacy.util.is_package without importing spaCy, which imports thinc and,
    # where it is installed, torch: seconds the parent of a run would spend for nothing.
    if not name.isidentifier():
        return False
    try:
        importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def install_hint(model: str) -> str:
    """What to do when the pipeline ``model`` is not installed."""
    if _SCISPACY_MODEL.fullmatch(model):
        return (
            "scispaCy models are distributed by the scispaCy project, not PyPI: do not pip "
            "install a model by its name (PyPI's 'en-core-sci-md' is a name-squatting "
            f"placeholder). Install it with pip install <URL of {model} from the model "
            f"table of the scispaCy README, {SCISPACY_MODELS_URL}>, or set model to the "
            "folder of an unpacked copy (the one holding config.cfg)"
        )
    if _SPACY_MODEL.fullmatch(model):
        return (
            f"install it with: python -m spacy download {model} (or give the folder of a "
            "saved pipeline, the one holding config.cfg)"
        )
    return (
        "install the package that provides it, or set model to the folder of a saved "
        "pipeline (the one holding config.cfg, as written by nlp.to_disk or spacy train)"
    )


def _folder_problem(path: Path, shipped: str | None = None) -> str | None:
    """Why ``path`` is no spaCy pipeline folder, or None; ``shipped`` is the
    ``casflow:NAME`` it was named by, so the message names models as users write them."""
    if (path / "config.cfg").is_file():
        return None
    nested = sorted(p.parent for p in path.glob("*/config.cfg"))
    if shipped is not None:
        if nested:
            return f"{shipped} is a group of spaCy pipelines; name one of them: " + ", ".join(
                f"{shipped}/{p.name}" for p in nested
            )
        return f"{shipped} is not a spaCy pipeline (no config.cfg in {path})"
    if nested:
        return f"{path} holds no config.cfg, but {nested[0]} does; set model to that folder"
    return (
        f"{path} is not a spaCy pipeline folder (no config.cfg); set model to the folder "
        "written by nlp.to_disk or spacy train"
    )


@dataclass(frozen=True)
class ModelLocation:
    """Where a pipeline lives: an installed package or a folder."""

    source: str  # package name, or absolute folder path
    is_path: bool


def locate_model(model: str, base_dir: Path | None = None) -> ModelLocation:
    """Find ``model`` without loading it; raise ModelNotFoundError saying what to do.

    A name that looks like a path is a folder; otherwise an installed package
    wins over a folder of the same name, as in ``spacy.load``. ``casflow:NAME``
    names a model shipped with casflow (``casflow.components.models``).
    """
    if is_shipped(model):
        try:
            folder = shipped_model_path(model)
        except FileNotFoundError as exc:
            raise ModelNotFoundError(str(exc)) from exc
        problem = _folder_problem(folder, model)
        if problem:  # a group, or a model of another tool
            raise ModelNotFoundError(problem)
        return ModelLocation(str(folder), is_path=True)
    if not looks_like_path(model) and is_installed_package(model):
        return ModelLocation(model, is_path=False)
    path = resolve_model_path(model, base_dir)
    if path is not None:
        problem = _folder_problem(path)
        if problem:
            raise ModelNotFoundError(problem)  # the message says what to do
        return ModelLocation(str(path.resolve()), is_path=True)
    if looks_like_path(model):
        raise ModelNotFoundError(
            f"spaCy pipeline folder {model!r} does not exist",
            "check the path (relative paths are taken from the working directory, "
            "then from the workflow's folder)",
        )
    raise ModelNotFoundError(f"spaCy pipeline {model!r} is not installed", install_hint(model))


def model_problem(model: str, base_dir: Path | None = None) -> str | None:
    """Why ``model`` cannot be loaded, checked without loading it; None when it can."""
    try:
        locate_model(model, base_dir)
    except ModelNotFoundError as exc:
        return str(exc)
    return None


def load_pipeline(
    model: str,
    disable: Sequence[str] = (),
    tokenizer: TokenizerChoice = "pipeline",
    base_dir: Path | None = None,
) -> Language:
    """The pipeline ``model`` (package name or folder), loaded once per process."""
    location = locate_model(model, base_dir)
    return _load_cached(location, tuple(sorted(set(disable))), tokenizer)


@functools.lru_cache(maxsize=8)
def _load_cached(
    location: ModelLocation, disable: tuple[str, ...], tokenizer: TokenizerChoice
) -> Language:
    import spacy

    source = location.source
    # A Path makes spaCy load the folder even when a package has the same name.
    nlp = spacy.load(Path(source) if location.is_path else source)
    unknown = [name for name in disable if name not in nlp.component_names]
    if unknown:
        raise ValueError(
            f"disable names pipes that {source!r} does not have: {', '.join(unknown)} "
            f"(its pipes: {', '.join(nlp.component_names)})"
        )
    for name in disable:
        nlp.disable_pipe(name)
    if tokenizer == "scispacy_combined":
        from scispacy.custom_tokenizer import combined_rule_tokenizer

        nlp.tokenizer = combined_rule_tokenizer(nlp)
    return nlp


def clear_cache() -> None:
    """Forget loaded pipelines (tests, or a worker that must free memory)."""
    _load_cached.cache_clear()


def pipeline_config_path(model: str, base_dir: Path | None = None) -> Path | None:
    """The ``config.cfg`` of ``model``, found without importing or loading it."""
    import importlib.util

    try:
        location = locate_model(model, base_dir)
    except ModelNotFoundError:
        return None
    if location.is_path:
        return Path(location.source) / "config.cfg"
    spec = importlib.util.find_spec(location.source)
    if spec is None or not spec.submodule_search_locations:
        return None
    # A packaged pipeline keeps its data in <package>/<name>-<version>/.
    for package_dir in spec.submodule_search_locations:
        found = sorted(Path(package_dir).glob("*/config.cfg"))
        if found:
            return found[-1]
    return None


#: The module spaCy's thinc imports wherever it is installed (``thinc.compat``), a second
#: or more of a process's start, though a pipeline uses it only through a torch layer.
TORCH = "torch"

#: spaCy's own pipe factories: none needs torch unless its model does.
SPACY_FACTORIES = frozenset(
    {
        "attribute_ruler", "beam_ner", "beam_parser", "doc_cleaner", "entity_linker",
        "entity_ruler", "future_entity_ruler", "lemmatizer", "merge_entities",
        "merge_noun_chunks", "merge_subtokens", "morphologizer", "ner", "parser",
        "sentencizer", "senter", "span_finder", "span_ruler", "spancat",
        "spancat_singlelabel", "tagger", "textcat", "textcat_multilabel", "tok2vec",
        "token_splitter", "trainable_lemmatizer",
    }
)  # fmt: skip
# Registered functions of spaCy (and the libraries it registers from) and thinc's own
# unprefixed ones (Adam.v1, compounding.v1); a name with "torch" in it wraps torch.
_SPACY_NAMESPACES = ("spacy.", "spacy-legacy.", "srsly.")
_THINC_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\.v\d+")


def _registered_names(node: object) -> Iterator[str]:
    """The registered functions a config names (``@architectures = "spacy.Tok2Vec.v2"``)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(key, str) and key.startswith("@"):
                yield str(value)
            else:
                yield from _registered_names(value)
    elif isinstance(node, list | tuple):
        for item in node:
            yield from _registered_names(item)


@functools.lru_cache(maxsize=32)
def config_needs_torch(config_path: Path) -> bool:
    """Whether the saved pipeline of ``config_path`` may need torch, judged from the
    config alone (nothing imported): no, when it has only spaCy's own pipes and names
    only spaCy's and thinc's registered functions, none of them a torch wrapper
    (``spacy.TorchBiLSTMEncoder.v1``, ``PyTorchWrapper.v3``). Anything else
    (transformers, a plug-in's pipe or layer, a pipe sourced from another pipeline,
    a config that cannot be read) may need it."""
    from confection import Config

    try:
        config = Config().from_disk(config_path, interpolate=False)
    except Exception:
        return True
    components = config.get("components") or {}
    for section in components.values():
        if not isinstance(section, dict) or section.get("factory") not in SPACY_FACTORIES:
            return True
    for name in _registered_names(dict(config)):
        if "torch" in name.lower():
            return True
        if not (name.startswith(_SPACY_NAMESPACES) or _THINC_NAME.fullmatch(name)):
            return True
    return False


def model_needs_torch(model: str, base_dir: Path | None = None) -> bool:
    """Whether the pipeline ``model`` may need torch (see ``config_needs_torch``);
    True where its config cannot be found."""
    config_path = pipeline_config_path(model, base_dir)
    return config_path is None or config_needs_torch(config_path)


def pipeline_factories(config_path: Path, disable: Sequence[str] = ()) -> list[str] | None:
    """Factories of the pipes a saved pipeline runs (None where one is sourced)."""
    # confection is the config system spaCy's own load_config uses, without spaCy.
    from confection import Config

    config = Config().from_disk(config_path, interpolate=False)
    nlp_section = config.get("nlp", {})
    skipped = set(disable) | set(nlp_section.get("disabled", []))
    factories = []
    for name in nlp_section.get("pipeline", []):
        if name in skipped:
            continue
        factory = config.get("components", {}).get(name, {}).get("factory")
        if factory is None:
            return None
        factories.append(factory)
    return factories
