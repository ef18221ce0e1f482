"""CRAFT dependency CoNLL-U plus article text -> :class:`GoldSyntaxDocument`."""

from __future__ import annotations

from pathlib import Path

from casflow.components.formats.conllu.parse import align_to_text, read_conllu
from casflow.components.spacy.gold import GoldSyntaxDocument

CONLLU_DIR = Path("structural-annotation/dependency/conllu")
TEXT_DIR = Path("articles/txt")
IDS_DIR = Path("articles/ids")


def craft_ids(craft_dir: str | Path, split: str) -> list[str]:
    """PMIDs of a CRAFT split (``train`` or ``dev``) from ``articles/ids/craft-ids-<split>.txt``."""
    path = Path(craft_dir) / IDS_DIR / f"craft-ids-{split}.txt"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found; is {craft_dir} the CRAFT folder?")
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def read_craft_syntax(craft_dir: str | Path, pmid: str) -> GoldSyntaxDocument:
    """One CRAFT article's sentences, tokens, XPOS, UPOS, lemmas and dependencies."""
    craft_dir = Path(craft_dir)
    text_path = craft_dir / TEXT_DIR / f"{pmid}.txt"
    text = text_path.read_text(encoding="utf-8")
    conllu = read_conllu(craft_dir / CONLLU_DIR / f"{pmid}.conllu")
    spans = align_to_text(conllu, text, text_source=str(text_path))
    doc = GoldSyntaxDocument(pmid, text, [], [], [], [], [], [], [])
    for sentence, sentence_spans in zip(conllu.sentences, spans, strict=True):
        words = sentence.syntactic_words
        word_spans = [
            span
            for word, span in zip(sentence.words, sentence_spans, strict=True)
            if not word.is_range and not word.is_empty_node
        ]
        offset = len(doc.tokens)
        for word, span in zip(words, word_spans, strict=True):
            if span is None:
                raise ValueError(f"{conllu.source}:{word.line}: word without a text span")
            head = int(word.head)
            doc.tokens.append(span)
            doc.tags.append(word.xpos)
            doc.pos.append(word.upos)
            doc.lemmas.append(word.lemma)
            doc.heads.append(offset + head - 1 if head else offset + int(word.id) - 1)
            doc.deprels.append(word.deprel)
        doc.sentences.append((word_spans[0][0], word_spans[-1][1]))
    doc.validate()
    return doc


def read_craft_split(craft_dir: str | Path, split: str) -> list[GoldSyntaxDocument]:
    return [read_craft_syntax(craft_dir, pmid) for pmid in craft_ids(craft_dir, split)]
