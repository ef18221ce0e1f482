"""Framework overhead: the casflow chain against raw spaCy over the same texts.

    python benchmarks/framework_overhead.py [--model casflow:craft_syntax] [--docs 67]

casflow side: NXML -> CAS -> spaCy model -> CAS -> XMI on disk (one process,
--jobs 1, the whole run timed). Raw side: ``nlp.pipe`` over the same article
texts (extracted beforehand, not timed) with the same model and batch size.
Both count the tokens they produce; the ratio of tokens/s is printed (target
>= 0.90). Both sides run in this process, one after the other, after a warm-up.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _common import checked_inputs, craft_nxml_files, finished_run, replicate, write_workflow

from casflow.components.formats.jats.parse import read_jats
from casflow.components.spacy.loading import load_pipeline
from casflow.pipeline.runner import RunOptions, run_workflow
from casflow.pipeline.workflow import load_workflow


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="casflow:craft_syntax")
    parser.add_argument("--docs", type=int, default=67)
    parser.add_argument("--batch-size", type=int, default=8)
    args = parser.parse_args()
    files = craft_nxml_files()
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        inputs = replicate(files, args.docs, tmp_path / "in")
        with checked_inputs():
            texts = [read_jats(p).text for p in sorted(inputs.iterdir())]
            nlp = load_pipeline(args.model)
        list(nlp.pipe(texts[:2]))  # warm-up
        t0 = time.perf_counter()
        raw_tokens = sum(
            sum(1 for t in doc if not t.is_space)
            for doc in nlp.pipe(texts, batch_size=args.batch_size)
        )
        raw_seconds = time.perf_counter() - t0

        wf = write_workflow(
            tmp_path / "wf.yaml",
            f"""\
            reader: {{component: nxml.reader.v1, config: {{input: "{inputs}", id_style: stem}}}}
            components:
              - {{component: spacy.pipeline.v1, config: {{model: "{args.model}", batch_size: {args.batch_size}, layers: [sentences, tokens, pos, dependencies]}}}}
            writers: [{{component: xmi.writer.v1}}]
            run: {{output: "{tmp_path / "out"}", jobs: 1, batch_size: {args.batch_size}, progress: false}}
            """,
        )
        with checked_inputs():
            workflow = load_workflow(wf)
        t0 = time.perf_counter()
        report = run_workflow(workflow, RunOptions(show_progress=False))
        flow_seconds = time.perf_counter() - t0
        finished_run(tmp_path / "out")
    raw_rate = raw_tokens / raw_seconds
    flow_rate = report.tokens / flow_seconds
    print(f"documents: {args.docs}, model: {args.model}")
    print(
        f"raw spaCy nlp.pipe : {raw_tokens:>9,} tokens  {raw_seconds:7.1f} s  {raw_rate:9,.0f} tokens/s"
    )
    print(
        f"casflow chain      : {report.tokens:>9,} tokens  {flow_seconds:7.1f} s  {flow_rate:9,.0f} tokens/s"
    )
    print(f"casflow stages (s) : {report.stage_seconds}")
    print(f"overhead ratio (casflow / raw tokens/s): {flow_rate / raw_rate:.3f} (target >= 0.90)")


if __name__ == "__main__":
    main()
