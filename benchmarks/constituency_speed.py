"""Tokens per second of the shipped constituency parser (parse.constituency.v1, one process).

    python benchmarks/constituency_speed.py [--model casflow:craft_constituency] [--articles 2]
        [--threads 1]

Reads CRAFT dev articles with their gold sentences, tokens and POS (no trees), loads
the model, then times ``parse.constituency.v1`` over the articles'
sentences in one process and prints tokens per wall-clock second and per CPU second
(the CPU figure stays meaningful on a loaded machine).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import cassis
from _common import CORPORA, CRAFT_HINT, checked_inputs

from casflow.components.corpora.craft import CraftReader, CraftReaderConfig, read_id_list
from casflow.pipeline.component import DocumentRef, RunContext
from casflow.pipeline.registry import registry
from casflow.typesystem import SENTENCE, TOKEN, load_typesystem


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="casflow:craft_constituency")
    parser.add_argument("--craft", default=str(CORPORA / "craft"))
    parser.add_argument("--articles", type=int, default=2, help="CRAFT dev articles to parse")
    parser.add_argument("--threads", type=int, default=1, help="PyTorch threads")
    args = parser.parse_args()
    craft = Path(args.craft)
    id_list = craft / "articles" / "ids" / "craft-ids-dev.txt"
    with checked_inputs(id_list, hint=CRAFT_HINT):
        ids = read_id_list(id_list)[: args.articles]
        reader = CraftReader(
            CraftReaderConfig(
                corpus=str(craft), layers=["sentences", "tokens", "pos"], ontologies=[]
            ),
            RunContext(output_dir=Path(".")),
        )
        cases = []
        for pmid in ids:
            cas = cassis.Cas(typesystem=load_typesystem())
            reader.load(DocumentRef(pmid, str(reader.paths.text(pmid))), cas)
            cases.append(cas)
        component = registry().get("parse.constituency.v1")
        parse = component(
            component.Config(model=args.model, threads=args.threads),
            RunContext(output_dir=Path(".")),
        )
    tokens = sum(len(c.select_covered(TOKEN, s)) for c in cases for s in c.select(SENTENCE))
    wall, cpu = time.perf_counter(), time.process_time()
    for cas in cases:
        parse.process(cas)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(
        f"{tokens / wall:,.0f} tokens/s wall, {tokens / cpu:,.0f} tokens/CPU-s "
        f"({tokens:,} tokens in {sum(len(c.select(SENTENCE)) for c in cases):,} sentences "
        f"of {len(cases)} CRAFT dev articles, {args.threads} thread(s), model {args.model})"
    )


if __name__ == "__main__":
    main()
