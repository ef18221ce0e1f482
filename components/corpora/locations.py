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


#: How messages name each corpus, and the subfolders that tell its folder from another.
_CORPORA = {
    "craft": ("CRAFT", ("articles", "structural-annotation")),
    "bc2gm": ("BC2GM", ("bc2-format",)),
    "genetag": ("GENETAG", ("train", "devtest")),
    "anatem": ("AnatEM", ("nersuite", "splits")),
}


def missing_corpus(name: str, folder: str | Path, *, given: bool) -> str | None:
    """Why the folder of corpus ``name`` cannot be read (None when it can): its absolute
    path and what to set. For the default folder (``given`` False) it says where the
    default came from, since a relative default depends on the working directory. A
    'corpus' naming the corpora folder itself (holding ``name/``) is said to be that."""
    path = Path(folder)
    label, subfolders = _CORPORA.get(name, (name, ()))
    holding = " and ".join(f"{part}/" for part in subfolders) or f"{name}'s files"
    shown = os.path.abspath(path)
    if path.is_dir():
        if (
            given
            and subfolders
            and (path / name).is_dir()
            and not any((path / part).is_dir() for part in subfolders)
        ):
            return (
                f"'corpus' {shown} is the folder holding the corpora, not the {label} "
                f"folder; set 'corpus' to {os.path.join(shown, name)} (or leave it out: "
                f"the default is {describe_default(name)})"
            )
        return None
    if given:
        return (
            f"the {label} folder {shown} does not exist; set 'corpus' to the folder holding "
            f"{holding}"
        )
    value = os.environ.get(ENV)
    source = (
        f"${ENV} is {value}"
        if value
        else f"{ENV} is not set, so {DEFAULT.as_posix()} from the working directory {os.getcwd()}"
    )
    return (
        f"the {label} folder {shown} does not exist ({source}); set {ENV} to the folder "
        f"holding craft/, bc2gm/, genetag/ and anatem/, or 'corpus' to the folder holding "
        f"{holding}"
    )


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
