"""Gold-corpus readers (BC2GM, GENETAG, AnatEM) and the importers that add a view.

Fixtures are hand-written below. Corpus tests read whole portions through a
workflow and write them back with the twin writer (see also test_format_writers.py).
"""

from __future__ import annotations

import json
import os
import textwrap
import time
import warnings
from pathlib import Path
from typing import Any

import cassis
import pytest

from casflow.cas.metadata import set_document_metadata
from casflow.components.corpora.anatem import AnatemDataError
from casflow.components.corpora.genetag import GenetagDataError
from casflow.components.corpora.selection import read_id_list
from casflow.components.formats.bc2 import parse as bc2
from casflow.components.formats.genetag import parse as genetag
from casflow.pipeline.component import RunContext
from casflow.pipeline.registry import registry
from casflow.pipeline.runner import RunOptions, run_workflow
from casflow.pipeline.validation import WorkflowValidationError
from casflow.pipeline.workflow import load_workflow_text
from casflow.typesystem import (
    ALTERNATIVE,
    ANATOMY_MENTION,
    CONSTITUENT_ROOT,
    DEPENDENCY,
    DEPENDENCY_ROOT,
    EMPTY_CATEGORY,
    FRAGMENT,
    GENE_MENTION,
    NAMED_ENTITY,
    POS,
    SENTENCE,
    TOKEN,
    TREEBANK_CONSTITUENT,
    load_typesystem,
)

# ----------------------------------------------------------------------------- helpers


def write_files(folder: Path, files: dict[str, str]) -> Path:
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    return folder


def build(name: str, config: dict[str, Any], workflow_dir: Path) -> Any:
    cls = registry().get(name)
    context = RunContext(output_dir=workflow_dir / "out", workflow_dir=workflow_dir)
    return cls(cls.Config.model_validate(config), context)


def problems(name: str, config: dict[str, Any], workflow_dir: Path) -> list[str]:
    cls = registry().get(name)
    context = RunContext(output_dir=workflow_dir / "out", workflow_dir=workflow_dir)
    return cls.check_config(cls.Config.model_validate(config), context)


def load_all(reader: Any) -> list[cassis.Cas]:
    cases = []
    for ref in reader.iter_documents():
        cas = cassis.Cas(typesystem=load_typesystem())
        reader.load(ref, cas)
        cases.append(cas)
    return cases


def document_view(text: str, doc_id: str, view: str = "system") -> cassis.Cas:
    """A CAS as the chain hands it to a processor: initial view with metadata, named view."""
    cas = cassis.Cas(typesystem=load_typesystem())
    cas.sofa_string = text
    set_document_metadata(cas, doc_id, f"{doc_id}.txt")
    named = cas.create_view(view)
    named.sofa_string = text
    return named


def covered(view: cassis.Cas, type_name: str) -> list[str]:
    return [a.get_covered_text() for a in view.select(type_name)]


def run(tmp_path: Path, workflow: str) -> Any:
    text = textwrap.dedent(workflow)
    loaded = load_workflow_text(text, source=str(tmp_path / "wf.yaml"))
    return run_workflow(loaded, RunOptions(show_progress=False))


# ----------------------------------------------------------------------------- BC2GM

BC2_IN = (
    "S1 The p53 gene  binds  MDM2 (murine double minute 2).\n"
    "S2 No genes here.\n"
    "S3 IL-2 receptor alpha chain is expressed.\n"
)
BC2_GENES = "S1|3 5|p53\nS1|15 18|MDM2\nS1|20 38|murine double minute 2\nS3|0 21|IL-2 receptor alpha chain\n"
BC2_ALTERNATIVES = (
    "S1|3 9|p53 gene\n"
    "S1|15 39|MDM2 (murine double minute 2)\n"
    "S1|10 14|binds\n"  # overlaps no gene
    "S3|0 11|IL-2 receptor\n"
)


@pytest.fixture()
def bc2_corpus(tmp_path: Path) -> Path:
    return write_files(
        tmp_path / "bc2gm",
        {
            "bc2-format/devel/devel.in": BC2_IN,
            "bc2-format/devel/GENE.eval": BC2_GENES,
            "bc2-format/devel/ALTGENE.eval": BC2_ALTERNATIVES,
        },
    )


def test_bc2gm_one_document_per_sentence_with_genes(bc2_corpus: Path, tmp_path: Path) -> None:
    reader = build("bc2gm.reader.v1", {"corpus": str(bc2_corpus), "on_mismatch": "raise"}, tmp_path)
    refs = list(reader.iter_documents())
    assert [r.doc_id for r in refs] == ["S1", "S2", "S3"]
    assert all(r.data is not None and r.size == len(json.loads(r.data)["t"]) for r in refs)
    s1, s2, s3 = load_all(build("bc2gm.reader.v1", {"corpus": str(bc2_corpus)}, tmp_path))
    assert s1.sofa_string == "The p53 gene  binds  MDM2 (murine double minute 2)."
    assert covered(s1, GENE_MENTION) == ["p53", "MDM2", "murine double minute 2"]
    assert {m.value for m in s1.select(GENE_MENTION)} == {"GENE"}
    assert covered(s1, SENTENCE) == [s1.sofa_string]
    assert s1.select(SENTENCE)[0].id == "S1"
    assert covered(s2, GENE_MENTION) == []
    assert covered(s3, GENE_MENTION) == ["IL-2 receptor alpha chain"]


def test_bc2gm_alternatives_are_shared_by_every_gene_they_overlap(
    bc2_corpus: Path, tmp_path: Path
) -> None:
    s1, s2, s3 = load_all(build("bc2gm.reader.v1", {"corpus": str(bc2_corpus)}, tmp_path))
    p53, mdm2, murine = s1.select(GENE_MENTION)
    assert [a.get_covered_text() for a in p53.alternatives.elements] == ["p53 gene"]
    (long_form,) = mdm2.alternatives.elements
    assert long_form.get_covered_text() == "MDM2 (murine double minute 2)"
    assert murine.alternatives.elements[0] is long_form  # one Alternative, listed twice
    # the alternative overlapping no gene is kept in the index, listed by no gene
    assert sorted(covered(s1, ALTERNATIVE)) == sorted(
        ["p53 gene", "MDM2 (murine double minute 2)", "binds"]
    )
    assert covered(s3, ALTERNATIVE) == ["IL-2 receptor"]


def test_bc2gm_load_reads_no_file(bc2_corpus: Path, tmp_path: Path) -> None:
    reader = build("bc2gm.reader.v1", {"corpus": str(bc2_corpus)}, tmp_path)
    refs = list(reader.iter_documents())
    for path in (bc2_corpus / "bc2-format" / "devel").iterdir():
        path.unlink()
    cas = cassis.Cas(typesystem=load_typesystem())
    reader.load(refs[2], cas)
    assert covered(cas, GENE_MENTION) == ["IL-2 receptor alpha chain"]


def test_bc2gm_limit_and_explicit_files(bc2_corpus: Path, tmp_path: Path) -> None:
    limited = build("bc2gm.reader.v1", {"corpus": str(bc2_corpus), "limit": 2}, tmp_path)
    assert [r.doc_id for r in limited.iter_documents()] == ["S1", "S2"]
    folder = bc2_corpus / "bc2-format" / "devel"
    # explicit sentences without gold files: text only
    (s1, _, _) = load_all(
        build("bc2gm.reader.v1", {"sentences": str(folder / "devel.in")}, tmp_path)
    )
    assert covered(s1, GENE_MENTION) == [] and covered(s1, ALTERNATIVE) == []
    (s1, _, _) = load_all(
        build(
            "bc2gm.reader.v1",
            {"sentences": str(folder / "devel.in"), "genes": str(folder / "GENE.eval")},
            tmp_path,
        )
    )
    assert len(covered(s1, GENE_MENTION)) == 3 and covered(s1, ALTERNATIVE) == []


def test_bc2gm_missing_files_are_reported_before_the_run(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    found = problems("bc2gm.reader.v1", {"corpus": str(tmp_path / "empty")}, tmp_path)
    assert len(found) == 3 and "devel.in" in found[0] and "does not exist" in found[0]
    # no corpus folder at all: one problem naming it (see test_corpus_locations.py)
    (found,) = problems("bc2gm.reader.v1", {"corpus": str(tmp_path / "nowhere")}, tmp_path)
    assert f"BC2GM folder {tmp_path / 'nowhere'} does not exist" in found


def test_bc2gm_text_mismatch_warns_by_default_and_fails_on_request(
    bc2_corpus: Path, tmp_path: Path
) -> None:
    (bc2_corpus / "bc2-format/devel/GENE.eval").write_text("S2|0 1|Yes\n", encoding="utf-8")
    with pytest.warns(bc2.FormatWarning, match="GENE.eval:1: sentence S2"):
        list(build("bc2gm.reader.v1", {"corpus": str(bc2_corpus)}, tmp_path).iter_documents())
    strict = build("bc2gm.reader.v1", {"corpus": str(bc2_corpus), "on_mismatch": "raise"}, tmp_path)
    errors = {r.doc_id: r.error for r in strict.iter_documents()}
    assert errors["S1"] is None and errors["S3"] is None  # only S2 fails
    assert "GENE.eval:1: sentence S2: mention text 'Yes'" in (errors["S2"] or "")


def test_bc2gm_a_mention_line_outside_its_sentence_fails_that_sentence_only(
    bc2_corpus: Path, tmp_path: Path
) -> None:
    genes = bc2_corpus / "bc2-format/devel/GENE.eval"
    genes.write_text(BC2_GENES.replace("S1|15 18|MDM2", "S1|15 981|MDM2"), encoding="utf-8")
    reader = build("bc2gm.reader.v1", {"corpus": str(bc2_corpus)}, tmp_path)
    refs = list(reader.iter_documents())
    assert [r.doc_id for r in refs] == ["S1", "S2", "S3"]
    assert "GENE.eval:2: sentence S1: offsets 15 981 are outside" in (refs[0].error or "")
    assert refs[1].error is None and refs[2].error is None
    cas = cassis.Cas(typesystem=load_typesystem())
    reader.load(refs[2], cas)
    assert covered(cas, GENE_MENTION) == ["IL-2 receptor alpha chain"]


def test_bc2gm_a_byte_order_mark_does_not_hide_the_first_sentence(
    bc2_corpus: Path, tmp_path: Path
) -> None:
    for name in ("devel.in", "GENE.eval"):
        path = bc2_corpus / "bc2-format/devel" / name
        path.write_text("\ufeff" + path.read_text("utf-8"), encoding="utf-8")
    first, _, _ = load_all(build("bc2gm.reader.v1", {"corpus": str(bc2_corpus)}, tmp_path))
    assert first.select(SENTENCE)[0].id == "S1"
    assert covered(first, GENE_MENTION) == ["p53", "MDM2", "murine double minute 2"]


def test_bc2gm_a_repeated_gold_line_is_read_once_with_a_warning(
    bc2_corpus: Path, tmp_path: Path
) -> None:
    genes = bc2_corpus / "bc2-format/devel/GENE.eval"
    genes.write_text("S1|3 5|p53\n" + BC2_GENES, encoding="utf-8")
    with pytest.warns(
        bc2.FormatWarning, match="1 gold mention line.s. repeat .*line 2 repeats line 1"
    ):
        first, _, _ = load_all(build("bc2gm.reader.v1", {"corpus": str(bc2_corpus)}, tmp_path))
    assert covered(first, GENE_MENTION) == ["p53", "MDM2", "murine double minute 2"]


@pytest.mark.parametrize("reader", ["bc2gm.reader.v1", "genetag.reader.v1"])
def test_sentence_readers_refuse_ids_with_ids_file(reader: str, tmp_path: Path) -> None:
    cls = registry().get(reader)
    with pytest.raises(ValueError, match="give 'ids' or 'ids_file', not both"):
        cls.Config.model_validate({"ids": ["S1"], "ids_file": "ids.txt"})


def test_bc2gm_empty_files_and_selections_are_validation_errors(
    bc2_corpus: Path, tmp_path: Path
) -> None:
    config = {"corpus": str(bc2_corpus)}
    assert problems("bc2gm.reader.v1", {**config, "ids": []}, tmp_path) == [
        "'ids' is empty: the configuration selects no sentence"
    ]
    (unknown,) = problems("bc2gm.reader.v1", {**config, "ids": ["S1", "S9"]}, tmp_path)
    assert unknown.startswith("ids not in ") and unknown.endswith("devel.in: S9")
    (bc2_corpus / "bc2-format/devel/GENE.eval").write_text("", encoding="utf-8")
    (empty,) = problems("bc2gm.reader.v1", config, tmp_path)
    assert "GENE.eval" in empty and "is empty: no sentence would have a gold mention" in empty
    (bc2_corpus / "bc2-format/devel/devel.in").write_text("\n", encoding="utf-8")
    assert "the sentence file" in problems("bc2gm.reader.v1", config, tmp_path)[0]


def test_bc2gm_a_folder_as_distributed_and_ids(tmp_path: Path) -> None:
    # e.g. the test portion: test.in, GENE.eval, ALTGENE.eval in one folder
    test = write_files(
        tmp_path / "bc2GMtest",
        {"test.in": BC2_IN, "GENE.eval": BC2_GENES, "ALTGENE.eval": BC2_ALTERNATIVES},
    )
    assert problems("bc2gm.reader.v1", {"folder": str(test)}, tmp_path) == []
    s1, _, s3 = load_all(build("bc2gm.reader.v1", {"folder": str(test)}, tmp_path))
    assert covered(s1, GENE_MENTION) == ["p53", "MDM2", "murine double minute 2"]
    assert covered(s3, ALTERNATIVE) == ["IL-2 receptor"]
    (tmp_path / "ids.txt").write_text("S3\nS1\n")
    reader = build("bc2gm.reader.v1", {"folder": str(test), "ids_file": "ids.txt"}, tmp_path)
    assert [r.doc_id for r in reader.iter_documents()] == ["S1", "S3"]  # file order
    reader = build("bc2gm.reader.v1", {"folder": str(test), "ids": ["S9"]}, tmp_path)
    with pytest.raises(ValueError, match="ids not in .*test.in: S9"):
        list(reader.iter_documents())
    (test / "GENE.eval").unlink()  # sentences alone: no gold mentions
    (only,) = load_all(build("bc2gm.reader.v1", {"folder": str(test), "ids": ["S1"]}, tmp_path))
    assert covered(only, GENE_MENTION) == []
    (test / "more.in").write_text(BC2_IN)
    (problem,) = problems("bc2gm.reader.v1", {"folder": str(test)}, tmp_path)
    assert "holds 2 files matching *.in" in problem and "'sentences'" in problem


# ----------------------------------------------------------------------------- GENETAG

GENETAG_TAGGED = (
    "@@1 Large/NEWGENE T/NEWGENE antigen/NEWGENE binds/VBZ TBP/NEWGENE ./.\n"
    "@@2 The/DT hTAF/NEWGENE (/NEWGENE II/NEWGENE )/NEWGENE 100/NEWGENE and/CC TBP/NEWGENE1 ./.\n"
)
GENETAG_GOLD = "@@1|0 2|Large T antigen\n@@1|4 4|TBP\n@@2|1 5|hTAF ( II ) 100\n@@2|7 7|TBP\n"
GENETAG_CORRECT = "@@1|1 2|T antigen\n@@2|1 1|hTAF\n@@2|0 0|The\n"


@pytest.fixture()
def genetag_corpus(tmp_path: Path) -> Path:
    return write_files(
        tmp_path / "genetag",
        {
            "devtest/TAGGED_GENE_CORPUS": GENETAG_TAGGED,
            "devtest/Gold.format": GENETAG_GOLD,
            "devtest/Correct.Data": GENETAG_CORRECT,
        },
    )


def test_genetag_tokens_genes_and_alternatives(genetag_corpus: Path, tmp_path: Path) -> None:
    reader = build("genetag.reader.v1", {"corpus": str(genetag_corpus)}, tmp_path)
    assert [r.doc_id for r in reader.iter_documents()] == ["@@1", "@@2"]
    first, second = load_all(reader)
    assert first.sofa_string == "Large T antigen binds TBP ."
    assert covered(first, TOKEN) == ["Large", "T", "antigen", "binds", "TBP", "."]
    assert [t.id for t in first.select(TOKEN)] == ["1", "2", "3", "4", "5", "6"]
    assert covered(first, SENTENCE) == [first.sofa_string]
    assert covered(first, GENE_MENTION) == ["Large T antigen", "TBP"]
    assert covered(first, POS) == []  # pos is off by default
    large_t = first.select(GENE_MENTION)[0]
    assert [a.get_covered_text() for a in large_t.alternatives.elements] == ["T antigen"]
    assert covered(second, GENE_MENTION) == ["hTAF ( II ) 100", "TBP"]
    assert sorted(covered(second, ALTERNATIVE)) == ["The", "hTAF"]  # "The" overlaps no gene


def test_genetag_damaged_files(genetag_corpus: Path, tmp_path: Path) -> None:
    folder = genetag_corpus / "devtest"
    config = {"corpus": str(genetag_corpus)}
    (folder / "Gold.format").write_text("@@1|4 4|TBP\n" + GENETAG_GOLD, encoding="utf-8")
    with pytest.warns(genetag.FormatWarning, match="1 gold mention line.s. repeat"):
        first, _ = load_all(build("genetag.reader.v1", config, tmp_path))
    assert covered(first, GENE_MENTION) == ["Large T antigen", "TBP"]
    # a bad line fails its sentence, labelled as GENETAG's
    (folder / "Gold.format").write_text(GENETAG_GOLD.replace("@@1|4 4", "@@1|4 40"), "utf-8")
    refs = list(build("genetag.reader.v1", config, tmp_path).iter_documents())
    assert "tokens 4..40 outside its 6 tokens" in (refs[0].error or "") and refs[1].error is None
    with pytest.raises(GenetagDataError, match="ids not in"):
        list(build("genetag.reader.v1", {**config, "ids": ["@@9"]}, tmp_path).iter_documents())
    (folder / "Gold.format").write_text("", encoding="utf-8")
    (empty,) = problems("genetag.reader.v1", config, tmp_path)
    assert "Gold.format" in empty and "is empty" in empty
    tabbed = GENETAG_TAGGED.replace("antigen/NEWGENE binds", "antigen/NEWGENE\tbinds")
    (folder / "TAGGED_GENE_CORPUS").write_text(tabbed, encoding="utf-8")
    with pytest.raises(GenetagDataError, match="TAGGED_GENE_CORPUS:1: .*a token cannot contain"):
        list(build("genetag.reader.v1", config, tmp_path).iter_documents())


def test_genetag_a_folder_as_distributed_and_ids(genetag_corpus: Path, tmp_path: Path) -> None:
    folder = genetag_corpus / "devtest"
    reader = build("genetag.reader.v1", {"folder": str(folder), "ids": ["@@2"]}, tmp_path)
    (second,) = load_all(reader)
    assert covered(second, GENE_MENTION) == ["hTAF ( II ) 100", "TBP"]
    tokenized = write_files(
        tmp_path / "round1",
        {"TOKENIZED_CORPUS": GENETAG_TAGGED.replace("NEWGENE1", "TAG").replace("NEWGENE", "TAG")},
    )
    assert problems("genetag.reader.v1", {"folder": str(tokenized)}, tmp_path) == []
    first, _ = load_all(build("genetag.reader.v1", {"folder": str(tokenized)}, tmp_path))
    assert covered(first, TOKEN) == ["Large", "T", "antigen", "binds", "TBP", "."]
    (tmp_path / "bare").mkdir()
    (problem,) = problems("genetag.reader.v1", {"folder": str(tmp_path / "bare")}, tmp_path)
    assert "TAGGED_GENE_CORPUS does not exist" in problem
    (problem,) = problems("genetag.reader.v1", {"folder": str(tmp_path / "none")}, tmp_path)
    assert f"the folder {tmp_path / 'none'} ('folder') does not exist" in problem


def test_genetag_pos_only_where_the_tag_is_a_part_of_speech(
    genetag_corpus: Path, tmp_path: Path
) -> None:
    first, second = load_all(
        build("genetag.reader.v1", {"corpus": str(genetag_corpus), "pos": True}, tmp_path)
    )
    tags = [(t.get_covered_text(), t.pos.PosValue if t.pos else None) for t in first.select(TOKEN)]
    assert tags == [
        ("Large", None),
        ("T", None),
        ("antigen", None),
        ("binds", "VBZ"),
        ("TBP", None),
        (".", "."),
    ]
    assert [p.PosValue for p in second.select(POS)] == ["DT", "CC", "."]


def test_genetag_pos_leaves_out_entity_tags_and_untagged_sentences(tmp_path: Path) -> None:
    # TAGGED_GENE_CORPUS tags a few tokens CELL, CHEM or ORG instead of a part of speech;
    # TOKENIZED_CORPUS tags every token TAG except the final period ("./.").
    tagged = write_files(
        tmp_path / "tagged",
        {"TAGGED_GENE_CORPUS": "@@1 HeLa/CELL and/CC Albendazole/CHEM in/IN Schistosoma/ORG ./.\n"},
    )
    (first,) = load_all(build("genetag.reader.v1", {"folder": str(tagged), "pos": True}, tmp_path))
    assert [p.PosValue for p in first.select(POS)] == ["CC", "IN", "."]
    tokenized = write_files(
        tmp_path / "round1", {"TOKENIZED_CORPUS": "@@1 Cells/TAG in/TAG p53/TAG ./.\n"}
    )
    (only,) = load_all(
        build("genetag.reader.v1", {"folder": str(tokenized), "pos": True}, tmp_path)
    )
    assert covered(only, TOKEN) == ["Cells", "in", "p53", "."]
    assert covered(only, POS) == []


# ----------------------------------------------------------------------------- AnatEM

ANATEM_DOC1 = (
    "O\t0\t6\tImages\tImage\tNNS\tB-NP\n"
    "\n"
    "B-Cell\t8\t13\tCells\tCell\tNNS\tB-NP\n"
    "O\t14\t16\tin\tin\tIN\tB-PP\n"
    "B-Organ\t17\t22\theart\theart\tNN\tB-NP\n"
    "I-Organ\t23\t29\ttissue\ttissue\tNN\tI-NP\n"
    "O\t29\t30\t.\t.\t.\tO\n"
    "\n"
)
ANATEM_DOC1_CONLL = "Images\tO\n\nCells\tB-Cell\nin\tO\nheart\tB-Organ\ntissue\tI-Organ\n.\tO\n\n"
ANATEM_DOC2 = "B-Tissue\t0\t4\tSkin\tskin\tNN\tB-NP\n\n"


@pytest.fixture()
def anatem_corpus(tmp_path: Path) -> Path:
    return write_files(
        tmp_path / "anatem",
        {
            "splits/devel-documents.list": "PMID-1\nPMID-2\n",
            "nersuite/devel/PMID-1.nersuite": ANATEM_DOC1,
            "nersuite/devel/PMID-2.nersuite": ANATEM_DOC2,
            "conll/devel/PMID-1.conll": ANATEM_DOC1_CONLL,
        },
    )


def test_anatem_text_sentences_tokens_and_mentions(anatem_corpus: Path, tmp_path: Path) -> None:
    reader = build("anatem.reader.v1", {"corpus": str(anatem_corpus)}, tmp_path)
    assert [r.doc_id for r in reader.iter_documents()] == ["PMID-1", "PMID-2"]
    first, second = load_all(reader)
    assert first.sofa_string == "Images  Cells in heart tissue."
    assert covered(first, SENTENCE) == ["Images", "Cells in heart tissue."]
    assert covered(first, TOKEN) == ["Images", "Cells", "in", "heart", "tissue", "."]
    assert [(m.get_covered_text(), m.value) for m in first.select(ANATOMY_MENTION)] == [
        ("Cells", "Cell"),
        ("heart tissue", "Organ"),
    ]
    assert covered(first, POS) == []
    assert [m.value for m in second.select(ANATOMY_MENTION)] == ["Tissue"]


def test_anatem_options(anatem_corpus: Path, tmp_path: Path) -> None:
    config = {"corpus": str(anatem_corpus), "pos": True, "ids": ["PMID-1"], "sentence_break": "\n"}
    (only,) = load_all(build("anatem.reader.v1", config, tmp_path))
    assert only.sofa_string == "Images\n Cells in heart tissue."
    assert [t.pos.PosValue for t in only.select(TOKEN)] == ["NNS", "NNS", "IN", "NN", "NN", "."]
    limited = build("anatem.reader.v1", {"corpus": str(anatem_corpus), "limit": 1}, tmp_path)
    assert [r.doc_id for r in limited.iter_documents()] == ["PMID-1"]


def test_anatem_missing_document_file_is_reported(anatem_corpus: Path, tmp_path: Path) -> None:
    (anatem_corpus / "nersuite/devel/PMID-2.nersuite").unlink()
    (problem,) = problems("anatem.reader.v1", {"corpus": str(anatem_corpus)}, tmp_path)
    assert "1 document(s) have no NERsuite file" in problem and "PMID-2.nersuite" in problem
    unknown = problems("anatem.reader.v1", {"corpus": str(anatem_corpus), "ids": ["X"]}, tmp_path)
    assert "ids not in the devel split: X" in unknown[0]


def test_anatem_reads_files_named_directly_without_a_layout(
    anatem_corpus: Path, tmp_path: Path
) -> None:
    # e.g. AnatEM's test portion as released: NERsuite files, pointed at as they are
    loose = write_files(
        tmp_path / "loose", {"b/PMID-7.nersuite": ANATEM_DOC2, "PMID-9.nersuite": ANATEM_DOC1}
    )
    (tmp_path / "some.list").write_text("loose/PMID-9.nersuite\n")
    for given, ids in (
        (str(loose), ["PMID-9", "PMID-7"]),  # a folder, searched recursively in path order
        (str(loose / "b" / "*.nersuite"), ["PMID-7"]),
        (str(loose / "PMID-9.nersuite"), ["PMID-9"]),
        ("@some.list", ["PMID-9"]),  # relative to the workflow's folder
        ([str(loose / "PMID-9.nersuite"), str(loose / "b")], ["PMID-9", "PMID-7"]),
    ):
        config = {"input": given}
        assert problems("anatem.reader.v1", config, tmp_path) == [], given
        reader = build("anatem.reader.v1", config, tmp_path)
        assert [r.doc_id for r in reader.iter_documents()] == ids, given
    (only,) = load_all(
        build("anatem.reader.v1", {"input": str(loose), "ids": ["PMID-7"]}, tmp_path)
    )
    assert [m.value for m in only.select(ANATOMY_MENTION)] == ["Tissue"]
    assert problems("anatem.reader.v1", {"input": str(tmp_path / "nope")}, tmp_path)[0].startswith(
        "input '"
    )
    assert problems("anatem.reader.v1", {"input": str(loose), "ids": ["X"]}, tmp_path) == [
        "ids not in the 'input' files: X"
    ]
    conll = write_files(tmp_path / "conll", {"PMID-9.conll": ANATEM_DOC1_CONLL})
    (problem,) = problems("anatem.reader.v1", {"input": str(conll)}, tmp_path)
    assert problem.startswith("'input' names no .nersuite file") and "CoNLL form" in problem


def test_anatem_empty_file_and_absurd_offset(anatem_corpus: Path, tmp_path: Path) -> None:
    doc2 = anatem_corpus / "nersuite/devel/PMID-2.nersuite"
    doc2.write_text(ANATEM_DOC2.replace("\t0\t4\t", "\t30000000\t30000004\t"), "utf-8")
    reader = build("anatem.reader.v1", {"corpus": str(anatem_corpus), "ids": ["PMID-2"]}, tmp_path)
    with pytest.raises(AnatemDataError, match=r"PMID-2.nersuite:1: .*leaves 30000000 characters"):
        load_all(reader)
    doc2.write_text("", encoding="utf-8")
    (problem,) = problems("anatem.reader.v1", {"corpus": str(anatem_corpus)}, tmp_path)
    assert problem == f"1 NERsuite file(s) are empty, e.g. {doc2}"
    with pytest.raises(AnatemDataError, match="has no token .empty file."):
        load_all(reader)


def test_id_lists_with_a_byte_order_mark(anatem_corpus: Path, tmp_path: Path) -> None:
    listing = anatem_corpus / "splits/devel-documents.list"
    listing.write_text("\ufeffPMID-1\nPMID-2\n", encoding="utf-8")
    (tmp_path / "ids.txt").write_text("\ufeffPMID-2\n", encoding="utf-8")
    reader = build(
        "anatem.reader.v1", {"corpus": str(anatem_corpus), "ids_file": "ids.txt"}, tmp_path
    )
    assert [r.doc_id for r in reader.iter_documents()] == ["PMID-2"]
    assert read_id_list(tmp_path / "ids.txt") == ["PMID-2"]
    whole = build("anatem.reader.v1", {"corpus": str(anatem_corpus)}, tmp_path)
    assert [r.doc_id for r in whole.iter_documents()] == ["PMID-1", "PMID-2"]


def test_anatem_test_split_without_a_document_list_and_an_ids_file(
    anatem_corpus: Path, tmp_path: Path
) -> None:
    write_files(
        anatem_corpus,
        {
            "nersuite/test/PMID-5.nersuite": ANATEM_DOC2,
            "nersuite/test/PMID-3.nersuite": ANATEM_DOC2,
        },
    )
    reader = build("anatem.reader.v1", {"corpus": str(anatem_corpus), "split": "test"}, tmp_path)
    assert [r.doc_id for r in reader.iter_documents()] == ["PMID-3", "PMID-5"]
    (tmp_path / "ids.txt").write_text("# two\nPMID-2\nPMID-1\n")
    reader = build(
        "anatem.reader.v1", {"corpus": str(anatem_corpus), "ids_file": "ids.txt"}, tmp_path
    )
    assert [r.doc_id for r in reader.iter_documents()] == ["PMID-2", "PMID-1"]
    (tmp_path / "bare").mkdir()
    (problem,) = problems(
        "anatem.reader.v1", {"corpus": str(tmp_path / "bare"), "split": "test"}, tmp_path
    )
    assert "cannot read the test document list" in problem and "give 'input'" in problem
    (problem,) = problems(
        "anatem.reader.v1", {"corpus": str(tmp_path / "none"), "split": "test"}, tmp_path
    )
    assert f"AnatEM folder {tmp_path / 'none'} does not exist" in problem
    assert "give 'input'" in problem


# ----------------------------------------------------------------------------- importers

CONLLU_TEXT = "The cell (HeLa) grows.\nIt dies."
CONLLU = """\
# sent_id = 1
# text = The cell (HeLa) grows.
1	The	the	DET	DT	_	2	det	_	_
2	cell	cell	NOUN	NN	_	6	nsubj	_	_
3	(	(	PUNCT	-LRB-	_	4	punct	_	SpaceAfter=No
4	HeLa	HeLa	PROPN	NNP	_	2	appos	_	SpaceAfter=No
5	)	)	PUNCT	-RRB-	_	4	punct	_	_
6	grows	grow	VERB	VBZ	_	0	root	_	SpaceAfter=No
7	.	.	PUNCT	.	_	6	punct	_	_

# sent_id = 2
# text = It dies.
1	It	it	PRON	PRP	_	2	nsubj	_	_
2	dies	die	VERB	VBZ	_	0	root	_	SpaceAfter=No
3	.	.	PUNCT	.	_	2	punct	_	_

"""


def test_conllu_import_aligns_words_to_the_view_text(tmp_path: Path) -> None:
    write_files(tmp_path, {"runs/parser/doc1.conllu": CONLLU})
    importer = build("conllu.import.v1", {"path": "runs/parser/{doc_id}.conllu"}, tmp_path)
    view = document_view(CONLLU_TEXT, "doc1")
    importer.process(view)
    assert covered(view, SENTENCE) == ["The cell (HeLa) grows.", "It dies."]
    assert [s.id for s in view.select(SENTENCE)] == ["1", "2"]
    tokens = view.select(TOKEN)
    assert [t.get_covered_text() for t in tokens][:6] == ["The", "cell", "(", "HeLa", ")", "grows"]
    assert [(t.pos.PosValue, t.pos.coarseValue, t.lemma.value) for t in tokens[:2]] == [
        ("DT", "DET", "the"),
        ("NN", "NOUN", "cell"),
    ]
    heads = {
        d.Dependent.get_covered_text(): (d.Governor.get_covered_text(), d.DependencyType)
        for d in view.select(DEPENDENCY)
        if d.Dependent.begin < 22
    }
    assert heads["cell"] == ("grows", "nsubj")
    # the root: DKPro ROOT, Governor = Dependent, labelled ROOT as the CRAFT reader does
    roots = view.select(DEPENDENCY_ROOT)
    assert [(r.Governor is r.Dependent, r.DependencyType) for r in roots] == [(True, "ROOT")] * 2
    kept = build(
        "conllu.import.v1", {"path": "runs/parser/{doc_id}.conllu", "root_label": None}, tmp_path
    )
    other = document_view(CONLLU_TEXT, "doc1")
    kept.process(other)
    assert {r.DependencyType for r in other.select(DEPENDENCY_ROOT)} == {"root"}


def test_conllu_import_layers(tmp_path: Path) -> None:
    write_files(tmp_path, {"doc1.conllu": CONLLU})
    importer = build(
        "conllu.import.v1", {"path": "{doc_id}.conllu", "layers": ["sentences"]}, tmp_path
    )
    view = document_view(CONLLU_TEXT, "doc1")
    importer.process(view)
    assert len(view.select(SENTENCE)) == 2 and view.select(TOKEN) == []
    cls = registry().get("conllu.import.v1")
    _, produces = cls.requirements(cls.Config(path="{doc_id}", layers=["pos"]))
    assert TOKEN in produces and SENTENCE not in produces and DEPENDENCY not in produces


def test_conllu_import_errors_name_document_file_and_line(tmp_path: Path) -> None:
    write_files(tmp_path, {"doc1.conllu": CONLLU})
    importer = build("conllu.import.v1", {"path": "{doc_id}.conllu"}, tmp_path)
    with pytest.raises(ValueError, match=r"document doc1: .*doc1.conllu:5: .*'\(' not found"):
        importer.process(document_view("The cell [HeLa] grows.\nIt dies.", "doc1"))
    with pytest.raises(FileNotFoundError, match=r"document doc2: no file .*doc2.conllu") as info:
        importer.process(document_view(CONLLU_TEXT, "doc2"))
    assert "missing: empty" in info.value.hint


def test_missing_empty_leaves_the_view_empty(tmp_path: Path) -> None:
    importer = build("conllu.import.v1", {"path": "{doc_id}.conllu", "missing": "empty"}, tmp_path)
    view = document_view(CONLLU_TEXT, "doc1")
    with pytest.warns(UserWarning, match="missing: empty"):
        importer.process(view)
    assert view.select(TOKEN) == [] and view.sofa_string == CONLLU_TEXT


def test_a_path_without_placeholder_is_refused(tmp_path: Path) -> None:
    (problem,) = problems("brat.import.v1", {"path": "runs/system.ann"}, tmp_path)
    assert "no '{doc_id}' placeholder" in problem


PENN_TEXT = 'The cell (HeLa) grows.\nIt dies "fast".'
PENN_TREES = (
    "( (S (NP-SBJ-1 (NP (DT The) (NN cell)) (PRN (-LRB- -LRB-) (NP (NNP HeLa)) (-RRB- -RRB-))) "
    "(VP (VBZ grows) (NP (-NONE- *T*-1))) (. .)) )\n"
    "( (S (NP-SBJ (PRP It)) (VP (VBZ dies) (`` ``) (ADVP (RB fast)) ('' '')) (. .)) )\n"
)


def test_penn_import_builds_constituents_like_the_craft_reader(tmp_path: Path) -> None:
    write_files(tmp_path, {"trees/doc1.tree": PENN_TREES})
    importer = build("penn.import.v1", {"path": "trees/{doc_id}.tree"}, tmp_path)
    view = document_view(PENN_TEXT, "doc1")
    importer.process(view)
    assert covered(view, SENTENCE) == ["The cell (HeLa) grows.", 'It dies "fast".']
    assert covered(view, TOKEN)[2:5] == ["(", "HeLa", ")"]
    assert [t.pos.PosValue for t in view.select(TOKEN)][2:5] == ["-LRB-", "NNP", "-RRB-"]
    assert len(view.select(CONSTITUENT_ROOT)) == 2
    subject = next(c for c in view.select(TREEBANK_CONSTITUENT) if c.originalLabel == "NP-SBJ-1")
    assert (subject.constituentType, subject.syntacticFunction, subject.coindex) == (
        "NP",
        "SBJ",
        "1",
    )
    assert subject.get_covered_text() == "The cell (HeLa)"
    (empty,) = view.select(EMPTY_CATEGORY)
    assert (empty.value, empty.begin, empty.end) == ("*T*-1", 21, 21)


# The same trees pretty-printed over several lines, as in the Penn Treebank's .mrg
# files and most parsers' output.
PENN_TREES_MRG = """\
( (S
    (NP-SBJ-1
      (NP (DT The) (NN cell))
      (PRN (-LRB- -LRB-) (NP (NNP HeLa)) (-RRB- -RRB-)))
    (VP (VBZ grows)
      (NP (-NONE- *T*-1)))
    (. .)) )

( (S
    (NP-SBJ (PRP It))
    (VP (VBZ dies) (`` ``) (ADVP (RB fast)) ('' ''))
    (. .)) )
"""


def test_penn_import_reads_trees_over_several_lines_as_one_line_trees(tmp_path: Path) -> None:
    write_files(tmp_path, {"one/doc1.tree": PENN_TREES, "mrg/doc1.mrg": PENN_TREES_MRG})
    views = []
    for path in ("one/{doc_id}.tree", "mrg/{doc_id}.mrg"):
        view = document_view(PENN_TEXT, "doc1")
        build("penn.import.v1", {"path": path}, tmp_path).process(view)
        views.append(view)
    one, mrg = (
        [
            (a.type.name.rsplit(".", 1)[-1], a.begin, a.end, getattr(a, "originalLabel", None))
            for a in view.select_all_annotations()
            if a.type.name != "uima.tcas.DocumentAnnotation"
        ]
        for view in views
    )
    assert one == mrg and len(one) > 20
    penn_tree = "de.tudarmstadt.ukp.dkpro.core.api.syntax.type.PennTree"
    trees = [t.PennTree for t in views[1].select(penn_tree)]
    # kept on one line, in the CRAFT style
    assert trees == [line for line in PENN_TREES.split("\n") if line]


def test_penn_import_names_the_lines_of_a_broken_tree(tmp_path: Path) -> None:
    broken = PENN_TREES_MRG.replace("(VBZ grows)", "(VBZ grows) (X y z)")
    write_files(tmp_path, {"doc1.mrg": broken})
    importer = build("penn.import.v1", {"path": "{doc_id}.mrg"}, tmp_path)
    with pytest.raises(ValueError, match=r"doc1\.mrg, lines 1-7: more than one word"):
        importer.process(document_view(PENN_TEXT, "doc1"))
    # a tree left open runs to the end: its error names the line it starts on
    write_files(tmp_path, {"doc1.mrg": PENN_TREES_MRG.replace("(. .)) )\n\n", "(. .))\n\n")})
    with pytest.raises(ValueError, match=r"doc1\.mrg, lines 1-12: unbalanced brackets"):
        importer.process(document_view(PENN_TEXT, "doc1"))


def test_penn_import_reports_a_leaf_not_in_the_text(tmp_path: Path) -> None:
    write_files(tmp_path, {"doc1.tree": PENN_TREES})
    importer = build("penn.import.v1", {"path": "{doc_id}.tree"}, tmp_path)
    with pytest.raises(ValueError, match=r"document doc1: .*line 1 of doc1.tree\), leaf 2 'cell'"):
        importer.process(document_view(PENN_TEXT.replace("cell", "tall cell"), "doc1"))


BRAT_TEXT = "Heart cells and the left ventricle wall.\n"
BRAT_ANN = (
    "T1\tOrgan 0 5\tHeart\n"
    "T2\tCell 0 11\tHeart cells\n"
    "T3\tOrgan 20 24;35 39\tleft wall\n"
    "R1\tPart-of Arg1:T3 Arg2:T1\n"
    "N1\tReference T1 UBERON:0000948\tHeart\n"
)


def test_brat_import_types_fragments_and_identifiers(tmp_path: Path) -> None:
    write_files(tmp_path, {"ann/doc1.ann": BRAT_ANN})
    config = {"path": "ann/{doc_id}.ann", "types": {"Organ": "AnatomyMention"}}
    view = document_view(BRAT_TEXT, "doc1")
    build("brat.import.v1", config, tmp_path).process(view)
    assert [(m.get_covered_text(), m.value) for m in view.select(ANATOMY_MENTION)] == [
        ("Heart", "Organ"),
        ("left ventricle wall", "Organ"),
    ]
    heart, wall = view.select(ANATOMY_MENTION)
    assert heart.identifier == "UBERON:0000948" and heart.fragments is None
    assert [f.get_covered_text() for f in wall.fragments.elements] == ["left", "wall"]
    assert covered(view, FRAGMENT) == ["left", "wall"]
    # unmapped labels take default_type (NamedEntity); with none they are skipped
    assert [m.value for m in view.select(NAMED_ENTITY) if m.type.name == NAMED_ENTITY] == ["Cell"]
    skipping = document_view(BRAT_TEXT, "doc1")
    build("brat.import.v1", {**config, "default_type": None}, tmp_path).process(skipping)
    assert [m.value for m in skipping.select(NAMED_ENTITY)] == ["Organ", "Organ"]


def test_brat_import_checks_the_text(tmp_path: Path) -> None:
    write_files(tmp_path, {"doc1.ann": BRAT_ANN})
    importer = build("brat.import.v1", {"path": "{doc_id}.ann"}, tmp_path)
    with pytest.raises(ValueError, match=r"document doc1: .*doc1.ann:1: T1: text 'Heart'"):
        importer.process(document_view(BRAT_TEXT.replace("Heart", "Liver"), "doc1"))


BIO_TEXT = "IL-2  activates\nT cells.\nNo genes."
BIO = "IL-2\tB-GENE\nactivates\tO\nT\tB-CELL\ncells\tI-CELL\n.\tO\n\nNo\tO\ngenes\tO\n.\tO\n\n"


def test_bio_import_aligns_tokens_across_any_whitespace(tmp_path: Path) -> None:
    write_files(tmp_path, {"doc1.bio": BIO})
    view = document_view(BIO_TEXT, "doc1")
    build("bio.import.v1", {"path": "{doc_id}.bio", "type": "GeneMention"}, tmp_path).process(view)
    assert [(m.get_covered_text(), m.value) for m in view.select(GENE_MENTION)] == [
        ("IL-2", "GENE"),
        ("T cells", "CELL"),
    ]
    assert covered(view, SENTENCE) == ["IL-2  activates\nT cells.", "No genes."]
    assert len(view.select(TOKEN)) == 8
    bare = document_view(BIO_TEXT, "doc1")
    build("bio.import.v1", {"path": "{doc_id}.bio", "tokens": False}, tmp_path).process(bare)
    assert bare.select(TOKEN) == [] and len(bare.select(NAMED_ENTITY)) == 2
    with pytest.raises(ValueError, match=r"doc1.bio line 4: token 'cells' not found at offset"):
        build("bio.import.v1", {"path": "{doc_id}.bio"}, tmp_path).process(
            document_view(BIO_TEXT.replace("cells", "cell"), "doc1")
        )


def test_bc2_import_adds_the_lines_of_the_document_sentence(
    bc2_corpus: Path, tmp_path: Path
) -> None:
    folder = bc2_corpus / "bc2-format" / "devel"
    config = {"path": str(folder / "GENE.eval"), "alternatives": str(folder / "ALTGENE.eval")}
    importer = build("bc2.import.v1", config, tmp_path)
    gold = load_all(build("bc2gm.reader.v1", {"corpus": str(bc2_corpus)}, tmp_path))
    for gold_view in gold:
        doc_id = gold_view.select(SENTENCE)[0].id
        view = document_view(gold_view.sofa_string, doc_id)
        importer.process(view)
        assert covered(view, GENE_MENTION) == covered(gold_view, GENE_MENTION)
        assert sorted(covered(view, ALTERNATIVE)) == sorted(covered(gold_view, ALTERNATIVE))
    # system lines may omit the text; offsets outside the sentence fail the document
    write_files(tmp_path, {"system.eval": "S2|0 1\nS3|0 99|x\n"})
    system = build("bc2.import.v1", {"path": "system.eval"}, tmp_path)
    view = document_view("No genes here.", "S2")
    system.process(view)
    assert covered(view, GENE_MENTION) == ["No"]
    with pytest.raises(ValueError, match="document S3: .*sentence S3: offsets 0 99"):
        system.process(document_view("IL-2 receptor alpha chain is expressed.", "S3"))


def test_a_mention_line_file_that_cannot_be_read_is_a_validation_problem(tmp_path: Path) -> None:
    # one file holds every document's lines: a bad line would fail every document
    write_files(tmp_path, {"system.eval": "S1|0 1|IL\nS2 no bars here\n"})
    (problem,) = problems("bc2.import.v1", {"path": "system.eval"}, tmp_path)
    assert problem.startswith("path: ") and "system.eval" in problem and "2" in problem
    write_files(tmp_path, {"good.eval": "S1|0 1|IL\n", "alt.eval": "broken\n"})
    config = {"path": "good.eval", "alternatives": "alt.eval"}
    (problem,) = problems("bc2.import.v1", config, tmp_path)
    assert problem.startswith("alternatives: ") and "alt.eval" in problem
    # at run time the file is read once: every document gets the same error
    importer = build("bc2.import.v1", {"path": "system.eval"}, tmp_path)
    for doc_id in ("S1", "S2"):
        with pytest.raises(ValueError, match="system.eval"):
            importer.process(document_view("IL-2 is expressed.", doc_id))


def test_importers_add_a_view_in_a_workflow(bc2_corpus: Path, tmp_path: Path) -> None:
    folder = bc2_corpus / "bc2-format" / "devel"
    report = run(
        tmp_path,
        f"""\
        reader:
          component: bc2gm.reader.v1
          view: gold
          config: {{corpus: {json.dumps(str(bc2_corpus))}}}
        components:
          - component: bc2.import.v1
            view: system
            config: {{path: {json.dumps(str(folder / "GENE.eval"))}}}
        evaluators:
          - component: eval.mentions.v1
            config: {{type: GeneMention, criteria: [strict]}}
        run: {{jobs: 1, output: {json.dumps(str(tmp_path / "out"))}, progress: false}}
        """,
    )
    assert report.counts["ok"] == 3
    micro = report.evaluation["eval.mentions.v1"]["systems"]["system"]["scores"]["strict"]["micro"]
    assert micro["f1"] == 1.0 and micro["tp"] == 4


def test_workflow_validation_lists_importer_problems(tmp_path: Path) -> None:
    with pytest.raises(WorkflowValidationError) as info:
        load_workflow_text(
            textwrap.dedent(
                """\
                reader: {component: text.reader.v1, config: {input: "."}}
                components:
                  - component: bio.import.v1
                    view: system
                    config: {path: "x.bio", type: Gene}
                """
            ),
            source=str(tmp_path / "wf.yaml"),
        )
    assert "'Gene' is not a mention type" in str(info.value)


# ----------------------------------------------------------------------------- corpora


def _no_fsync(monkeypatch: pytest.MonkeyPatch) -> None:
    # Durability is not under test here, and on this disk an fsync costs about 6 ms
    # per file: writing 2,500 one-sentence documents would take 15 s instead of 4 s.
    monkeypatch.setattr(os, "fsync", lambda fd: None)


@pytest.mark.slow
@pytest.mark.corpus
def test_bc2gm_devel_reads_and_writes_back_gene_eval(
    corpora_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_fsync(monkeypatch)
    folder = corpora_dir / "bc2gm" / "bc2-format" / "devel"
    started = time.perf_counter()
    report = run(
        tmp_path,
        f"""\
        reader:
          component: bc2gm.reader.v1
          view: gold
          config: {{corpus: {json.dumps(str(corpora_dir / "bc2gm"))}, split: devel}}
        writers:
          - component: bc2.writer.v1
            config: {{view: gold}}
        run: {{jobs: 1, batch_size: 250, output: {json.dumps(str(tmp_path / "out"))}, progress: false}}
        """,
    )
    seconds = time.perf_counter() - started
    assert report.counts["ok"] == 2500 and report.counts["failed"] == 0
    # No normalisation is needed on devel: every mention's text is its covered text.
    written = (tmp_path / "out" / "bc2" / "GENE.eval").read_text(encoding="utf-8")
    assert written == (folder / "GENE.eval").read_text(encoding="utf-8")
    print(f"BC2GM devel read and written back in {seconds:.1f} s")


@pytest.mark.slow
@pytest.mark.corpus
def test_bc2gm_devel_alternatives_are_all_loaded(corpora_dir: Path, tmp_path: Path) -> None:
    reader = build(
        "bc2gm.reader.v1", {"corpus": str(corpora_dir / "bc2gm"), "split": "devel"}, tmp_path
    )
    found = set()
    for cas in load_all(reader):
        doc_id = cas.select(SENTENCE)[0].id
        sentence = bc2.Bc2Sentence(doc_id, cas.sofa_string)
        for alternative in cas.select(ALTERNATIVE):
            line = bc2.mention_from_span(sentence, alternative.begin, alternative.end)
            found.add((line.sentence_id, line.start, line.end))
    lines = bc2.read_mentions(corpora_dir / "bc2gm" / "bc2-format" / "devel" / "ALTGENE.eval")
    assert found == {(m.sentence_id, m.start, m.end) for m in lines}


@pytest.mark.slow
@pytest.mark.corpus
def test_anatem_devel_reads_and_writes_back_the_conll_files(
    corpora_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_fsync(monkeypatch)
    root = corpora_dir / "anatem"
    report = run(
        tmp_path,
        f"""\
        reader:
          component: anatem.reader.v1
          config: {{corpus: {json.dumps(str(root))}, split: devel}}
        writers:
          - component: bio.writer.v1
            config: {{type: AnatomyMention}}
        run: {{jobs: 1, batch_size: 50, output: {json.dumps(str(tmp_path / "out"))}, progress: false}}
        """,
    )
    assert report.counts["ok"] == 202 and report.counts["failed"] == 0
    written = sorted((tmp_path / "out" / "bio").glob("*.conll"))
    assert len(written) == 202
    # The text is rebuilt from the NERsuite offsets; the CoNLL twin has no offsets,
    # so token and tag columns come back byte for byte.
    for path in written:
        gold = root / "conll" / "devel" / path.name
        assert path.read_text(encoding="utf-8") == gold.read_text(encoding="utf-8"), path.name


@pytest.mark.slow
@pytest.mark.corpus
def test_genetag_devtest_loads_every_gene(corpora_dir: Path, tmp_path: Path) -> None:
    folder = corpora_dir / "genetag" / "devtest"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", genetag.FormatWarning)  # 3 known damaged lines
        reader = build(
            "genetag.reader.v1", {"corpus": str(corpora_dir / "genetag"), "pos": True}, tmp_path
        )
        cases = load_all(reader)
    assert len(cases) == 2500
    genes = sum(len(cas.select(GENE_MENTION)) for cas in cases)
    assert genes == len(genetag.read_mentions(folder / "Gold.format"))
    for cas in cases[:50]:
        for token in cas.select(TOKEN):
            if token.pos is not None:
                assert token.pos.PosValue not in genetag.GENE_TAGS


def test_warnings_of_the_listing_and_of_each_document_are_in_the_run_report(
    bc2_corpus: Path, tmp_path: Path
) -> None:
    folder = bc2_corpus / "bc2-format" / "devel"
    (folder / "GENE.eval").write_text(BC2_GENES + "S2|0 1|Yes\n", encoding="utf-8")
    report = run(
        tmp_path,
        f"""\
        reader:
          component: bc2gm.reader.v1
          view: gold
          config: {{corpus: {json.dumps(str(bc2_corpus))}}}
        components:
          - component: bc2.import.v1
            view: system
            config: {{path: {json.dumps(str(folder / "GENE.eval"))}, on_mismatch: warn}}
        run: {{jobs: 1, output: {json.dumps(str(tmp_path / "out"))}, progress: false}}
        """,
    )
    assert report.counts["ok"] == 3
    said = {w["stage"]: w for w in report.warnings}
    assert set(said) == {"listing the input", "component bc2.import.v1"}
    for item in said.values():
        assert item["category"] == "FormatWarning" and item["count"] == 1
        assert "GENE.eval:5: sentence S2: mention text 'Yes' differs" in item["message"]
    assert said["listing the input"]["documents"] == []  # the reader read the file whole
    assert said["component bc2.import.v1"]["documents"] == ["S2"]
    on_disk = json.loads((tmp_path / "out" / "run-report.json").read_text(encoding="utf-8"))
    assert on_disk["warnings"] == report.warnings
