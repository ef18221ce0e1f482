"""XMI writing speed: cassis's ``Cas.to_xmi()`` against casflow's ``cas_to_xmi_bytes``.

    nice python benchmarks/xmi_serialization.py [--craft DIR] [--articles 3] [--ids PMID ...]

Each CRAFT dev article is read twice with the CRAFT reader (sentences, tokens,
POS, lemmas, dependencies, constituents, concept mentions): one CAS is written
by cassis, the other by the fast path, so both give the unindexed feature
structures their ids. The bytes are compared, and seconds per article (CPU time
of this process, robust on a shared machine; wall-clock beside it) and the
speed-up are printed. Keep --articles small: cassis needs seconds per article.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from pathlib import Path

import cassis
from _common import CORPORA, CRAFT_HINT, checked_inputs

from casflow.cas.xmi import cas_to_xmi_bytes, fast_xmi_text
from casflow.components.corpora.craft import CraftReader, CraftReaderConfig
from casflow.pipeline.component import DocumentRef, RunContext
from casflow.typesystem import load_typesystem

DEFAULT_CRAFT = CORPORA / "craft"
LAYERS = ["sentences", "tokens", "pos", "lemmas", "dependencies", "constituents", "concepts"]


def timed(action: Callable[[], bytes]) -> tuple[bytes, float, float]:
    """(result, CPU seconds, wall-clock seconds)."""
    gc.collect()  # neither side pays for the garbage of reading the articles
    cpu, wall = time.process_time(), time.perf_counter()
    result = action()
    return result, time.process_time() - cpu, time.perf_counter() - wall


def read(reader: CraftReader, pmid: str) -> cassis.Cas:
    cas = cassis.Cas(typesystem=load_typesystem())
    reader.load(DocumentRef(pmid, str(reader.paths.text(pmid))), cas)
    return cas


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--craft", default=str(DEFAULT_CRAFT))
    parser.add_argument("--articles", type=int, default=3, help="first N CRAFT dev articles")
    parser.add_argument("--ids", nargs="*", help="PMIDs to use instead")
    args = parser.parse_args()
    craft = Path(args.craft)
    id_list = craft / "articles" / "ids" / "craft-ids-dev.txt"
    with checked_inputs(craft if args.ids else id_list, hint=CRAFT_HINT):
        ids = args.ids or id_list.read_text().split()[: args.articles]
        reader = CraftReader(
            CraftReaderConfig(corpus=str(craft), ids=ids, layers=LAYERS),
            RunContext(output_dir=Path("unused")),
        )

    print(
        f"{'article':>10} {'FSes':>7} {'MB':>6} {'cassis s':>9} {'fast s':>8} {'speed-up':>8}  (CPU; wall)"
    )
    totals = [0.0, 0.0, 0.0, 0.0]
    for pmid in ids:
        with checked_inputs():  # one article at a time, as the figures were measured
            by_cassis, by_fast_path = read(reader, pmid), read(reader, pmid)
        expected, cassis_cpu, cassis_wall = timed(
            lambda cas=by_cassis: cas.to_xmi().encode("utf-8")
        )
        actual, fast_cpu, fast_wall = timed(lambda cas=by_fast_path: cas_to_xmi_bytes(cas))
        if actual != expected:
            raise SystemExit(f"{pmid}: cas_to_xmi_bytes differs from cassis's to_xmi()")
        fast_xmi_text(by_fast_path)  # raises if cas_to_xmi_bytes fell back to cassis
        count = len(list(by_fast_path._find_all_fs()))
        print(
            f"{pmid:>10} {count:>7} {len(actual) / 1e6:>6.1f} {cassis_cpu:>9.2f} {fast_cpu:>8.3f} "
            f"{cassis_cpu / fast_cpu:>7.1f}x  ({cassis_wall:.2f} s; {fast_wall:.3f} s; "
            f"{cassis_wall / fast_wall:.1f}x)"
        )
        for i, value in enumerate((cassis_cpu, fast_cpu, cassis_wall, fast_wall)):
            totals[i] += value
    n = len(ids)
    print(
        f"per article: cassis {totals[0] / n:.2f} s, cas_to_xmi_bytes {totals[1] / n:.3f} s CPU "
        f"-> {totals[0] / totals[1]:.1f}x faster (wall: {totals[2] / n:.2f} s vs "
        f"{totals[3] / n:.3f} s, {totals[2] / totals[3]:.1f}x); bytes identical"
    )


if __name__ == "__main__":
    main()
