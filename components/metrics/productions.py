"""Production-based precision/recall with closest-match error classes.

After the production-based evaluation of Clegg & Shepherd (2005), "Evaluating
and integrating treebank parsers on a biomedical corpus". The paper itself
was not available to check; this is what is implemented:

- Trees are pruned of preterminals tagged ``delete_tags`` (default ``-NONE-``)
  and of nodes left empty; labels are categories (``NP-SBJ-1`` -> ``NP``).
- Every phrasal node gives a production ``(parent, daughters, start, end)``:
  its category, the categories of its children in order (POS tags for
  preterminal children) and its word span (end exclusive). A root labelled
  ``""``, ``TOP`` or ``ROOT`` gives none. Preterminals give none.
- Matched = multiset intersection of gold and test productions; precision =
  matched / test, recall = matched / gold.
- Each unmatched gold production ("missing") is classified by its closest
  unmatched test production, and each unmatched test production ("extra") by
  its closest unmatched gold one. Candidates are ranked by how many of span,
  parent label and daughters differ, then in this order:

  1 difference   ``wrong_daughters``  same span and parent label;
                 ``wrong_label``  same span and daughters;
                 ``extension_all_match`` / ``truncation_all_match``  same
                 parent label and daughters, the test span strictly contains /
                 lies strictly inside the gold span;
  2 differences  ``wrong_label_and_daughters``  same span only;
                 ``extension_parent_match`` / ``truncation_parent_match``
                 nested spans, same parent label only;
  otherwise      ``no_match``.

  Among extensions/truncations the smaller difference in length wins
  (extension first on a tie). "Extension" always means the test span is the
  larger, for missing and extra productions alike. A production may be the
  closest match of several others: classes explain errors, they are not an
  alignment. The classes of the missing productions add up to gold - matched,
  those of the extra ones to test - matched. A candidate whose span differs
  must have the same parent label and a nested span: crossing spans never count.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from casflow.components.formats.penn.parse import Tree, category, constituent_spans, prune
from casflow.pipeline.counts import Counts, prf, safe_div

PREFIX = "productions"
ROOT_LABELS = frozenset({"", "TOP", "ROOT"})
DEFAULT_DELETE_TAGS = frozenset({"-NONE-"})

ERROR_CLASSES = (
    "wrong_daughters",
    "wrong_label",
    "extension_all_match",
    "truncation_all_match",
    "wrong_label_and_daughters",
    "extension_parent_match",
    "truncation_parent_match",
    "no_match",
)
COUNT_NAMES = (
    "sentences",
    "valid",
    "skipped_length",
    "skipped_words",
    "skipped_empty",
    "matched",
    "gold",
    "test",
)


@dataclass(frozen=True, order=True)
class Production:
    parent: str
    daughters: tuple[str, ...]
    start: int
    end: int

    def __str__(self) -> str:
        return f"{self.parent}[{self.start}:{self.end}] -> {' '.join(self.daughters)}"

    def rule(self) -> str:
        """The production without its span: ``NP -> DT NN``."""
        return f"{self.parent} -> {' '.join(self.daughters)}"


#: Counts of a missed gold production and what was built instead: ``instead/<gold> => <test>``.
INSTEAD = "instead"
ARROW = " => "
NOTHING = "(nothing near it)"


def _rule(production: Production | None) -> str:
    return production.rule() if production is not None else NOTHING


def productions(
    tree: Tree, delete_tags: Iterable[str] = DEFAULT_DELETE_TAGS
) -> tuple[list[str], Counter[Production]]:
    """The words left after pruning and the multiset of the tree's productions."""
    pruned = prune(tree, delete_tags)
    return ([], Counter()) if pruned is None else pruned_productions(pruned)


def pruned_productions(pruned: Tree) -> tuple[list[str], Counter[Production]]:
    """:func:`productions` of a tree already pruned (no empty nodes)."""
    found: Counter[Production] = Counter()
    words: list[str] = []
    for node, start, end in constituent_spans(pruned):
        if node.word is not None:
            words.append(node.word)
            continue
        if node is pruned and category(node.label) in ROOT_LABELS:
            continue
        daughters = tuple(category(child.label) for child in node.children)
        found[Production(category(node.label), daughters, start, end)] += 1
    return words, found


def classify(
    production: Production, candidates: Iterable[Production], missing: bool
) -> tuple[str, Production | None]:
    """Error class of an unmatched production and its closest candidate.

    ``missing``: the production is gold and the candidates are test productions
    (else the reverse); it only decides which span counts as the test span.
    """
    best: tuple[tuple[int, ...], str, Production] | None = None
    rank: tuple[int, ...]
    for other in candidates:
        same_parent = other.parent == production.parent
        same_daughters = other.daughters == production.daughters
        # Rank: number of differing aspects (span, label, daughters) first.
        if (other.start, other.end) == (production.start, production.end):
            if same_parent:
                rank, name = (1, 0), "wrong_daughters"
            elif same_daughters:
                rank, name = (1, 1), "wrong_label"
            else:
                rank, name = (2, 0), "wrong_label_and_daughters"
        elif same_parent:
            gold, test = (production, other) if missing else (other, production)
            if test.start <= gold.start and gold.end <= test.end:
                direction = 0
            elif gold.start <= test.start and test.end <= gold.end:
                direction = 1
            else:
                continue
            length_difference = abs((test.end - test.start) - (gold.end - gold.start))
            prefix = ("extension", "truncation")[direction]
            if same_daughters:
                rank, name = (1, 2, length_difference, direction), f"{prefix}_all_match"
            else:
                rank, name = (2, 1, length_difference, direction), f"{prefix}_parent_match"
        else:
            continue
        if best is None or rank < best[0]:
            best = (rank, name, other)
    if best is None:
        return "no_match", None
    return best[1], best[2]


@dataclass
class ProductionResult:
    """One sentence's production matching."""

    status: str
    matched: int = 0
    gold: int = 0
    test: int = 0
    missing: list[tuple[Production, str, Production | None]] = field(default_factory=list)
    extra: list[tuple[Production, str, Production | None]] = field(default_factory=list)

    def counts(self, prefix: str = PREFIX) -> Counts:
        values = {
            "sentences": 1,
            "valid": int(self.status == "ok"),
            "skipped_length": int(self.status == "skipped_length"),
            "skipped_words": int(self.status == "skipped_words"),
            "skipped_empty": int(self.status == "skipped_empty"),
            "matched": self.matched,
            "gold": self.gold,
            "test": self.test,
        }
        counts: Counts = {f"{prefix}/{name}": values[name] for name in COUNT_NAMES}
        for side, errors in (("missing", self.missing), ("extra", self.extra)):
            by_class = Counter(name for _, name, _ in errors)
            for name in ERROR_CLASSES:
                counts[f"{prefix}/{side}/{name}"] = by_class[name]
        # Which gold productions are missed and what the parser built in their place (the
        # closest test production), summed over documents like every other count.
        for production, _, closest in self.missing:
            key = f"{prefix}/{INSTEAD}/{production.rule()}{ARROW}{_rule(closest)}"
            counts[key] = counts.get(key, 0) + 1
        return counts

    def errors(self) -> list[dict[str, str | None]]:
        """JSON-ready error records for error analysis."""
        return [
            {
                "side": side,
                "class": name,
                "production": str(production),
                "closest": str(closest) if closest is not None else None,
            }
            for side, errors in (("missing", self.missing), ("extra", self.extra))
            for production, name, closest in errors
        ]


def evaluate_productions(
    gold: Tree, test: Tree | None, delete_tags: Iterable[str] = DEFAULT_DELETE_TAGS
) -> ProductionResult:
    """Match the productions of one test tree against its gold tree (``test=None``: no parse)."""
    delete_tags = frozenset(delete_tags)
    return compare_productions(
        productions(gold, delete_tags),
        productions(test, delete_tags) if test is not None else ([], Counter()),
    )


def compare_productions(
    gold: tuple[list[str], Counter[Production]], test: tuple[list[str], Counter[Production]]
) -> ProductionResult:
    """Match one sentence's test productions against its gold ones (each the words and
    productions :func:`productions` gives; no test tree: no words)."""
    gold_words, gold_productions = gold
    test_words, test_productions = test
    if not gold_words or not test_words:
        return ProductionResult("skipped_empty")
    if len(gold_words) != len(test_words):
        return ProductionResult("skipped_length")
    if gold_words != test_words:
        return ProductionResult("skipped_words")
    missing = gold_productions - test_productions
    extra = test_productions - gold_productions
    return ProductionResult(
        status="ok",
        matched=sum((gold_productions & test_productions).values()),
        gold=sum(gold_productions.values()),
        test=sum(test_productions.values()),
        missing=[(p, *classify(p, extra, missing=True)) for p in sorted(missing.elements())],
        extra=[(p, *classify(p, missing, missing=False)) for p in sorted(extra.elements())],
    )


def production_counts(
    gold: Tree,
    test: Tree | None,
    delete_tags: Iterable[str] = DEFAULT_DELETE_TAGS,
    prefix: str = PREFIX,
) -> Counts:
    """Additive production counts for one sentence."""
    return evaluate_productions(gold, test, delete_tags).counts(prefix)


def score_productions(counts: Mapping[str, float], prefix: str = PREFIX) -> dict:
    """Precision/recall/F and the error classes (counts and shares) from summed counts."""

    def get(name: str) -> float:
        return counts.get(f"{prefix}/{name}", 0)

    matched, gold, test = get("matched"), get("gold"), get("test")
    result: dict = prf(matched, test - matched, gold - matched)
    result.update(
        sentences=get("sentences"),
        valid_sentences=get("valid"),
        skipped_sentences=get("skipped_length") + get("skipped_words") + get("skipped_empty"),
        matched=matched,
        gold=gold,
        test=test,
    )
    for side, total in (("missing", gold - matched), ("extra", test - matched)):
        result[side] = {name: get(f"{side}/{name}") for name in ERROR_CLASSES}
        result[f"{side}_share"] = {
            name: safe_div(get(f"{side}/{name}"), total) for name in ERROR_CLASSES
        }
    start = f"{prefix}/{INSTEAD}/"
    pairs: list[tuple[str, str, float]] = []
    for key, value in counts.items():
        if key.startswith(start) and value:
            gold_rule, _, test_rule = key[len(start) :].partition(ARROW)
            pairs.append((gold_rule, test_rule, value))
    # Most frequent first; ties in a fixed order.
    pairs.sort(key=lambda pair: (-pair[2], pair[0], pair[1]))
    result["instead"] = [
        {"gold": gold_rule, "instead": test_rule, "count": count}
        for gold_rule, test_rule, count in pairs[:TOP_INSTEAD]
    ]
    return result


#: How many (missed production, built instead) pairs the scores list.
TOP_INSTEAD = 20
