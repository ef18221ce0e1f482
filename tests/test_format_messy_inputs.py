"""Readers and importers on the damaged files real corpora and tools produce: a byte-order
mark, a truncated or empty output file, a broken dependency tree, an encoding the file
is not in, a compressed input. Each error names the file and line and says what to do;
nothing is dropped without a warning."""

from __future__ import annotations

import bz2
import gzip
import json
import textwrap
import warnings
from pathlib import Path
from typing import Any

import cassis
import pytest

from casflow.cas.metadata import set_document_metadata
from casflow.cas.sofa import set_sofa_text
from casflow.components.formats.bio.parse import parse_bio
from casflow.components.formats.common import FormatWarning
from casflow.components.formats.document_files import (
    ImportDecodeError,
    ImportFileMalformed,
    ImportFileMissing,
    ImportFormatError,
    ImportPathError,
)
from casflow.components.formats.text.reader import TextReader
from casflow.pipeline.component import DocumentRef, RunContext
from casflow.pipeline.registry import registry
from casflow.pipeline.runner import RunOptions, run_workflow
from casflow.pipeline.workflow import load_workflow_text
from casflow.typesystem import DEPENDENCY, NAMED_ENTITY, TOKEN, load_typesystem
from tests.test_gold_readers import document_view as gold_readers_view

TEXT = "The cat sat."
CONLLU = (
    "1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_\n"
    "2\tcat\tcat\tNOUN\tNN\t_\t3\tnsubj\t_\t_\n"
    "3\tsat\tsit\tVERB\tVBD\t_\t0\troot\t_\t_\n"
    "4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_\n\n"
)
BIO = "The\tO\ncat\tB-Animal\nsat\tO\n.\tO\n\n"
TREE = "(ROOT (S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .)))\n"
ANN = "T1\tAnimal 4 7\tcat\n"


def build(name: str, config: dict[str, Any], workflow_dir: Path) -> Any:
    cls = registry().get(name)
    context = RunContext(output_dir=workflow_dir / "out", workflow_dir=workflow_dir)
    return cls(cls.Config.model_validate(config), context)


def document_view(text: str = TEXT, doc_id: str = "doc") -> cassis.Cas:
    return gold_readers_view(text, doc_id)


def import_file(
    tmp_path: Path, name: str, content: str | bytes, text: str = TEXT, **config: Any
) -> cassis.Cas:
    suffix = {"conllu": "conllu", "bio": "bio", "penn": "tree", "brat": "ann"}[name]
    path = tmp_path / f"doc.{suffix}"
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    view = document_view(text)
    build(f"{name}.import.v1", {"path": f"{{doc_id}}.{suffix}", **config}, tmp_path).process(view)
    return view


def format_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if isinstance(w.message, FormatWarning)]


# ------------------------------------------------------------------ byte-order mark


@pytest.mark.parametrize(
    ("name", "content", "type_name"),
    [
        ("conllu", CONLLU, TOKEN),
        ("bio", BIO, TOKEN),
        ("penn", TREE, TOKEN),
        ("brat", ANN, NAMED_ENTITY),
    ],
)
def test_importers_read_a_file_that_starts_with_a_byte_order_mark(
    tmp_path: Path, name: str, content: str, type_name: str
) -> None:
    plain = import_file(tmp_path, name, content)
    marked = import_file(tmp_path, name, "\ufeff" + content)
    # brat dropped the first annotation ("\ufeffT1" is no T line); the others failed
    assert [a.get_covered_text() for a in marked.select(type_name)] == [
        a.get_covered_text() for a in plain.select(type_name)
    ]
    assert marked.select(type_name)


def test_penn_import_reads_the_configured_encoding(tmp_path: Path) -> None:
    tree = "(ROOT (S (NP (NN Café)) (VP (VBD sat)) (. .)))\n".encode("latin-1")
    view = import_file(tmp_path, "penn", tree, text="Café sat.", encoding="latin-1")
    assert [t.get_covered_text() for t in view.select(TOKEN)] == ["Café", "sat", "."]


def test_an_undecodable_file_names_its_line_and_says_to_convert_it(tmp_path: Path) -> None:
    content = CONLLU.replace("cat\tcat", "ca\udce9\tcat").encode("utf-8", "surrogateescape")
    with pytest.raises(ImportDecodeError, match=r"doc\.conllu:2: not valid utf-8") as info:
        import_file(tmp_path, "conllu", content)
    assert "iconv" in info.value.hint and "encoding" in info.value.hint


# ------------------------------------------------------------------ document ids in paths


def _system_file(tmp_path: Path, relative: str) -> Path:
    path = tmp_path / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(ANN, encoding="utf-8")
    return path


@pytest.mark.parametrize("doc_id", ["../secret", "sub/../../secret", "{tmp}/secret"])
def test_an_id_that_climbs_out_of_the_import_folder_is_not_read(
    tmp_path: Path, doc_id: str
) -> None:
    # Ids come from archive member names, list files and other tools' XMI; each of
    # these names secret.ann, which exists, outside the folder of the path pattern.
    _system_file(tmp_path, "secret.ann")
    doc_id = doc_id.replace("{tmp}", str(tmp_path))
    pattern = "{doc_id}.ann" if doc_id.startswith("/") else str(tmp_path / "system/{doc_id}.ann")
    view = document_view(doc_id=doc_id)
    importer = build("brat.import.v1", {"path": pattern}, tmp_path)
    with pytest.raises(ImportPathError, match="outside its folder") as info:
        importer.process(view)
    assert "{doc_stem}" in info.value.hint
    assert not view.select(NAMED_ENTITY)


def test_a_nested_id_is_read_below_the_import_folder(tmp_path: Path) -> None:
    _system_file(tmp_path, "system/sub/doc.ann")
    view = document_view(doc_id="sub/doc")
    build("brat.import.v1", {"path": str(tmp_path / "system/{doc_id}.ann")}, tmp_path).process(view)
    assert [m.get_covered_text() for m in view.select(NAMED_ENTITY)] == ["cat"]


def test_an_id_starting_with_a_tilde_is_not_taken_for_a_home_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    _system_file(tmp_path, "home/secret.ann")
    view = document_view(doc_id="~/secret")
    importer = build("brat.import.v1", {"path": "{doc_id}.ann"}, tmp_path / "workflow")
    with pytest.raises(ImportFileMissing):
        importer.process(view)


# ------------------------------------------------------------------ truncated and empty files


@pytest.mark.parametrize(
    ("name", "content"),
    [("conllu", CONLLU), ("bio", BIO)],
)
def test_text_after_a_token_file_ends_is_kept_with_a_warning(
    tmp_path: Path, name: str, content: str
) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import_file(tmp_path, name, content)
        assert format_warnings(caught) == []
        view = import_file(tmp_path, name, content, text=TEXT + "\nThe dog ran.")
        (said,) = format_warnings(caught)
    assert len(view.select(TOKEN)) == 4
    assert "doc." in said and "offset 13" in said and "'The dog ran.'" in said
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import_file(tmp_path, name, "")
        (said,) = format_warnings(caught)
    assert "offset 0 of 12" in said


# ------------------------------------------------------------------ CoNLL-U trees


def conllu_heads(*heads: str) -> str:
    words = ("The", "cat", "sat", ".")
    return (
        "".join(
            f"{n}\t{w}\t_\t_\t_\t_\t{h}\tdep\t_\t_\n"
            for n, (w, h) in enumerate(zip(words, heads, strict=True), 1)
        )
        + "\n"
    )


@pytest.mark.parametrize(
    ("heads", "said"),
    [
        (
            ("2", "3", "0", "9"),
            r"doc\.conllu:4: HEAD '9' of word 4 is not 0 or a word id .*\(1-4\)",
        ),
        (("2", "x", "0", "3"), r"doc\.conllu:2: HEAD 'x' of word 2"),
        (("2", "²", "0", "3"), r"doc\.conllu:2: HEAD '²' of word 2"),
        (("2", "2", "0", "3"), r"doc\.conllu:2: word 2 is its own HEAD"),
        (("2", "1", "0", "3"), r"doc\.conllu:1: the HEADs of words 1, 2 form a cycle"),
    ],
)
def test_conllu_import_refuses_a_broken_tree_before_adding_anything(
    tmp_path: Path, heads: tuple[str, ...], said: str
) -> None:
    (tmp_path / "doc.conllu").write_text(conllu_heads(*heads), encoding="utf-8")
    view = document_view()
    importer = build("conllu.import.v1", {"path": "{doc_id}.conllu"}, tmp_path)
    with pytest.raises(ImportFileMalformed, match=said) as info:
        importer.process(view)
    assert "fix or regenerate" in info.value.hint
    assert view.select(TOKEN) == []


def test_conllu_import_keeps_a_valid_tree(tmp_path: Path) -> None:
    view = import_file(tmp_path, "conllu", conllu_heads("2", "3", "0", "3"))
    assert len(view.select(DEPENDENCY)) == 4


def test_conllu_syntax_errors_say_to_fix_the_file_not_that_it_is_another_documents(
    tmp_path: Path,
) -> None:
    with pytest.raises(ImportFileMalformed, match=r"doc\.conllu:1: 9 tab-separated columns"):
        import_file(tmp_path, "conllu", CONLLU.replace("\t_\t_\n", "\t_\n", 1))
    # a form not in the text is still the other kind: the file is of another document
    with pytest.raises(
        ImportFormatError, match="token 1 'Extra' not found .* where the text ends"
    ) as info:
        import_file(tmp_path, "conllu", CONLLU + "1\tExtra\t_\t_\t_\t_\t0\troot\t_\t_\n\n")
    assert not isinstance(info.value, ImportFileMalformed)
    assert "sentence None" not in str(info.value)


# ------------------------------------------------------------------ BIO


def test_bio_skips_docstart_lines_as_conlleval_does() -> None:
    document = parse_bio("-DOCSTART-\tO\n\nThe\tO\ncat\tB-Animal\n\n-DOCSTART- -X- O\nsat\tO\n")
    assert [[t.text for t in s.tokens] for s in document.sentences] == [["The", "cat"], ["sat"]]


def test_bio_import_says_to_read_space_separated_columns_with_any_whitespace(
    tmp_path: Path,
) -> None:
    with pytest.raises(ImportFileMalformed, match="separator None") as info:
        import_file(tmp_path, "bio", BIO.replace("\t", " "))
    assert "doc.bio:1:" in str(info.value)
    view = import_file(tmp_path, "bio", BIO.replace("\t", " "), separator=None)
    assert [m.get_covered_text() for m in view.select(NAMED_ENTITY)] == ["cat"]


# ------------------------------------------------------------------ brat


def test_brat_import_warns_about_a_line_with_no_brat_id(tmp_path: Path) -> None:
    content = "t1\tAnimal 0 3\tThe\n" + ANN + "R1\tRel Arg1:T1 Arg2:T1\n"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        view = import_file(tmp_path, "brat", content)
        (said,) = format_warnings(caught)
    assert "doc.ann:1:" in said and "'t1' is not a brat annotation id" in said
    assert [m.get_covered_text() for m in view.select(NAMED_ENTITY)] == ["cat"]


def test_brat_import_tells_a_malformed_line_from_a_text_mismatch(tmp_path: Path) -> None:
    with pytest.raises(ImportFileMalformed, match=r"doc\.ann:1: T1: fragment"):
        import_file(tmp_path, "brat", "T1\tAnimal 4-7\tcat\n")
    with pytest.raises(ImportFormatError, match="differs") as info:
        import_file(tmp_path, "brat", "T1\tAnimal 0 3\tcat\n")
    assert not isinstance(info.value, ImportFileMalformed)


# ------------------------------------------------------------------ text reader


def load_text(tmp_path: Path, name: str, data: bytes) -> cassis.Cas:
    path = tmp_path / name
    path.write_bytes(data)
    reader = build("text.reader.v1", {"input": str(path)}, tmp_path)
    cas = cassis.Cas(typesystem=load_typesystem())
    reader.load(DocumentRef("doc", str(path), None, len(data)), cas)
    return cas


def test_text_reader_names_a_compressed_file_for_what_it_is(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"z\.txt\.gz is gzip-compressed, not plain text") as info:
        load_text(tmp_path, "z.txt.gz", gzip.compress(b"Some text."))
    assert "gunzip" in info.value.hint  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="UTF-16 byte-order mark"):
        load_text(tmp_path, "u.txt", "Some text.".encode("utf-16"))
    assert load_text(tmp_path, "ok.txt", b"Some text.").sofa_string == "Some text."
    with pytest.raises(ValueError, match="bzip2-compressed"):
        load_text(tmp_path, "z.txt.bz2", bz2.compress(b"Some text."))
    # a text that merely begins as such headers do is text
    for text in (b"BZh1 is a clone name.", b"%PDF- files are not read here."):
        assert load_text(tmp_path, "t.txt", text).sofa_string == text.decode()


def test_text_reader_warns_about_an_empty_file(tmp_path: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_text(tmp_path, "full.txt", b"Text.")
        assert format_warnings(caught) == []
        cas = load_text(tmp_path, "blank.txt", b" \n")
        (said,) = format_warnings(caught)
    assert cas.sofa_string == " \n" and "blank.txt" in said and "no text" in said


# ------------------------------------------------------------------ a run over good and bad files


def test_a_run_fails_only_the_bad_documents_and_reports_the_warnings(tmp_path: Path) -> None:
    texts = tmp_path / "txt"
    texts.mkdir()
    (texts / "good.txt").write_text(TEXT)
    (texts / "bom.txt").write_text(TEXT)
    (texts / "cut.txt").write_text(TEXT + " The dog ran.")
    (texts / "loop.txt").write_text(TEXT)
    system = tmp_path / "system"
    system.mkdir()
    (system / "good.conllu").write_text(CONLLU)
    (system / "bom.conllu").write_text("\ufeff" + CONLLU)
    (system / "cut.conllu").write_text(CONLLU)
    (system / "loop.conllu").write_text(conllu_heads("2", "1", "0", "3"))
    workflow = textwrap.dedent(
        f"""
        name: messy
        reader: {{component: text.reader.v1, config: {{input: {texts}}}}}
        components:
          - {{component: conllu.import.v1, view: system, config: {{path: "{system}/{{doc_id}}.conllu"}}}}
        run: {{jobs: 1, output: {tmp_path / "out"}}}
        """
    )
    run_workflow(
        load_workflow_text(workflow, source=str(tmp_path / "wf.yaml")),
        RunOptions(show_progress=False),
    )
    report = json.loads((tmp_path / "out" / "run-report.json").read_text())
    assert report["counts"]["ok"] == 3 and report["counts"]["failed"] == 1
    (failure,) = report["failures"]
    assert failure["document"] == "loop" and "loop.conllu:1:" in failure["error"]
    assert "fix or regenerate" in failure["what_to_do"]
    (warned,) = report["warnings"]
    assert warned["documents"] == ["cut"] and "'The dog ran.'" in warned["message"]


def test_missing_empty_warns_so_a_wrong_pattern_is_seen(tmp_path: Path) -> None:
    importer = build("conllu.import.v1", {"path": "{doc_id}.conllu", "missing": "empty"}, tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        importer.process(document_view(doc_id="a"))
        importer.process(document_view(doc_id="b"))
        said = format_warnings(caught)
    # one message for all documents: the run report groups them under it
    assert (
        said
        == [
            "path '{doc_id}.conllu': no file for the document (missing: empty): its view is left empty"
        ]
        * 2
    )


# ------------------------------------------------------------------ lone surrogates from a reader


class SurrogateescapeTextReader(TextReader):
    """A plug-in reader with a lenient decoder: bytes that are not UTF-8 become lone
    surrogates (errors="surrogateescape") instead of failing the document."""

    name = "test.surrogateescape_text_reader.v1"

    def load(self, ref: DocumentRef, cas: cassis.Cas) -> None:
        # set as casflow's readers set it (cassis's own setter refuses the text itself)
        set_sofa_text(cas, Path(ref.uri).read_bytes().decode("utf-8", "surrogateescape"))
        set_document_metadata(cas, ref.doc_id, ref.uri)


def test_a_lone_surrogate_fails_its_document_at_the_reader_naming_the_byte(
    tmp_path: Path,
) -> None:
    """Each tool failed on such a text in its own words, naming neither the document nor
    the character (UnicodeEncodeError from spaCy and the writers, SystemError from
    python-crfsuite, TypeError from UDPipe's SWIG binding)."""
    reg = registry()
    if SurrogateescapeTextReader.name not in reg.names():
        reg.register(SurrogateescapeTextReader.name, SurrogateescapeTextReader, origin="tests")
    texts = tmp_path / "txt"
    texts.mkdir()
    (texts / "good.txt").write_text("Caf\u00e9 cells grow.", encoding="utf-8")
    (texts / "latin1.txt").write_bytes("Cells grow.\nCaf\u00e9 cells grow.".encode("latin-1"))
    workflow = textwrap.dedent(
        f"""
        reader: {{component: {SurrogateescapeTextReader.name}, config: {{input: {texts}}}}}
        components:
          - {{component: tokens.spacy.english.v1}}
        writers:
          - {{component: conllu.writer.v1}}
        run: {{jobs: 1, output: {tmp_path / "out"}}}
        """
    )
    run_workflow(
        load_workflow_text(workflow, source=str(tmp_path / "wf.yaml")),
        RunOptions(show_progress=False),
    )
    report = json.loads((tmp_path / "out" / "run-report.json").read_text())
    assert report["counts"]["ok"] == 1 and report["counts"]["failed"] == 1
    (failure,) = report["failures"]
    assert failure["document"] == "latin1" and failure["stage"].startswith("reader ")
    assert "latin1.txt: view _InitialView, line 2, column 4 (character 15)" in failure["error"]
    assert "U+DCE9 is a lone surrogate (the byte 0xE9 that did not decode" in failure["error"]
    assert "real encoding" in failure["what_to_do"]
    assert (tmp_path / "out" / "conllu" / "good.conllu").is_file()
