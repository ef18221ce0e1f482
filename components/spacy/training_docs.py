"""Gold documents -> spaCy ``Doc`` objects with the gold tokenisation over the exact text.

Whitespace between tokens is kept: a single space becomes ``Token.whitespace_``;
anything else (newlines, runs of spaces) becomes a whitespace token as spaCy's own
tokenizer makes them, tagged ``_SP``, attached to the token before it with the label
``dep`` and kept in the sentence before it, so ``doc.text`` equals the document
text and a parser can learn that blank lines end sentences.

Documents are cut into chunks of whole consecutive sentences (the text between them
included) so training batches stay small while sentence boundaries stay learnable.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import cast

from spacy.tokens import Doc, DocBin
from spacy.vocab import Vocab

from casflow.components.spacy.gold import GoldSyntaxDocument

SPACE_TAG = "_SP"
SPACE_POS = "SPACE"
SPACE_DEP = "dep"


def _gap_tokens(gap: str) -> tuple[bool, list[tuple[str, bool]]]:
    """Whether the previous token takes a trailing space, and the whitespace tokens."""
    if not gap:
        return False, []
    if gap[0] == " ":
        takes_space, rest = True, gap[1:]
    else:
        takes_space, rest = False, gap
    if not rest:
        return takes_space, []
    if len(rest) > 1 and rest[-1] == " ":
        return takes_space, [(rest[:-1], True)]
    return takes_space, [(rest, False)]


def gold_to_doc(
    vocab: Vocab,
    gold: GoldSyntaxDocument,
    first_sentence: int = 0,
    end_sentence: int | None = None,
    *,
    with_annotation: bool = True,
) -> Doc:
    """A ``Doc`` over sentences ``first_sentence:end_sentence`` of ``gold``.

    The Doc's text is the document text from the first token to the last token of
    those sentences. With ``with_annotation`` it carries tags, POS, lemmas, heads,
    deprels and sentence starts.
    """
    ranges = gold.sentence_token_ranges()[first_sentence:end_sentence]
    if not ranges:
        raise ValueError(f"document {gold.doc_id}: no sentences with tokens in the range asked")
    first_token, end_token = ranges[0][0], ranges[-1][1]
    words: list[str] = []
    spaces: list[bool] = []
    tags: list[str] = []
    pos: list[str] = []
    lemmas: list[str] = []
    heads: list[int] = []
    deps: list[str] = []
    sent_starts: list[bool | int | None] = []  # spaCy's annotation of Doc(sent_starts=)
    position_of: dict[int, int] = {}
    starts = {first for first, _ in ranges}
    pending_heads: list[tuple[int, int]] = []  # (doc position, gold token index)
    for i in range(first_token, end_token):
        begin, end = gold.tokens[i]
        position_of[i] = len(words)
        words.append(gold.text[begin:end])
        spaces.append(False)
        tags.append(gold.tags[i])
        pos.append(gold.pos[i] if gold.pos else "")
        lemmas.append(gold.lemmas[i] if gold.lemmas else "")
        pending_heads.append((len(heads), gold.heads[i]))
        heads.append(0)
        deps.append(gold.deprels[i])
        sent_starts.append(i in starts)
        if i + 1 < end_token:
            gap = gold.text[end : gold.tokens[i + 1][0]]
            takes_space, space_tokens = _gap_tokens(gap)
            spaces[-1] = takes_space
            for text, trailing in space_tokens:
                heads.append(len(words) - 1)
                words.append(text)
                spaces.append(trailing)
                tags.append(SPACE_TAG)
                pos.append(SPACE_POS)
                lemmas.append(text)
                deps.append(SPACE_DEP)
                sent_starts.append(False)
    for position, head in pending_heads:
        heads[position] = position_of[head]
    if not with_annotation:
        return Doc(vocab, words=words, spaces=spaces)
    return Doc(
        vocab,
        words=words,
        spaces=spaces,
        tags=tags,
        # an empty UPOS is no tag: spaCy takes None there, though its annotation says str
        pos=cast("list[str]", [p or None for p in pos]) if gold.pos else None,
        lemmas=lemmas if gold.lemmas else None,
        heads=heads,
        deps=deps,
        sent_starts=sent_starts,
    )


def chunk_sentences(gold: GoldSyntaxDocument, max_tokens: int) -> Iterator[tuple[int, int]]:
    """(first, end) sentence ranges of consecutive sentences with about ``max_tokens`` tokens
    each (a longer sentence is a chunk of its own)."""
    ranges = gold.sentence_token_ranges()
    first = 0
    count = 0
    for number, (begin, end) in enumerate(ranges):
        if count and count + (end - begin) > max_tokens:
            yield first, number
            first, count = number, 0
        count += end - begin
    if count:
        yield first, len(ranges)


def gold_to_docs(
    vocab: Vocab, golds: Iterable[GoldSyntaxDocument], max_tokens: int = 200
) -> Iterator[Doc]:
    """Chunked training Docs of every document."""
    for gold in golds:
        for first, end in chunk_sentences(gold, max_tokens):
            yield gold_to_doc(vocab, gold, first, end)


def write_docbin(docs: Iterable[Doc], path: str | Path) -> int:
    """Save Docs as a ``.spacy`` DocBin; returns how many were written."""
    docbin = DocBin(store_user_data=False)
    n = 0
    for doc in docs:
        docbin.add(doc)
        n += 1
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    docbin.to_disk(path)
    return n


def write_training_corpus(
    splits: dict[str, Iterable[GoldSyntaxDocument]], output_dir: str | Path, max_tokens: int = 200
) -> dict[str, int]:
    """``<output_dir>/<split>.spacy`` for every split; returns Docs written per split."""
    import spacy

    vocab = spacy.blank("en").vocab
    return {
        split: write_docbin(
            gold_to_docs(vocab, golds, max_tokens), Path(output_dir) / f"{split}.spacy"
        )
        for split, golds in splits.items()
    }
