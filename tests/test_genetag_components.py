"""genetag.import.v1 and genetag.writer.v1 (twins), and importers that refuse a wrong format.

Hand-written GENETAG-style files: two sentences, gold genes and alternatives
(the fixture of test_format_genetag.py).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import cassis
import pytest

from casflow.cas.metadata import set_document_metadata
from casflow.components.formats.document_files import ImportFormatError
from casflow.pipeline.component import RunContext
from casflow.pipeline.registry import registry
from casflow.pipeline.runner import RunOptions, run_workflow
from casflow.pipeline.workflow import load_workflow_text
from casflow.typesystem import ALTERNATIVE, GENE_MENTION, load_typesystem
from tests.test_format_genetag import ALTERNATIVES, GOLD, TAGGED

SYSTEM = "@@1|2 2|creb\n@@1|4 5|ATF proteins\n@@2|1 2|p53 gene\n"


def files(tmp_path: Path, **contents: str) -> dict[str, str]:
    paths = {}
    for name, text in contents.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        paths[name] = str(tmp_path / name)
    return paths


def build(name: str, config: dict[str, Any], tmp_path: Path) -> Any:
    cls = registry().get(name)
    context = RunContext(output_dir=tmp_path / "out", workflow_dir=tmp_path)
    return cls(cls.Config.model_validate(config), context)


def view_of(text: str, doc_id: str) -> cassis.Cas:
    cas = cassis.Cas(typesystem=load_typesystem())
    cas.sofa_string = text
    set_document_metadata(cas, doc_id, f"{doc_id}.txt")
    view = cas.create_view("system")
    view.sofa_string = text
    return view


def covered(view: cassis.Cas, type_name: str) -> list[str]:
    return sorted(a.get_covered_text() for a in view.select(type_name))


def run(tmp_path: Path, paths: dict[str, str], system_file: str, writer_view: str) -> Any:
    workflow = f"""\
        reader:
          component: genetag.reader.v1
          view: gold
          config:
            sentences: {json.dumps(paths["TAGGED"])}
            genes: {json.dumps(paths["Gold.format"])}
            alternatives: {json.dumps(paths["Correct.Data"])}
        components:
          - component: genetag.import.v1
            view: system
            config: {{path: {json.dumps(system_file)}}}
        writers:
          - component: genetag.writer.v1
            config: {{view: {writer_view}}}
        evaluators:
          - component: eval.mentions.v1
            config: {{type: GeneMention, criteria: [strict], alt_eval: true}}
        run: {{jobs: 1, output: {json.dumps(str(tmp_path / "out"))}, progress: false, overwrite: true}}
        """
    loaded = load_workflow_text(textwrap.dedent(workflow), source=str(tmp_path / "wf.yaml"))
    return run_workflow(loaded, RunOptions(show_progress=False))


def test_gold_written_by_the_writer_is_read_back_by_the_importer(tmp_path: Path) -> None:
    paths = files(tmp_path, TAGGED=TAGGED, **{"Gold.format": GOLD, "Correct.Data": ALTERNATIVES})
    report = run(tmp_path, paths, paths["Gold.format"], "gold")
    assert report.counts["ok"] == 2
    written = (tmp_path / "out" / "genetag" / "Test.format").read_text("utf-8")
    assert written == GOLD  # already in (sentence id, first, last) order
    scores = report.evaluation["eval.mentions.v1"]["systems"]["system"]["scores"]
    assert scores["strict"]["micro"]["f1"] == scores["alt_eval"]["micro"]["f1"] == 1.0
    # ... and what the writer wrote scores the same when imported again.
    again = run(tmp_path, paths, str(tmp_path / "out" / "genetag" / "Test.format"), "system")
    assert again.evaluation == report.evaluation


def test_system_output_is_scored_in_one_step(tmp_path: Path) -> None:
    paths = files(
        tmp_path,
        TAGGED=TAGGED,
        SYSTEM=SYSTEM,
        **{"Gold.format": GOLD, "Correct.Data": ALTERNATIVES},
    )
    report = run(tmp_path, paths, paths["SYSTEM"], "system")
    scores = report.evaluation["eval.mentions.v1"]["systems"]["system"]["scores"]
    # Gold: "CREB / ATF proteins" (alternatives "CREB / ATF", "ATF proteins"), "p53"
    # (alternatives "gene", "p53 gene"). System: "creb" (lowercase, as GENETAG's scorer
    # prints; no alternative: FP), "ATF proteins" (alternative: TP), "p53 gene" (TP).
    micro = scores["alt_eval"]["micro"]
    assert (micro["tp"], micro["fp"], micro["fn"]) == (2, 1, 0)
    assert scores["strict"]["micro"]["tp"] == 0
    assert (tmp_path / "out" / "genetag" / "Test.format").read_text("utf-8") == (
        "@@1|2 2|CREB\n@@1|4 5|ATF proteins\n@@2|1 2|p53 gene\n"
    )


def test_genetag_import_attaches_alternatives_and_refuses_other_formats(tmp_path: Path) -> None:
    paths = files(tmp_path, gold=GOLD, alternatives=ALTERNATIVES)
    importer = build(
        "genetag.import.v1",
        {"path": paths["gold"], "alternatives": paths["alternatives"]},
        tmp_path,
    )
    view = view_of("The p53 gene .", "@@2")
    importer.process(view)
    assert covered(view, GENE_MENTION) == ["p53"]
    assert covered(view, ALTERNATIVE) == ["gene", "p53 gene"]
    # Token indices over other sentences: the texts differ, the document fails.
    with pytest.raises(ImportFormatError, match=r"sentence @@2: .*'p53'.*bc2.import.v1"):
        importer.process(view_of("A p21 gene .", "@@2"))
    warn = build("genetag.import.v1", {"path": paths["gold"], "on_mismatch": "warn"}, tmp_path)
    with pytest.warns(UserWarning, match="differs from tokens"):
        warn.process(other := view_of("A p21 gene .", "@@2"))
    assert covered(other, GENE_MENTION) == ["p21"]
    # BioCreative II lines (character offsets, ids without @@) are not this format.
    bc2 = files(tmp_path, bc2="S1|4 6|p53\n")
    with pytest.raises(ImportFormatError, match=r"expected '@@ID\|first last\|text'"):
        build("genetag.import.v1", {"path": bc2["bc2"]}, tmp_path).process(view_of("x", "S1"))


def test_bc2_import_refuses_genetag_token_indices(tmp_path: Path) -> None:
    # GENETAG Test.format fed to bc2.import.v1 over GENETAG sentences: "2 5" read as
    # non-space characters is "ndin", not "CREB / ATF proteins".
    paths = files(tmp_path, test=GOLD)
    importer = build("bc2.import.v1", {"path": paths["test"]}, tmp_path)
    with pytest.raises(ImportFormatError, match=r"document @@1: .*differs.*genetag.import.v1"):
        importer.process(view_of("Binding of CREB / ATF proteins .", "@@1"))
    lenient = build("bc2.import.v1", {"path": paths["test"], "on_mismatch": "warn"}, tmp_path)
    with pytest.warns(UserWarning, match="differs"):
        lenient.process(view := view_of("Binding of CREB / ATF proteins .", "@@1"))
    assert covered(view, GENE_MENTION) == ["ndin"]


def test_genetag_writer_needs_whole_tokens_unless_told_to_expand(tmp_path: Path) -> None:
    view = view_of("The p53 gene .", "@@2")
    view.add(view.typesystem.get_type(GENE_MENTION)(begin=5, end=9))  # "53 g"
    writer = build("genetag.writer.v1", {"view": "system"}, tmp_path)
    with pytest.raises(ValueError, match=r"cuts the token\(s\) 'p53 gene'.*partial_tokens"):
        writer.write(view, "@@2")
    expanding = build("genetag.writer.v1", {"view": "system", "partial_tokens": "expand"}, tmp_path)
    (path,) = expanding.write(view, "@@2")
    assert path.read_text("utf-8") == "@@2|1 2|p53 gene\n"
