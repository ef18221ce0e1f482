from __future__ import annotations

import re
import textwrap
from pathlib import Path

import cassis
import pytest

from casflow.components.formats.jats.reader import sniff_article_id
from casflow.pipeline.cli import main
from casflow.pipeline.uima_java import (
    cassis_cas_report,
    compare_reports,
    find_uima_jar,
    java_available,
    java_cas_reports,
)
from casflow.typesystem import (
    CAPTION,
    DOCUMENT_METADATA,
    HEADING,
    PARAGRAPH,
    TITLE,
    load_typesystem,
)

ARTICLE = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE article PUBLIC "-//NLM//DTD Journal Archiving and Interchange DTD v2.3 20070202//EN" "archivearticle.dtd">
<article xmlns:xlink="http://www.w3.org/1999/xlink"><front><article-meta>
<article-id pub-id-type="pmid">111</article-id><article-id pub-id-type="pmc">2222</article-id>
<title-group><article-title>BRCA1 in <italic>Mus musculus</italic></article-title></title-group>
<abstract><p>We studied BRCA1.</p></abstract></article-meta></front>
<body><sec><title>Results</title><p>The gene was expressed (Fig. 1).</p>
<fig id="f1"><label>Figure 1</label><caption><p>Expression of BRCA1.</p></caption></fig></sec></body>
</article>
"""


def _write_workflow(tmp_path: Path, input_path: Path, out: Path, jobs: int) -> Path:
    wf = tmp_path / f"wf{jobs}.yaml"
    wf.write_text(
        textwrap.dedent(
            f"""\
            reader:
              component: nxml.reader.v1
              config: {{input: "{input_path}"}}
            writers:
              - component: xmi.writer.v1
            run: {{jobs: {jobs}, output: "{out}", progress: false}}
            """
        ),
        encoding="utf-8",
    )
    return wf


def test_sniff_article_ids() -> None:
    head = ARTICLE.encode()
    assert sniff_article_id(head, "pmcid") == "PMC2222"
    assert sniff_article_id(head, "pmid") == "111"
    assert sniff_article_id(b"<article/>") is None


def test_id_styles_take_the_pmcid_or_the_pmid_else_the_stem(tmp_path: Path) -> None:
    from casflow.components.formats.jats.reader import NxmlReader, NxmlReaderConfig
    from casflow.pipeline.component import RunContext

    pmid_only = re.sub(r"<article-id[^>]*pmc[^>]*>[^<]*</article-id>", "", ARTICLE)
    assert "PMC" not in pmid_only and "111" in pmid_only
    (tmp_path / "both.nxml").write_text(ARTICLE, encoding="utf-8")
    (tmp_path / "pmid-only.nxml").write_text(pmid_only, encoding="utf-8")
    (tmp_path / "neither.nxml").write_text(
        re.sub(r"<article-id[^>]*>[^<]*</article-id>", "", ARTICLE), encoding="utf-8"
    )

    def ids(style: str) -> list[str]:
        config = NxmlReaderConfig(input=str(tmp_path), id_style=style)
        return [
            r.doc_id for r in NxmlReader(config, RunContext(output_dir=tmp_path)).iter_documents()
        ]

    assert ids("pmcid") == ["PMC2222", "neither", "111"]
    assert ids("pmid") == ["111", "neither", "111"]
    assert ids("stem") == ["both", "neither", "pmid-only"]


def test_nxml_reader_structure_and_ids(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a b.nxml").write_text(ARTICLE, encoding="utf-8")
    broken = ARTICLE.replace("2222", "3333")
    (tmp_path / "in" / "broken.nxml").write_text(broken[: len(broken) // 2], encoding="utf-8")
    wf = _write_workflow(tmp_path, tmp_path / "in", tmp_path / "out", jobs=1)
    assert main(["run", str(wf), "--quiet"]) == 1  # the truncated file fails, the other is written
    cas = cassis.load_cas_from_xmi(
        (tmp_path / "out" / "xmi" / "PMC2222.xmi").read_text("utf-8"), typesystem=load_typesystem()
    )
    assert [t.get_covered_text() for t in cas.select(TITLE)] == ["BRCA1 in Mus musculus"]
    assert [h.get_covered_text() for h in cas.select(HEADING)] == ["Results"]
    assert "The gene was expressed (Fig. 1)." in [
        p.get_covered_text() for p in cas.select(PARAGRAPH)
    ]
    assert any("Expression of BRCA1." in c.get_covered_text() for c in cas.select(CAPTION))
    meta = cas.select(DOCUMENT_METADATA)[0]
    assert meta.documentTitle == "BRCA1 in Mus musculus" and meta.documentId == "PMC2222"
    report = (tmp_path / "out" / "run-report.json").read_text()
    assert "broken.nxml" in report
    # A second run retries only the failed file.
    assert main(["run", str(wf), "--quiet"]) == 1
    import json

    counts = json.loads(report)["counts"]
    assert counts["ok"] == 1 and counts["failed"] == 1
    assert "PMC3333" in report
    counts2 = json.loads((tmp_path / "out" / "run-report.json").read_text())["counts"]
    assert counts2["skipped"] == 1 and counts2["failed"] == 1


@pytest.mark.corpus
@pytest.mark.slow
def test_craft_nxml_jobs_identical_and_loadable_in_uima_java(
    craft_dir: Path, tmp_path: Path
) -> None:
    nxml = craft_dir / "articles" / "nxml"
    out1, out2 = tmp_path / "j1", tmp_path / "j2"
    assert main(["run", str(_write_workflow(tmp_path, nxml, out2, jobs=2)), "--quiet"]) == 0
    assert main(["run", str(_write_workflow(tmp_path, nxml, out1, jobs=1)), "--quiet"]) == 0
    files = sorted((out2 / "xmi").glob("*.xmi"))
    assert len(files) == len(list(nxml.glob("*.nxml"))) == 67
    for path in files:
        assert path.read_bytes() == (out1 / "xmi" / path.name).read_bytes(), path.name
    if not java_available() or find_uima_jar() is None:
        pytest.skip("java/javac or the Apache UIMA jar is missing; the cassis part passed")
    typesystem_xml = out2 / "xmi" / "TypeSystem.xml"
    reports = java_cas_reports(typesystem_xml, files)
    for path in files:
        assert compare_reports(reports[path], cassis_cas_report(path, typesystem_xml)) == [], (
            path.name
        )


@pytest.mark.slow
@pytest.mark.java
def test_check_xmi_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if not java_available() or find_uima_jar() is None:
        pytest.skip("java/javac or the Apache UIMA jar (libuima-core-java) is missing")
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.nxml").write_text(ARTICLE, encoding="utf-8")
    wf = _write_workflow(tmp_path, tmp_path / "in", tmp_path / "out", jobs=1)
    assert main(["run", str(wf), "--quiet"]) == 0
    assert main(["check-xmi", str(tmp_path / "out" / "xmi"), "--spans"]) == 0
    assert "1 of 1 XMI files load in UIMA Java" in capsys.readouterr().out
    # A file that is not valid against the type system fails the check.
    bad = tmp_path / "out" / "xmi" / "bad.xmi"
    bad.write_text(
        (tmp_path / "out" / "xmi" / "PMC2222.xmi")
        .read_text()
        .replace("type:DocumentMetaData", "type:NoSuchType"),
        encoding="utf-8",
    )
    assert main(["check-xmi", str(tmp_path / "out" / "xmi")]) == 1
