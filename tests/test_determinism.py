"""The same workflow over the same input writes the same bytes, whatever PYTHONHASHSEED.

Python draws a new string-hash seed for every process unless PYTHONHASHSEED is set, so
anything that walks a set of strings may take another order in the next run. Each test
runs the code in child processes with different seeds and compares what they print or
write.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from casflow.typesystem import CONSTITUENT_ROOT
from tests.helpers.processes import REPO

#: Seeds whose orders of (Constituent, ROOT, TreebankConstituent) differed, ROOT first in
#: one and last in the other, as did eval.pos.v1's per-tag counts.
SEEDS = ("1", "4")

#: What only a run's clock, process or path decides: left out of the comparison.
_NOT_COMPARED = {".casflow", "run-report.json", "workflow.resolved.yaml"}


def _run_python(code: str, seed: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env={**os.environ, "PYTHONHASHSEED": seed},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


_SELECT = """
import json
import casflow.cas  # what every run imports first
from casflow.pipeline.testing import cas_from_text
from casflow.typesystem import (
    ANATOMY_MENTION, CONSTITUENT, CONSTITUENT_ROOT, GENE_MENTION, NAMED_ENTITY,
    SENTENCE, TREEBANK_CONSTITUENT,
)
cas = cas_from_text("Pax6 in the lens.")
view = cas.create_view("empty")
view.select(CONSTITUENT)  # a combiner checks its target view holds none yet
view.select(NAMED_ENTITY)
view.add(view.typesystem.get_type(SENTENCE)(begin=0, end=5))
ts = cas.typesystem
for name in (CONSTITUENT, CONSTITUENT_ROOT, TREEBANK_CONSTITUENT,
             NAMED_ENTITY, GENE_MENTION, ANATOMY_MENTION):
    cas.add(ts.get_type(name)(begin=0, end=4))
print(json.dumps({
    "select": [fs.type.name for fs in cas.select(CONSTITUENT) + cas.select(NAMED_ENTITY)],
    "covered": [fs.type.name for fs in cas.select_covered(NAMED_ENTITY, cas.select(CONSTITUENT)[0])],
    "indexes": [fs.type.name for fs in view.select_all_fs()],
    "index_names": list(view._current_view.type_index),
}))
"""


def test_select_of_a_type_with_subtypes_is_in_one_order_whatever_the_hash_seed() -> None:
    outputs = {seed: json.loads(_run_python(_SELECT, seed)) for seed in SEEDS}
    first = outputs[SEEDS[0]]
    assert all(output == first for output in outputs.values()), outputs
    # the type's own first, then its subtypes by name; every one of them found
    assert first["select"][0].endswith("constituent.Constituent")
    assert len(first["select"]) == 6
    assert first["select"][3].endswith("ner.type.NamedEntity")
    assert len(first["covered"]) == 3
    # selecting on a view creates no index for types it does not hold
    assert first["index_names"] == [first["indexes"][0]]


# --------------------------------------------------------------------------- a run

TEXT = "Pax6 binds DNA in the lens. Cells grow.\n"
TREES = {
    "s1": [
        "( (S (NP-SBJ (NN Pax6)) (VP (VBZ binds) (NP (NN DNA)) (PP (IN in) (NP (DT the) "
        "(NN lens)))) (. .)) )",
        "( (S (NP (NNS Cells)) (VP (VBP grow)) (. .)) )",
    ],
    "s2": [
        "( (S (NP (NN Pax6)) (VP (VBZ binds) (NP (NP (NN DNA)) (PP (IN in) (NP (DT the) "
        "(NN lens))))) (. .)) )",
        "( (S (NP (NNS Cells)) (VP (VBP grow) (. .))) )",
    ],
    "s3": [
        "( (S (NP (NNP Pax6)) (VP (VBZ binds) (NML (NN DNA)) (PP (IN in) (NP (DT the) "
        "(JJ lens)))) (. .)) )",
        "( (FRAG (NP (NNS Cells) (NN grow)) (. .)) )",
    ],
}
MENTIONS = {
    "m1": "T1\tGene 0 4\tPax6\nT2\tAnatomy 22 26\tlens\nT3\tAnatomy 28 33\tCells\n",
    "m2": "T1\tGene 0 4\tPax6\nT2\tAnatomy 18 26\tthe lens\nT3\tAnatomy 28 33\tCells\n",
    "m3": "T1\tGene 0 4\tPax6\nT2\tAnatomy 22 26\tlens\nT3\tGene 11 14\tDNA\n",
}
WORKFLOW = """\
reader: {component: text.reader.v1, config: {input: in}}
components:
  - {component: penn.import.v1, view: s1, config: {path: "s1/{doc_id}.tree"}}
  - {component: penn.import.v1, view: s2, config: {path: "s2/{doc_id}.tree"}}
  - {component: penn.import.v1, view: s3, config: {path: "s3/{doc_id}.tree"}}
  - {component: brat.import.v1, view: m1, config: {path: "m1/{doc_id}.ann", types: {Gene: GeneMention, Anatomy: AnatomyMention}}}
  - {component: brat.import.v1, view: m2, config: {path: "m2/{doc_id}.ann", types: {Gene: GeneMention, Anatomy: AnatomyMention}}}
  - {component: brat.import.v1, view: m3, config: {path: "m3/{doc_id}.ann", types: {Gene: GeneMention, Anatomy: AnatomyMention}}}
  - {component: combine.constituents.v1, view: vote, config: {members: [s1, s2, s3]}}
  - {component: combine.mentions.v1, view: mvote, config: {members: [m1, m2, m3]}}
  - component: view.copy.v1
    view: c1
    config:
      from_view: s1
      types: [Sentence, Token, POS, "{ROOT}", Constituent, TreebankConstituent]
  - component: view.copy.v1
    view: c2
    config:
      from_view: s2
      types: [Sentence, Token, POS, "{ROOT}", Constituent, TreebankConstituent]
  - component: view.copy.v1
    view: c3
    config:
      from_view: s3
      types: [Sentence, Token, POS, "{ROOT}", Constituent, TreebankConstituent]
  - {component: convert.dependencies.v1, view: c1}
  - {component: convert.dependencies.v1, view: c2}
  - {component: convert.dependencies.v1, view: c3}
  - {component: convert.dependencies.v1, view: vote}
  - {component: combine.dependencies.v1, view: dvote, config: {members: [c1, c2, c3]}}
writers:
  - {component: xmi.writer.v1}
  - {component: xmi.dkpro.writer.v1, id: dk-vote, config: {view: vote, folder: dk-vote}}
  - {component: xmi.dkpro.writer.v1, id: dk-s1, config: {view: s1, folder: dk-s1}}
  - {component: xmi.dkpro.writer.v1, id: dk-m, config: {view: mvote, folder: dk-m}}
  - {component: conllu.writer.v1, config: {view: dvote}}
  - {component: penn.writer.v1, config: {view: vote}}
  - {component: brat.writer.v1, config: {view: mvote}}
  - {component: bc2.writer.v1, config: {view: m3}}
  - {component: bio.writer.v1, config: {view: vote, columns: [token, pos, tag]}}
evaluators:
  - {component: eval.pos.v1, config: {gold_view: s1, system_views: [s2, s3, vote]}}
  - {component: eval.constituents.v1, config: {gold_view: s1, system_views: [s2, vote]}}
  - {component: eval.dependencies.v1, config: {gold_view: c1, system_views: [c2, dvote]}}
  - {component: eval.mentions.v1, config: {gold_view: m1, system_views: [m2, mvote]}}
  - component: eval.agreement.v1
    config: {gold_view: m1, system_views: [mvote], layer: mentions}
run: {jobs: 1}
""".replace("{ROOT}", CONSTITUENT_ROOT)


def _workflow(folder: Path) -> Path:
    """Penn trees and brat mentions into views, every combiner, a conversion, and every
    writer and evaluator that reads what they make."""
    (folder / "in").mkdir()
    (folder / "in" / "doc1.txt").write_text(TEXT, encoding="utf-8")
    for name, lines in TREES.items():
        (folder / name).mkdir()
        (folder / name / "doc1.tree").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for name, ann in MENTIONS.items():
        (folder / name).mkdir()
        (folder / name / "doc1.ann").write_text(ann, encoding="utf-8")
    path = folder / "wf.yaml"
    path.write_text(WORKFLOW, encoding="utf-8")
    return path


def _files(output: Path) -> dict[str, str]:
    found = {}
    for path in sorted(output.rglob("*")):
        relative = path.relative_to(output)
        if path.is_file() and relative.parts[0] not in _NOT_COMPARED:
            found[str(relative)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def test_a_run_writes_the_same_bytes_whatever_the_hash_seed(tmp_path: Path) -> None:
    """The repro of the DKPro writer's defect: trees read into views, combined, converted
    and written. Before, the DKPro XMI of the vote put its ROOTs before or after the
    other constituents, and eval.pos.v1's per-tag counts came in the order of a set."""
    workflow = _workflow(tmp_path)
    code = (
        "import sys; from casflow.pipeline.cli import main; "
        "sys.exit(main(['run', sys.argv[1], '--output', sys.argv[2], '--quiet']))"
    )
    runs = {}
    for seed in SEEDS:
        output = tmp_path / f"out{seed}"
        done = subprocess.run(
            [sys.executable, "-c", code, str(workflow), str(output)],
            cwd=tmp_path,
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        runs[seed] = _files(output)
    first, second = runs.values()
    assert {"dk-vote/doc1.xmi", "xmi/doc1.xmi", "evaluation.json"} <= first.keys()
    differing = sorted(
        name for name in first.keys() | second.keys() if first.get(name) != second.get(name)
    )
    assert not differing, textwrap.shorten(f"differ between hash seeds: {differing}", 500)
