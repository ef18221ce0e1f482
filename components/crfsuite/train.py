"""Train a CRF mention model from a gold corpus and score it on devel.

    python -m casflow.components.crfsuite.train --corpus bc2gm --output components/models/gene_bc2gm
    python -m casflow.components.crfsuite.train --corpus anatem --output components/models/anatomy_anatem \\
        --ontology-lexicon

Deterministic: crfsuite's L-BFGS has no randomness and examples keep corpus order.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from casflow.components.corpora.locations import corpora_root
from casflow.components.crfsuite.clusters import (
    build_clusters,
    load_clusters,
    save_clusters,
    unlabelled_texts,
)
from casflow.components.crfsuite.corpora import LOADERS, Example
from casflow.components.crfsuite.crf import (
    CrfTagger,
    DocumentContext,
    TrainingParams,
    labels_for,
    train_crf,
)
from casflow.components.crfsuite.evaluate import score_examples, summary_line
from casflow.components.crfsuite.features import FeatureSettings
from casflow.components.crfsuite.lexicon import Lexicon
from casflow.components.crfsuite.ontology import (
    classify_terms,
    craft_mention_texts,
    obo_terms,
    obo_terms_by_id,
)
from casflow.components.crfsuite.pos_features import PosTagger, train_pos_tagger
from casflow.components.crfsuite.postprocess import POSTPROCESSORS

DEV_SPLIT = {"bc2gm": "devel", "anatem": "devel"}
CORPUS_DIR = {"bc2gm": "bc2gm", "anatem": "anatem"}
ONTOLOGIES = {
    "UBERON": ("craft/concept-annotation/UBERON/UBERON/UBERON.obo.zip", "UBERON:"),
    "CL": ("craft/concept-annotation/CL/CL/CL.obo.zip", "CL:"),
}


def mention_lexicon(examples: Sequence[Example], label: str | None = None) -> Lexicon:
    """Gold mention texts of ``examples`` as a lexicon (class: ``label`` or the mention's)."""
    lexicon = Lexicon()
    for example in examples:
        for m in example.mentions:
            lexicon.add(example.text[m.begin : m.end], label or "T" + m.label)
    return lexicon


#: UBERON's upper-level (CARO) classes that the AnatEM classes are named after
UBERON_ROOTS = {
    "UBERON:0000062": "U-Organ",
    "UBERON:0000479": "U-Tissue",
    "UBERON:0000481": "U-Multi-tissue_structure",
    "UBERON:0000467": "U-Anatomical_system",
    "UBERON:0000475": "U-Organism_subdivision",
    "UBERON:0000463": "U-Organism_substance",
    "UBERON:0000466": "U-Immaterial_anatomical_entity",
    "UBERON:0005423": "U-Developing_anatomical_structure",
    "UBERON:0000477": "U-Anatomical_cluster",
    "UBERON:0000476": "U-Acellular_anatomical_structure",
}


def ontology_lexicon(corpora: Path) -> Lexicon:
    """UBERON and CL names and exact synonyms; UBERON ones also by their CARO class."""
    lexicon = Lexicon()
    for name, (relative, prefix) in ONTOLOGIES.items():
        for phrase in obo_terms(corpora / relative, prefix):
            lexicon.add(phrase, name)
    uberon = obo_terms_by_id(corpora / ONTOLOGIES["UBERON"][0], "UBERON:")
    lexicon.add_all(classify_terms(uberon, UBERON_ROOTS))
    return lexicon


def merged(*lexicons: Lexicon | None) -> Lexicon | None:
    present = [lex for lex in lexicons if lex is not None]
    if not present:
        return None
    out = Lexicon()
    for lex in present:
        for key, classes in lex.entries.items():
            out.entries.setdefault(key, set()).update(classes)
    return out


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--corpus", choices=sorted(LOADERS), required=True)
    p.add_argument("--corpora", type=Path, default=corpora_root())
    p.add_argument("--output", type=Path, required=True, help="model folder to write")
    p.add_argument("--c1", type=float, default=0.1)
    p.add_argument("--c2", type=float, default=0.01)
    p.add_argument("--iterations", type=int, default=200)
    p.add_argument("--min-freq", type=int, default=0)
    p.add_argument("--scheme", choices=("BIO", "BIOES"), default="BIO")
    p.add_argument("--window", type=int, default=2)
    p.add_argument("--affix-max", type=int, default=4)
    p.add_argument("--char-ngrams", default="2,3", help="comma-separated sizes; empty for none")
    p.add_argument("--no-word-context", action="store_true")
    p.add_argument("--no-bigrams", action="store_true")
    p.add_argument(
        "--train-lexicon",
        type=int,
        default=0,
        metavar="K",
        help="lexicon of training mentions as features, built over K folds (0: off)",
    )
    p.add_argument("--ontology-lexicon", action="store_true", help="UBERON + CL names as features")
    p.add_argument(
        "--craft-lexicon",
        action="append",
        default=[],
        metavar="ONTOLOGY",
        help="CRAFT concept-mention texts of ONTOLOGY (GO_CC, CL, UBERON, PR) as features",
    )
    p.add_argument(
        "--abbreviations", action="store_true", help="long-form features on defined short forms"
    )
    p.add_argument(
        "--clusters",
        type=Path,
        default=None,
        metavar="FILE",
        help="word-cluster features; FILE caches the clusters (built from the corpora if absent)",
    )
    p.add_argument(
        "--postprocess",
        action="append",
        default=[],
        choices=sorted(POSTPROCESSORS),
        help="post-processing step applied after tagging (repeatable)",
    )
    p.add_argument(
        "--pos-model",
        type=Path,
        default=None,
        metavar="FILE",
        help="POS features from the AnatEM-trained POS tagger; FILE caches it (trained if absent)",
    )
    p.add_argument("--no-eval", action="store_true")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    corpus_dir = args.corpora / CORPUS_DIR[args.corpus]
    loader = LOADERS[args.corpus]
    started = time.time()
    train = loader(corpus_dir, "train")
    settings = FeatureSettings(
        window=args.window,
        affix_max=args.affix_max,
        char_ngrams=tuple(int(x) for x in args.char_ngrams.split(",") if x),
        word_context=not args.no_word_context,
        bigrams=not args.no_bigrams,
        abbreviations=args.abbreviations,
        clusters=args.clusters is not None,
        pos=args.pos_model is not None,
    )
    pos_tagger = None
    if args.pos_model is not None:
        if not args.pos_model.is_file():
            train_pos_tagger(args.corpora / "anatem", args.pos_model)
        pos_tagger = PosTagger(args.pos_model)
    clusters = None
    if args.clusters is not None:
        if not args.clusters.is_file():
            save_clusters(build_clusters(unlabelled_texts(args.corpora)), args.clusters)
        clusters = load_clusters(args.clusters)
    gene_label = "TGENE" if args.corpus == "bc2gm" else None
    static = ontology_lexicon(args.corpora) if args.ontology_lexicon else None
    if args.craft_lexicon:
        static = static or Lexicon()
        for ontology in args.craft_lexicon:
            for phrase in craft_mention_texts(args.corpora / "craft", ontology):
                static.add(phrase, "K-" + ontology)
    full_train_lexicon = (
        mention_lexicon(train, gene_label and "GENE") if args.train_lexicon else None
    )
    # jackknife: each fold's dictionary features come from the other folds' mentions,
    # so the CRF learns how far to trust a match on unseen text
    fold_lexicons: list[Lexicon | None] = []
    k = args.train_lexicon
    for fold in range(max(k, 1)):
        held_in = [e for i, e in enumerate(train) if k and i % k != fold]
        fold_lexicons.append(
            merged(static, mention_lexicon(held_in, gene_label and "GENE") if k else None)
        )

    contexts = [
        DocumentContext(settings, lexicon, clusters, pos_tagger) for lexicon in fold_lexicons
    ]

    def sequences():
        for i, example in enumerate(train):
            x = contexts[i % k if k else 0].features(example.text, example.tokens)
            y = labels_for(
                example.tokens,
                [(m.begin, m.end, m.label) for m in example.mentions],
                args.scheme,
            )
            yield x, y

    params = TrainingParams(
        c1=args.c1,
        c2=args.c2,
        max_iterations=args.iterations,
        scheme=args.scheme,
        min_freq=args.min_freq,
        extra={
            "train_lexicon_folds": k,
            "ontology_lexicon": args.ontology_lexicon,
            "craft_lexicon": args.craft_lexicon,
            "command": "python -m casflow.components.crfsuite.train "
            + " ".join(a for a in (argv if argv is not None else sys.argv[1:])),
        },
    )
    shipped_lexicon = merged(static, full_train_lexicon)
    meta = train_crf(
        sequences(),
        args.output,
        params,
        settings,
        shipped_lexicon,
        meta_extra={
            "corpus": args.corpus,
            "train_sentences": len(train),
            "postprocess": args.postprocess,
        },
        clusters=clusters,
        pos_model=args.pos_model,
    )
    print(f"trained in {meta['training']['seconds']} s", flush=True)
    if not args.no_eval:
        devel = loader(corpus_dir, DEV_SPLIT[args.corpus])
        tagger = CrfTagger.load(args.output)
        scores = score_examples(
            devel,
            lambda e: [(b, en, lab) for b, en, lab, _ in tagger.tag(e.text, e.tokens)],
            with_alternatives=args.corpus == "bc2gm",
        )
        line = summary_line(scores)
        print("devel", line, flush=True)
        meta["devel"] = {c: s["micro"] for c, s in scores.items()}
        (args.output / "devel_scores.json").write_text(json.dumps(scores, indent=1) + "\n")
    size = sum(f.stat().st_size for f in args.output.iterdir())
    print(f"model size {size / 1e6:.2f} MB; total {time.time() - started:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
