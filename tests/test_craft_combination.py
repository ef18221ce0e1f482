"""The votes of workflows/craft-combination.yaml run from a fresh install.

Their members are shipped (casflow:craft_syntax and casflow:craft_syntax_members for the
dependency votes, with the trees of casflow:craft_constituency, its epoch26.pt and its
seed1.pt converted by casflow:craft_headrules; casflow:craft_constituency, its
epoch26.pt and casflow:craft_opennlp for the constituent vote), so this runs the
workflow's own steps, unchanged, over one CRAFT dev article: every member loads and
parses, the combined trees are trees, and the votes beat their members there (the
dependency votes in LAS, the constituent vote in precision). The README's figures are
the whole workflow over the 7 dev articles.
"""

from __future__ import annotations

import json
from pathlib import Path

import cassis
import pytest
import yaml

from casflow.components.combine.reparse import check_tree
from casflow.components.evaluators.adapters import constituent_trees, dependency_sentences
from casflow.pipeline.cli import main
from casflow.typesystem import SENTENCE, TOKEN

REPO = Path(__file__).resolve().parent.parent
WORKFLOW = REPO / "workflows" / "craft-combination.yaml"
# the shortest of the 7 dev articles (5,878 tokens)
ARTICLE = "17244351"


#: the reader's layers each part reads from gold
PART_LAYERS = {
    "dependencies": ["sentences", "tokens", "dependencies"],
    "constituents": ["sentences", "tokens", "pos", "constituents"],
}


def dependency_view(view: str) -> bool:
    """dep_: dependency parsers and votes; conv_: constituency parsers converted."""
    return view.startswith(("dep_", "conv_"))


def workflow_part(workflow: dict, layer: str, ids: list[str], output: Path) -> dict:
    """The workflow's members, votes and evaluators of ``layer`` (dependencies: the
    dep_ and conv_ views; constituents: the others), over ``ids``, writing XMI."""
    part = dict(workflow)
    reader_config = {k: v for k, v in workflow["reader"]["config"].items() if k != "split"}
    reader_config.update(ids=ids, layers=PART_LAYERS[layer])
    part["reader"] = {**workflow["reader"], "config": reader_config}
    dependencies = layer == "dependencies"
    part["components"] = [
        c for c in workflow["components"] if dependency_view(c["view"]) == dependencies
    ]
    part["evaluators"] = [
        e
        for e in workflow["evaluators"]
        if e["component"] == f"eval.{layer}.v1" or e.get("config", {}).get("layer") == layer
    ]
    part["writers"] = [{"component": "xmi.writer.v1"}]
    part["run"] = {**workflow["run"], "output": str(output), "jobs": 1}
    return part


def article_part(
    layer: str, craft_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict:
    """The workflow's part for ``layer`` over ARTICLE of ``craft_dir``, writing into
    tmp_path/out."""
    monkeypatch.setenv("CASFLOW_CORPORA", str(craft_dir.parent))
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    return workflow_part(workflow, layer, [ARTICLE], tmp_path / "out")


def run_part(part: dict, tmp_path: Path) -> dict:
    """Run a part (it must succeed) and return its evaluation.json."""
    path = tmp_path / "part.yaml"
    path.write_text(yaml.safe_dump(part, sort_keys=False), encoding="utf-8")
    assert main(["run", str(path), "--quiet"]) == 0
    return json.loads((tmp_path / "out" / "evaluation.json").read_text(encoding="utf-8"))


def shipped(step: dict) -> bool:
    """A step's model is shipped: a casflow: name or the component's (shipped) default."""
    return str(step.get("config", {}).get("model", "casflow:")).startswith("casflow:")


def banded_sentences(counts: dict) -> int:
    """The sentences of an agreement evaluator's counts, summed over its bands."""
    return sum(v for k, v in counts.items() if k.endswith("/sentences") and "/all/" not in k)


def written_cas(output: Path) -> cassis.Cas:
    """The article's CAS as the part's XMI writer wrote it."""
    xmi = output / "xmi"
    typesystem = cassis.load_typesystem((xmi / "TypeSystem.xml").read_text(encoding="utf-8"))
    return cassis.load_cas_from_xmi(
        (xmi / f"{ARTICLE}.xmi").read_text(encoding="utf-8"), typesystem=typesystem
    )


@pytest.mark.slow
def test_the_dependency_votes_run_on_shipped_members(
    craft_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("stanza", reason="the converted members need the stanza extra")
    part = article_part("dependencies", craft_dir, tmp_path, monkeypatch)
    members = [c for c in part["components"] if c["component"] == "spacy.pipeline.v1"]
    assert len(members) == 10
    converted = [c for c in part["components"] if c["component"] == "convert.dependencies.v1"]
    assert len(converted) == 6
    parsers = [c for c in part["components"] if c["component"] == "parse.constituency.v1"]
    assert all(shipped(c) for c in members + converted + parsers)

    results = run_part(part, tmp_path)
    report = json.loads((tmp_path / "out" / "run-report.json").read_text(encoding="utf-8"))
    assert report["counts"]["ok"] == 1 and report["total_documents"] == 1
    systems = results["eval.dependencies.v1"]["systems"]

    def las(view: str) -> float:
        counts = systems[view]["counts"]
        return counts["las/correct"] / counts["las/gold"]

    member_views = [c["view"] for c in members]
    best = max(las(v) for v in member_views)
    # On this article as on all seven: each vote above the best of its members.
    assert las("dep_vote_directions") > las("dep_vote_folds") > best
    converted_views = [c["view"] for c in converted]
    assert las("dep_vote_all") > max(las(v) for v in member_views + converted_views)
    bands = results["dependency_agreement"]["systems"]
    assert set(bands) == {"dep_vote_folds", "dep_vote_directions", "dep_vote_all"}
    counts = bands["dep_vote_directions"]["counts"]
    assert banded_sentences(counts) == counts["agreement/all/sentences"] > 0

    # Every voted sentence is one tree over all its tokens: one root, no cycle.
    cas = written_cas(tmp_path / "out")
    votes = [c["view"] for c in part["components"] if c["component"] == "combine.dependencies.v1"]
    assert "dep_vote_no_seed1" in votes
    for view in (*votes, *converted_views):
        sentences = dependency_sentences(cas.get_view(view))
        assert len(sentences) == counts["agreement/all/sentences"]
        for sentence in sentences:
            spans = [w.span for w in sentence]
            check_tree([0 if w.governor is None else spans.index(w.governor) + 1 for w in sentence])


@pytest.mark.slow
def test_the_constituent_vote_runs_on_shipped_members(
    craft_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("stanza", reason="the Stanza members need the stanza extra")
    part = article_part("constituents", craft_dir, tmp_path, monkeypatch)
    members = [c for c in part["components"] if c["component"] != "view.copy.v1"][:-1]
    assert [c["view"] for c in members] == part["components"][-1]["config"]["members"]
    assert all(shipped(c) for c in members)

    results = run_part(part, tmp_path)
    systems = results["eval.constituents.v1"]["systems"]
    scores = {view: systems[view]["scores"] for view in systems}
    # Keeping the brackets most members propose: more precise than every member.
    assert all(scores["vote"]["precision"] > scores[m["view"]]["precision"] for m in members)
    assert scores["vote"]["f1"] > min(scores[m["view"]]["f1"] for m in members)
    bands = results["eval.agreement.v1"]["systems"]["vote"]["counts"]
    assert banded_sentences(bands) == bands["agreement/all/sentences"] > 0

    # Every sentence of the vote is one tree over exactly its tokens (nested brackets).
    cas = written_cas(tmp_path / "out")
    vote = cas.get_view("vote")
    trees = constituent_trees(vote)
    sentences = sorted(vote.select(SENTENCE), key=lambda s: s.begin)
    assert len(trees) == len(sentences) == bands["agreement/all/sentences"]
    for ((begin, end), tree), sentence in zip(trees, sentences, strict=True):
        assert (begin, end) == (sentence.begin, sentence.end)
        words = [leaf.word for leaf in tree.preterminals()]
        assert words == [t.get_covered_text() for t in vote.select_covered(TOKEN, sentence)]
