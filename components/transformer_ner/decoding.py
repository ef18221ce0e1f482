"""Words in, mentions out: the one way sentences go through a token-classification
model, shared by ``transformers.ner.v1`` and the dev scoring of
``train.transformers.ner.v1`` (so the epoch the trainer keeps is scored as the tagger
will run it).

A sentence longer than the model's window is cut at word boundaries into windows of
at most ``max_length`` pieces (special tokens included; a single word longer than that
keeps only its first pieces, enough for its label), so no word is lost or tagged
twice. Windows go through the model in batches of similar length. Each word takes the
tag of its first word piece (a word with no piece at all, which some tokenizers give
to characters they drop, is O), and the sentence's tags are read as BIO: an I- tag
after O or after another class starts a mention.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from casflow.components.crfsuite.labels import OUTSIDE, decode

#: (first word, last word exclusive, class)
WordMention = tuple[int, int, str]


def piece_budget(tokenizer: Any, max_length: int) -> int:
    """Word pieces a window of ``max_length`` holds besides the special tokens."""
    return max(1, max_length - tokenizer.num_special_tokens_to_add(pair=False))


def piece_counts(tokenizer: Any, sentences: Sequence[Sequence[str]]) -> list[list[int]]:
    """Per sentence, the number of word pieces of each word."""
    if not sentences:
        return []
    encoded = tokenizer(
        [list(words) for words in sentences], is_split_into_words=True, add_special_tokens=False
    )
    out = []
    for row, words in enumerate(sentences):
        counts = [0] * len(words)
        for word in encoded.word_ids(row):
            if word is not None:
                counts[word] += 1
        out.append(counts)
    return out


def windows(counts: Sequence[int], budget: int) -> list[tuple[int, int]]:
    """Word ranges ``[first, last)`` covering every word once, in order, each of at most
    ``budget`` pieces (a word of more pieces alone in its window)."""
    out: list[tuple[int, int]] = []
    start = used = 0
    for i, pieces in enumerate(counts):
        if i > start and used + pieces > budget:
            out.append((start, i))
            start, used = i, 0
        used += pieces
    if start < len(counts):
        out.append((start, len(counts)))
    return out


def encode_words(tokenizer: Any, batch: Sequence[Sequence[str]], max_length: int) -> Any:
    """The padded model input of a batch of windows (``return_tensors="pt"``)."""
    return tokenizer(
        [list(words) for words in batch],
        is_split_into_words=True,
        truncation=True,
        max_length=max_length,
        padding=True,
        return_tensors="pt",
    )


def first_pieces(encoding: Any, row: int) -> dict[int, int]:
    """Word index -> position of its first piece, in one row of an encoding."""
    found: dict[int, int] = {}
    for position, word in enumerate(encoding.word_ids(row)):
        if word is not None and word not in found:
            found[word] = position
    return found


def mentions_of(tags: Sequence[str]) -> list[WordMention]:
    """BIO tags -> word ranges with their class (an I- without its B- starts one)."""
    return decode(tags)


def by_length(items: Sequence[int], size: int) -> Iterable[list[int]]:
    """Indices into ``items`` (lengths) shortest first, in batches of ``size``."""
    order = sorted(range(len(items)), key=lambda k: items[k])
    for start in range(0, len(order), size):
        yield order[start : start + size]


def tag_sentences(
    model: Any,
    tokenizer: Any,
    tags: Sequence[str],
    sentences: Sequence[Sequence[str]],
    max_length: int,
    batch_size: int,
) -> list[list[WordMention]]:
    """The mentions ``model`` (in eval mode) finds in each sentence of words."""
    import torch

    budget = piece_budget(tokenizer, max_length)
    found: list[list[str]] = [[OUTSIDE] * len(words) for words in sentences]
    nonempty = [k for k, words in enumerate(sentences) if words]
    units: list[tuple[int, int, int]] = []  # sentence, first word, last word
    sizes: list[int] = []
    counts_of = piece_counts(tokenizer, [sentences[k] for k in nonempty])
    for k, counts in zip(nonempty, counts_of, strict=True):
        for first, last in windows(counts, budget):
            units.append((k, first, last))
            sizes.append(sum(counts[first:last]))
    with torch.no_grad():
        for batch in by_length(sizes, batch_size):
            chosen = [units[u] for u in batch]
            encoding = encode_words(
                tokenizer, [sentences[k][a:b] for k, a, b in chosen], max_length
            )
            best = model(**encoding).logits.argmax(-1).tolist()
            for row, (k, first, _) in enumerate(chosen):
                for word, position in first_pieces(encoding, row).items():
                    found[k][first + word] = tags[best[row][position]]
    return [mentions_of(sentence_tags) for sentence_tags in found]
