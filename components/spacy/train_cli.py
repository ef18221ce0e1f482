"""Training driver for casflow's CRAFT syntax pipeline around ``spacy.training.loop``.

    python -m casflow.components.spacy.train_cli prepare --craft DIR --output corpus/
    python -m casflow.components.spacy.train_cli train --config configs/syntax.cfg \
        --corpus corpus/ --output runs/x [--set training.max_steps=2000 ...]
    python -m casflow.components.spacy.train_cli ship runs/x/model-best components/models/craft_syntax
    python -m casflow.components.spacy.train_cli vectors --craft DIR --bc2gm DIR --output vec/

``prepare`` writes ``train.spacy`` and ``dev.spacy`` (chunked gold Docs). ``train``
builds the pipeline from the config, swaps in the CRAFT tokenizer (so training Docs
are tokenised the way raw text will be) and runs spaCy's training loop; the best
model (by the config's score weights on dev) lands in ``<output>/model-best``.
``ship`` copies a trained pipeline with ``nlp.to_disk`` (no optimizer state, no
corpus), with the current CRAFT tokenizer rules and a rule that starts a sentence
after every line break (:func:`add_newline_sentence_starts`), and pins the
tokenizer in its config to ``spacy.Tokenizer.v1`` so it loads with plain
``spacy.load``. ``vectors`` trains word2vec on unlabelled text (:mod:`.vectors`).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import spacy
from spacy.language import Language
from spacy.training.initialize import init_nlp
from spacy.training.loop import train as train_loop
from spacy.util import dot_to_dict, load_config

from casflow.components.spacy.craft_syntax import craft_ids, read_craft_split
from casflow.components.spacy.craft_tokenizer import craft_tokenizer
from casflow.components.spacy.gold import GoldSyntaxDocument
from casflow.components.spacy.training_docs import gold_to_docs, write_docbin

CONFIG_DIR = Path(__file__).parent / "configs"
SYNTAX_CONFIG = CONFIG_DIR / "syntax.cfg"


def write_training_corpus(
    splits: dict[str, Iterable[GoldSyntaxDocument]], output_dir: str | Path, max_tokens: int = 200
) -> dict[str, int]:
    """``<output_dir>/<split>.spacy`` for every split; returns Docs written per split."""
    vocab = spacy.blank("en").vocab
    return {
        split: write_docbin(
            gold_to_docs(vocab, golds, max_tokens), Path(output_dir) / f"{split}.spacy"
        )
        for split, golds in splits.items()
    }


def _parse_overrides(pairs: Sequence[str]) -> dict[str, Any]:
    """``section.key=value`` strings -> config overrides (values parsed as JSON when possible)."""
    import json

    overrides: dict[str, Any] = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq:
            raise ValueError(f"override {pair!r} is not of the form section.key=value")
        try:
            overrides[key] = json.loads(value)
        except json.JSONDecodeError:
            overrides[key] = value
    return overrides


def train_pipeline(
    config_path: str | Path,
    train_path: str | Path,
    dev_path: str | Path,
    output_dir: str | Path | None,
    overrides: dict[str, Any] | None = None,
    *,
    use_craft_tokenizer: bool = True,
    resume_from: str | Path | None = None,
    stdout: Any = sys.stdout,
) -> Language:
    """Initialise and train the pipeline of ``config_path``; returns the final ``nlp``
    (``output_dir/model-best`` and ``model-last`` hold the saved ones).

    With ``resume_from`` (a trained pipeline folder) training continues from its
    weights under its own config plus ``overrides`` (e.g. a lower
    ``training.optimizer.learn_rate``); ``config_path`` is then not read.
    """
    settings = {"paths.train": str(train_path), "paths.dev": str(dev_path)}
    settings.update(overrides or {})
    if resume_from is not None:
        nlp = spacy.load(resume_from, config=dot_to_dict(settings))
    else:
        config = load_config(config_path, overrides=settings, interpolate=False)
        nlp = init_nlp(config, use_gpu=-1)
    if use_craft_tokenizer:
        # After initialisation (labels come from the gold side), before training: every
        # training and dev Doc is then tokenised as raw text will be.
        nlp.tokenizer = craft_tokenizer(nlp)
    start = time.time()
    output = Path(output_dir) if output_dir is not None else None
    if output is not None:
        output.mkdir(parents=True, exist_ok=True)
    train_loop(nlp, output, use_gpu=-1, stdout=stdout, stderr=sys.stderr)
    print(f"training took {time.time() - start:.0f} s", file=stdout)
    return nlp


def add_newline_sentence_starts(nlp: Language, name: str = "newline_sentences") -> None:
    """Put a built-in ``attribute_ruler`` first that starts a sentence after every
    whitespace token holding a line break; the parser keeps preset sentence starts.

    In CRAFT a line break ends a sentence all but 4 times in 21,731 (headings and
    titles are lines of their own).
    """
    if name in nlp.pipe_names:
        return
    ruler = nlp.add_pipe("attribute_ruler", name=name, first=True)
    ruler.add([[{"IS_SPACE": True, "TEXT": {"REGEX": "\n"}}, {}]], {"SENT_START": 1}, index=1)


def ship_pipeline(
    source: str | Path,
    target: str | Path,
    *,
    newline_sentences: bool = True,
    craft_rules: bool = True,
) -> Path:
    """Save the pipeline at ``source`` to ``target`` for distribution (``meta.json`` name:
    the target folder's name)."""
    nlp = spacy.load(source)
    nlp.meta["name"] = Path(target).name
    nlp.meta["version"] = "0.1.0"
    nlp.meta["description"] = "casflow pipeline trained from gold corpora; see MODEL_CARD.md"
    # the rules are code: ship the current ones whatever the checkpoint was trained with
    if craft_rules:
        nlp.tokenizer = craft_tokenizer(nlp)
    if newline_sentences:
        add_newline_sentence_starts(nlp)
    target = Path(target)
    target.mkdir(parents=True, exist_ok=True)
    nlp.to_disk(target)
    config = load_config(target / "config.cfg", interpolate=False)
    config["nlp"]["tokenizer"] = {"@tokenizers": "spacy.Tokenizer.v1"}
    # training-time paths are of the machine that trained it; loading needs none
    for name in ("train", "dev", "vectors", "init_tok2vec"):
        if name in config["paths"]:
            config["paths"][name] = None
    config.to_disk(target / "config.cfg")
    return target


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m casflow.components.spacy.train_cli")
    sub = parser.add_subparsers(dest="command", required=True)
    prepare = sub.add_parser("prepare", help="write train.spacy and dev.spacy from CRAFT")
    prepare.add_argument("--craft", required=True, help="the CRAFT folder of the gold corpora")
    prepare.add_argument("--output", required=True)
    prepare.add_argument("--max-tokens", type=int, default=200)
    train = sub.add_parser("train", help="train a pipeline")
    train.add_argument("--config", default=str(SYNTAX_CONFIG))
    train.add_argument("--corpus", required=True, help="folder with train.spacy and dev.spacy")
    train.add_argument("--output", required=True)
    train.add_argument("--set", nargs="*", default=[], help="config overrides a.b=value")
    train.add_argument("--resume-from", default=None, help="continue training this pipeline")
    vectors = sub.add_parser("vectors", help="train word2vec vectors (needs gensim)")
    vectors.add_argument("--craft", required=True, help="CRAFT folder (train articles are used)")
    vectors.add_argument("--bc2gm", required=True, help="BC2GM folder (train+devel sentences)")
    vectors.add_argument("--output", required=True)
    vectors.add_argument("--dims", type=int, default=100)
    vectors.add_argument("--max-words", type=int, default=30000)
    ship = sub.add_parser("ship", help="save a trained pipeline for distribution")
    ship.add_argument("source")
    ship.add_argument("target")
    args = parser.parse_args(argv)
    if args.command == "prepare":
        counts = write_training_corpus(
            {split: read_craft_split(args.craft, split) for split in ("train", "dev")},
            args.output,
            args.max_tokens,
        )
        print(counts)
    elif args.command == "train":
        corpus = Path(args.corpus)
        train_pipeline(
            args.config,
            corpus / "train.spacy",
            corpus / "dev.spacy",
            args.output,
            _parse_overrides(args.set),
            resume_from=args.resume_from,
        )
    elif args.command == "vectors":
        from casflow.components.spacy.vectors import (
            bc2_texts,
            craft_texts,
            tokenized_lines,
            train_word2vec,
        )

        texts = [
            *craft_texts(args.craft, craft_ids(args.craft, "train")),
            *bc2_texts(args.bc2gm),
        ]
        sentences = list(tokenized_lines(texts))
        print(train_word2vec(sentences, args.output, dims=args.dims, max_words=args.max_words))
    else:
        print(ship_pipeline(args.source, args.target))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
