"""Document-level post-processing of CRF mentions: abbreviation propagation.

Hand-written texts and a tiny CRF trained here; no corpus needed.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import cassis
import pytest

from casflow.components.crfsuite.abbreviations import find_abbreviations
from casflow.components.crfsuite.crf import (
    META_FILE,
    DocumentContext,
    TrainingParams,
    labels_for,
    train_crf,
)
from casflow.components.crfsuite.ensemble import assemble, document_steps
from casflow.components.crfsuite.features import FeatureSettings
from casflow.components.crfsuite.postprocess import DOCUMENT_POSTPROCESSORS, propagate_abbreviations
from casflow.components.crfsuite.tagger import AnatomyNer, AnatomyNerConfig, model_problem
from casflow.components.crfsuite.tokenize import tokenize
from casflow.pipeline.component import RunContext
from casflow.typesystem import ANATOMY_MENTION, TOKEN, load_typesystem


def spans_of(text: str, word: str) -> list[tuple[int, int]]:
    out, start = [], text.find(word)
    while start >= 0:
        out.append((start, start + len(word)))
        start = text.find(word, start + 1)
    return out


def test_short_forms_take_the_class_of_the_tagged_long_form() -> None:
    text = "In colorectal cancer (CRC), CRC cells and CRCs differ from pCRC. CRC grew."
    (cancer,) = spans_of(text, "colorectal cancer")
    out = propagate_abbreviations(text, [(*cancer, "Cancer", 0.9)])
    crc = [s for s in spans_of(text, "CRC") if text[s[0] - 1] != "p" and text[s[1]] != "s"]
    assert len(crc) == 3  # "(CRC)", "CRC cells", "CRC grew"; not "CRCs" or "pCRC"
    assert out == sorted([(*cancer, "Cancer", 0.9)] + [(*s, "Cancer", 0.9) for s in crc])


def test_a_tagged_mention_of_the_long_forms_last_words_counts() -> None:
    # Schwartz-Hearst's long form is "human breast tumour"; only "breast tumour" is tagged
    text = "Cells of human breast tumour (HBT) were grown; HBT invaded the liver."
    (tumour,) = spans_of(text, "breast tumour")
    (liver,) = spans_of(text, "liver")
    mentions = [(*tumour, "Cancer", 1.0), (*liver, "Organ", 1.0)]
    out = propagate_abbreviations(text, mentions)
    assert [(text[b:e], label) for b, e, label, _ in out] == [
        ("breast tumour", "Cancer"),
        ("HBT", "Cancer"),
        ("HBT", "Cancer"),
        ("liver", "Organ"),
    ]


def test_nothing_is_added_without_a_tagged_long_form_or_over_other_mentions() -> None:
    text = "In colorectal cancer (CRC) we saw CRC cells."
    assert propagate_abbreviations(text, []) == []
    # the long form's neighbour word is tagged, not the long form or its last words
    (colorectal,) = spans_of(text, "colorectal")
    assert propagate_abbreviations(text, [(*colorectal, "Organ", 1.0)]) == [
        (*colorectal, "Organ", 1.0)
    ]
    # an occurrence the tagger already covered keeps its own mention
    (cancer,) = spans_of(text, "colorectal cancer")
    cells = (text.index("CRC cells"), text.index("CRC cells") + len("CRC cells"))
    out = propagate_abbreviations(text, [(*cancer, "Cancer", 1.0), (*cells, "Cell", 1.0)])
    (defined,) = [s for s in spans_of(text, "CRC") if text[s[0] - 1] == "("]
    assert out == sorted(
        [(*cancer, "Cancer", 1.0), (*cells, "Cell", 1.0), (*defined, "Cancer", 1.0)]
    )


# ----------------------------------------------------------------------------- runtime

TRAINING = [
    ("the colorectal cancer was large", [(4, 21, "Cancer")]),
    ("a colorectal cancer grew", [(2, 19, "Cancer")]),
    ("the liver was large", [(4, 9, "Organ")]),
    # short forms and brackets are not mentions to this model
    ("we saw ABC (DEF) here. Later, GHI spread.", []),
    ("the XYZ (QRS) was seen, JKL too.", []),
] * 4


def _member(folder: Path) -> Path:
    settings = FeatureSettings()
    context = DocumentContext(settings, None)
    sequences = []
    for text, mentions in TRAINING:
        spans = tokenize(text)
        sequences.append((context.features(text, spans), labels_for(spans, mentions, "BIO")))
    train_crf(sequences, folder, TrainingParams(max_iterations=30), settings)
    return folder


def _tag(model: Path, text: str) -> list[tuple[str, str]]:
    cas = cassis.Cas(typesystem=load_typesystem())
    cas.sofa_string = text
    component = AnatomyNer(AnatomyNerConfig(model=str(model)), RunContext(output_dir=model))
    component.process(cas)
    return [(m.get_covered_text(), m.value) for m in cas.select(ANATOMY_MENTION)]


def test_the_component_runs_the_steps_the_model_meta_names(tmp_path: Path) -> None:
    member = _member(tmp_path / "member")
    plain, propagating = tmp_path / "plain", tmp_path / "propagating"
    assemble(plain, [member, member])
    assemble(propagating, [member, member])
    meta = json.loads((propagating / META_FILE).read_text("utf-8"))
    meta["document_postprocess"] = ["propagate_abbreviations"]
    (propagating / META_FILE).write_text(json.dumps(meta), encoding="utf-8")
    assert document_steps(plain) == []
    assert document_steps(propagating) == [DOCUMENT_POSTPROCESSORS["propagate_abbreviations"]]

    text = "We saw a colorectal cancer (CRC) here. Later, CRC spread."
    found = _tag(plain, text)
    assert ("colorectal cancer", "Cancer") in found
    assert ("CRC", "Cancer") not in found  # the tiny model never saw a short form
    assert Counter(_tag(propagating, text)) == Counter(found) + Counter({("CRC", "Cancer"): 2})


def test_an_unknown_document_step_names_the_meta_file(tmp_path: Path) -> None:
    member = _member(tmp_path / "member")
    meta = json.loads((member / META_FILE).read_text("utf-8"))
    meta["document_postprocess"] = ["propagate_everything"]
    (member / META_FILE).write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(ValueError, match=r"meta\.json: unknown document_postprocess"):
        _tag(member, "the liver")


def test_a_short_form_defined_with_two_long_forms_is_not_propagated() -> None:
    text = (
        "Colorectal carcinoma (CC) is a cancer. The corpus callosum (CC) was imaged. "
        "CC volume was low."
    )
    (carcinoma,) = spans_of(text, "carcinoma")  # the long form Schwartz-Hearst finds
    (callosum,) = spans_of(text, "corpus callosum")
    (defined_second,) = [s for s in spans_of(text, "CC") if text[s[0] - 1] == "(" and s[0] > 50]
    tagged = [
        (*carcinoma, "Cancer", 1.0),
        (*callosum, "Multi-tissue_structure", 1.0),
        (*defined_second, "Multi-tissue_structure", 0.6),
    ]
    # each definition keeps the tagger's own tags; no "CC" takes the first long form's class
    assert propagate_abbreviations(text, tagged) == sorted(tagged)
    # the features still see the first definition, as the shipped models were trained
    assert find_abbreviations(text) == {"CC": "carcinoma"}


def test_a_long_form_does_not_reach_back_over_a_sentence_or_paragraph() -> None:
    text = "in the colorectal region.\n\nCancer (CRC) cells. CRC grew."
    (cancer,) = spans_of(text, "Cancer")
    assert propagate_abbreviations(text, [(*cancer, "Cancer", 1.0)]) == [(*cancer, "Cancer", 1.0)]


# ----------------------------------------------------------------------------- checks


def _problem(model: Path, meta: object) -> str | None:
    (model / META_FILE).write_text(json.dumps(meta) if not isinstance(meta, str) else meta, "utf-8")
    return model_problem(model)


def test_a_damaged_meta_file_is_a_problem_naming_it(tmp_path: Path) -> None:
    member = _member(tmp_path / "member")
    meta = json.loads((member / META_FILE).read_text("utf-8"))
    meta_file = str(member / META_FILE)
    for damaged, reason in [
        ("{oops", "is not valid JSON"),
        ([1, 2], "holds a list, not a JSON object"),
        ({**meta, "dictionary": {"min_length": 0}}, "invalid dictionary settings (min_length"),
        ({**meta, "document_postprocess": ["frobnicate"]}, "unknown document_postprocess"),
    ]:
        problem = _problem(member, damaged)
        assert problem is not None and meta_file in problem and reason in problem, problem
        config = AnatomyNerConfig(model=str(member))
        (reported,) = AnatomyNer.check_config(config, RunContext(output_dir=tmp_path))
        assert reported == problem
    _problem(member, meta)
    assert model_problem(member) is None


def test_an_ensemble_with_an_unknown_step_is_refused_before_the_run(tmp_path: Path) -> None:
    member = _member(tmp_path / "member")
    ensemble = tmp_path / "ensemble"
    assemble(ensemble, [member, member])
    meta = json.loads((ensemble / META_FILE).read_text("utf-8"))
    meta["document_postprocess"] = ["propagate_abbreviations", "frobnicate"]
    problem = _problem(ensemble, meta)
    assert problem is not None and "unknown document_postprocess frobnicate" in problem


def test_mention_type_takes_a_short_name() -> None:
    assert AnatomyNerConfig(mention_type="AnatomyMention").mention_type == ANATOMY_MENTION
    problems = AnatomyNer.check_config(
        AnatomyNerConfig(mention_type="Token"), RunContext(output_dir=Path("."))
    )
    assert len(problems) == 1 and "Token' is not one of GeneMention" in problems[0]


def test_duplicate_tokens_give_one_mention(tmp_path: Path) -> None:
    member = _member(tmp_path / "member")
    text = "the colorectal cancer was large"
    cas = cassis.Cas(typesystem=load_typesystem())
    cas.sofa_string = text
    token = cas.typesystem.get_type(TOKEN)
    spans = tokenize(text)
    cas.add_all(token(begin=b, end=e) for b, e in spans + spans)
    config = AnatomyNerConfig(model=str(member), use_existing_tokens=True)
    AnatomyNer(config, RunContext(output_dir=tmp_path)).process(cas)
    assert [m.get_covered_text() for m in cas.select(ANATOMY_MENTION)] == ["colorectal cancer"]
