"""Scaling: the same casflow run with --jobs 2 against --jobs 1 (target >= 1.8x on 2 cores).

    python benchmarks/scaling.py [--model casflow:craft_syntax] [--docs 67]

Both runs process the CRAFT NXML articles through NXML -> CAS -> spaCy -> XMI;
the ratio is the documents/s of the 2-job run over the 1-job run, measured one
after the other in this process's run.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from _common import craft_nxml_files, replicate, run_casflow, write_workflow


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model",
        default="casflow:craft_syntax",
        help="spaCy pipeline (name, path or casflow:NAME)",
    )
    parser.add_argument(
        "--docs", type=int, default=67, help="number of documents (CRAFT NXML, replicated)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        inputs = replicate(craft_nxml_files(), args.docs, tmp_path / "in")
        wf = write_workflow(
            tmp_path / "wf.yaml",
            f"""\
            reader: {{component: nxml.reader.v1, config: {{input: "{inputs}", id_style: stem}}}}
            components:
              - {{component: spacy.pipeline.v1, config: {{model: "{args.model}", layers: [sentences, tokens, pos, dependencies]}}}}
            writers: [{{component: xmi.writer.v1}}]
            run: {{output: "{tmp_path / "out"}", batch_size: 1}}
            """,
        )
        load_before = os.getloadavg()[0]
        one = run_casflow(wf, "--jobs", "1", "--output", str(tmp_path / "out1"))
        two = run_casflow(wf, "--jobs", "2", "--output", str(tmp_path / "out2"))
        load_after = os.getloadavg()[0]
    tokens = one.report["tokens"]
    print(f"documents: {args.docs}, tokens: {tokens:,}, model: {args.model}")
    print(
        f"--jobs 1: {one.seconds:8.1f} s  {args.docs / one.seconds:6.2f} docs/s  {tokens / one.seconds:9,.0f} tokens/s"
    )
    print(
        f"--jobs 2: {two.seconds:8.1f} s  {args.docs / two.seconds:6.2f} docs/s  {tokens / two.seconds:9,.0f} tokens/s"
    )
    for label, measured in (("--jobs 1", one), ("--jobs 2", two)):
        first = measured.report.get("first_document_seconds")
        if first is not None:
            print(f"{label}: first document finished {first:.1f} s after the run started")
    print(f"scaling ratio (jobs 2 / jobs 1): {one.seconds / two.seconds:.2f}x (target >= 1.80x)")
    # Above about 0.5 before the runs, other work shares the cores and depresses the ratio.
    print(f"load average (1 min): {load_before:.2f} before, {load_after:.2f} after the runs")


if __name__ == "__main__":
    main()
