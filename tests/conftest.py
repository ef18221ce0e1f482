"""Shared pytest fixtures.

Corpus-backed tests find the gold corpora through ``CASFLOW_CORPORA`` (default
``../shared/corpora`` beside the repository) and skip with the reason when the
corpora are not there, so the suite runs on a machine without them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from casflow.components.corpora.locations import corpora_root

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SCORER_REFERENCES = REPO_ROOT.parent / "shared" / "scorer-references"

# The reference scoring programs `.ci/reference-scorers` fetched (and checked by
# sha256) into the repository, used where EVALB / CONLL18_UD_EVAL are not set: a
# plain `pytest` after that script ran once compares against them too, instead of
# skipping the cross-checks (set by this module before the test modules read them).
REFERENCE_SCORERS = REPO_ROOT / ".reference-scorers"
for _variable, _path in (
    ("EVALB", REFERENCE_SCORERS / "evalb"),
    ("CONLL18_UD_EVAL", REFERENCE_SCORERS / "trankit" / "utils" / "scorers" / "conll18_ud_eval.py"),
):
    if not os.environ.get(_variable) and _path.is_file():
        os.environ[_variable] = str(_path)


def corpora_path() -> Path:
    return corpora_root(relative_to=REPO_ROOT)


@pytest.fixture(scope="session")
def corpora_dir() -> Path:
    path = corpora_path()
    if not (path / "README.md").is_file():
        pytest.skip(
            f"gold corpora not found at {path}; set CASFLOW_CORPORA to the folder "
            "holding craft/, bc2gm/, genetag/ and anatem/"
        )
    return path


@pytest.fixture(scope="session")
def scorer_references() -> Path:
    """What the reference scoring programs print on dev data (tests/test_scorer_parity.py)."""
    path = Path(os.environ.get("CASFLOW_SCORER_REFERENCES", DEFAULT_SCORER_REFERENCES))
    if not (path / "reference.json").is_file():
        pytest.skip(
            f"scorer references not found at {path} (no reference.json); set "
            "CASFLOW_SCORER_REFERENCES to the folder holding reference.json, ref/ and sys/"
        )
    return path


@pytest.fixture(scope="session")
def craft_dir(corpora_dir: Path) -> Path:
    path = corpora_dir / "craft"
    if not path.is_dir():
        pytest.skip(f"CRAFT corpus not found at {path}")
    return path


@pytest.fixture(scope="session")
def test_components() -> None:
    """Register the engine-test components (tests/helpers/components.py) once."""
    from casflow.pipeline.registry import registry
    from tests.helpers.components import TEST_COMPONENTS

    reg = registry()
    for cls in TEST_COMPONENTS:
        if cls.name not in reg.names():
            reg.register(cls.name, cls, origin="tests")


@pytest.fixture(scope="session")
def tiny_spacy_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Folder of a tiny spaCy pipeline trained once per session (tests/spacy_fixtures.py)."""
    from tests.spacy_fixtures import train_tiny_pipeline

    return train_tiny_pipeline(tmp_path_factory.mktemp("tiny_spacy_model"))


@pytest.fixture(scope="session")
def tiny_ner_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny NER corpus of tests/helpers/ner_corpus.py (Stanza's NER trainer tests)."""
    pytest.importorskip("stanza", reason="Stanza is the stanza extra")
    from tests.helpers.ner_corpus import write_tiny_ner_corpus

    return write_tiny_ner_corpus(tmp_path_factory.mktemp("tiny_ner"))
