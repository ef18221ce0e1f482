"""Learned head rules: constituency trees -> dependency trees (convert.dependencies.v1,
train.headrules.v1) on a hand-made treebank."""

from __future__ import annotations

import json
import re
from pathlib import Path

import cassis
import pytest

from casflow.components.combine.reparse import check_tree
from casflow.components.evaluators.adapters import CasInputError, dependency_sentences
from casflow.components.formats.penn.alignment import TreeTypes, align_trees, build_tree_layers
from casflow.components.formats.penn.parse import leaves, parse_tree
from casflow.components.headrules.component import (
    ConvertDependencies,
    ConvertDependenciesConfig,
    _load,
    model_file,
)
from casflow.components.headrules.rules import (
    Converter,
    coordination_head,
    learn_converter,
    learn_labels,
    prepared,
)
from casflow.components.headrules.trainer import HeadRulesTrainer, HeadRulesTrainerConfig
from casflow.pipeline.component import RunContext, TrainingContext
from casflow.typesystem import load_typesystem
from tests.helpers.craft import craft_article, craft_ids

# (tree, heads, labels): a dependency version made the way CRAFT's was, by head
# children (nouns head noun phrases, verbs verb phrases, the first conjunct a
# coordination with later conjuncts chained).
TREEBANK = [
    (
        "( (S (NP-SBJ (DT The) (NN gene)) (VP (VBZ binds) (NP (NN DNA))) (. .)) )",
        [2, 3, 0, 3, 3],
        ["det", "nsubj", "root", "dobj", "punct"],
    ),
    (
        "( (S (NP-SBJ (NNS Cells)) (VP (VBP grow)) (. .)) )",
        [2, 0, 2],
        ["nsubj", "root", "punct"],
    ),
    (
        "( (S (NP-SBJ (NN Pax6) (, ,) (NN Sox2) (CC and) (NN Oct4)) "
        "(VP (VBP bind) (NP (NN DNA))) (. .)) )",
        [6, 1, 1, 3, 3, 0, 6, 6],
        ["nsubj", "punct", "conj", "cc", "conj", "root", "dobj", "punct"],
    ),
    (
        "( (S (NP-SBJ (JJ mutant) (NNS mice)) (VP (VBD died) (NP-1 (-NONE- *))) (. .)) )",
        [2, 3, 0, 3],
        ["amod", "nsubj", "root", "punct"],
    ),
]


def words(line: str) -> list[str]:
    return [word for word, tag in leaves(parse_tree(line)) if tag != "-NONE-"]


def trained() -> Converter:
    return learn_converter(
        (prepared(parse_tree(line)), heads, labels) for line, heads, labels in TREEBANK
    )


def test_prepared_drops_empty_elements_and_function_tags() -> None:
    tree = prepared(parse_tree(TREEBANK[3][0]))
    assert tree is not None
    labels = [node.label for node in tree.subtrees()]
    assert labels[0] == "ROOT"
    assert "NP-SBJ" not in labels and "-NONE-" not in labels and "NP" in labels


@pytest.mark.parametrize(
    ("labels", "head"),
    [
        (["NN", ",", "NN", "CC", "NN"], 0),
        (["CC", "NN", "CC", "NN"], 1),  # "both A and B": the first conjunct
        (["DT", "NN", "CC", "NN"], 1),
        (["CC", "NN"], None),  # a conjunction first joins nothing here
        (["NN", "NNS"], None),
    ],
)
def test_coordination_head(labels: list[str], head: int | None) -> None:
    assert coordination_head(labels) == head


def test_learned_rules_give_the_treebank_back() -> None:
    converter = trained()
    for line, heads, labels in TREEBANK:
        tree = prepared(parse_tree(line))
        assert tree is not None
        got_heads, got_labels, leaves = converter.convert(tree)
        assert [w for w, _ in leaves] == words(line)
        assert got_heads == heads
        assert got_labels == labels
        check_tree(got_heads)


def test_conjuncts_are_chained() -> None:
    tree = prepared(parse_tree("( (NP (NN A) (, ,) (NN B) (, ,) (NN C) (CC and) (NN D)) )"))
    assert tree is not None
    heads, _, _ = trained().convert(tree)
    # B to A; the second comma, C to B; "and" and D to C
    assert heads == [0, 1, 1, 3, 3, 5, 5]


def test_a_parse_the_rules_never_saw_is_still_one_tree() -> None:
    tree = prepared(
        parse_tree("( (FRAG (PP (IN of) (NP (NNS cells))) (: :) (ADVP (RB here)) (X (SYM *))) )")
    )
    assert tree is not None
    heads, labels, _ = trained().convert(tree)
    check_tree(heads)
    assert all(labels)


def naive_lookup(arcs: list[tuple[list[str], str]], keys: list[str], min_count: int) -> str:
    """What the full table answers: the most specific context seen min_count times
    (ties to the alphabetically first label), else the last level's."""
    for depth, key in enumerate(keys):
        labels = [label for k, label in arcs if k[depth] == key]
        if len(labels) >= min_count or (labels and depth == len(keys) - 1):
            return min(set(labels), key=lambda lab: (-labels.count(lab), lab))
    return "dep"


def test_pruned_label_table_answers_as_the_full_one() -> None:
    # three levels: (parent, tag, word) -> (parent, tag) -> (tag,)
    raw = [
        ("VP", "NN", "dna", "dobj"),
        ("VP", "NN", "dna", "dobj"),
        ("VP", "NN", "rna", "dobj"),
        ("VP", "NN", "time", "npadvmod"),
        ("VP", "NN", "time", "npadvmod"),
        ("S", "NN", "gene", "nsubj"),
        ("S", "NN", "gene", "nsubj"),
        ("S", "NN", "cell", "nsubj"),
        ("NP", "NN", "gene", "nn"),
        ("NP", "NN", "x", "nn"),
        ("NP", "JJ", "big", "amod"),
    ]
    arcs = [([f"{p}|{t}|{w}", f"{p}|{t}", t], label) for p, t, w, label in raw]
    table = learn_labels(arcs)
    for keys in {tuple(k) for k, _ in arcs} | {
        ("VP|NN|new", "VP|NN", "NN"),
        ("PP|CD|3", "PP|CD", "CD"),
    }:
        assert table.label(list(keys)) == naive_lookup(arcs, list(keys), 2), keys
    # the word level only keeps what the levels below do not already say
    assert table.levels[0] == {"VP|NN|time": "npadvmod"}


def test_converter_round_trips_through_json(tmp_path: Path) -> None:
    converter = trained()
    path = tmp_path / "model.json"
    converter.save(path)
    loaded = Converter.load(path)
    assert loaded.to_json() == converter.to_json()
    path.write_text(json.dumps({"format": "something else"}), encoding="utf-8")
    with pytest.raises(ValueError, match="not a head-rules model.*train.headrules.v1"):
        Converter.load(path)


# -- in a CAS ------------------------------------------------------------------------

TEXT = " ".join(" ".join(words(line)) for line, _, _ in TREEBANK)


def treebank_view(tmp_path: Path, layers: set[str]) -> cassis.Cas:
    path = tmp_path / "treebank.tree"
    path.write_text("\n".join(line for line, _, _ in TREEBANK) + "\n", encoding="utf-8")
    cas = cassis.Cas(typesystem=load_typesystem())
    cas.sofa_string = TEXT
    out: list = []
    build_tree_layers(align_trees(path, TEXT, "text"), layers, TreeTypes.of(cas.typesystem), out)
    cas.add_all(out)
    return cas


def saved_model(tmp_path: Path) -> Path:
    path = tmp_path / "model" / "model.json"
    path.parent.mkdir()
    trained().save(path)
    return path


def convert(view: cassis.Cas, model: Path) -> None:
    config = ConvertDependenciesConfig(model=str(model.parent))
    ConvertDependencies(config, RunContext(output_dir=model.parent)).process(view)


def test_the_component_writes_one_tree_per_constituency_tree(tmp_path: Path) -> None:
    view = treebank_view(tmp_path, {"sentences", "tokens", "pos", "constituents"})
    convert(view, saved_model(tmp_path))
    sentences = dependency_sentences(view)
    assert len(sentences) == len(TREEBANK)
    for sentence, (_, heads, labels) in zip(sentences, TREEBANK, strict=True):
        spans = [w.span for w in sentence]
        got = [0 if w.head in (None, w.span) else spans.index(w.head) + 1 for w in sentence]
        assert got == heads
        # the root is DKPro's ROOT relation, as every parser wrapper writes it
        assert [w.deprel for w in sentence] == [
            "ROOT" if h == 0 else label for h, label in zip(heads, labels, strict=True)
        ]


def test_the_component_refuses_a_view_that_has_dependencies(tmp_path: Path) -> None:
    view = treebank_view(tmp_path, {"sentences", "tokens", "pos", "constituents"})
    model = saved_model(tmp_path)
    convert(view, model)
    with pytest.raises(CasInputError, match="already has dependencies.*view of their own"):
        convert(view, model)


def test_the_component_needs_the_tags(tmp_path: Path) -> None:
    view = treebank_view(tmp_path, {"sentences", "tokens", "constituents"})
    with pytest.raises(CasInputError, match="POS"):
        convert(view, saved_model(tmp_path))


def test_a_missing_model_is_reported_before_the_run(tmp_path: Path) -> None:
    config = ConvertDependenciesConfig(model=str(tmp_path / "nowhere"))
    problems = ConvertDependencies.check_config(config, RunContext(output_dir=tmp_path))
    assert len(problems) == 1
    assert "no head-rules model at" in problems[0] and "train.headrules.v1" in problems[0]
    (tmp_path / "bad.json").write_text("{}", encoding="utf-8")
    config = ConvertDependenciesConfig(model=str(tmp_path / "bad.json"))
    problems = ConvertDependencies.check_config(config, RunContext(output_dir=tmp_path))
    assert len(problems) == 1 and "not a head-rules model" in problems[0]
    # a relative folder without its model.json: both places looked, with the file sought
    (tmp_path / "workflows" / "hr").mkdir(parents=True)
    context = RunContext(output_dir=tmp_path, workflow_dir=tmp_path / "workflows")
    problems = ConvertDependencies.check_config(ConvertDependenciesConfig(model="hr"), context)
    assert (
        f"hr/model.json (from the working directory) nor at {tmp_path}/workflows/hr/model.json"
        in problems[0]
    )


def test_the_shipped_model_loads() -> None:
    config = ConvertDependenciesConfig()
    assert ConvertDependencies.check_config(config, RunContext(output_dir=Path("."))) == []


def test_the_trainer_learns_from_gold_views(tmp_path: Path) -> None:
    # the gold view: the treebank's trees and, converted by the fixture's own rules,
    # its dependencies (equal to TREEBANK's, tested above)
    view = treebank_view(tmp_path, {"sentences", "tokens", "pos", "constituents"})
    convert(view, saved_model(tmp_path))
    trainer = HeadRulesTrainer(
        HeadRulesTrainerConfig(), TrainingContext(output_dir=tmp_path, seed=0)
    )
    example = trainer.example(view, "doc")
    assert [s.heads for s in example.sentences] == [heads for _, heads, _ in TREEBANK]
    model = trainer.train([example], [], tmp_path / "out", lambda _: None)
    assert (model / "model.json").is_file()
    assert trainer.evaluate(model, [example]) == {"uas": 100.0, "las": 100.0}


def test_the_shipped_model_gives_craft_dev_its_dependencies_back(craft_dir: Path) -> None:
    # The card's and README's figures: CRAFT dev's gold trees, converted by the shipped
    # model, against CRAFT's own dependencies (every token of the 7 articles).
    trainer = HeadRulesTrainer(
        HeadRulesTrainerConfig(), TrainingContext(output_dir=Path("."), seed=0)
    )
    layers = ["tokens", "pos", "constituents", "dependencies"]
    examples = [
        trainer.example(craft_article(craft_dir, article, layers), article)
        for article in craft_ids(craft_dir, "dev")
    ]
    assert sum(len(s.heads) for e in examples for s in e.sentences) == 67_652
    shipped = model_file(ConvertDependenciesConfig().model, None).parent
    scores = trainer.evaluate(shipped, examples)
    assert scores == {"uas": 99.27, "las": 95.26}


def test_a_view_without_trees_is_an_error_not_an_empty_result(tmp_path: Path) -> None:
    view = treebank_view(tmp_path, {"sentences", "tokens", "pos"})
    with pytest.raises(CasInputError, match="no constituency trees.*view.copy.v1"):
        convert(view, saved_model(tmp_path))


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ({"format": "casflow.headrules/1"}, "no rules, defaults, labels, root_label"),
        ([1], "a JSON list, not an object"),
        (
            {
                "format": "casflow.headrules/1",
                "rules": {"S": [["VP"]]},
                "defaults": {},
                "labels": [],
                "root_label": "root",
            },
            "rule ['VP'] of 'S' is not [label, side]",
        ),
        (
            {
                "format": "casflow.headrules/1",
                "rules": {},
                "defaults": {"NP": "up"},
                "labels": [],
                "root_label": "root",
            },
            "'defaults' must map",
        ),
        (
            {
                "format": "casflow.headrules/1",
                "rules": {},
                "defaults": {},
                "labels": {"a": "b"},
                "root_label": "root",
            },
            "'labels' must be a list",
        ),
    ],
)
def test_a_damaged_model_is_a_problem_saying_what_is_wrong(
    tmp_path: Path, data: object, reason: str
) -> None:
    path = tmp_path / "model.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(reason)):
        Converter.load(path)
    _load.cache_clear()
    config = ConvertDependenciesConfig(model=str(path))
    (problem,) = ConvertDependencies.check_config(config, RunContext(output_dir=tmp_path))
    assert str(path) in problem and reason in problem
