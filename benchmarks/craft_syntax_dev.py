"""Dev scores of a CRAFT syntax pipeline from raw text (tokens F, sentences F, XPOS, UAS, LAS).

    python benchmarks/craft_syntax_dev.py [--model DIR] [--craft DIR] [--split dev]

The model defaults to the shipped ``craft_syntax``; the corpus to ``$CASFLOW_CORPORA/craft``
(default ``../shared/corpora/craft``). Every article's whole text goes through the
pipeline; scores come from casflow's evaluators (see
``casflow.components.spacy.evaluate_syntax``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import spacy
from _common import CORPORA, CRAFT_HINT, checked_inputs

from casflow.components.models import shipped_model_path
from casflow.components.spacy.evaluate_syntax import evaluate_pipeline
from casflow.components.spacy.gold_cas import gold_syntax_from_view
from casflow.pipeline.component import RunContext
from casflow.pipeline.gold_sources import GoldSource, read_source

DEFAULT_CRAFT = CORPORA / "craft"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="pipeline folder (default: shipped model)")
    parser.add_argument("--craft", default=str(DEFAULT_CRAFT))
    parser.add_argument("--split", default="dev", choices=["train", "dev"])
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = parser.parse_args()
    source = GoldSource(
        component="craft.reader.v1",
        config={
            "corpus": args.craft,
            "split": args.split,
            "layers": ["sentences", "tokens", "pos", "lemmas", "dependencies"],
            "ontologies": [],
        },
    )
    with checked_inputs(Path(args.craft), hint=CRAFT_HINT):
        nlp = spacy.load(args.model or shipped_model_path("craft_syntax"))
        golds = read_source(source, RunContext(output_dir=Path(".")), gold_syntax_from_view)
    summary = evaluate_pipeline(nlp, golds).summary()
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    print(f"CRAFT {args.split} ({len(golds)} articles), from raw text:")
    for key in ("tokens_f", "sentences_f", "xpos_accuracy", "uas", "las"):
        print(f"  {key:14s} {100 * summary[key]:6.2f}")


if __name__ == "__main__":
    main()
