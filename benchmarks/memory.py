"""Memory flatness: peak resident memory of a run over 100 and over 10,000 documents.

    python benchmarks/memory.py [--small 100] [--large 10000] [--model casflow:craft_syntax] [--chain light|model]

Target: the two peaks within 10% of each other, i.e. nothing in the framework
grows with the number of documents. Inputs are CRAFT NXML articles replicated
under unique names. The run is in one process (--jobs 1) so the peak is the
process's own. The default chain (``light``: NXML -> CAS -> rule-based
sentences -> XMI) keeps 10,000 full-text articles to minutes; ``model`` adds
the spaCy pipeline and takes hours at 10,000 articles.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _common import craft_nxml_files, replicate, run_casflow, write_workflow


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=100)
    parser.add_argument("--large", type=int, default=10_000)
    parser.add_argument("--chain", choices=["light", "model"], default="light")
    parser.add_argument("--model", default="casflow:craft_syntax")
    args = parser.parse_args()
    model_step = (
        f'  - {{component: spacy.pipeline.v1, config: {{model: "{args.model}", layers: [sentences, tokens, pos, dependencies]}}}}\n'
        if args.chain == "model"
        else ""
    )
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        for n in (args.small, args.large):
            inputs = replicate(craft_nxml_files(), n, tmp_path / f"in{n}")
            wf = write_workflow(
                tmp_path / f"wf{n}.yaml",
                f"""\
reader: {{component: nxml.reader.v1, config: {{input: "{inputs}", id_style: stem}}}}
components:
  - {{component: sentences.rules.v1}}
{model_step}writers: [{{component: xmi.writer.v1}}]
run: {{output: "{tmp_path / f"out{n}"}", jobs: 1}}
""",
            )
            results[n] = run_casflow(wf)
            print(
                f"{n:>6} documents: peak RSS {results[n].peak_rss_mb:8.1f} MB, "
                f"{results[n].seconds:7.1f} s, {results[n].report['counts']}"
            )
    small, large = results[args.small].peak_rss_mb, results[args.large].peak_rss_mb
    print(
        f"peak RSS ratio ({args.large} / {args.small} documents): {large / small:.3f} (target <= 1.10)"
    )


if __name__ == "__main__":
    main()
