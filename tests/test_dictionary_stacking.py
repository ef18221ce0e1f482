"""Stacking: ner.dictionary.v1's matches as features of train.crf.mentions.v1's CRF."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from casflow.components.crfsuite.crf import META_FILE, CrfTagger
from casflow.components.crfsuite.gold_view import Example, GoldMention
from casflow.components.crfsuite.tokenize import tokenize
from casflow.components.crfsuite.trainer import Resources, train_member, training_fingerprint
from casflow.components.crfsuite.trainer_config import CrfOptions, CrfResources
from casflow.components.dictionary.entries import CompileSettings, compile_dictionary
from casflow.components.dictionary.features import candidate_features
from casflow.components.dictionary.tagger import DictionaryTaggerConfig
from casflow.pipeline.component import RunContext

ORGANS = ["heart", "liver", "kidney", "spleen", "pancreas", "stomach"]
OTHERS = ["table", "river", "paper", "window", "garden", "ladder"]


def organ_obo(path: Path) -> Path:
    stanzas = ["format-version: 1.2\n", "[Term]\nid: FX:1\nname: organ\n"]
    for number, name in enumerate(ORGANS, 10):
        stanzas.append(f"[Term]\nid: FX:{number}\nname: {name}\nis_a: FX:1\n")
    path.write_text("\n".join(stanzas), encoding="utf-8")
    return path


def examples(words: list[str], organs: set[str]) -> list[Example]:
    out = []
    for number, word in enumerate(words):
        text = f"The {word} was examined again ."
        begin = 4
        mentions = [GoldMention(begin, begin + len(word), "Organ")] if word in organs else []
        out.append(Example(f"s{number}", text, tokenize(text), mentions))
    return out


def test_candidate_features_tag_each_token_of_a_match(tmp_path: Path) -> None:
    obo = organ_obo(tmp_path / "organs.obo")
    dictionary = compile_dictionary([obo], CompileSettings(class_rules=(("FX:1", "Organ"),)))
    text = "the Heart, T-cells"
    features = candidate_features(dictionary, text, tokenize(text))
    assert [f[0] for f in features] == [
        "dict:O",
        "dict:B-Organ",
        "dict:O",
        "dict:O",
        "dict:O",
        "dict:O",
    ]
    assert "dict[-1]:B-Organ" in features[2] and "dict[+1]:B-Organ" in features[0]


def train(tmp_path: Path, name: str, dictionary: DictionaryTaggerConfig | None) -> CrfTagger:
    # four organs and six other words to learn from; kidney and spleen stay unseen
    seen = ORGANS[:2] + ORGANS[4:]
    training = examples(seen + OTHERS, set(ORGANS))
    options = CrfOptions(iterations=50, dictionary=dictionary)
    resources = Resources(CrfResources(), RunContext(output_dir=tmp_path, workflow_dir=tmp_path), 0)
    train_member(training, options, tmp_path / name, resources, lambda line: None)
    return CrfTagger.load(tmp_path / name)


def test_the_crf_learns_to_trust_the_dictionary_and_keeps_it_with_the_model(
    tmp_path: Path,
) -> None:
    obo = organ_obo(tmp_path / "organs.obo")
    config = DictionaryTaggerConfig(
        ontologies=[str(obo)], class_rules={"FX:1": "Organ"}, cache=False
    )
    unseen = "The kidney was examined again ."
    plain = train(tmp_path, "plain", None)
    stacked = train(tmp_path, "stacked", config)
    # without the dictionary an unseen word in a seen context is no organ
    assert plain.tag(unseen, tokenize(unseen)) == []
    found = stacked.tag(unseen, tokenize(unseen))
    assert [(b, e, label) for b, e, label, _ in found] == [(4, 10, "Organ")]
    meta = json.loads((tmp_path / "stacked" / META_FILE).read_text(encoding="utf-8"))
    assert meta["dictionary"]["ontologies"] == [str(obo)]
    assert "dictionary" not in json.loads((tmp_path / "plain" / META_FILE).read_text())
    # the model recomputes the features when it is loaded elsewhere; without the
    # ontology file it says what is missing
    obo.unlink()
    with pytest.raises(FileNotFoundError, match="organs.obo"):
        CrfTagger.load(tmp_path / "stacked")


def test_the_option_off_keeps_earlier_fingerprints() -> None:
    example = examples(["heart"], {"heart"})
    off = training_fingerprint(example, CrfOptions(), None, 0)
    assert off == training_fingerprint(example, CrfOptions(dictionary=None), None, 0)
    on = CrfOptions(dictionary=DictionaryTaggerConfig(ontologies=["x.obo"]))
    assert training_fingerprint(example, on, None, 0) != off
