"""What a dependency vote costs: its members' parsing and its reparsing, against one parser.

    python benchmarks/combination_speed.py [--vote dep_vote_directions] [--articles 7]

Runs, from ``workflows/craft-combination.yaml`` unchanged, the vote ``--vote`` and
the steps that make its members' views (copying the gold sentences and tokens,
then each member's tagging and parsing; for ``dep_vote_all`` also the constituency
parsing and conversion of the converted members and the vote whose tags two of them
parse) over the first ``--articles`` CRAFT dev articles in one process
(``--jobs 1``), then prints from the run report the seconds of each step and of the
reparsing, tokens per second for the shipped
parser alone (``dep_spacy``) and for the whole vote, and their ratio. Each
parsing and voting step of the workflow has its view's name as ``id``, which is
how the run report tells them apart. Set OMP_NUM_THREADS=1 to measure one thread.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import yaml
from _common import CORPORA, REPO, checked_inputs, fail, finished_run

from casflow.components.corpora.craft import read_id_list
from casflow.pipeline.cli import main as casflow

WORKFLOW = REPO / "workflows" / "craft-combination.yaml"
ALONE = "dep_spacy"  # the shipped parser


def vote_workflow(workflow: dict, vote: str, ids: list[str], output: Path) -> dict:
    """``workflow`` cut down to ``vote`` and the steps writing its members' views."""
    votes = [s for s in workflow["components"] if s.get("id") == vote]
    if not votes:
        fail(f"{WORKFLOW.name} has no step with id {vote!r}; give --vote the id of a vote")
    needed = {m if isinstance(m, str) else m["view"] for m in votes[0]["config"]["members"]}
    # and, transitively, the views those views are copied from or voted from
    while True:
        sources = set()
        for step in workflow["components"]:
            if step["view"] not in needed:
                continue
            config = step.get("config", {})
            if "from_view" in config:
                sources.add(config["from_view"])
            sources |= {m if isinstance(m, str) else m["view"] for m in config.get("members", [])}
        if sources <= needed:
            break
        needed |= sources
    steps = [s for s in workflow["components"] if s["view"] in needed] + votes
    reader = dict(workflow["reader"])
    reader["config"] = {k: v for k, v in reader["config"].items() if k != "split"} | {
        "ids": ids,
        "layers": ["sentences", "tokens"],
    }
    return {
        "name": f"{workflow['name']}-{vote}-speed",
        "reader": reader,
        "components": steps,
        "run": {"jobs": 1, "batch_size": 1, "output": str(output)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vote", default="dep_vote_directions")
    parser.add_argument("--articles", type=int, default=7, help="CRAFT dev articles (1-7)")
    args = parser.parse_args()
    id_list = CORPORA / "craft" / "articles" / "ids" / "craft-ids-dev.txt"
    with checked_inputs(id_list):
        ids = read_id_list(id_list)[: args.articles]
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        output = Path(tmp) / "out"
        part = vote_workflow(workflow, args.vote, ids, output)
        path = Path(tmp) / "vote.yaml"
        path.write_text(yaml.safe_dump(part, sort_keys=False), encoding="utf-8")
        code = casflow(["run", str(path), "--quiet"])
        # 1 is a run that ended with documents not ok: finished_run says which
        if code not in (0, 1):
            fail(f"casflow run of {WORKFLOW.name} ended with exit status {code} (see above)")
        report = finished_run(output)
    tokens = report["tokens"]
    seconds = report["stage_seconds"]
    members = [s["id"] for s in part["components"] if s["component"] != "view.copy.v1"][:-1]
    for name in members:
        print(f"{name:30s} {seconds[name]:7.1f} s  {tokens / seconds[name]:8,.0f} tokens/s")
    # one copy step per member view: each reported as 'view.copy.v1 [VIEW]'
    copying = sum(
        t for s, t in seconds.items() if s == "view.copy.v1" or s.startswith("view.copy.v1 [")
    )
    reparse = seconds[args.vote]
    total = sum(seconds[m] for m in members) + copying + reparse
    print(f"{'copying gold tokens':30s} {copying:7.1f} s")
    print(f"{args.vote + ' reparsing':30s} {reparse:7.1f} s")
    alone = tokens / seconds[ALONE]
    whole = tokens / total
    print(
        f"{tokens:,} tokens, {len(ids)} CRAFT dev articles, one process: {ALONE} alone "
        f"{alone:,.0f} tokens/s, {args.vote} ({len(part['components'][-1]['config']['members'])} "
        f"members, {len(members)} steps) {whole:,.0f} tokens/s; "
        f"ratio {whole / alone:.3f}"
    )


if __name__ == "__main__":
    main()
