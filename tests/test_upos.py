"""UPOS from XPOS: the learned map, its file, and the spaCy wrapper that applies it."""

from __future__ import annotations

from pathlib import Path

import cassis
import pytest
import spacy
from spacy.tokens import Doc

from casflow.components.models import shipped_model_path
from casflow.components.spacy.mapping import DocMapper
from casflow.components.spacy.upos import (
    UPOS_FILE,
    format_upos_map,
    learn_upos_map,
    model_upos_map,
    read_upos_map,
)
from casflow.pipeline.component import RunContext
from casflow.pipeline.registry import registry
from casflow.typesystem import TOKEN, load_typesystem

# Three sentences: NN is NOUN twice and PROPN once (majority wins); "_" tags are not
# evidence; JJ ties ADJ/VERB once each (alphabetical: ADJ).
CONLLU = """\
# text = Gene binds
1\tGene\tgene\tNOUN\tNN\t_\t2\tnsubj\t_\t_
2\tbinds\tbind\tVERB\tVBZ\t_\t0\troot\t_\t_

# text = BRCA1 protein
1\tBRCA1\tbrca1\tPROPN\tNN\t_\t2\tcompound\t_\t_
2\tprotein\tprotein\tNOUN\tNN\t_\t0\troot\t_\t_

# text = open closed x
1\topen\topen\tVERB\tJJ\t_\t0\troot\t_\t_
2\tclosed\tclosed\tADJ\tJJ\t_\t1\tconj\t_\t_
3\tx\tx\t_\tXX\t_\t1\tdep\t_\t_

"""


def test_learned_map_takes_the_majority_and_breaks_ties_alphabetically(tmp_path: Path) -> None:
    (tmp_path / "a.conllu").write_text(CONLLU, encoding="utf-8")
    mapping = learn_upos_map([tmp_path / "a.conllu"])
    assert mapping == {"NN": "NOUN", "VBZ": "VERB", "JJ": "ADJ"}
    (tmp_path / UPOS_FILE).write_text(format_upos_map(mapping, "a.conllu"), encoding="utf-8")
    assert read_upos_map(tmp_path / UPOS_FILE) == mapping
    assert model_upos_map(tmp_path) == mapping
    assert model_upos_map(tmp_path / "elsewhere") is None
    (tmp_path / "bad.tsv").write_text("NN NOUN\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.tsv:1: expected 'XPOS<TAB>UPOS'"):
        read_upos_map(tmp_path / "bad.tsv")


def test_mapper_fills_upos_only_where_the_pipeline_gives_none() -> None:
    doc = Doc(
        spacy.blank("en").vocab,
        words=["BRCA1", "binds", "it", "!"],
        tags=["NN", "VBZ", "PRP", "ZZ"],
        pos=["PROPN", "", "", ""],
    )
    cas = cassis.Cas(typesystem=load_typesystem())
    cas.sofa_string = doc.text
    upos = {"NN": "NOUN", "VBZ": "VERB", "PRP": "PRON"}
    DocMapper(cas.typesystem, ["tokens", "pos"], upos_map=upos).add_doc(cas, doc)
    # pos_ kept when present; mapped otherwise; a tag the map does not know is X.
    assert [t.pos.coarseValue for t in cas.select(TOKEN)] == ["PROPN", "VERB", "PRON", "X"]
    plain = cassis.Cas(typesystem=load_typesystem())
    plain.sofa_string = doc.text
    DocMapper(plain.typesystem, ["tokens", "pos"]).add_doc(plain, doc)
    assert [t.pos.coarseValue for t in plain.select(TOKEN)] == ["PROPN", None, None, None]


@pytest.mark.slow
@pytest.mark.corpus
def test_shipped_map_is_what_the_craft_training_treebank_gives(craft_dir: Path) -> None:
    ids = (craft_dir / "articles" / "ids" / "craft-ids-train.txt").read_text().split()
    conllu = craft_dir / "structural-annotation" / "dependency" / "conllu"
    learned = learn_upos_map([conllu / f"{doc_id}.conllu" for doc_id in ids])
    shipped = read_upos_map(shipped_model_path("craft_syntax") / UPOS_FILE)
    assert shipped == learned
    assert len(shipped) == 44 and shipped["NN"] == "NOUN" and shipped["HYPH"] == "PUNCT"


@pytest.mark.slow
def test_shipped_syntax_model_writes_upos_for_every_token(tmp_path: Path) -> None:
    cls = registry().get("spacy.pipeline.v1")
    config = cls.Config.model_validate(
        {"model": "casflow:craft_syntax", "layers": ["tokens", "pos"]}
    )
    component = cls(config, RunContext(output_dir=tmp_path))
    cas = cassis.Cas(typesystem=load_typesystem())
    cas.sofa_string = "The p53 gene binds MDM2 (see Fig. 1)."
    component.process(cas)
    tags = [(t.pos.PosValue, t.pos.coarseValue) for t in cas.select(TOKEN)]
    assert len(tags) == 11 and all(xpos and upos for xpos, upos in tags)
    assert tags[:2] == [("DT", "DET"), ("NN", "NOUN")]
    # An explicit map overrides the model's.
    (tmp_path / "upos.tsv").write_text("NN\tPROPN\n", encoding="utf-8")
    override = cls.Config.model_validate(
        {
            "model": "casflow:craft_syntax",
            "layers": ["tokens", "pos"],
            "upos_map": str(tmp_path / "upos.tsv"),
        }
    )
    other = cassis.Cas(typesystem=load_typesystem())
    other.sofa_string = "The p53 gene"
    cls(override, RunContext(output_dir=tmp_path)).process(other)
    assert [t.pos.coarseValue for t in other.select(TOKEN)] == ["X", "PROPN", "PROPN"]
    assert cls.check_config(
        cls.Config.model_validate({"model": "casflow:craft_syntax", "upos_map": "missing.tsv"}),
        RunContext(output_dir=tmp_path, workflow_dir=tmp_path),
    )[0].startswith("upos_map:")
