"""How ``casflow:NAME`` and model paths resolve, the same for every component."""

from __future__ import annotations

from pathlib import Path

import pytest

from casflow.components.crfsuite.tagger import resolve_model as crf_model
from casflow.components.models import (
    MODELS_DIR,
    installed_models,
    is_shipped,
    model_path,
    shipped_model_path,
    where_looked,
)
from casflow.components.opennlp.model import resolve_model as opennlp_model
from casflow.components.stanza.constituency import ConstituencyConfig, ConstituencyParser
from casflow.components.stanza.constituency import resolve_model as stanza_model
from casflow.components.stanza.model import ModelFiles, file_problems
from casflow.pipeline.component import RunContext


def test_shipped_names_and_aliases() -> None:
    assert is_shipped("casflow:gene") and not is_shipped("models/casflow")
    assert model_path("casflow:gene") == MODELS_DIR / "gene_bc2gm"
    assert model_path("casflow:craft_syntax") == MODELS_DIR / "craft_syntax"
    # checked lookup takes either spelling
    assert shipped_model_path("casflow:anatomy") == shipped_model_path("anatomy_anatem")
    assert {"craft_syntax", "craft_constituency", "craft_opennlp", "craft_headrules"} <= set(
        installed_models()
    )


def test_unknown_shipped_model_lists_the_installed_ones() -> None:
    with pytest.raises(FileNotFoundError, match="installed: .*craft_syntax"):
        shipped_model_path("casflow:no_such_model")
    with pytest.raises(FileNotFoundError):
        shipped_model_path("../models")


def test_a_member_of_a_shipped_group_is_named_after_the_group() -> None:
    member = shipped_model_path("casflow:craft_syntax_members/rtl1")
    assert member == MODELS_DIR / "craft_syntax_members" / "rtl1"
    assert (member / "config.cfg").is_file()
    assert model_path("casflow:craft_syntax_members/rtl1") == member
    with pytest.raises(FileNotFoundError, match="no member 'rtl9' .*members: fold1, .*rtl4"):
        shipped_model_path("casflow:craft_syntax_members/rtl9")
    # only a member folder: no way out of the group, no deeper path
    for name in ("craft_syntax_members/..", "craft_syntax_members/rtl1/parser", "../craft_syntax"):
        with pytest.raises(FileNotFoundError):
            shipped_model_path(name)


def test_paths_as_given_else_from_the_workflow_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workflow_dir = tmp_path / "workflows"
    (workflow_dir / "m").mkdir(parents=True)
    here = tmp_path / "cwd"
    (here / "local").mkdir(parents=True)
    monkeypatch.chdir(here)
    # relative and present in the working directory: taken as given
    assert model_path("local", workflow_dir) == Path("local")
    # relative and absent here: from the workflow's folder
    assert model_path("m", workflow_dir) == workflow_dir / "m"
    assert model_path(str(tmp_path / "x"), workflow_dir) == tmp_path / "x"
    assert model_path("~/x") == Path.home() / "x"
    # every wrapper resolves the same way
    for resolve in (crf_model, stanza_model):
        assert resolve("m", workflow_dir) == workflow_dir / "m"
        assert resolve("casflow:craft_constituency", workflow_dir) == model_path(
            "casflow:craft_constituency"
        )
    assert opennlp_model("constituents", None, "casflow:craft_opennlp", None) == (
        MODELS_DIR / "craft_opennlp" / "en-parser-chunking.bin"
    )
    assert opennlp_model("constituents", "m/p.bin", None, workflow_dir) == workflow_dir / "m/p.bin"


def test_a_stanza_pretrain_resolves_as_its_model(tmp_path: Path) -> None:
    from casflow.components.stanza.constituency import model_files

    files = model_files(str(tmp_path / "m.pt"), "casflow:craft_constituency/pretrain.pt", tmp_path)
    assert files.pretrain == str(MODELS_DIR / "craft_constituency" / "pretrain.pt")
    (tmp_path / "p.pt").write_bytes(b"")
    assert model_files("m.pt", "p.pt", tmp_path).pretrain == str(tmp_path / "p.pt")


def test_a_missing_relative_model_is_reported_with_both_places_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workflow_dir = tmp_path / "workflows"
    workflow_dir.mkdir()
    monkeypatch.chdir(tmp_path)
    both = f"runs/m.pt (from the working directory) nor at {workflow_dir / 'runs/m.pt'}"
    assert where_looked("runs/m.pt", workflow_dir) == both
    assert where_looked(str(tmp_path / "m.pt"), workflow_dir) == str(tmp_path / "m.pt")
    assert where_looked("casflow:craft_syntax", workflow_dir) == str(MODELS_DIR / "craft_syntax")
    # run from the workflow's own folder, the one place is named once
    for same in (Path(), tmp_path):
        assert where_looked("m.pt", same) == "m.pt (the working directory is the workflow's folder)"
    # a file inside the referenced folder is named at each place
    inside = f"runs/m/a.bin (from the working directory) nor at {workflow_dir / 'runs/m/a.bin'}"
    assert where_looked("runs/m", workflow_dir, "a.bin") == inside
    # found from the working directory, the reference was looked for there only
    (tmp_path / "runs" / "m").mkdir(parents=True)
    assert where_looked("runs/m", workflow_dir, "a.bin") == "runs/m/a.bin"
    # the Stanza wrappers say so
    [problem] = file_problems(
        "en",
        {"depparse": "default"},
        None,
        {"depparse": ModelFiles(model="runs/m.pt")},
        workflow_dir,
    )
    assert problem == f"model_files.depparse.model: no file at {both}"
    pytest.importorskip("stanza")
    context = RunContext(output_dir=tmp_path, workflow_dir=workflow_dir)
    [problem] = ConstituencyParser.check_config(ConstituencyConfig(model="runs/m.pt"), context)
    assert f"no model at {both}:" in problem


@pytest.mark.parametrize(
    ("name", "member", "library"),
    [
        ("sentences.nltk.punkt.v1", "punkt.json", "nltk"),
        ("udpipe.v1", "model.udpipe", "ufal.udpipe"),
    ],
)
def test_a_missing_model_file_is_reported_with_every_place_looked(
    name: str, member: str, library: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relative model is tried from the working directory, then from the workflow's
    folder: the message names both, at validation and when the component is built."""
    pytest.importorskip(library, reason=f"{library} is in the tools extra")
    from casflow.pipeline.registry import registry

    cls = registry().get(name)
    workflow_dir = tmp_path / "workflows"
    workflow_dir.mkdir()
    monkeypatch.chdir(tmp_path)
    context = RunContext(output_dir=tmp_path, workflow_dir=workflow_dir)
    both = f"runs/m (from the working directory) nor at {workflow_dir / 'runs/m'};"
    (problem,) = cls.check_config(cls.Config(model="runs/m"), context)
    assert both in problem
    with pytest.raises(FileNotFoundError) as raised:
        cls(cls.Config(model="runs/m"), context)
    assert both in str(raised.value)
    # a model folder without its file: the file is named in the folder
    (workflow_dir / "runs" / "m").mkdir(parents=True)
    (problem,) = cls.check_config(cls.Config(model="runs/m"), context)
    assert f"runs/m/{member} (from the working directory) nor at {workflow_dir}" in problem
