"""Leaf-ancestor (LA) metric of Sampson (2000) and Sampson & Babarczy (2003).

Conventions (the same as the disco-dop implementation, which served as reference):

- Trees are first pruned of the preterminals whose tag is in ``delete_tags``
  (default ``-NONE-`` only: punctuation words are scored like any other word)
  and of the nodes left empty. Pass ``delete_tags=COLLINS_DELETE_TAGS`` to
  drop punctuation as EVALB's COLLINS.prm does.
- Labels are categories: function tags and indices are stripped
  (``NP-SBJ-1`` -> ``NP``; ``-NONE-``, ``-LRB-`` stay whole).
- A word's lineage lists the phrasal labels from its lowest constituent up to
  the root, leaf first. POS tags are not in it (``include_tags=True`` adds the
  tag as the lowest element; tags never carry boundary markers). A root
  labelled ``""`` (the treebank's outer bracket), ``TOP`` or ``ROOT`` is left out.
- Boundary markers: ``[`` goes just below (leaf side of) the highest node whose
  first word the word is; ``]`` just above (root side of) the highest node whose
  last word it is. Single-word constituents count, so in
  ``(S (NP (NN it)) (VP (VBD rained)))`` "it" has ``NP ] [ S`` and "rained"
  has ``[ VP S ]``.
- Word score = 1 - Levenshtein(gold, test) / (len(gold) + len(test)), with
  insertion, deletion and substitution each costing 1; 1.0 when both are empty.
- A sentence is scored only when both trees have the same words (after
  pruning); otherwise it is counted as skipped (length or word mismatch, or no
  test tree / no word).

Scores from summed counts: corpus score = mean over all scored words;
mean sentence score = mean over scored sentences of the mean of their words.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from casflow.components.formats.penn.parse import Tree, category, prune
from casflow.pipeline.counts import Counts, safe_div

PREFIX = "leaf_ancestor"
LEFT_BOUNDARY = "["
RIGHT_BOUNDARY = "]"
ROOT_LABELS = frozenset({"", "TOP", "ROOT"})
DEFAULT_DELETE_TAGS = frozenset({"-NONE-"})
COLLINS_DELETE_TAGS = frozenset({"-NONE-", ",", ":", "``", "''", "."})

COUNT_NAMES = (
    "sentences",
    "valid",
    "skipped_length",
    "skipped_words",
    "skipped_empty",
    "words",
    "word_score_sum",
    "exact_words",
    "sentence_score_sum",
    "exact_sentences",
)


def lineages(
    tree: Tree,
    delete_tags: Iterable[str] = DEFAULT_DELETE_TAGS,
    include_tags: bool = False,
) -> list[tuple[str, list[str]]]:
    """``(word, lineage)`` for each word left after pruning; lineage is leaf first."""
    pruned = prune(tree, delete_tags)
    return [] if pruned is None else pruned_lineages(pruned, include_tags)


def pruned_lineages(pruned: Tree, include_tags: bool = False) -> list[tuple[str, list[str]]]:
    """:func:`lineages` of a tree already pruned (no empty nodes)."""
    result: list[tuple[str, list[str]]] = []
    # Top-down walk carrying each node's phrasal ancestors (categories, root first) and
    # the depth among them of the highest one whose first (last) word is the node's
    # first (last) word, where the boundary markers go. A node shares its first word
    # with its parent only as the first child (last word: last child), so that depth
    # passes down the first (last) children and is None for the others.
    stack: list[tuple[Tree, tuple[str, ...], int | None, int | None]] = [(pruned, (), None, None)]
    while stack:
        node, ancestors, first_top, last_top = stack.pop()
        if node.word is not None:
            lineage = [category(node.label)] if include_tags else []
            for depth in range(len(ancestors) - 1, -1, -1):
                if depth == first_top:
                    lineage.append(LEFT_BOUNDARY)
                lineage.append(ancestors[depth])
                if depth == last_top:
                    lineage.append(RIGHT_BOUNDARY)
            result.append((node.word, lineage))
            continue
        label = category(node.label)
        if node is not pruned or label not in ROOT_LABELS:
            depth = len(ancestors)
            ancestors = (*ancestors, label)
            first_top = depth if first_top is None else first_top
            last_top = depth if last_top is None else last_top
        last = len(node.children) - 1
        for index in range(last, -1, -1):
            stack.append(
                (
                    node.children[index],
                    ancestors,
                    first_top if index == 0 else None,
                    last_top if index == last else None,
                )
            )
    return result


def edit_distance(first: Sequence[str], second: Sequence[str]) -> int:
    """Levenshtein distance with unit costs."""
    # Common ends never change the distance, and two lineages of one word mostly share
    # their root side: only the rest needs the quadratic table.
    start, first_end, second_end = 0, len(first), len(second)
    while start < first_end and start < second_end and first[start] == second[start]:
        start += 1
    while (
        first_end > start and second_end > start and first[first_end - 1] == second[second_end - 1]
    ):
        first_end -= 1
        second_end -= 1
    first, second = first[start:first_end], second[start:second_end]
    if not first or not second:
        return len(first) + len(second)
    previous = list(range(len(second) + 1))
    for i, item in enumerate(first, start=1):
        current = [i]
        for j, other in enumerate(second, start=1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (item != other))
            )
        previous = current
    return previous[-1]


def lineage_similarity(gold: Sequence[str], test: Sequence[str]) -> float:
    """1 - edit distance / (len(gold) + len(test)); 1.0 for two empty lineages."""
    if list(gold) == list(test):
        return 1.0
    return 1.0 - edit_distance(gold, test) / (len(gold) + len(test))


@dataclass
class LeafAncestorResult:
    """One sentence: ``status`` is "ok" or the reason it was skipped."""

    status: str
    words: list[str] = field(default_factory=list)
    gold_lineages: list[list[str]] = field(default_factory=list)
    test_lineages: list[list[str]] = field(default_factory=list)
    word_scores: list[float] = field(default_factory=list)

    @property
    def sentence_score(self) -> float:
        return safe_div(sum(self.word_scores), len(self.word_scores))

    def counts(self, prefix: str = PREFIX) -> Counts:
        valid = self.status == "ok"
        exact_words = sum(
            g == t for g, t in zip(self.gold_lineages, self.test_lineages, strict=True)
        )
        values = {
            "sentences": 1,
            "valid": int(valid),
            "skipped_length": int(self.status == "skipped_length"),
            "skipped_words": int(self.status == "skipped_words"),
            "skipped_empty": int(self.status == "skipped_empty"),
            "words": len(self.word_scores),
            "word_score_sum": sum(self.word_scores),
            "exact_words": exact_words if valid else 0,
            "sentence_score_sum": self.sentence_score if valid else 0.0,
            "exact_sentences": int(valid and exact_words == len(self.word_scores)),
        }
        return {f"{prefix}/{name}": values[name] for name in COUNT_NAMES}


def evaluate_leaf_ancestor(
    gold: Tree,
    test: Tree | None,
    delete_tags: Iterable[str] = DEFAULT_DELETE_TAGS,
    include_tags: bool = False,
) -> LeafAncestorResult:
    """Score one test tree against its gold tree (``test=None``: no parse)."""
    delete_tags = frozenset(delete_tags)
    return compare_lineages(
        lineages(gold, delete_tags, include_tags),
        lineages(test, delete_tags, include_tags) if test is not None else [],
    )


def compare_lineages(
    gold_words: Sequence[tuple[str, list[str]]], test_words: Sequence[tuple[str, list[str]]]
) -> LeafAncestorResult:
    """Score one sentence's test lineages against its gold ones (:func:`lineages`; no
    test tree: none)."""
    if not gold_words or not test_words:
        return LeafAncestorResult("skipped_empty")
    if len(gold_words) != len(test_words):
        return LeafAncestorResult("skipped_length")
    if any(g[0] != t[0] for g, t in zip(gold_words, test_words, strict=True)):
        return LeafAncestorResult("skipped_words")
    gold_lineages = [lineage for _, lineage in gold_words]
    test_lineages = [lineage for _, lineage in test_words]
    return LeafAncestorResult(
        status="ok",
        words=[word for word, _ in gold_words],
        gold_lineages=gold_lineages,
        test_lineages=test_lineages,
        word_scores=[
            lineage_similarity(g, t) for g, t in zip(gold_lineages, test_lineages, strict=True)
        ],
    )


def leaf_ancestor_counts(
    gold: Tree,
    test: Tree | None,
    delete_tags: Iterable[str] = DEFAULT_DELETE_TAGS,
    include_tags: bool = False,
    prefix: str = PREFIX,
) -> Counts:
    """Additive leaf-ancestor counts for one sentence."""
    return evaluate_leaf_ancestor(gold, test, delete_tags, include_tags).counts(prefix)


def score_leaf_ancestor(counts: Mapping[str, float], prefix: str = PREFIX) -> dict[str, float]:
    """Corpus score (mean over words) and mean sentence score from summed counts."""

    def get(name: str) -> float:
        return counts.get(f"{prefix}/{name}", 0)

    return {
        "sentences": get("sentences"),
        "valid_sentences": get("valid"),
        "skipped_sentences": get("skipped_length") + get("skipped_words") + get("skipped_empty"),
        "words": get("words"),
        "corpus_score": safe_div(get("word_score_sum"), get("words")),
        "mean_sentence_score": safe_div(get("sentence_score_sum"), get("valid")),
        "exact_words": safe_div(get("exact_words"), get("words")),
        "exact_sentences": safe_div(get("exact_sentences"), get("valid")),
    }
