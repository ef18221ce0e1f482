"""Models shipped with casflow, trained by casflow from the gold corpora.

Each model is a folder here; components name it ``casflow:NAME`` (resolved by
:func:`model_path`, checked by :func:`shipped_model_path`):

- ``craft_syntax``: spaCy pipeline (CRAFT tokenizer rules, tok2vec CNN, Penn XPOS
  tagger, dependency parser with CRAFT's CLEAR labels; sentences from the parse),
  trained on the 60 CRAFT train articles. See ``craft_syntax/MODEL_CARD.md``.
- ``craft_constituency``: Stanza constituency parser (``model.pt``, ``pretrain.pt``)
  trained on the 60 CRAFT train treebank articles by ``train.stanza.constituency.v1``
  (``casflow:craft_constituency`` in ``parse.constituency.v1``). See its MODEL_CARD.md.
- ``craft_opennlp``: Apache OpenNLP sentence detector, tokenizer, POS tagger, chunker
  and chunking parser trained on CRAFT train by ``train.opennlp.v1``
  (``model: casflow:craft_opennlp`` in ``opennlp.pipeline.v1``). See its MODEL_CARD.md.
- ``gene_bc2gm``: CRF gene/gene-product tagger trained on BC2GM train
  (``casflow:gene`` in ``ner.gene.v1``). See ``gene_bc2gm/MODEL_CARD.md``.
- ``anatomy_anatem``: vote of three CRF taggers for AnatEM's 12 classes
  (``casflow:anatomy`` in ``ner.anatomy.v1``). See ``anatomy_anatem/MODEL_CARD.md``.
- ``anatem_stanza``: Stanza NER tagger for AnatEM's 12 classes (``model.pt``,
  ``pretrain.pt``), a member of the anatomy vote of
  ``workflows/anatomy-stacking-eval.yaml`` (``casflow:anatem_stanza/model.pt`` in
  ``stanza.pipeline.v1``'s ``model_files``). See its MODEL_CARD.md.
- ``craft_syntax_members``: nine spaCy pipelines like ``craft_syntax`` (five
  cross-validation fold models, four right-to-left models), the members that
  ``workflows/craft-combination.yaml`` votes with it
  (``casflow:craft_syntax_members/rtl1`` in ``spacy.pipeline.v1``). See its MODEL_CARD.md.
"""

from __future__ import annotations

from pathlib import Path

MODELS_DIR = Path(__file__).resolve().parent
#: ``casflow:NAME`` in a component's ``model`` (or ``vectors``) names a model shipped here.
SHIPPED_PREFIX = "casflow:"
#: short names users write (``casflow:gene``) -> folder names here
ALIASES = {"gene": "gene_bc2gm", "anatomy": "anatomy_anatem"}


def is_shipped(reference: str) -> bool:
    """Whether ``reference`` names a shipped model (``casflow:NAME``)."""
    return reference.startswith(SHIPPED_PREFIX)


def _is_model(path: Path) -> bool:
    # every shipped model has its card; spaCy pipelines also have config.cfg, and
    # casflow's own folders meta.json
    return path.is_dir() and any(
        (path / name).is_file() for name in ("MODEL_CARD.md", "config.cfg", "meta.json")
    )


def installed_models() -> list[str]:
    """Names of the shipped model folders in this installation."""
    return sorted(p.name for p in MODELS_DIR.iterdir() if _is_model(p))


def shipped_model_path(name: str) -> Path:
    """Folder of the shipped model ``name`` (``casflow:NAME`` or ``NAME``, an alias or a
    folder name; FileNotFoundError if it is not installed).

    ``NAME/MEMBER`` names one model of a shipped group, a subfolder that is a model
    itself (``casflow:craft_syntax_members/rtl1``)."""
    name = name.removeprefix(SHIPPED_PREFIX)
    group, _, member = name.partition("/")
    path = MODELS_DIR / ALIASES.get(group, group)
    if "\\" in name or not _is_model(path) or group in ("", ".", ".."):
        raise FileNotFoundError(
            f"no shipped model {name!r} in {MODELS_DIR} "
            f"(installed: {', '.join(installed_models()) or 'none'}); "
            "reinstall casflow or retrain it as its MODEL_CARD.md says"
        )
    if not member:
        return path
    members = sorted(p.name for p in path.iterdir() if _is_model(p))
    if member not in members:  # also refuses "..", "a/b" and hidden names
        raise FileNotFoundError(
            f"shipped model {group!r} has no member {member!r} "
            f"(members: {', '.join(members) or 'none'}); see {path / 'MODEL_CARD.md'}"
        )
    return path / member


def model_path(reference: str, workflow_dir: Path | None = None) -> Path:
    """Where a model reference points, not checked (callers say what is missing in their
    own terms): ``casflow:NAME`` -> the shipped folder; anything else a path, ``~``
    expanded, taken as given when it exists or is absolute, else relative to the
    workflow's folder (so a workflow runs from any working directory)."""
    if is_shipped(reference):
        name = reference[len(SHIPPED_PREFIX) :]
        return MODELS_DIR / ALIASES.get(name, name)
    path = Path(reference).expanduser()
    if path.exists() or path.is_absolute() or workflow_dir is None:
        return path
    return workflow_dir / path


def where_looked(
    reference: str, workflow_dir: Path | None = None, member: str | None = None
) -> str:
    """Where :func:`model_path` looked for a reference that is missing, for messages:
    both places for a relative path, so a user sees which folder it was taken from.
    ``member`` is the file sought inside the referenced folder, named at each place.

    A relative reference that exists from the working directory was looked for there
    only (a folder without ``member``): that one place is named."""
    path = Path(reference).expanduser()

    def inside(folder: Path) -> Path:
        return folder / member if member else folder

    if is_shipped(reference) or path.is_absolute() or workflow_dir is None or path.exists():
        return str(inside(model_path(reference, workflow_dir)))
    if (workflow_dir / path).resolve() == path.resolve():
        return f"{inside(path)} (the working directory is the workflow's folder)"
    return f"{inside(path)} (from the working directory) nor at {inside(workflow_dir / path)}"
