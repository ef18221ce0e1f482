"""Dependency parsing: LAS, UAS and LS, micro and macro, as conll18_ud_eval.py.

Words are aligned by identical character spans (the CoNLL 2018 scorer's alignment
when neither side has multi-word tokens, or when each one's words spell it, which
``conllu.import.v1`` and ``stanza.pipeline.v1`` turn into a Token per word; a
multi-word token whose words do not spell it is one Token there, scored as one word
where the CoNLL 2018 scorer scores each of its words; spans must not include
surrounding whitespace). An aligned word is correct for

- UAS when the system head is aligned to the gold head (both root counts too),
- LS when the labels agree (after ``label_key``),
- LAS when both hold.

For each metric ``correct`` counts correct aligned words, ``gold`` and ``system`` the
words scored on each side, and the scores are the CoNLL 2018 ones: precision =
correct / system, recall = correct / gold, F1 = 2 correct / (gold + system), and
aligned accuracy = correct / aligned. With identical tokenisation all four are the
usual attachment accuracy. Micro scores pool all words; macro scores average the
per-sentence scores over gold sentences (a system word belongs to the last gold
sentence that starts at or before it).

Labels: ``label_key`` maps a deprel before comparison. The default,
``universal_deprel``, keeps the part before ":" like CoNLL 2018; use ``full_deprel``
for label sets such as CRAFT's CLEAR labels where the whole label matters.

Punctuation: ``INCLUDE_PUNCTUATION`` (CoNLL 2018) scores every word.
``ExcludeUpos``/``ExcludeXpos`` drop gold words with those tags (like CoNLL-X
eval.pl, which drops punctuation tokens); a system word is dropped when it is
aligned to a dropped gold word, or, when unaligned, when its own tag is in the set.

Input: one ``DepWord`` per token, grouped by sentence. ``head`` is the governor's
character span; the root has ``head=None`` or its own span, which is how the DKPro
convention (a ROOT dependency whose Governor is its Dependent) comes out when a CAS
wrapper copies Governor/Dependent begin and end. A system word with
``attached=False`` (a token the parser gave no relation) is scored and always wrong,
like a ``_`` head in CoNLL-U; gold words must all be attached. ``sentence_from_heads``
builds a sentence from CoNLL-style 1-based head indices.
"""

from __future__ import annotations

import bisect
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from casflow.pipeline.counts import Counts, EvaluationResult, safe_div

Span = tuple[int, int]
METRICS = ("words", "uas", "las", "ls")


@dataclass(frozen=True)
class DepWord:
    """A word with its governor's span (None or its own span for the root)."""

    begin: int
    end: int
    head: Span | None
    deprel: str
    upos: str = ""
    xpos: str = ""
    # False for a system token the parser gave no relation: its head and label are
    # always wrong (``head`` and ``deprel`` are then ignored).
    attached: bool = True

    @property
    def span(self) -> Span:
        return (self.begin, self.end)

    @property
    def is_root(self) -> bool:
        return self.head is None or tuple(self.head) == self.span

    @property
    def governor(self) -> Span | None:
        """The head's span, or None for the root."""
        return None if self.head is None or self.is_root else (self.head[0], self.head[1])


def sentence_from_heads(
    spans: Sequence[Span],
    heads: Sequence[int],
    deprels: Sequence[str],
    upos: Sequence[str] | None = None,
    xpos: Sequence[str] | None = None,
) -> list[DepWord]:
    """Words of one sentence from CoNLL-style heads (1-based word numbers, 0 = root)."""
    if not len(spans) == len(heads) == len(deprels):
        raise ValueError(
            f"spans ({len(spans)}), heads ({len(heads)}) and deprels ({len(deprels)}) "
            "must have one entry per word"
        )
    words = []
    for i, ((begin, end), head, deprel) in enumerate(zip(spans, heads, deprels, strict=True)):
        if not 0 <= head <= len(spans):
            raise ValueError(f"word {i + 1}: head {head} points outside the sentence")
        words.append(
            DepWord(
                begin,
                end,
                None if head == 0 else (spans[head - 1][0], spans[head - 1][1]),
                deprel,
                upos[i] if upos is not None else "",
                xpos[i] if xpos is not None else "",
            )
        )
    return words


def universal_deprel(deprel: str) -> str:
    """CoNLL 2018: compare only the universal part of ``nmod:poss``."""
    return deprel.split(":", 1)[0]


def full_deprel(deprel: str) -> str:
    return deprel


class PunctuationPolicy(ABC):
    @abstractmethod
    def excludes(self, word: DepWord) -> bool: ...


class IncludePunctuation(PunctuationPolicy):
    def excludes(self, word: DepWord) -> bool:
        return False


@dataclass(frozen=True)
class ExcludeUpos(PunctuationPolicy):
    tags: frozenset[str] = frozenset({"PUNCT"})

    def excludes(self, word: DepWord) -> bool:
        return word.upos in self.tags


# The Penn Treebank punctuation tags that dependency evaluations on the PTB usually
# leave out (e.g. Chen & Manning 2014); add "HYPH", "-LRB-", "-RRB-", "NFP" if wanted.
PTB_PUNCTUATION_TAGS = frozenset({"``", "''", ",", ".", ":"})


@dataclass(frozen=True)
class ExcludeXpos(PunctuationPolicy):
    tags: frozenset[str] = PTB_PUNCTUATION_TAGS

    def excludes(self, word: DepWord) -> bool:
        return word.xpos in self.tags


INCLUDE_PUNCTUATION = IncludePunctuation()


@dataclass
class _Indexed:
    """Words of one side in document order, with sentence numbers and head indices."""

    words: list[DepWord]
    sentence_of: list[int]
    head_of: list[int | None]  # index of the head word, None for the root (or unattached)
    index_of: dict[Span, int]


def _index(sentences: Sequence[Sequence[DepWord]], side: str) -> _Indexed:
    words: list[DepWord] = []
    sentence_of: list[int] = []
    index_of: dict[Span, int] = {}
    for number, sentence in enumerate(sentences):
        for word in sentence:
            if word.span in index_of:
                raise ValueError(
                    f"{side} sentence {number}: two words share the span {word.span}; each "
                    "token must appear once (multi-word tokens are not supported)"
                )
            index_of[word.span] = len(words)
            words.append(word)
            sentence_of.append(number)
    head_of: list[int | None] = []
    for i, word in enumerate(words):
        governor = word.governor
        if governor is None:
            head_of.append(None)
            continue
        head = index_of.get(governor)
        if head is None or sentence_of[head] != sentence_of[i]:
            raise ValueError(
                f"{side} sentence {sentence_of[i]}: the head {word.head} of word {word.span} "
                "is not a word of the same sentence; check the Dependency annotations"
            )
        head_of.append(head)
    return _Indexed(words, sentence_of, head_of, index_of)


def _word_text(text: str | None, span: Span | None) -> str | None:
    if text is None or span is None:
        return None
    return text[span[0] : span[1]]


def dependency_counts(
    gold: Sequence[Sequence[DepWord]],
    system: Sequence[Sequence[DepWord]],
    *,
    punctuation: PunctuationPolicy = INCLUDE_PUNCTUATION,
    label_key: Callable[[str], str] = universal_deprel,
    text: str | None = None,
) -> EvaluationResult:
    """Counts for one document; ``units`` holds the same counts per gold sentence."""
    g = _index(gold, "gold")
    s = _index(system, "system")
    if not all(word.attached for word in g.words):
        raise ValueError("gold words must all be attached; only system words may be unattached")
    gold_of_system = [g.index_of.get(word.span) for word in s.words]
    system_of_gold: dict[int, int] = {
        gi: si for si, gi in enumerate(gold_of_system) if gi is not None
    }

    gold_scored = [not punctuation.excludes(word) for word in g.words]
    system_scored = [
        gold_scored[gi] if gi is not None else not punctuation.excludes(word)
        for word, gi in zip(s.words, gold_of_system, strict=True)
    ]

    n_sentences = len(gold)
    per_sentence: list[Counts] = [dict.fromkeys(_raw_keys(), 0.0) for _ in range(n_sentences)]
    errors: list[dict[str, Any]] = []

    for gi, word in enumerate(g.words):
        if not gold_scored[gi]:
            continue
        unit = per_sentence[g.sentence_of[gi]]
        for metric in METRICS:
            unit[f"{metric}/gold"] += 1
        si = system_of_gold.get(gi)
        if si is None:
            errors.append(_dep_error("unaligned", word, None, text))
            continue
        guess = s.words[si]
        if guess.attached:
            system_head = s.head_of[si]
            # The system head, seen as a gold word: None = root, -1 = not aligned.
            head_as_gold = None if system_head is None else gold_of_system[system_head]
            if system_head is not None and head_as_gold is None:
                head_as_gold = -1
            head_ok = head_as_gold == g.head_of[gi]
            label_ok = label_key(word.deprel) == label_key(guess.deprel)
        else:
            head_ok = label_ok = False
        for metric, ok in (
            ("words", True),
            ("uas", head_ok),
            ("las", head_ok and label_ok),
            ("ls", label_ok),
        ):
            unit[f"{metric}/aligned"] += 1
            unit[f"{metric}/correct"] += int(ok)
        if not (head_ok and label_ok):
            kind = (
                "unattached"
                if not guess.attached
                else "head+label"
                if not (head_ok or label_ok)
                else ("head" if not head_ok else "label")
            )
            errors.append(_dep_error(kind, word, guess, text))

    gold_starts = [min((w.begin for w in sentence), default=None) for sentence in gold]
    sentence_starts = sorted((start, n) for n, start in enumerate(gold_starts) if start is not None)
    start_positions = [start for start, _ in sentence_starts]
    orphan_counts: Counts = dict.fromkeys(_raw_keys(), 0.0)
    for si, word in enumerate(s.words):
        if not system_scored[si]:
            continue
        position = bisect.bisect_right(start_positions, word.begin) - 1
        if sentence_starts:
            unit = per_sentence[sentence_starts[max(position, 0)][1]]
        else:
            unit = orphan_counts  # no gold words at all: system words still count in micro
        for metric in METRICS:
            unit[f"{metric}/system"] += 1
        if gold_of_system[si] is None:
            errors.append(_dep_error("spurious", word, word, text, side="system"))

    units = [_with_macro(unit) for unit in per_sentence]
    counts: Counts = {}
    for unit in [*units, orphan_counts]:
        for key, value in unit.items():
            counts[key] = counts.get(key, 0) + value
    return EvaluationResult(counts=counts, units=units, errors=errors)


def _raw_keys() -> list[str]:
    return [f"{m}/{k}" for m in METRICS for k in ("correct", "gold", "system", "aligned")]


def _with_macro(unit: Counts) -> Counts:
    """Add this sentence's scores as summable macro terms (skipped if it has no words)."""
    out = dict(unit)
    for metric in METRICS:
        correct, gold_n, system_n = (unit[f"{metric}/{k}"] for k in ("correct", "gold", "system"))
        scored = 1 if gold_n + system_n else 0
        out[f"{metric}/macro/sentences"] = scored
        out[f"{metric}/macro/precision_sum"] = safe_div(correct, system_n) * scored
        out[f"{metric}/macro/recall_sum"] = safe_div(correct, gold_n) * scored
        out[f"{metric}/macro/f1_sum"] = safe_div(2 * correct, gold_n + system_n)
    return out


def _dep_error(
    kind: str, word: DepWord, guess: DepWord | None, text: str | None, side: str = "gold"
) -> dict[str, Any]:
    error: dict[str, Any] = {"type": kind, "side": side, "begin": word.begin, "end": word.end}
    if side == "gold":
        error.update(gold_head=word.governor, gold_deprel=word.deprel)
    if guess is not None and guess.attached:
        error.update(
            system_head=guess.governor,
            system_deprel=guess.deprel,
        )
    if text is not None:
        error["text"] = _word_text(text, word.span)
    return error


def score_dependencies(counts: Mapping[str, float]) -> dict[str, dict[str, Any]]:
    """Micro and macro scores per metric (``words``, ``uas``, ``las``, ``ls``) from summed counts."""
    scores: dict[str, dict[str, Any]] = {}
    for metric in METRICS:
        correct, gold_n, system_n, aligned = (
            counts.get(f"{metric}/{k}", 0) for k in ("correct", "gold", "system", "aligned")
        )
        sentences = counts.get(f"{metric}/macro/sentences", 0)
        scores[metric] = {
            "precision": safe_div(correct, system_n),
            "recall": safe_div(correct, gold_n),
            "f1": safe_div(2 * correct, gold_n + system_n),
            "aligned_accuracy": safe_div(correct, aligned),
            "correct": correct,
            "gold": gold_n,
            "system": system_n,
            "aligned": aligned,
            "macro": {
                name: safe_div(counts.get(f"{metric}/macro/{name}_sum", 0), sentences)
                for name in ("precision", "recall", "f1")
            }
            | {"sentences": sentences},
        }
    return scores
