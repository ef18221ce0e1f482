"""AnatEM devel scores of the anatomy tagger, from raw document text through the component.

    python benchmarks/anatomy_anatem_devel.py [--model casflow:anatomy] [--gold-sentences]

Each devel document's text is rebuilt from its NERsuite offsets (every gap a
space, so no sentence boundary is given away); ``ner.anatomy.v1`` splits
sentences with the rule-based splitter (or takes the gold ones with
``--gold-sentences``), tokenizes and tags; its AnatomyMention annotations are
scored strictly (exact span and class) against the gold mentions: micro P/R/F over
the 12 classes and per class.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import cassis
from _common import CORPORA, checked_inputs

from casflow.components.crfsuite.gold_view import mention_document
from casflow.components.crfsuite.tagger import AnatomyNer, AnatomyNerConfig
from casflow.components.formats.anatem.parse import ANATEM_CLASSES
from casflow.components.metrics.matching import STRICT, Mention
from casflow.components.metrics.mentions import mention_counts, score_mentions
from casflow.pipeline.component import RunContext
from casflow.pipeline.counts import Counts, add_counts
from casflow.pipeline.gold_sources import GoldSource, read_source
from casflow.typesystem import ANATOMY_MENTION, SENTENCE, load_typesystem


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default="casflow:anatomy")
    parser.add_argument("--corpora", type=Path, default=CORPORA)
    parser.add_argument("--gold-sentences", action="store_true")
    args = parser.parse_args()
    corpus = args.corpora / "anatem"
    source = GoldSource(
        component="anatem.reader.v1", config={"corpus": str(corpus), "split": "devel"}
    )
    with checked_inputs(
        corpus, hint="give --corpora (or CASFLOW_CORPORA) the folder holding anatem/"
    ):
        documents = read_source(
            source,
            RunContext(output_dir=Path(".")),
            lambda view, doc_id: mention_document(view, doc_id, ANATOMY_MENTION),
        )
        typesystem = load_typesystem()
        component = AnatomyNer(AnatomyNerConfig(model=args.model), RunContext(output_dir=Path(".")))
    total: Counts = {}
    started = time.time()
    for document in documents:
        cas = cassis.Cas(typesystem=typesystem)
        cas.sofa_string = document.text
        if args.gold_sentences:
            sentence = typesystem.get_type(SENTENCE)
            cas.add_all([sentence(begin=b, end=e) for b, e in document.sentences])
        component.process(cas)
        system = [Mention(m.begin, m.end, m.value) for m in cas.select(ANATOMY_MENTION)]
        gold = [Mention(m.begin, m.end, m.label) for m in document.mentions]
        add_counts(total, mention_counts(gold, system, criteria=(STRICT,), errors_for=()).counts)
    seconds = time.time() - started
    strict = score_mentions(total)["strict"]
    sentences = "gold" if args.gold_sentences else "rule-based"
    print(
        f"AnatEM devel, {len(documents)} documents, {sentences} sentences, "
        f"model {args.model}, {seconds:.0f} s"
    )
    m = strict["micro"]
    print(
        f"  strict micro (12 classes)  P {100 * m['precision']:.2f}  R {100 * m['recall']:.2f}  "
        f"F {100 * m['f1']:.2f}  (tp {m['tp']:.0f} fp {m['fp']:.0f} fn {m['fn']:.0f})"
    )
    print(f"  strict macro F {100 * strict['macro']['f1']:.2f}")
    for label in ANATEM_CLASSES:
        c = strict["class"].get(label)
        if c is None:
            continue
        print(
            f"  {label:34s} P {100 * c['precision']:6.2f}  R {100 * c['recall']:6.2f}  "
            f"F {100 * c['f1']:6.2f}  gold {c['tp'] + c['fn']:.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
