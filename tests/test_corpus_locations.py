"""The one place that knows where the corpora are."""

from __future__ import annotations

from pathlib import Path

import pytest

from casflow.components.corpora import locations
from casflow.components.corpora.anatem import AnatemReaderConfig
from casflow.components.corpora.anatem import default_corpus as anatem_default
from casflow.components.corpora.bc2gm import default_corpus as bc2gm_default
from casflow.components.corpora.craft import default_corpus as craft_default
from casflow.components.corpora.genetag import default_corpus as genetag_default


def test_environment_variable_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CASFLOW_CORPORA", str(tmp_path))
    assert locations.corpora_root() == tmp_path
    assert locations.corpora_root(relative_to="/elsewhere") == tmp_path
    assert locations.corpus_dir("craft") == tmp_path / "craft"
    assert craft_default() == str(tmp_path / "craft")
    assert anatem_default() == str(tmp_path / "anatem")
    assert bc2gm_default() == str(tmp_path / "bc2gm")
    assert genetag_default() == str(tmp_path / "genetag")


def test_default_is_beside_the_working_directory_not_the_installed_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CASFLOW_CORPORA", raising=False)
    assert locations.corpora_root() == Path("../shared/corpora")
    assert locations.corpora_root(relative_to="/repo") == Path("/repo/../shared/corpora")
    assert craft_default() == "../shared/corpora/craft"
    assert bc2gm_default() == "../shared/corpora/bc2gm"


def test_empty_variable_means_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CASFLOW_CORPORA", "")
    assert locations.corpora_root() == Path("../shared/corpora")


def test_reader_descriptions_name_the_default() -> None:
    description = AnatemReaderConfig.model_fields["corpus"].description or ""
    assert "$CASFLOW_CORPORA/anatem, else ../shared/corpora/anatem" in description


def test_craft_ontology_prefers_the_zip_and_falls_back_to_plain_obo(tmp_path: Path) -> None:
    folder = tmp_path / "concept-annotation" / "SO" / "SO"
    folder.mkdir(parents=True)
    assert locations.craft_ontology(tmp_path, "SO") == folder / "SO.obo.zip"
    (folder / "SO.obo").write_text("", encoding="utf-8")
    assert locations.craft_ontology(tmp_path, "SO") == folder / "SO.obo"
    (folder / "SO.obo.zip").write_bytes(b"")
    assert locations.craft_ontology(tmp_path, "SO") == folder / "SO.obo.zip"


def test_no_module_spells_the_default_itself() -> None:
    """Only locations.py may name the environment variable or the default folder."""
    root = Path(__file__).resolve().parent.parent
    offenders = []
    for folder in ("components", "pipeline", "cas", "benchmarks"):
        for path in (root / folder).rglob("*.py"):
            if path.name == "locations.py":
                continue
            text = path.read_text(encoding="utf-8")
            code = [
                line
                for line in text.splitlines()
                if not line.lstrip().startswith(("#", '"', "'", "(", "``", "-"))
            ]
            joined = "\n".join(code)
            if 'environ.get("CASFLOW_CORPORA"' in joined or '"shared" / "corpora"' in joined:
                offenders.append(str(path.relative_to(root)))
    assert offenders == []


READERS = {
    "bc2gm": "bc2gm.reader.v1",
    "genetag": "genetag.reader.v1",
    "anatem": "anatem.reader.v1",
    "craft": "craft.reader.v1",
}


def _reader_problems(name: str, config: dict[str, str], workflow_dir: Path) -> list[str]:
    from casflow.pipeline.component import RunContext
    from casflow.pipeline.registry import registry

    cls = registry().get(READERS[name])
    context = RunContext(output_dir=workflow_dir / "out", workflow_dir=workflow_dir)
    return cls.check_config(cls.Config.model_validate(config), context)


@pytest.mark.parametrize("name", sorted(READERS))
def test_a_missing_default_corpus_says_where_the_default_came_from(
    name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Run from another folder with CASFLOW_CORPORA unset: one problem, not one per file,
    # naming the absolute folder, the working directory it came from and what to set.
    elsewhere = tmp_path / "work" / "elsewhere"
    elsewhere.mkdir(parents=True)
    monkeypatch.delenv("CASFLOW_CORPORA", raising=False)
    monkeypatch.chdir(elsewhere)
    (problem,) = _reader_problems(name, {}, elsewhere)
    assert f"{tmp_path / 'work' / 'shared' / 'corpora' / name} does not exist" in problem
    assert "CASFLOW_CORPORA is not set, so ../shared/corpora from the working directory " in (
        problem
    )
    assert str(elsewhere) in problem and "set CASFLOW_CORPORA to the folder holding" in problem
    monkeypatch.setenv("CASFLOW_CORPORA", str(tmp_path / "nowhere"))
    (problem,) = _reader_problems(name, {}, elsewhere)
    assert f"{tmp_path / 'nowhere' / name} does not exist ($CASFLOW_CORPORA is " in problem


@pytest.mark.parametrize("name", sorted(READERS))
def test_a_given_corpus_folder_missing_or_the_corpora_folder(name: str, tmp_path: Path) -> None:
    (problem,) = _reader_problems(name, {"corpus": str(tmp_path / "typo")}, tmp_path)
    assert f"{tmp_path / 'typo'} does not exist; set 'corpus' to the folder holding" in problem
    assert "CASFLOW_CORPORA" not in problem  # the user gave the path
    # 'corpus' naming the folder that holds the corpora, a likely slip
    (tmp_path / "corpora" / name).mkdir(parents=True)
    (problem,) = _reader_problems(name, {"corpus": str(tmp_path / "corpora")}, tmp_path)
    assert "is the folder holding the corpora" in problem
    assert f"set 'corpus' to {tmp_path / 'corpora' / name}" in problem
