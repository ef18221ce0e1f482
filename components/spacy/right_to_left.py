"""Right-to-left spaCy taggers and parsers: every sentence read with its tokens reversed.

A transition parser's errors depend on the direction it reads in, so a parser
trained on reversed sentences errs elsewhere than its left-to-right twin;
Sagae and Lavie (2006) reparse exactly such pairs of directions. spaCy parses left
to right only, so the direction lives in the data:

- training (``train.spacy.syntax.v1`` with ``direction: right_to_left``): every
  gold sentence is turned around (:func:`reverse_gold`) before it becomes training
  Docs, and the saved model's ``meta.json`` says ``casflow_direction:
  right_to_left``;
- running (``spacy.pipeline.v1`` over such a model, which needs the view's tokens
  and sentences): each sentence's words go in reversed (:func:`reversed_doc`), and
  the tags, heads and labels come back in reading order (:func:`read_parse`).

Such a model cannot segment raw text: the text it reads is the reversed sentences.
A left-to-right model trained with ``given_segmentation`` learned one sentence at a
time too (its ``meta.json``: ``casflow_given_segmentation: true``), and
``spacy.pipeline.v1`` runs it so, without the reversal: over whole documents, with
the sentences preset, it scores lower (LAS 86.33 against 86.79 on CRAFT dev).
:func:`evaluate_given_sentences` scores either kind over the gold sentences and tokens.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from casflow.components.metrics.dependency import sentence_from_heads
from casflow.components.metrics.pos import TaggedToken
from casflow.components.spacy.gold import GoldSyntaxDocument
from casflow.pipeline.counts import Counts

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc
    from spacy.vocab import Vocab

    from casflow.components.spacy.evaluate_syntax import SyntaxScores

#: The key of a saved model's meta.json that names its reading direction.
DIRECTION_KEY = "casflow_direction"
LEFT_TO_RIGHT = "left_to_right"
RIGHT_TO_LEFT = "right_to_left"
#: The key of a saved model's meta.json saying that it learned one given sentence at a time.
GIVEN_SEGMENTATION_KEY = "casflow_given_segmentation"


def model_direction(meta: Mapping[str, Any]) -> str:
    """The reading direction a pipeline's meta declares (left to right when it says none)."""
    return str(meta.get(DIRECTION_KEY, LEFT_TO_RIGHT))


def reads_given_sentences(meta: Mapping[str, Any]) -> bool:
    """Whether a pipeline learned from given tokens one sentence at a time, and so must
    be run so: a right-to-left one always, a left-to-right one when its meta says so."""
    return model_direction(meta) == RIGHT_TO_LEFT or bool(meta.get(GIVEN_SEGMENTATION_KEY))


def saved_model_meta(model_dir: Path) -> dict[str, Any]:
    """The ``meta.json`` of the saved pipeline in ``model_dir`` (empty without one)."""
    meta = Path(model_dir) / "meta.json"
    if not meta.is_file():
        return {}
    loaded = json.loads(meta.read_text(encoding="utf-8"))
    return loaded if isinstance(loaded, dict) else {}


def reverse_gold(gold: GoldSyntaxDocument) -> GoldSyntaxDocument:
    """``gold`` with every sentence's tokens in reverse order (heads, tags, labels moved along).

    The new text puts each sentence's token texts in reverse order with the
    original whitespace between neighbours (the gap between tokens k and k+1 now
    stands between k+1 and k); the text between sentences and around them stays.
    Sentences without tokens are dropped.
    """
    text = gold.text
    ranges = gold.sentence_token_ranges()
    parts: list[str] = []
    length = 0

    def put(piece: str) -> None:
        nonlocal length
        parts.append(piece)
        length += len(piece)

    out = GoldSyntaxDocument(gold.doc_id, "", [], [], [], [], [], [], [])
    if ranges:
        put(text[: gold.tokens[ranges[0][0]][0]])
    for number, (first, end) in enumerate(ranges):
        base = len(out.tokens)
        sentence_begin = length
        for k in range(end - 1, first - 1, -1):
            if k < end - 1:
                put(text[gold.tokens[k][1] : gold.tokens[k + 1][0]])
            begin = length
            put(text[slice(*gold.tokens[k])])
            out.tokens.append((begin, length))
            out.tags.append(gold.tags[k])
            out.deprels.append(gold.deprels[k])
            out.heads.append(base + (end - 1 - gold.heads[k]))
            if gold.pos:
                out.pos.append(gold.pos[k])
            if gold.lemmas:
                out.lemmas.append(gold.lemmas[k])
        out.sentences.append((sentence_begin, length))
        following = ranges[number + 1][0] if number + 1 < len(ranges) else None
        tail_end = gold.tokens[following][0] if following is not None else len(text)
        put(text[gold.tokens[end - 1][1] : tail_end])
    out.text = "".join(parts)
    return out


def reversed_doc(vocab: Vocab, words: Sequence[str], space_after: Sequence[bool]) -> Doc:
    """One sentence as a Doc of its words in reverse order, fixed as one sentence.

    ``space_after[k]``: whitespace follows word ``k`` in reading order; reversed,
    it stands after the word that now precedes word ``k``.
    """
    from spacy.tokens import Doc

    n = len(words)
    spaces = [space_after[n - 2 - p] if p < n - 1 else False for p in range(n)]
    return Doc(vocab, words=list(reversed(words)), spaces=spaces, sent_starts=_one_sentence(n))


def _one_sentence(n: int) -> list[bool | int | None]:
    """sent_starts fixing ``n`` tokens as one sentence (spaCy's annotation takes ints too)."""
    starts: list[bool | int | None] = [True]
    return starts + [False] * (n - 1)


@dataclass
class SentenceParse:
    """One sentence's analysis in reading order; ``heads[i] == i`` marks the root."""

    tags: list[str]
    poses: list[str]
    lemmas: list[str]
    heads: list[int]
    deps: list[str]


def read_parse(doc: Doc, *, right_to_left: bool) -> SentenceParse:
    """A one-sentence Doc's analysis in reading order: the Doc's own order, or, for a Doc
    made by :func:`reversed_doc`, turned back."""
    n = len(doc)
    tokens = list(reversed(doc)) if right_to_left else list(doc)
    position = (lambda i: n - 1 - i) if right_to_left else (lambda i: i)
    return SentenceParse(
        [t.tag_ for t in tokens],
        [t.pos_ for t in tokens],
        [t.lemma_ for t in tokens],
        [position(t.head.i) for t in tokens],
        [t.dep_ for t in tokens],
    )


def parse_sentences(
    nlp: Language,
    sentences: Iterable[tuple[Sequence[str], Sequence[bool]]],
    *,
    right_to_left: bool,
    batch_size: int = 64,
) -> Iterator[SentenceParse]:
    """Run a pipeline over sentences given as ``(words, space_after)``, one Doc each,
    reversed for a right-to-left pipeline; the analyses come in reading order."""
    docs = (sentence_doc(nlp.vocab, w, s, right_to_left=right_to_left) for w, s in sentences)
    for parsed in nlp.pipe(docs, batch_size=batch_size):
        yield read_parse(parsed, right_to_left=right_to_left)


def sentence_doc(
    vocab: Vocab, words: Sequence[str], space_after: Sequence[bool], *, right_to_left: bool
) -> Doc:
    """One sentence as the Doc a given-sentence pipeline reads: fixed as one sentence, its
    words reversed for a right-to-left one (:func:`reversed_doc`)."""
    from spacy.tokens import Doc

    if right_to_left:
        return reversed_doc(vocab, words, space_after)
    starts = _one_sentence(len(words))
    return Doc(vocab, words=list(words), spaces=list(space_after), sent_starts=starts)


def forward_doc(skeleton: Doc, real: Sequence[bool], parse: SentenceParse) -> Doc:
    """``skeleton``'s words (a sentence's tokens and the whitespace tokens between them,
    ``real`` telling which is which) annotated with ``parse`` (one entry per real token).

    A whitespace token is tagged ``_SP`` and hangs on the token before it, as spaCy's
    own parser attaches whitespace.
    """
    from spacy.tokens import Doc

    position: list[int] = [i for i, is_real in enumerate(real) if is_real]
    if len(position) != len(parse.heads):
        raise ValueError(
            f"the parse has {len(parse.heads)} tokens for a sentence of {len(position)}"
        )
    n = len(skeleton)
    tags = ["_SP"] * n
    poses: list[str | None] = ["SPACE"] * n
    lemmas = [t.text for t in skeleton]
    deps = ["dep"] * n
    heads = [max(i - 1, 0) for i in range(n)]
    for k, i in enumerate(position):
        tags[i] = parse.tags[k]
        poses[i] = parse.poses[k] or None
        lemmas[i] = parse.lemmas[k]
        deps[i] = parse.deps[k]
        heads[i] = position[parse.heads[k]]
    has_pos = any(parse.poses)
    has_lemmas = any(parse.lemmas)
    return Doc(
        skeleton.vocab,
        words=[t.text for t in skeleton],
        spaces=[bool(t.whitespace_) for t in skeleton],
        tags=tags,
        pos=poses if has_pos else None,  # type: ignore[arg-type]  # spaCy takes None for no tag
        lemmas=lemmas if has_lemmas else None,
        heads=heads,
        deps=deps,
        sent_starts=_one_sentence(n),
    )


def _gold_sentences(gold: GoldSyntaxDocument) -> Iterator[tuple[list[str], list[bool]]]:
    text = gold.text
    for first, end in gold.sentence_token_ranges():
        words = [text[b:e] for b, e in gold.tokens[first:end]]
        spaces = [
            k + 1 < end and gold.tokens[k][1] < gold.tokens[k + 1][0] for k in range(first, end)
        ]
        yield words, spaces


def evaluate_given_sentences(
    nlp: Language, golds: Sequence[GoldSyntaxDocument], *, right_to_left: bool
) -> SyntaxScores:
    """Run ``nlp`` over the gold sentences and tokens of ``golds`` (reversed for a
    right-to-left pipeline; timed) and score XPOS and dependencies as
    :func:`~.evaluate_syntax.evaluate_pipeline` scores raw text."""
    from casflow.components.spacy.evaluate_syntax import (
        SyntaxScores,
        add_syntax_counts,
        crafty_label,
    )

    counts: Counts = {}
    start = time.perf_counter()
    for gold in golds:
        ranges = gold.sentence_token_ranges()
        parses = parse_sentences(nlp, _gold_sentences(gold), right_to_left=right_to_left)
        system = []
        tagged = []
        for (first, end), parse in zip(ranges, parses, strict=True):
            spans = gold.tokens[first:end]
            heads = [0 if h == k else h + 1 for k, h in enumerate(parse.heads)]
            system.append(
                sentence_from_heads(
                    spans, heads, [crafty_label(d) for d in parse.deps], xpos=parse.tags
                )
            )
            tagged += [TaggedToken(b, e, t) for (b, e), t in zip(spans, parse.tags, strict=True)]
        add_syntax_counts(counts, gold, tagged, system)
    tokens = sum(len(gold.tokens) for gold in golds)
    return SyntaxScores(counts, tokens, time.perf_counter() - start)
