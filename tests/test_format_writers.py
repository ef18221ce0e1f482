"""Format writers and their round trips with the importers and readers.

Each round trip reads a hand-written file into a view through a workflow and
writes it back with the twin writer; the result is the file itself, up to the
normalisations each writer documents (tested explicitly here).
"""

from __future__ import annotations

import json
import textwrap
import tracemalloc
from pathlib import Path
from typing import Any

import cassis
import pytest

from casflow.cas.metadata import set_document_metadata
from casflow.components.formats.view_writer import ViewContentError
from casflow.pipeline.component import DocumentWarning, RunContext
from casflow.pipeline.runner import RunOptions, run_workflow
from casflow.pipeline.testing import build, cas_from_text, run_component
from casflow.pipeline.validation import WorkflowValidationError
from casflow.pipeline.workflow import load_workflow_text
from casflow.typesystem import GENE_MENTION, NAMED_ENTITY, TOKEN, load_typesystem
from tests.test_gold_readers import (
    BC2_ALTERNATIVES,
    BC2_GENES,
    BC2_IN,
    BIO,
    BIO_TEXT,
    BRAT_ANN,
    BRAT_TEXT,
    CONLLU,
    CONLLU_TEXT,
    PENN_TEXT,
    PENN_TREES,
    write_files,
)


def run_import(
    tmp_path: Path,
    text: str,
    importer: str,
    importer_config: dict[str, Any],
    writer: str,
    writer_config: dict[str, Any],
    *,
    doc_id: str = "doc1",
    overwrite: bool = True,
) -> Any:
    """text.reader.v1 -> importer into view 'system' -> writer of view 'system'."""
    (tmp_path / "in").mkdir(exist_ok=True)
    (tmp_path / "in" / f"{doc_id}.txt").write_text(text, encoding="utf-8")
    workflow = f"""\
        reader:
          component: text.reader.v1
          config: {{input: {json.dumps(str(tmp_path / "in"))}}}
        components:
          - component: {importer}
            view: system
            config: {json.dumps(importer_config)}
        writers:
          - component: {writer}
            config: {json.dumps({"view": "system", **writer_config})}
        run:
          jobs: 1
          output: {json.dumps(str(tmp_path / "out"))}
          progress: false
          overwrite: {json.dumps(overwrite)}
        """
    loaded = load_workflow_text(textwrap.dedent(workflow), source=str(tmp_path / "wf.yaml"))
    return run_workflow(loaded, RunOptions(show_progress=False))


def failure(report: Any) -> str:
    assert report.counts["failed"] == 1, report.counts
    (item,) = report.failures
    return item["error"]


def _token_text_cas(text: str, tokens: list[tuple[int, int]], doc_id: str = "doc1") -> Any:
    """A CAS whose initial view has ``tokens`` (one sentence) and a gene on the first."""
    return cas_from_text(
        text,
        doc_id=doc_id,
        spans={"Sentence": [(0, len(text))], "Token": tokens, "GeneMention": [tokens[0]]},
    )


# ----------------------------------------------------------------------------- CoNLL-U


def test_conllu_round_trip(tmp_path: Path) -> None:
    write_files(tmp_path, {"parses/doc1.conllu": CONLLU})
    report = run_import(
        tmp_path,
        CONLLU_TEXT,
        "conllu.import.v1",
        {"path": "parses/{doc_id}.conllu"},
        "conllu.writer.v1",
        {},
    )
    assert report.counts["ok"] == 1
    assert (tmp_path / "out" / "conllu" / "doc1.conllu").read_text("utf-8") == CONLLU


def test_conllu_writer_normalisation(tmp_path: Path) -> None:
    # What the CAS does not keep: newdoc/newpar comments, FEATS, DEPS, other MISC items.
    original = CONLLU.replace("# sent_id = 1\n", "# newdoc id = doc1\n# sent_id = 1\n").replace(
        "1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_",
        "1\tThe\tthe\tDET\tDT\tDefinite=Def\t2\tdet\t2:det\tX=1",
    )
    write_files(tmp_path, {"doc1.conllu": original})
    run_import(
        tmp_path,
        CONLLU_TEXT,
        "conllu.import.v1",
        {"path": "{doc_id}.conllu"},
        "conllu.writer.v1",
        {},
    )
    assert (tmp_path / "out" / "conllu" / "doc1.conllu").read_text("utf-8") == CONLLU


def test_conllu_writer_without_sentences_and_with_the_file_root_label(tmp_path: Path) -> None:
    write_files(tmp_path, {"doc1.conllu": CONLLU})
    run_import(
        tmp_path,
        CONLLU_TEXT,
        "conllu.import.v1",
        {"path": "{doc_id}.conllu", "layers": ["tokens", "pos"]},
        "conllu.writer.v1",
        {"root_deprel": "ROOT"},
    )
    lines = (tmp_path / "out" / "conllu" / "doc1.conllu").read_text("utf-8").splitlines()
    # one sentence over the whole text; no dependencies; SpaceAfter from the text
    assert lines[:2] == ["# sent_id = 1", "# text = The cell (HeLa) grows. It dies."]
    assert lines[4] == "3\t(\t_\tPUNCT\t-LRB-\t_\t_\t_\t_\tSpaceAfter=No"
    assert len(lines) == 2 + 10 + 1


def test_conllu_writer_tokens_with_tabs_and_line_breaks_read_back(tmp_path: Path) -> None:
    # "IL\t2" (a tab inside), "gene\n" (a line break at its edge), a lone CR in the text.
    text = "IL\t2 gene\nX\rY"
    cas = _token_text_cas(text, [(0, 4), (5, 10), (10, 11), (12, 13)])
    context = RunContext(output_dir=tmp_path / "out", workflow_dir=tmp_path)
    (path,) = build("conllu.writer.v1", context).write(cas, "doc1")
    # Read with universal newlines, as UD tools read it: a lone CR must not end a line.
    with open(path, encoding="utf-8", newline=None) as lines:
        assert lines.read().splitlines() == [
            "# sent_id = 1",
            "# text = IL 2 gene X Y",
            "1\tIL 2\t_\t_\t_\t_\t_\t_\t_\t_",
            "2\tgene\t_\t_\t_\t_\t_\t_\t_\t_",
            "3\tX\t_\t_\t_\t_\t_\t_\t_\t_",
            "4\tY\t_\t_\t_\t_\t_\t_\t_\t_",
            "",
        ]
    again = run_component("conllu.import.v1", text, context=context, path=str(path))
    assert [t.get_covered_text() for t in again.select(TOKEN)] == ["IL\t2", "gene", "X", "Y"]


def test_conllu_writer_fails_a_token_of_whitespace_only(tmp_path: Path) -> None:
    cas = _token_text_cas("p53 \n x", [(0, 3), (3, 6), (6, 7)])
    writer = build("conllu.writer.v1", RunContext(output_dir=tmp_path))
    with pytest.raises(ValueError, match=r"document doc1: token ' \\n ' at \(3, 6\) is only"):
        writer.write(cas, "doc1")


# ----------------------------------------------------------------------------- Penn


def test_penn_round_trip(tmp_path: Path) -> None:
    write_files(tmp_path, {"trees/doc1.tree": PENN_TREES})
    report = run_import(
        tmp_path, PENN_TEXT, "penn.import.v1", {"path": "trees/{doc_id}.tree"}, "penn.writer.v1", {}
    )
    assert report.counts["ok"] == 1
    assert (tmp_path / "out" / "penn" / "doc1.tree").read_text("utf-8") == PENN_TREES


def test_penn_writer_escapes(tmp_path: Path) -> None:
    text = "Cells [12] grow."
    tree = "( (S (NP (NNS Cells) (-LRB- [) (CD 12) (-RRB- ])) (VP (VBP grow)) (. .)) )\n"
    write_files(tmp_path, {"doc1.tree": tree})
    run_import(tmp_path, text, "penn.import.v1", {"path": "{doc_id}.tree"}, "penn.writer.v1", {})
    assert (tmp_path / "out" / "penn" / "doc1.tree").read_text("utf-8") == tree  # CRAFT style
    run_import(
        tmp_path,
        text,
        "penn.import.v1",
        {"path": "{doc_id}.tree"},
        "penn.writer.v1",
        {"escape": "ptb", "folder": "ptb"},
    )
    assert (tmp_path / "out" / "ptb" / "doc1.tree").read_text("utf-8") == tree.replace(
        "(-LRB- [)", "(-LRB- -LSB-)"
    ).replace("(-RRB- ])", "(-RRB- -RSB-)")


def test_penn_writer_escapes_brackets_inside_words(tmp_path: Path) -> None:
    text = "Ca(2+) a[1] binds."
    tree = "( (S (NP (NN Ca-LRB-2+-RRB-) (NN a[1])) (VP (VBZ binds)) (. .)) )\n"
    write_files(tmp_path, {"doc1.tree": tree})
    report = run_import(
        tmp_path, text, "penn.import.v1", {"path": "{doc_id}.tree"}, "penn.writer.v1", {}
    )
    assert report.counts["ok"] == 1  # the escaped word is aligned to "Ca(2+)"
    assert (tmp_path / "out" / "penn" / "doc1.tree").read_text("utf-8") == tree
    ptb = tree.replace("a[1]", "a-LSB-1-RSB-")
    run_import(
        tmp_path,
        text,
        "penn.import.v1",
        {"path": "{doc_id}.tree"},
        "penn.writer.v1",
        {"escape": "ptb", "folder": "ptb"},
    )
    assert (tmp_path / "out" / "ptb" / "doc1.tree").read_text("utf-8") == ptb
    # ... and what it wrote is read back.
    write_files(tmp_path, {"doc1.tree": ptb})
    report = run_import(
        tmp_path, text, "penn.import.v1", {"path": "{doc_id}.tree"}, "penn.writer.v1", {}
    )
    assert report.counts["ok"] == 1
    assert (tmp_path / "out" / "penn" / "doc1.tree").read_text("utf-8") == tree


def test_penn_writer_needs_constituents(tmp_path: Path) -> None:
    write_files(tmp_path, {"doc1.tree": PENN_TREES})
    report = run_import(
        tmp_path,
        PENN_TEXT,
        "penn.import.v1",
        {"path": "{doc_id}.tree", "layers": ["tokens", "pos"]},
        "penn.writer.v1",
        {},
    )
    assert "view 'system' has no constituents" in failure(report)


# ----------------------------------------------------------------------------- brat


def test_brat_round_trip_keeps_textbound_and_normalization_lines(tmp_path: Path) -> None:
    write_files(tmp_path, {"ann/doc1.ann": BRAT_ANN})
    report = run_import(
        tmp_path,
        BRAT_TEXT,
        "brat.import.v1",
        {"path": "ann/{doc_id}.ann", "types": {"Organ": "AnatomyMention"}},
        "brat.writer.v1",
        {},
    )
    assert report.counts["ok"] == 1
    folder = tmp_path / "out" / "brat"
    assert (folder / "doc1.txt").read_text("utf-8") == BRAT_TEXT
    # relations, events, attributes and notes are not kept; T and N lines are
    expected = "".join(line + "\n" for line in BRAT_ANN.splitlines() if not line.startswith("R"))
    assert (folder / "doc1.ann").read_text("utf-8") == expected


def test_brat_writer_renumbers_in_text_order_and_filters_by_type(tmp_path: Path) -> None:
    shuffled = (
        "T7\tCell 0 11\tHeart cells\nT2\tOrgan 20 24;35 39\tleft wall\nT9\tOrgan 0 5\tHeart\n"
    )
    write_files(tmp_path, {"doc1.ann": shuffled})
    run_import(
        tmp_path,
        BRAT_TEXT,
        "brat.import.v1",
        {"path": "{doc_id}.ann", "types": {"Organ": "AnatomyMention"}},
        "brat.writer.v1",
        {"type": "AnatomyMention"},
    )
    assert (tmp_path / "out" / "brat" / "doc1.ann").read_text("utf-8") == (
        "T1\tOrgan 0 5\tHeart\nT2\tOrgan 20 24;35 39\tleft wall\n"
    )


@pytest.mark.parametrize("line_break", ["\n", "\r"])
def test_brat_writer_writes_a_mention_across_lines_as_fragments(
    tmp_path: Path, line_break: str
) -> None:
    # A lone \r too (text.reader.v1 keeps it): brat reads the .ann splitting lines there.
    # The document used to fail; brat stores such a mention one fragment per line.
    write_files(tmp_path, {"system.eval": "doc1|0 3|ab cd\n"})
    report = run_import(
        tmp_path,
        f"ab{line_break}cd ef",
        "bc2.import.v1",
        {"path": str(tmp_path / "system.eval"), "type": "NamedEntity"},
        "brat.writer.v1",
        {},
    )
    assert report.counts["ok"] == 1, report.failures
    ann = (tmp_path / "out" / "brat" / "doc1.ann").read_text("utf-8")
    assert ann == "T1\tGENE 0 2;3 5\tab cd\n"  # bc2.import.v1 labels its mentions GENE


def _write_and_import(
    tmp_path: Path, cas: cassis.Cas, writer: str, importer: str, doc_id: str = "doc1"
) -> cassis.Cas:
    """``writer`` writes ``cas`` (its combined file too); ``importer`` reads the file back
    into a CAS of the same text."""
    built = build(writer, RunContext(output_dir=tmp_path / "out"))
    written = built.write(cas, doc_id)
    combined = built.finish()
    path = (combined or written)[0]
    back = cas_from_text(cas.sofa_string, doc_id=doc_id)
    context = RunContext(output_dir=tmp_path, workflow_dir=tmp_path)
    run_component(importer, back, context=context, path=str(path))
    return back


def _mentions(cas: cassis.Cas, type_name: str) -> list[tuple[int, int, str | None]]:
    return sorted((m.begin, m.end, m.get("value")) for m in cas.select(type_name))


def test_brat_writer_writes_whitespace_in_a_class_as_underscores(tmp_path: Path) -> None:
    cas = cas_from_text("T cells", spans={"NamedEntity": [(0, 7, {"value": "cell line\tx"})]})
    back = _write_and_import(tmp_path, cas, "brat.writer.v1", "brat.import.v1")
    assert _mentions(back, NAMED_ENTITY) == [(0, 7, "cell_line_x")]


def test_brat_writer_leaves_out_an_identifier_with_whitespace(tmp_path: Path) -> None:
    spans = [
        (0, 4, {"value": "Gene", "identifier": "NCBI Gene:1 2"}),
        (5, 9, {"value": "Gene", "identifier": "NCBI:7"}),
    ]
    cas = cas_from_text("BRCA TP53", spans={"NamedEntity": spans})
    with pytest.warns(DocumentWarning, match="identifier 'NCBI Gene:1 2' of mention 'BRCA'"):
        _write_and_import(tmp_path, cas, "brat.writer.v1", "brat.import.v1")
    assert (tmp_path / "out" / "brat" / "doc1.ann").read_text("utf-8") == (
        "T1\tGene 0 4\tBRCA\nT2\tGene 5 9\tTP53\nN1\tReference T2 NCBI:7\tTP53\n"
    )


# ----------------------------------------------------------------------------- BIO


def test_bio_writer_keeps_a_token_with_a_tab_or_line_break_one_field(tmp_path: Path) -> None:
    # Tokens "IL\t2" and ".\n" (a line break at its edge, as some tokenizers keep).
    text = "IL\t2 gene .\n"
    cas = _token_text_cas(text, [(0, 4), (5, 9), (10, 12)])
    context = RunContext(output_dir=tmp_path / "out", workflow_dir=tmp_path)
    (path,) = build("bio.writer.v1", context, type="GeneMention").write(cas, "doc1")
    assert path.read_text("utf-8") == "IL 2\tB-GeneMention\ngene\tO\n.\tO\n\n"
    again = run_component(
        "bio.import.v1", text, context=context, path=str(path), type="GeneMention"
    )
    assert [t.get_covered_text() for t in again.select(TOKEN)] == ["IL\t2", "gene", "."]
    assert [m.get_covered_text() for m in again.select(GENE_MENTION)] == ["IL\t2"]


def test_bio_writer_fails_a_token_of_whitespace_only(tmp_path: Path) -> None:
    cas = _token_text_cas("p53 \t x", [(0, 3), (3, 6), (6, 7)])
    writer = build("bio.writer.v1", RunContext(output_dir=tmp_path), type="GeneMention")
    with pytest.raises(
        ValueError, match=r"document doc1: token ' \\t ' at \(3, 6\) is only whitespace"
    ):
        writer.write(cas, "doc1")


def test_bio_round_trip(tmp_path: Path) -> None:
    write_files(tmp_path, {"doc1.bio": BIO})
    report = run_import(
        tmp_path,
        BIO_TEXT,
        "bio.import.v1",
        {"path": "{doc_id}.bio", "type": "GeneMention"},
        "bio.writer.v1",
        {"type": "GeneMention", "extension": ".bio"},
    )
    assert report.counts["ok"] == 1
    assert (tmp_path / "out" / "bio" / "doc1.bio").read_text("utf-8") == BIO


def test_bio_writer_columns_and_boundary_errors(tmp_path: Path) -> None:
    write_files(tmp_path, {"doc1.conllu": CONLLU, "doc1.ann": "T1\tCell 4 6\tce\n"})
    run_import(
        tmp_path,
        CONLLU_TEXT,
        "conllu.import.v1",
        {"path": "{doc_id}.conllu"},
        "bio.writer.v1",
        {"columns": ["token", "lemma", "pos", "tag"]},
    )
    first = (tmp_path / "out" / "bio" / "doc1.conll").read_text("utf-8").splitlines()[0]
    assert first == "The\tthe\tDT\tO"
    report = run_import(
        tmp_path,
        CONLLU_TEXT,
        "brat.import.v1",
        {"path": "{doc_id}.ann"},
        "bio.writer.v1",
        {},
    )
    # the view has the mention but no tokens: one empty file is no answer
    assert report.counts["failed"] == 1
    assert "the view has 1 mention(s) (the first 4-6 Cell) but no tokens in a sentence" in (
        failure(report)
    )


def test_a_writer_of_a_view_that_nothing_writes_is_a_validation_error(tmp_path: Path) -> None:
    write_files(tmp_path, {"doc1.bio": BIO})
    with pytest.raises(WorkflowValidationError) as info:
        run_import(
            tmp_path,
            BIO_TEXT,
            "bio.import.v1",
            {"path": "{doc_id}.bio"},
            "conllu.writer.v1",
            {"view": "gold"},
        )
    assert "writers -> 0 -> config: 'conllu.writer.v1' reads view 'gold', which nothing " in str(
        info.value
    )


def test_a_writer_of_a_view_missing_from_the_document_fails_the_document(tmp_path: Path) -> None:
    # An XMI file may lack a view its reader declares; the writer names what is missing.
    source = tmp_path / "xmi"
    source.mkdir()
    typesystem = load_typesystem()
    cas = cassis.Cas(typesystem=typesystem)
    cas.sofa_string = BIO_TEXT
    set_document_metadata(cas, "doc1", "doc1.xmi")
    cas.to_xmi(source / "doc1.xmi")
    workflow = f"""\
        reader:
          component: xmi.reader.v1
          config: {{input: {json.dumps(str(source))}, views: {{gold: []}}}}
        writers:
          - component: conllu.writer.v1
            config: {{view: gold}}
        run: {{jobs: 1, output: {json.dumps(str(tmp_path / "out"))}, progress: false}}
        """
    loaded = load_workflow_text(textwrap.dedent(workflow), source=str(tmp_path / "wf.yaml"))
    report = run_workflow(loaded, RunOptions(show_progress=False, allow_changed_workflow=True))
    assert "document doc1: no view 'gold' to write (views: _InitialView)" in failure(report)


# ----------------------------------------------------------------------------- BC2


def _bc2_run(tmp_path: Path, corpus: Path, **reader: Any) -> Any:
    workflow = f"""\
        reader:
          component: bc2gm.reader.v1
          view: gold
          config: {json.dumps({"corpus": str(corpus), **reader})}
        writers:
          - component: bc2.writer.v1
            config: {{view: gold}}
        run: {{jobs: 1, output: {json.dumps(str(tmp_path / "out"))}, progress: false}}
        """
    loaded = load_workflow_text(textwrap.dedent(workflow), source=str(tmp_path / "wf.yaml"))
    return run_workflow(loaded, RunOptions(show_progress=False, allow_changed_workflow=True))


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


def test_bc2_writer_combines_documents_into_one_sorted_file(
    tmp_path: Path, bc2_corpus: Path
) -> None:
    report = _bc2_run(tmp_path, bc2_corpus)
    folder = tmp_path / "out" / "bc2"
    assert report.run_files == [str(folder / "GENE.eval")]
    assert (folder / "GENE.eval").read_text("utf-8") == BC2_GENES
    documents = sorted(p.name for p in (folder / "documents").iterdir())
    assert documents == ["S1.eval", "S2.eval", "S3.eval"]  # S2 has no gene: an empty file
    assert (folder / "documents" / "S2.eval").read_text("utf-8") == ""


def test_bc2_writer_combined_file_includes_documents_of_an_earlier_run(
    tmp_path: Path, bc2_corpus: Path
) -> None:
    _bc2_run(tmp_path, bc2_corpus, limit=1)
    folder = tmp_path / "out" / "bc2"
    assert (folder / "GENE.eval").read_text("utf-8").count("\n") == 3
    report = _bc2_run(tmp_path, bc2_corpus)  # resumed: S1 is skipped, S2 and S3 are new
    assert report.counts["skipped"] == 1 and report.counts["ok"] == 2
    assert (folder / "GENE.eval").read_text("utf-8") == BC2_GENES


def test_bc2_writer_combines_in_id_order_without_holding_every_mention(tmp_path: Path) -> None:
    writer = build("bc2.writer.v1", RunContext(output_dir=tmp_path))
    text = " ".join(["Shh"] * 50)
    # File names sort otherwise than the ids ("a%2Fb" before "a.b"); a long id is
    # shortened in its file name, and its lines name it.
    ids = ["a/b", "a.b", "x" * 300] + [f"d{i:03d}" for i in range(400)]
    for doc_id in ids:
        cas = cas_from_text(text, spans={"GeneMention": [(i, i + 3) for i in range(0, 200, 4)]})
        writer.write(cas, doc_id)
    tracemalloc.start()
    try:
        (combined,) = writer.finish()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    lines = combined.read_text("utf-8").splitlines()
    assert len(lines) == 50 * len(ids)
    assert [line.split("|")[0] for line in lines[::50]] == sorted(ids)
    assert lines[:2] == ["a.b|0 2|Shh", "a.b|3 5|Shh"]
    # 20,150 mentions held at once took about 10 MB; one document's at a time far less.
    assert peak < 2_000_000


@pytest.mark.parametrize("line_break", ["\n", "\r", "\r\n"])
def test_bc2_writer_writes_a_mention_across_lines_on_one_line(
    tmp_path: Path, line_break: str
) -> None:
    text = f"the Pax{line_break}6 gene and Shh"
    end = text.index(" gene")
    cas = cas_from_text(text, spans={"GeneMention": [(4, end), (end + 10, end + 13)]})
    back = _write_and_import(tmp_path, cas, "bc2.writer.v1", "bc2.import.v1")
    assert _mentions(back, GENE_MENTION) == [(4, end, "GENE"), (end + 10, end + 13, "GENE")]
    assert (
        (tmp_path / "out" / "bc2" / "GENE.eval")
        .read_text("utf-8")
        .startswith(f"doc1|3 6|Pax{' ' * len(line_break)}6\n")
    )


@pytest.mark.parametrize("line_break", ["\n", "\r"])
def test_genetag_writer_fails_a_document_whose_mention_holds_a_line_break(
    tmp_path: Path, line_break: str
) -> None:
    cas = cas_from_text(f"the Pax{line_break}6 gene", spans={"GeneMention": [(4, 9)]})
    writer = build("genetag.writer.v1", RunContext(output_dir=tmp_path))
    with pytest.raises(ViewContentError, match="holds a line break, which a GENETAG line cannot"):
        writer.write(cas, "@@doc1")
    # The combined file of the other documents is still written.
    assert writer.finish()[0].read_text("utf-8") == ""


@pytest.mark.parametrize(
    ("writer", "doc_id", "combined"),
    [
        ("bc2.writer.v1", "s 1", "bc2/GENE.eval"),
        ("bc2.writer.v1", "s|1", "bc2/GENE.eval"),
        ("genetag.writer.v1", "@@s 1", "genetag/Test.format"),
        ("genetag.writer.v1", "s1", "genetag/Test.format"),
    ],
)
def test_mention_line_writers_fail_a_document_whose_id_the_lines_cannot_hold(
    tmp_path: Path, writer: str, doc_id: str, combined: str
) -> None:
    write_files(tmp_path, {f"{doc_id}.ann": "T1\tGene 0 5\tBRCA1\n"})
    report = run_import(
        tmp_path,
        "BRCA1 is a gene .",
        "brat.import.v1",
        {"path": "{doc_id}.ann", "types": {"Gene": "GeneMention"}},
        writer,
        {},
        doc_id=doc_id,
    )
    # The document fails where it is written, and the run still writes its files.
    assert f"document {doc_id!r}: " in failure(report)
    assert "cannot contain whitespace or '|'" in failure(report)
    assert (tmp_path / "out" / combined).read_text("utf-8") == ""
    assert (tmp_path / "out" / "run-report.json").exists()


def test_penn_trees_with_a_spaced_token_written_as_underscore_are_read_back(
    tmp_path: Path,
) -> None:
    # A Penn leaf cannot hold a space: penn.writer.v1 writes "IL 2" as IL_2, and its
    # trees must align to the text again; a literal "_" still matches only itself.
    from casflow.components.formats.penn.alignment import align_trees

    tree = tmp_path / "doc1.tree"
    tree.write_text("( (S (NP (NN IL_2)) (VP (VBZ binds)) (. .)) )\n", encoding="utf-8")
    (aligned,) = align_trees(tree, "IL 2 binds.", "doc1.txt")
    assert aligned.token_spans == [(0, 4), (5, 10), (10, 11)]
    (aligned,) = align_trees(tree, "IL_2 binds.", "doc1.txt")
    assert aligned.token_spans[0] == (0, 4)
    with pytest.raises(ValueError, match="leaf 1 'IL_2'"):
        align_trees(tree, "IL-2 binds.", "doc1.txt")
