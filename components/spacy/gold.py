"""The gold input of syntax training: one document as text plus character spans.

Independent of the CAS so a CoNLL-U reader, a CAS adapter or hand-written test data
can all produce it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

Span = tuple[int, int]


@dataclass
class GoldSyntaxDocument:
    """A document's sentences and tokens as character spans over ``text``.

    ``heads[i]`` is the document-level index of token ``i``'s governor; a sentence root
    has ``heads[i] == i``. ``tags`` are fine-grained (Penn XPOS) tags; ``pos`` (UPOS)
    and ``lemmas`` may be empty. Every token lies inside exactly one sentence.
    """

    doc_id: str
    text: str
    sentences: list[Span]
    tokens: list[Span]
    tags: list[str]
    heads: list[int]
    deprels: list[str]
    pos: list[str] = field(default_factory=list)
    lemmas: list[str] = field(default_factory=list)

    def validate(self) -> None:
        """Raise ValueError naming the document and token when the structure is inconsistent."""
        n = len(self.tokens)
        for name in ("tags", "heads", "deprels"):
            if len(getattr(self, name)) != n:
                raise ValueError(
                    f"document {self.doc_id}: {name} has {len(getattr(self, name))} entries "
                    f"for {n} tokens; give one per token"
                )
        for name in ("pos", "lemmas"):
            if getattr(self, name) and len(getattr(self, name)) != n:
                raise ValueError(f"document {self.doc_id}: {name} must be empty or one per token")
        previous_end = 0
        for i, (begin, end) in enumerate(self.tokens):
            if not previous_end <= begin < end <= len(self.text):
                raise ValueError(
                    f"document {self.doc_id}: token {i} span ({begin}, {end}) overlaps the "
                    "previous token, is empty or lies outside the text; tokens must be "
                    "sorted and disjoint"
                )
            previous_end = end
        sentence_of = self.sentence_of_tokens()
        for i, head in enumerate(self.heads):
            if not 0 <= head < n or sentence_of[head] != sentence_of[i]:
                raise ValueError(
                    f"document {self.doc_id}: token {i} ({self.text[slice(*self.tokens[i])]!r}) "
                    f"has head {head} outside its sentence"
                )

    def sentence_of_tokens(self) -> list[int]:
        """Sentence number of every token (ValueError for a token outside all sentences)."""
        result: list[int] = []
        s = 0
        for i, (begin, end) in enumerate(self.tokens):
            while s < len(self.sentences) and self.sentences[s][1] <= begin:
                s += 1
            if s == len(self.sentences) or not (
                self.sentences[s][0] <= begin and end <= self.sentences[s][1]
            ):
                raise ValueError(
                    f"document {self.doc_id}: token {i} span ({begin}, {end}) is not inside "
                    "one sentence"
                )
            result.append(s)
        return result

    def sentence_token_ranges(self) -> list[tuple[int, int]]:
        """(first, last + 1) token indices per sentence; sentences without tokens are dropped."""
        ranges: list[list[int]] = []  # [first, end, sentence]
        for i, s in enumerate(self.sentence_of_tokens()):
            if ranges and ranges[-1][2] == s:
                ranges[-1][1] = i + 1
            else:
                ranges.append([i, i + 1, s])
        return [(first, end) for first, end, _ in ranges]
