"""BC2GM devel scores of the gene tagger, from raw sentence text through the component.

    python benchmarks/gene_bc2gm_devel.py [--model casflow:gene] [--corpora DIR]

Each devel sentence becomes a CAS whose text is the sentence (BC2GM is given as
sentences, so one Sentence annotation covers it); ``ner.gene.v1`` tags it and
its GeneMention annotations are scored against GENE.eval: ``alt_eval`` accepts
ALTGENE.eval alternatives exactly as BioCreative's alt_eval.perl, ``strict``
takes GENE.eval alone.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import cassis
from _common import CORPORA, checked_inputs

from casflow.components.crfsuite.evaluate import unit_counts
from casflow.components.crfsuite.gold_view import mention_document
from casflow.components.crfsuite.tagger import GeneNer, GeneNerConfig
from casflow.components.metrics.mentions import score_mentions
from casflow.pipeline.component import RunContext
from casflow.pipeline.counts import Counts, add_counts
from casflow.pipeline.gold_sources import GoldSource, read_source
from casflow.typesystem import GENE_MENTION, SENTENCE, load_typesystem


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default="casflow:gene")
    parser.add_argument("--corpora", type=Path, default=CORPORA)
    args = parser.parse_args()
    corpus = args.corpora / "bc2gm"
    source = GoldSource(
        component="bc2gm.reader.v1", config={"corpus": str(corpus), "split": "devel"}
    )
    with checked_inputs(
        corpus, hint="give --corpora (or CASFLOW_CORPORA) the folder holding bc2gm/"
    ):
        examples = read_source(
            source,
            RunContext(output_dir=Path(".")),
            lambda view, doc_id: mention_document(view, doc_id, GENE_MENTION, "GENE"),
        )
        typesystem = load_typesystem()
        component = GeneNer(GeneNerConfig(model=args.model), RunContext(output_dir=Path(".")))
    total: Counts = {}
    started = time.time()
    for example in examples:
        cas = cassis.Cas(typesystem=typesystem)
        cas.sofa_string = example.text
        cas.add(typesystem.get_type(SENTENCE)(begin=0, end=len(example.text)))
        component.process(cas)
        system = [(m.begin, m.end, "GENE") for m in cas.select(GENE_MENTION)]
        add_counts(
            total,
            unit_counts(
                example.mentions, system, with_alternatives=True, accepted=example.accepted
            ),
        )
    seconds = time.time() - started
    scores = score_mentions(total)
    print(f"BC2GM devel, {len(examples)} sentences, model {args.model}, {seconds:.0f} s")
    for criterion, label in (("alt_eval", "with alternatives (alt_eval)"), ("strict", "strict")):
        m = scores[criterion]["micro"]
        print(
            f"  {label:30s} P {100 * m['precision']:.2f}  R {100 * m['recall']:.2f}  "
            f"F {100 * m['f1']:.2f}  (tp {m['tp']:.0f} fp {m['fp']:.0f} fn {m['fn']:.0f})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
