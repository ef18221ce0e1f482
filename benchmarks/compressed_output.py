"""Compressed output: the size of XMI and JSON written plain, gzipped and as one .tar
of gzipped files per batch, and what compressing costs in throughput.

    python benchmarks/compressed_output.py [--docs 20] [--model casflow:craft_syntax]

One run (one process, --jobs 1) reads CRAFT's NXML articles (the example
article, replicated, when the corpus is absent), annotates them with the model
(sentences, tokens, POS, dependencies) and writes every document five times
side by side: XMI plain, XMI gzip, XMI gzip in a .tar per batch, JSON plain,
JSON gzip. Each writer's time is the run report's time of its step, on the same
CASes; the throughput cost of a compressed writer is its extra time over the
plain writer, against the time of a run that writes only the plain files
(the whole run less the other writers).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _common import CRAFT_NXML, REPO, checked_inputs, finished_run, replicate, write_workflow

from casflow.pipeline.runner import RunOptions, run_workflow
from casflow.pipeline.workflow import load_workflow

WRITERS = {
    # step id: (component, folder, config)
    "xmi": ("xmi.writer.v1", "xmi", {}),
    "xmi-gzip": ("xmi.writer.v1", "xmi-gzip", {"compress": "gzip"}),
    "xmi-tar": ("xmi.writer.v1", "xmi-tar", {"compress": "gzip", "archive": "tar"}),
    "json": ("json.writer.v1", "json", {}),
    "json-gzip": ("json.writer.v1", "json-gzip", {"compress": "gzip"}),
}


def folder_bytes(folder: Path) -> tuple[int, int]:
    """(bytes, files) of the documents' files (TypeSystem.xml left out)."""
    files = [p for p in folder.iterdir() if p.is_file() and p.name != "TypeSystem.xml"]
    return sum(p.stat().st_size for p in files), len(files)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=20, help="articles (CRAFT has 67)")
    parser.add_argument("--model", default="casflow:craft_syntax")
    parser.add_argument("--batch-size", type=int, default=8, help="documents per .tar")
    args = parser.parse_args()
    files = sorted(CRAFT_NXML.glob("*.nxml"))
    source = "CRAFT NXML"
    if not files:
        files = [REPO / "examples" / "quickstart" / "example-article.nxml"]
        source = "the example article (CRAFT not found; set CASFLOW_CORPORA)"
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        inputs = replicate(files, args.docs, tmp_path / "in")
        nxml_bytes = sum(p.resolve().stat().st_size for p in inputs.iterdir())
        writers = "\n".join(
            f"  - {{id: {step}, component: {component}, config: {{folder: {folder}"
            + "".join(f", {k}: {v}" for k, v in config.items())
            + "}}"
            for step, (component, folder, config) in WRITERS.items()
        )
        out = tmp_path / "out"
        wf = write_workflow(
            tmp_path / "wf.yaml",
            f"""\
reader: {{component: nxml.reader.v1, config: {{input: "{inputs}", id_style: stem}}}}
components:
  - {{component: spacy.pipeline.v1, config: {{model: "{args.model}", batch_size: {args.batch_size}, layers: [sentences, tokens, pos, dependencies]}}}}
writers:
{writers}
run: {{output: "{out}", jobs: 1, batch_size: {args.batch_size}, progress: false}}
""",
        )
        with checked_inputs():
            workflow = load_workflow(wf)
        t0 = time.perf_counter()
        run_workflow(workflow, RunOptions(show_progress=False))
        seconds = time.perf_counter() - t0
        stage = finished_run(out)["stage_seconds"]
        writer_seconds = {step: stage[step] for step in WRITERS}
        sizes = {step: folder_bytes(out / WRITERS[step][1]) for step in WRITERS}

    print(f"documents: {args.docs} ({source}), model: {args.model}, one run, --jobs 1")
    print(f"NXML input: {nxml_bytes / 1e6:.1f} MB; run {seconds:.1f} s")
    print(f"{'writer':<10} {'files':>6} {'MB':>9} {'x NXML':>7} {'ratio':>7} {'write s':>8}")
    for step in WRITERS:
        size, count = sizes[step]
        plain = sizes["json" if step.startswith("json") else "xmi"][0]
        print(
            f"{step:<10} {count:>6} {size / 1e6:>9.2f} {size / nxml_bytes:>7.1f} "
            f"{plain / size:>7.2f} {writer_seconds[step]:>8.2f}"
        )
    others = sum(writer_seconds.values())
    for plain, compressed in (("xmi", "xmi-gzip"), ("xmi", "xmi-tar"), ("json", "json-gzip")):
        # A run writing only the plain files: the whole run less every writer but it.
        base = seconds - others + writer_seconds[plain]
        extra = writer_seconds[compressed] - writer_seconds[plain]
        print(
            f"{compressed}: {sizes[plain][0] / sizes[compressed][0]:.1f}x smaller than {plain}; "
            f"throughput {args.docs / base:.2f} -> {args.docs / (base + extra):.2f} documents/s "
            f"({100 * extra / base:+.1f}% time)"
        )


if __name__ == "__main__":
    main()
