"""pmc.reader.v1 over a hand-made mirror of PMC's Cloud Service layout
(tests/helpers/pmc_mirror.py), through fsspec's local and in-memory file systems."""

from __future__ import annotations

import json
import os
import textwrap
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cassis
import fsspec
import pytest
from pydantic import ValidationError

from casflow.components.pmc.cloud import (
    ArticleVersion,
    PmcLayoutError,
    PmcMirror,
    changed_since,
    normalize_license,
    parse_article,
)
from casflow.components.pmc.reader import (
    ArticlesLeftOut,
    PmcArticleError,
    PmcReader,
    PmcReaderConfig,
)
from casflow.pipeline.cli import main
from casflow.pipeline.component import RunContext
from casflow.typesystem import ARTICLE_VERSION, DOCUMENT_METADATA, PARAGRAPH, TITLE, load_typesystem
from tests.helpers.pmc_mirror import OLD_REPORT, build_mirror, jats

INVENTORY = "inventory-reports/pmc-oa-opendata/metadata"


@pytest.fixture(params=["local", "memory"])
def mirror(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The mirror's root URL: a local folder, or a folder of fsspec's memory file system."""
    if request.param == "local":
        root = tmp_path / "mirror"
        build_mirror(fsspec.filesystem("file"), str(root))
        yield str(root)
        return
    fs = fsspec.filesystem("memory")
    root = f"/pmc-{uuid.uuid4().hex}"
    build_mirror(fs, root)
    yield f"memory://{root}"
    fs.rm(root, recursive=True)


def reader(root: str, tmp_path: Path, **config: Any) -> PmcReader:
    return PmcReader(PmcReaderConfig(input=root, **config), RunContext(output_dir=tmp_path))


def ids(root: str, tmp_path: Path, **config: Any) -> list[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ArticlesLeftOut)  # said by the tests of the report
        refs = list(reader(root, tmp_path, **config).iter_documents())
    assert all(ref.error is None for ref in refs), [ref.error for ref in refs]
    return [ref.doc_id for ref in refs]


def load(pmc: PmcReader, doc_id: str) -> cassis.Cas:
    ref = next(r for r in pmc.iter_documents() if r.doc_id == doc_id)
    cas = cassis.Cas(typesystem=load_typesystem())
    pmc.load(ref, cas)
    return cas


def test_defaults_take_the_latest_version_of_each_article_and_leave_out_retractions(
    mirror: str, tmp_path: Path
) -> None:
    assert ids(mirror, tmp_path) == ["PMC1001.2", "PMC1003.1", "PMC1004.1"]


def test_the_version_and_licence_are_written_to_the_cas(mirror: str, tmp_path: Path) -> None:
    cas = load(reader(mirror, tmp_path), "PMC1001.2")
    (version,) = cas.select(ARTICLE_VERSION)
    assert (version.accession, version.version, version.license) == ("PMC1001", 2, "CC BY")
    assert (version.pmid, version.doi, version.retracted) == ("91001", "10.1234/pmc1001.2", False)
    assert version.begin == 0 and version.end == len(cas.sofa_string)
    assert version.source.endswith("PMC1001.2/PMC1001.2.json")
    (meta,) = cas.select(DOCUMENT_METADATA)
    assert (meta.documentId, meta.documentTitle) == ("PMC1001.2", "BRCA1 in mice, corrected")
    assert [t.get_covered_text() for t in cas.select(TITLE)] == ["BRCA1 in mice, corrected"]
    assert "The gene was studied in PMC1001.2." in [
        p.get_covered_text() for p in cas.select(PARAGRAPH)
    ]
    # When the metadata last changed: the file's time (S3's LastModified on the bucket).
    assert version.lastModified.startswith("20") and version.lastModified.endswith("Z")
    # Metadata only under metadata/ (as PMC also publishes it) is found too.
    manuscript = load(reader(mirror, tmp_path), "PMC1004.1").select(ARTICLE_VERSION)[0]
    assert (manuscript.license, manuscript.manuscript) == ("CC0", True)
    assert manuscript.source.endswith("metadata/PMC1004.1.json")


@pytest.mark.parametrize(
    ("licenses", "expected"),
    [
        (["CC BY"], ["PMC1001.2"]),
        (["cc-by-nc"], ["PMC1003.1"]),
        (["CC BY", "CC0"], ["PMC1001.2", "PMC1004.1"]),
        (["CC BY-SA"], []),
    ],
)
def test_a_licence_filter(
    mirror: str, tmp_path: Path, licenses: list[str], expected: list[str]
) -> None:
    assert ids(mirror, tmp_path, licenses=licenses) == expected


def test_retractions_can_be_taken_too_or_alone(mirror: str, tmp_path: Path) -> None:
    assert ids(mirror, tmp_path, retracted="include") == [
        "PMC1001.2",
        "PMC1002.1",
        "PMC1003.1",
        "PMC1004.1",
    ]
    assert ids(mirror, tmp_path, retracted="only") == ["PMC1002.1"]
    cas = load(reader(mirror, tmp_path, retracted="only"), "PMC1002.1")
    assert cas.select(ARTICLE_VERSION)[0].retracted is True


def test_named_articles_and_versions(mirror: str, tmp_path: Path) -> None:
    assert ids(mirror, tmp_path, articles=["PMC1001.1", "PMC1003"]) == ["PMC1001.1", "PMC1003.1"]
    assert ids(mirror, tmp_path, articles=["PMC1001"], versions="all") == [
        "PMC1001.1",
        "PMC1001.2",
    ]
    assert ids(mirror, tmp_path, articles=["PMC1001"], id_style="pmcid") == ["PMC1001"]
    listed = tmp_path / "articles.txt"
    listed.write_text("# wanted\nPMC1004\n1001.1  # a number is a PMCID too\n", encoding="utf-8")
    assert ids(mirror, tmp_path, articles_file=str(listed)) == ["PMC1001.1", "PMC1004.1"]
    with pytest.raises(PmcLayoutError, match=r"PMC1001\.7: no such version"):
        ids(mirror, tmp_path, articles=["PMC1001.7"])
    with pytest.raises(PmcLayoutError, match="PMC9999: not in"):
        ids(mirror, tmp_path, articles=["PMC9999"])


def test_the_inventory_lists_the_articles_and_selects_what_is_new(
    mirror: str, tmp_path: Path
) -> None:
    assert ids(mirror, tmp_path, inventory="latest") == ["PMC1001.2", "PMC1003.1", "PMC1004.1"]
    old = f"{mirror}/{INVENTORY}/{OLD_REPORT}/manifest.json"
    # The old report predates PMC1001.2: its latest PMC1001 was version 1.
    assert ids(mirror, tmp_path, inventory=old) == ["PMC1001.1", "PMC1003.1", "PMC1004.1"]
    # New since the old report: PMC1001.2 (added) and PMC1003.1 (changed: another ETag).
    assert ids(mirror, tmp_path, inventory="latest", previous_inventory=old) == [
        "PMC1001.2",
        "PMC1003.1",
    ]
    assert ids(mirror, tmp_path, inventory="latest", since="2026-11-15T12:00:00Z") == ["PMC1003.1"]
    # The inventory's report folder (its newest report) and its CSV work as well.
    folder = f"{mirror}/{INVENTORY}"
    assert ids(mirror, tmp_path, inventory=folder) == ids(mirror, tmp_path)
    csv_file = f"{mirror}/{INVENTORY}/data/{OLD_REPORT}.csv.gz"
    assert ids(mirror, tmp_path, inventory=csv_file, retracted="only") == ["PMC1002.1"]


def test_the_last_change_is_the_metadata_file_time(tmp_path: Path) -> None:
    root = tmp_path / "mirror"
    build_mirror(fsspec.filesystem("file"), str(root))
    stamp = 1_794_744_000  # 2026-11-15T12:00:00Z
    os.utime(root / "PMC1003.1" / "PMC1003.1.json", (stamp, stamp))
    cas = load(reader(str(root), tmp_path), "PMC1003.1")
    assert cas.select(ARTICLE_VERSION)[0].lastModified == "2026-11-15T12:00:00Z"


def test_plain_text_instead_of_xml(mirror: str, tmp_path: Path) -> None:
    cas = load(reader(mirror, tmp_path, text="txt"), "PMC1003.1")
    assert cas.sofa_string == "Shh in the limb bud\n\nThe gene was studied in PMC1003.1.\n"
    assert cas.select(DOCUMENT_METADATA)[0].documentTitle == "Shh in the limb bud"
    assert cas.select(ARTICLE_VERSION)[0].license == "CC BY-NC"
    assert not cas.select(TITLE)


def test_an_article_without_metadata_is_a_failed_document(tmp_path: Path) -> None:
    fs = fsspec.filesystem("file")
    root = tmp_path / "mirror"
    build_mirror(fs, str(root))
    (root / "PMC1003.1" / "PMC1003.1.json").unlink()
    (root / "metadata" / "PMC1003.1.json").unlink()
    (root / "PMC1001.2" / "PMC1001.2.json").write_text("{not json", encoding="utf-8")
    refs = {r.doc_id: r for r in reader(str(root), tmp_path).iter_documents()}
    assert "no metadata for PMC1003.1" in (refs["PMC1003.1"].error or "")
    assert "the metadata is not JSON" in (refs["PMC1001.2"].error or "")
    assert refs["PMC1004.1"].error is None


def _rewrite_metadata(root: Path, name: str, **fields: Any) -> None:
    for path in (root / name / f"{name}.json", root / "metadata" / f"{name}.json"):
        record = json.loads(path.read_text("utf-8"))
        record.update(fields)
        path.write_text(json.dumps(record), encoding="utf-8")


def test_a_retraction_flag_written_otherwise_than_as_a_boolean_is_not_read_as_unset(
    tmp_path: Path,
) -> None:
    root = tmp_path / "mirror"
    build_mirror(fsspec.filesystem("file"), str(root))
    # Read as "not set", these let retracted articles through the default filter.
    _rewrite_metadata(root, "PMC1002.1", is_retracted="true")
    _rewrite_metadata(root, "PMC1003.1", is_retracted=1)
    assert ids(str(root), tmp_path) == ["PMC1001.2", "PMC1004.1"]
    _rewrite_metadata(root, "PMC1002.1", is_retracted="yes")
    refs = {r.doc_id: r for r in reader(str(root), tmp_path).iter_documents()}
    assert "PMC1002.1.json: 'is_retracted' is 'yes', not true or false" in (
        refs["PMC1002.1"].error or ""
    )


def test_a_version_the_inventory_lists_but_the_mirror_lacks_fails_saying_so(
    tmp_path: Path,
) -> None:
    root = tmp_path / "mirror"
    build_mirror(fsspec.filesystem("file"), str(root))
    for path in (root / "PMC1003.1").iterdir():
        path.unlink()
    (root / "PMC1003.1").rmdir()
    (root / "metadata" / "PMC1003.1.json").unlink()
    (root / "PMC1004.1" / "PMC1004.1.xml").unlink()
    pmc = reader(str(root), tmp_path, inventory="latest")
    refs = {r.doc_id: r for r in pmc.iter_documents()}
    assert sorted(refs) == ["PMC1001.2", "PMC1003.1", "PMC1004.1"]
    assert "PMC1003.1 is listed but not in the mirror" in (refs["PMC1003.1"].error or "")
    assert "aws s3 sync" in (refs["PMC1003.1"].error or "")
    # Metadata without its XML: the worker's error names the file once, with a hint.
    with pytest.raises(PmcArticleError) as info:
        pmc.load(refs["PMC1004.1"], cassis.Cas(typesystem=load_typesystem()))
    message = str(info.value)
    assert message.count("PMC1004.1.xml") == 1 and "No such file" in message
    assert "download that prefix again" in info.value.hint


def test_configs_that_cannot_work_are_refused() -> None:
    with pytest.raises(ValidationError, match="need the inventory"):
        PmcReaderConfig(input="x", since="2026-01-01")
    with pytest.raises(ValidationError, match="pmcid_version with versions: all"):
        PmcReaderConfig(input="x", id_style="pmcid", versions="all")
    with pytest.raises(ValidationError, match="not an ISO date"):
        PmcReaderConfig(input="x", inventory="latest", since="last week")
    with pytest.raises(ValidationError, match="not a PMCID"):
        PmcReaderConfig(input="x", articles=["doc7"])
    with pytest.raises(ValidationError, match="not an ISO date"):
        PmcReaderConfig(input="x", inventory="latest", since="2026-13-45")
    # Two versions of one article would both be read as document PMC1001.
    with pytest.raises(
        ValidationError,
        match=r"PMC1001\.1 and PMC1001\.2 are versions of one article.*use id_style: pmcid_version",
    ):
        PmcReaderConfig(input="x", articles=["PMC1001.1", "PMC1001.2"], id_style="pmcid")
    assert PmcReaderConfig(input="x", articles=["PMC1001.1", "PMC1001.2"]).articles
    with pytest.raises(ValidationError, match="Extra inputs"):
        PmcReaderConfig(input="x", licence=["CC BY"])  # type: ignore[call-arg]


def test_article_names_and_licence_codes() -> None:
    assert parse_article("PMC123") == ("PMC123", None)
    assert parse_article(" pmc123.4 ") == ("PMC123", 4)
    assert parse_article("123") == ("PMC123", None)
    assert normalize_license("cc_by-nc  sa") == "CC BY-NC-SA"
    assert normalize_license("CC0") == "CC0"
    assert normalize_license("tdm") == "TDM"


def _workflow(tmp_path: Path, root: str, out: Path, **config: Any) -> Path:
    wf = tmp_path / f"pmc-{len(list(tmp_path.glob('pmc-*.yaml')))}.yaml"
    reader_config = json.dumps({"input": root, **config})
    wf.write_text(
        textwrap.dedent(
            f"""\
            reader:
              component: pmc.reader.v1
              config: {reader_config}
            writers:
              - component: xmi.writer.v1
            run: {{jobs: 1, output: "{out}", progress: false}}
            """
        ),
        encoding="utf-8",
    )
    return wf


def test_a_run_and_a_resumed_run_read_only_the_new_version(tmp_path: Path) -> None:
    root = tmp_path / "mirror"
    fs = fsspec.filesystem("file")
    build_mirror(fs, str(root))
    out = tmp_path / "out"
    wf = _workflow(tmp_path, str(root), out)
    assert main(["validate", str(wf)]) == 0
    assert main(["run", str(wf), "--quiet"]) == 0
    written = sorted(p.name for p in (out / "xmi").glob("PMC*.xmi"))
    assert written == ["PMC1001.2.xmi", "PMC1003.1.xmi", "PMC1004.1.xmi"]
    cas = cassis.load_cas_from_xmi(
        (out / "xmi" / "PMC1001.2.xmi").read_bytes().decode(), typesystem=load_typesystem()
    )
    assert cas.select(ARTICLE_VERSION)[0].version == 2

    # PMC publishes a third version of PMC1001: the next run reads only that one.
    name = "PMC1001.3"
    meta = json.loads((root / "PMC1001.2" / "PMC1001.2.json").read_text("utf-8"))
    meta["version"] = 3
    fs.makedirs(str(root / name), exist_ok=True)
    (root / name / f"{name}.xml").write_text(jats("PMC1001", "Third", "Again.", "91001"))
    (root / name / f"{name}.json").write_text(json.dumps(meta))
    assert main(["run", str(wf), "--quiet"]) == 0
    report = json.loads((out / "run-report.json").read_text("utf-8"))
    assert report["counts"]["ok"] == 1 and report["counts"]["skipped"] == 2
    assert (out / "xmi" / "PMC1001.3.xmi").exists()


def test_a_run_reads_an_in_memory_mirror(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fs = fsspec.filesystem("memory")
    root = f"/pmc-{uuid.uuid4().hex}"
    build_mirror(fs, root)
    try:
        out = tmp_path / "out"
        wf = _workflow(tmp_path, f"memory://{root}", out, licenses=["CC BY"], text="txt")
        assert main(["run", str(wf), "--quiet"]) == 0
        assert sorted(p.name for p in (out / "xmi").glob("PMC*.xmi")) == ["PMC1001.2.xmi"]
        # what the filters left out is in the run report, not only in a log no one sees
        report = json.loads((out / "run-report.json").read_text("utf-8"))
        (said,) = [w for w in report["warnings"] if "left out" in w["message"]]
        assert said["stage"] == "listing the input"
        assert "3 of 4 article versions left out" in said["message"]
        assert "1 retracted" in said["message"] and "licence" in said["message"]
        # The listing's warnings name no document, and the summary says so.
        printed = capsys.readouterr()
        summary = printed.out + printed.err
        assert "1 warning while listing the input, about no document;" in summary, summary
        assert "about 0 document" not in summary
    finally:
        fs.rm(root, recursive=True)


def test_the_nxml_reader_takes_pmc_xml_files_by_default(tmp_path: Path) -> None:
    folder = tmp_path / "articles"
    folder.mkdir()
    (folder / "PMC1001.xml").write_text(jats("PMC1001", "A title", "A body.", "91001"))
    (folder / "PMC1002.nxml").write_text(jats("PMC1002", "Another", "More.", "91002"))
    (folder / "notes.txt").write_text("not an article")
    out = tmp_path / "out"
    wf = tmp_path / "wf.yaml"
    wf.write_text(
        textwrap.dedent(
            f"""\
            reader: {{component: nxml.reader.v1, config: {{input: "{folder}"}}}}
            writers: [{{component: xmi.writer.v1}}]
            run: {{jobs: 1, output: "{out}", progress: false}}
            """
        ),
        encoding="utf-8",
    )
    assert main(["run", str(wf), "--quiet"]) == 0
    assert sorted(p.name for p in (out / "xmi").glob("PMC*.xmi")) == [
        "PMC1001.xmi",
        "PMC1002.xmi",
    ]


def test_since_compares_times_not_strings() -> None:
    # As strings, "2026-11-15 11:00" sorted before "2026-11-15T10:00:00.000Z" and
    # "...T10:00:00Z" after "...T10:00:00.700Z".
    ten = ArticleVersion(1001, 1, last_modified="2026-11-15T10:00:00.000Z")
    later = ArticleVersion(1002, 1, last_modified="2026-11-15T10:00:00.700Z")
    undated = ArticleVersion(1003, 1)
    articles = [ten, later, undated]
    assert changed_since(articles, since="2026-11-15 11:00") == []
    assert changed_since(articles, since="2026-11-15T10:00:00Z") == [later]
    assert changed_since(articles, since="2026-11-15") == [ten, later]
    assert changed_since(articles, since="2026-11-15T11:00:00+02:00") == [ten, later]
    with pytest.raises(PmcLayoutError, match=r"PMC1001\.1: the inventory's time 'soon'"):
        changed_since([ArticleVersion(1001, 1, last_modified="soon")], since="2026-11-15")


def test_the_manifests_file_schema_names_the_inventory_columns(tmp_path: Path) -> None:
    # S3 inventories may carry a Size column; taken by form, the size was the ETag.
    report = tmp_path / INVENTORY / "2026-11-20T01-00Z"
    report.mkdir(parents=True)
    (tmp_path / INVENTORY / "data").mkdir()
    (tmp_path / INVENTORY / "data" / "a.csv").write_text(
        '"pmc-oa-opendata","metadata/PMC1001.1.json","2048","2026-11-15T10:00:00.000Z","abc"\n'
    )
    manifest = {
        "files": [{"key": f"{INVENTORY}/data/a.csv"}],
        "fileSchema": "Bucket, Key, Size, LastModifiedDate, ETag",
    }
    (report / "manifest.json").write_text(json.dumps(manifest))
    mirror = PmcMirror(str(tmp_path))
    (article,) = mirror.read_inventory(str(report / "manifest.json"))
    assert (article.name, article.last_modified, article.etag) == (
        "PMC1001.1", "2026-11-15T10:00:00.000Z", "abc",
    )  # fmt: skip
    # Without a schema the cells are told apart by their form, as before.
    del manifest["fileSchema"]
    (report / "manifest.json").write_text(json.dumps(manifest))
    (tmp_path / INVENTORY / "data" / "a.csv").write_text(
        '"pmc-oa-opendata","metadata/PMC1001.1.json","2026-11-15T10:00:00.000Z","abc"\n'
    )
    (article,) = mirror.read_inventory(str(report / "manifest.json"))
    assert (article.last_modified, article.etag) == ("2026-11-15T10:00:00.000Z", "abc")
    manifest["fileSchema"] = "Bucket, Size, ETag"
    (report / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(PmcLayoutError, match="names no Key column"):
        mirror.read_inventory(str(report / "manifest.json"))


def test_an_inventory_that_does_not_exist_is_a_validation_problem(tmp_path: Path) -> None:
    (tmp_path / "mirror").mkdir()
    context = RunContext(output_dir=tmp_path / "out", workflow_dir=tmp_path)
    config = PmcReaderConfig(
        input=str(tmp_path / "mirror"),
        inventory=str(tmp_path / "inventory.json"),
        previous_inventory="latest",
    )
    assert PmcReader.check_config(config, context) == [
        f"inventory {str(tmp_path / 'inventory.json')!r} does not exist; give an inventory "
        "manifest.json, its report folder or a .csv(.gz), or 'latest' for the mirror's newest"
    ]
    (tmp_path / "inventory.json").write_text("{}")
    assert PmcReader.check_config(config, context) == []
