"""PARSEVAL labelled-bracket scoring, computed as EVALB (Sekine & Collins) does.

Follows evalb.c (2006 version with the F-measure) with a parameter set; the
default is COLLINS.prm:

- Preterminals whose tag is in ``DELETE_LABEL`` (TOP, -NONE-, ``, :`` `` '' .``)
  are removed with their word (exact string match). Brackets are spans over the
  remaining word positions; a bracket spanning no word is dropped.
- A bracket label is cut at its first ``-`` or ``=`` (``NP-SBJ-1`` -> ``NP``);
  brackets whose cut label is in ``DELETE_LABEL`` (e.g. TOP) are not counted.
  The outermost unlabeled bracket of ``( (S ...) )`` trees (the way most
  treebanks, CRAFT among them, are written) is counted with an empty label, as
  EVALB counts it: no parameter file can delete an empty label. So every scored
  sentence has one more matched, gold and test bracket than its phrases.
  ``outer_bracket=False`` drops that bracket, which is what EVALB gives when
  the wrapper is written ``TOP`` and TOP is deleted (COLLINS.prm); a labelled
  root such as ``(S ...)`` without wrapper is always counted.
- ``EQ_LABEL ADVP PRT``: equivalent labels, for brackets and tags alike.
- Matching is on (start, end, label) as multisets: n gold and m test copies of
  one bracket match min(n, m) times, as EVALB's greedy one-to-one matching.
- Crossing: test brackets that cross at least one gold bracket.
- Tagging accuracy: tags of the words left after deletion, position by position.
- A sentence is not scored (EVALB status 2, "skip") when the test tree is
  missing or has no word left, and is an error (status 1) when the word counts
  differ or a word differs (``EQ_WORD`` pairs aside); both are counted.
- Sentence length for the cutoff (EVALB's "len<=40") counts the gold words
  whose tag is not in ``DELETE_LABEL_FOR_LENGTH`` (punctuation included).

- ``QUOTE_LABEL`` (EVALB 2006, set by its ``new.prm``, not by COLLINS.prm): when the
  word counts differ, a ``'``, ``"`` or ``/`` tagged with a quote label that one
  side deletes (``''``) and the other keeps (``POS``) at the same position is put
  back into the side that deleted it, brackets widened around it, as evalb.c's
  ``fix_quote`` does (its quirks included); the sentence is then scored if the
  counts agree.

Not implemented: MAX_ERROR. EQ_LABEL/EQ_WORD pairs are closed transitively
(EVALB compares pair by pair; the same for disjoint pairs such as COLLINS').

Per-sentence results become additive counts (``parseval/matched``,
``parseval/gold``, ...; the same under ``parseval/len<=40/`` for the cutoff);
:func:`score_parseval` computes EVALB's summary and the mean of per-sentence F
(the figure the CRAFT paper reports) from summed counts.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from casflow.components.formats.penn.parse import Tree
from casflow.pipeline.counts import Counts, safe_div

PREFIX = "parseval"

# Per-sentence count names; every sentence emits all of them.
COUNT_NAMES = (
    "sentences",
    "valid",
    "skipped_length",
    "skipped_words",
    "skipped_empty",
    "matched",
    "gold",
    "test",
    "crossing",
    "no_crossing",
    "two_or_less_crossing",
    "complete_match",
    "words",
    "correct_tags",
    "sentence_f_sum",
)

STATUS_OK = "ok"
STATUS_LENGTH = "skipped_length"  # EVALB status 1 "Length unmatch"
STATUS_WORDS = "skipped_words"  # EVALB status 1 "Words unmatch"
STATUS_EMPTY = "skipped_empty"  # EVALB status 2: no test parse / no test word


@dataclass(frozen=True)
class EvalbParams:
    """An EVALB parameter (.prm) file's settings."""

    delete_labels: frozenset[str] = frozenset({"TOP", "-NONE-", ",", ":", "``", "''", "."})
    delete_labels_for_length: frozenset[str] = frozenset({"-NONE-"})
    eq_labels: tuple[tuple[str, str], ...] = (("ADVP", "PRT"),)
    eq_words: tuple[tuple[str, str], ...] = ()
    labeled: bool = True
    cutoff_len: int | None = 40
    quote_labels: frozenset[str] = frozenset()


COLLINS_PARAMS = EvalbParams()


def parse_evalb_params(text: str) -> EvalbParams:
    """Read the scoring settings of an EVALB .prm file (DEBUG/MAX_ERROR ignored)."""
    delete: set[str] = set()
    quote: set[str] = set()
    delete_for_length: set[str] = set()
    eq_labels: list[tuple[str, str]] = []
    eq_words: list[tuple[str, str]] = []
    labeled = True
    cutoff: int | None = 40
    for line_number, raw in enumerate(text.split("\n"), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, _, value = line.partition(" ")
        value = value.strip()
        if key == "DELETE_LABEL":
            delete.add(value)
        elif key == "DELETE_LABEL_FOR_LENGTH":
            delete_for_length.add(value)
        elif key in ("EQ_LABEL", "EQ_WORD"):
            pair = value.split()
            if len(pair) != 2:
                raise ValueError(f".prm line {line_number}: {key} needs two values, got {value!r}")
            (eq_labels if key == "EQ_LABEL" else eq_words).append((pair[0], pair[1]))
        elif key == "LABELED":
            labeled = int(value) != 0
        elif key == "CUTOFF_LEN":
            cutoff = int(value)
        elif key == "QUOTE_LABEL":
            quote.add(value)
        elif key in ("DEBUG", "MAX_ERROR"):
            continue
        else:
            raise ValueError(f".prm line {line_number}: unknown keyword {key!r}")
    return EvalbParams(
        delete_labels=frozenset(delete),
        delete_labels_for_length=frozenset(delete_for_length),
        eq_labels=tuple(eq_labels),
        eq_words=tuple(eq_words),
        labeled=labeled,
        cutoff_len=cutoff,
        quote_labels=frozenset(quote),
    )


def _equivalence(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Map each string in ``pairs`` to one representative of its equivalence class."""
    parent: dict[str, str] = {}

    def find(item: str) -> str:
        while parent.setdefault(item, item) != item:
            item = parent[item]
        return item

    for first, second in pairs:
        root_first, root_second = find(first), find(second)
        if root_first != root_second:
            parent[max(root_first, root_second)] = min(root_first, root_second)
    return {item: find(item) for item in parent}


_LABEL_CUT = re.compile(r"[-=]")


def evalb_label(label: str) -> str:
    """EVALB's modify_label: the label up to its first ``-`` or ``=``."""
    return _LABEL_CUT.split(label, maxsplit=1)[0]


Bracket = tuple[int, int, str]  # (start, end) word positions, end exclusive; label


@dataclass
class _Yield:
    """What EVALB reads from one tree."""

    words: list[str]
    tags: list[str]
    length: int  # words not deleted for length (the cutoff length)
    brackets: Counter[Bracket]


def _read_tree(
    tree: Tree, params: EvalbParams, label_class: Mapping[str, str], outer_bracket: bool
) -> _Yield:
    words: list[str] = []
    tags: list[str] = []
    length = 0
    brackets: Counter[Bracket] = Counter()
    deleted = {label_class.get(label, label) for label in params.delete_labels}
    # Iterative walk: (node, start) on entry, then an exit marker closes the span.
    stack: list[tuple[Tree, int | None]] = [(tree, None)]
    while stack:
        node, start = stack.pop()
        if start is not None:
            if len(words) > start and (outer_bracket or node is not tree or node.label):
                cut = evalb_label(node.label)
                label = label_class.get(cut, cut)
                if label not in deleted:
                    brackets[(start, len(words), label if params.labeled else "")] += 1
            continue
        if node.word is not None:
            if node.label not in params.delete_labels_for_length:
                length += 1
            if node.label not in params.delete_labels:
                words.append(node.word)
                tags.append(node.label)
            continue
        stack.append((node, len(words)))
        stack.extend((child, None) for child in reversed(node.children))
    return _Yield(words, tags, length, brackets)


# The words evalb.c's is_quote_term accepts under a QUOTE_LABEL tag.
QUOTE_WORDS = frozenset({"'", '"', "/"})


@dataclass
class _QuoteTerm:
    """A quote terminal as evalb.c's read_line records it (deleted or not)."""

    word: str
    label: str
    index: int  # words kept before it: where it is, or would be put back
    bracket: int  # brackets opened before it (pre-order number of the next one)
    ends: tuple[int, ...]  # the brackets open around it


@dataclass
class _Arrays:
    """One tree as evalb.c's arrays: kept words, pre-order brackets, quote terms."""

    words: list[str]
    tags: list[str]
    brackets: list[list[Any]]  # [start, end, label as written], pre-order
    quotes: list[_QuoteTerm]


def _read_arrays(tree: Tree, params: EvalbParams) -> _Arrays:
    words: list[str] = []
    tags: list[str] = []
    brackets: list[list[Any]] = []
    quotes: list[_QuoteTerm] = []
    open_brackets: list[int] = []
    stack: list[tuple[Tree, bool]] = [(tree, False)]
    while stack:
        node, closing = stack.pop()
        if closing:
            brackets[open_brackets.pop()][1] = len(words)
            continue
        if node.word is not None:
            if node.label in params.quote_labels and node.word in QUOTE_WORDS:
                quote = _QuoteTerm(
                    node.word, node.label, len(words), len(brackets), tuple(open_brackets)
                )
                quotes.append(quote)
            if node.label not in params.delete_labels:
                words.append(node.word)
                tags.append(node.label)
            continue
        open_brackets.append(len(brackets))
        brackets.append([len(words), len(words), node.label])
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(node.children))
    return _Arrays(words, tags, brackets, quotes)


def _reinsert(quote: _QuoteTerm, side: _Arrays) -> None:
    """evalb.c's reinsert_term: the deleted quote word back at its index."""
    side.words.insert(quote.index, quote.word)
    side.tags.insert(quote.index, quote.label)
    for number, bracket in enumerate(side.brackets):
        if number >= quote.bracket:
            bracket[0] += 1
            bracket[1] += 1
    for number in quote.ends:
        side.brackets[number][1] += 1


def _fix_quote(gold: _Arrays, test: _Arrays, deleted: frozenset[str]) -> None:
    """evalb.c's fix_quote, step for step: a quote term at the same index with another
    tag, deleted on one side only, is put back there; that side's later quote terms
    (and itself) move one index on. Tags are compared as written (no EQ_LABEL)."""
    for i, test_quote in enumerate(test.quotes):
        index = test_quote.index
        for j, gold_quote in enumerate(gold.quotes):
            if gold_quote.index != index or gold_quote.label == test_quote.label:
                continue
            if gold_quote.label in deleted and test_quote.label not in deleted:
                _reinsert(gold_quote, gold)
                for later in gold.quotes[j:]:
                    later.index += 1
            elif test_quote.label in deleted and gold_quote.label not in deleted:
                _reinsert(test_quote, test)
                for later in test.quotes[i:]:
                    later.index += 1


def _counted_brackets(
    arrays: _Arrays, params: EvalbParams, label_class: Mapping[str, str], outer_bracket: bool
) -> Counter[Bracket]:
    """The brackets EVALB scores (massage_data), as ``_read_tree`` counts them."""
    deleted = {label_class.get(label, label) for label in params.delete_labels}
    counted: Counter[Bracket] = Counter()
    for number, (start, end, written) in enumerate(arrays.brackets):
        if start == end or (number == 0 and not outer_bracket and not written):
            continue
        cut = evalb_label(written)
        label = label_class.get(cut, cut)
        if label not in deleted:
            counted[(start, end, label if params.labeled else "")] += 1
    return counted


def _crosses(first: tuple[int, int], second: tuple[int, int]) -> bool:
    (a_start, a_end), (b_start, b_end) = first, second
    return (a_start < b_start < a_end < b_end) or (b_start < a_start < b_end < a_end)


@dataclass
class SentenceResult:
    """EVALB's line for one sentence, plus the unmatched brackets."""

    status: str
    length: int
    matched: int = 0
    gold: int = 0
    test: int = 0
    crossing: int = 0
    words: int = 0
    correct_tags: int = 0
    missing: list[Bracket] = field(default_factory=list)  # gold brackets not in test
    extra: list[Bracket] = field(default_factory=list)  # test brackets not in gold

    @property
    def valid(self) -> bool:
        return self.status == STATUS_OK

    @property
    def recall(self) -> float:
        return safe_div(self.matched, self.gold)

    @property
    def precision(self) -> float:
        return safe_div(self.matched, self.test)

    @property
    def f1(self) -> float:
        """2PR/(P+R) = 2*matched/(gold+test); 1.0 when neither tree has a bracket."""
        if self.gold + self.test == 0:
            return 1.0
        return 2 * self.matched / (self.gold + self.test)

    @property
    def complete_match(self) -> bool:
        return self.gold == self.test == self.matched

    def counts(self, prefix: str = PREFIX, cutoff_len: int | None = 40) -> Counts:
        """Additive counts under ``prefix/``, and under ``prefix/len<=N/`` if within the cutoff."""
        valid = self.valid
        values = {
            "sentences": 1,
            "valid": int(valid),
            "skipped_length": int(self.status == STATUS_LENGTH),
            "skipped_words": int(self.status == STATUS_WORDS),
            "skipped_empty": int(self.status == STATUS_EMPTY),
            "matched": self.matched,
            "gold": self.gold,
            "test": self.test,
            "crossing": self.crossing,
            "no_crossing": int(valid and self.crossing == 0),
            "two_or_less_crossing": int(valid and self.crossing <= 2),
            "complete_match": int(valid and self.complete_match),
            "words": self.words,
            "correct_tags": self.correct_tags,
            "sentence_f_sum": self.f1 if valid else 0.0,
        }
        counts: Counts = {f"{prefix}/{name}": values[name] for name in COUNT_NAMES}
        if cutoff_len is not None:
            within = self.length <= cutoff_len
            for name in COUNT_NAMES:
                counts[f"{prefix}/len<={cutoff_len}/{name}"] = values[name] if within else 0
        return counts


def evaluate_parseval(
    gold: Tree,
    test: Tree | None,
    params: EvalbParams = COLLINS_PARAMS,
    outer_bracket: bool = True,
) -> SentenceResult:
    """Score one test tree against its gold tree (``test=None``: no parse).

    ``outer_bracket``: count the unlabeled root bracket of ``( (S ...) )`` trees, as
    EVALB does (see the module notes); False drops it.
    """
    label_class = _equivalence(params.eq_labels)
    gold_yield = _read_tree(gold, params, label_class, outer_bracket)
    if test is None:
        return SentenceResult(STATUS_EMPTY, gold_yield.length)
    test_yield = _read_tree(test, params, label_class, outer_bracket)
    if not test_yield.words:
        return SentenceResult(STATUS_EMPTY, gold_yield.length)
    if len(gold_yield.words) != len(test_yield.words):
        if not params.quote_labels:
            return SentenceResult(STATUS_LENGTH, gold_yield.length)
        gold_arrays, test_arrays = _read_arrays(gold, params), _read_arrays(test, params)
        _fix_quote(gold_arrays, test_arrays, params.delete_labels)
        if len(gold_arrays.words) != len(test_arrays.words):
            return SentenceResult(STATUS_LENGTH, gold_yield.length)
        gold_yield, test_yield = (
            _Yield(
                arrays.words,
                arrays.tags,
                read.length,
                _counted_brackets(arrays, params, label_class, outer_bracket),
            )
            for arrays, read in ((gold_arrays, gold_yield), (test_arrays, test_yield))
        )
    word_class = _equivalence(params.eq_words)
    for gold_word, test_word in zip(gold_yield.words, test_yield.words, strict=True):
        if word_class.get(gold_word, gold_word) != word_class.get(test_word, test_word):
            return SentenceResult(STATUS_WORDS, gold_yield.length)

    gold_brackets, test_brackets = gold_yield.brackets, test_yield.brackets
    matched = sum((gold_brackets & test_brackets).values())
    gold_spans = {(start, end) for start, end, _ in gold_brackets}
    crossing = sum(
        count
        for (start, end, _), count in test_brackets.items()
        if any(_crosses((start, end), span) for span in gold_spans)
    )
    correct_tags = sum(
        label_class.get(gold_tag, gold_tag) == label_class.get(test_tag, test_tag)
        for gold_tag, test_tag in zip(gold_yield.tags, test_yield.tags, strict=True)
    )
    return SentenceResult(
        status=STATUS_OK,
        length=gold_yield.length,
        matched=matched,
        gold=sum(gold_brackets.values()),
        test=sum(test_brackets.values()),
        crossing=crossing,
        words=len(gold_yield.words),
        correct_tags=correct_tags,
        missing=sorted((gold_brackets - test_brackets).elements()),
        extra=sorted((test_brackets - gold_brackets).elements()),
    )


def parseval_counts(
    gold: Tree,
    test: Tree | None,
    params: EvalbParams = COLLINS_PARAMS,
    prefix: str = PREFIX,
    outer_bracket: bool = True,
) -> Counts:
    """Additive PARSEVAL counts for one sentence (see :meth:`SentenceResult.counts`)."""
    return evaluate_parseval(gold, test, params, outer_bracket).counts(prefix, params.cutoff_len)


_CUTOFF_GROUP = re.compile(r"^len<=(\d+)/sentences$")


def score_parseval(counts: Mapping[str, float], prefix: str = PREFIX) -> dict:
    """EVALB's summary from summed counts, as fractions (EVALB prints percentages).

    Cutoff groups found under ``prefix/len<=N/`` are scored into ``result["len<=N"]``.
    """

    def get(name: str) -> float:
        return counts.get(f"{prefix}/{name}", 0)

    valid = get("valid")
    recall = safe_div(get("matched"), get("gold"))
    precision = safe_div(get("matched"), get("test"))
    result: dict = {
        "sentences": get("sentences"),
        "error_sentences": get("skipped_length") + get("skipped_words"),
        "skip_sentences": get("skipped_empty"),
        "valid_sentences": valid,
        "matched": get("matched"),
        "gold": get("gold"),
        "test": get("test"),
        "recall": recall,
        "precision": precision,
        "f1": safe_div(2 * precision * recall, precision + recall),
        "complete_match": safe_div(get("complete_match"), valid),
        "average_crossing": safe_div(get("crossing"), valid),
        "no_crossing": safe_div(get("no_crossing"), valid),
        "two_or_less_crossing": safe_div(get("two_or_less_crossing"), valid),
        "words": get("words"),
        "correct_tags": get("correct_tags"),
        "tagging_accuracy": safe_div(get("correct_tags"), get("words")),
        "mean_sentence_f1": safe_div(get("sentence_f_sum"), valid),
    }
    start = f"{prefix}/"
    for key in counts:
        if key.startswith(start) and (group := _CUTOFF_GROUP.match(key[len(start) :])):
            result[f"len<={group.group(1)}"] = score_parseval(
                counts, f"{prefix}/len<={group.group(1)}"
            )
    return result
