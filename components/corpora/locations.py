"""Where the gold corpora are: the one place that knows it.

The corpora folder (holding ``craft/``, ``bc2gm/``, ``genetag/`` and ``anatem/``) is
``$CASFLOW_CORPORA`` when set, else ``../shared/corpora``. A relative default is
taken from the working directory (workflows are run from the repository root),
never from where casflow's own files are installed; tests and benchmarks pass
the repository root instead, so they work from any working directory.

Files inside a corpus that more than one reader or trainer needs (the CRAFT
ontologies) are named here too.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV = "CASFLOW_CORPORA"
DEFAULT = Path("..") / "shared" / "corpora"


def corpora_root(relative_to: str | Path | None = None) -> Path:
    """``$CASFLOW_CORPORA``, else ``../shared/corpora`` (from ``relative_to`` when given,
    else as a path relative to the working directory)."""
    value = os.environ.get(ENV)
    if value:
        return Path(value)
    return Path(relative_to) / DEFAULT if relative_to is not None else DEFAULT


def corpus_dir(name: str, relative_to: str | Path | None = None) -> Path:
    """The folder of one corpus (``craft``, ``bc2gm``, ``genetag``, ``anatem``)."""
    return corpora_root(relative_to) / name


def default_corpus(name: str) -> str:
    """A reader's default ``corpus`` setting: the corpus folder as a string."""
    return str(corpus_dir(name))


def describe_default(name: str) -> str:
    """How a ``corpus`` field's description names the default."""
    return f"${ENV}/{name}, else {(DEFAULT / name).as_posix()}"


def ontology_file(folder: str | Path, ontology: str) -> Path:
    """The OBO file of ``ontology`` in a folder laid out as CRAFT's ``concept-annotation``:
    ``<ONT>/<ONT>/<ONT>.obo.zip``, or the unzipped ``.obo`` where only that exists."""
    base = Path(folder) / ontology / ontology
    zipped = base / f"{ontology}.obo.zip"
    plain = base / f"{ontology}.obo"
    return plain if not zipped.is_file() and plain.is_file() else zipped


def craft_ontologies(craft: str | Path) -> Path:
    """The folder of CRAFT's ontologies (and concept annotations)."""
    return Path(craft) / "concept-annotation"


def craft_ontology(craft: str | Path, ontology: str) -> Path:
    """CRAFT's OBO file of ``ontology`` (``concept-annotation/<ONT>/<ONT>/<ONT>.obo.zip``)."""
    return ontology_file(craft_ontologies(craft), ontology)
