"""Tokens per second of the shipped CRAFT syntax pipeline (tokenize + tag + parse, one process).

    python benchmarks/syntax_speed.py [--model DIR] [--craft DIR] [--repeat 3]

Runs the pipeline over the whole texts of the CRAFT dev articles ``--repeat`` times
after one warm-up article and prints the best figure (tokens, whitespace tokens
excluded, per wall-clock second). Set OMP_NUM_THREADS=1 to measure one thread.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import spacy
from _common import CORPORA, CRAFT_HINT, checked_inputs

from casflow.components.corpora.craft import read_id_list
from casflow.components.models import shipped_model_path

DEFAULT_CRAFT = CORPORA / "craft"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="pipeline folder (default: shipped model)")
    parser.add_argument("--craft", default=str(DEFAULT_CRAFT))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    craft = Path(args.craft)
    id_list = craft / "articles" / "ids" / "craft-ids-dev.txt"
    with checked_inputs(id_list, hint=CRAFT_HINT):
        nlp = spacy.load(args.model or shipped_model_path("craft_syntax"))
        texts = [
            (craft / "articles" / "txt" / f"{pmid}.txt").read_text(encoding="utf-8")
            for pmid in read_id_list(id_list)
        ]
    nlp.max_length = max(nlp.max_length, max(len(text) for text in texts) + 1)
    nlp(texts[0][:5000])  # warm-up
    best = 0.0
    for _ in range(args.repeat):
        start = time.perf_counter()
        tokens = sum(sum(not t.is_space for t in doc) for doc in nlp.pipe(texts))
        best = max(best, tokens / (time.perf_counter() - start))
    print(
        f"{best:,.0f} tokens/s ({tokens:,} tokens, {len(texts)} CRAFT dev articles, "
        f"pipeline {nlp.pipe_names}, best of {args.repeat})"
    )


if __name__ == "__main__":
    main()
