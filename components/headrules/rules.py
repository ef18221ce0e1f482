"""Constituency trees -> dependency trees by learned head rules; no CAS here.

A treebank's dependency version is usually made from its trees by a converter: in
each constituent one child is the head, and the head words of the other children
attach to the head word of the head child. CRAFT's dependencies were made this way
(ClearNLP's converter; Choi and Palmer), so every CRAFT constituent has exactly one
word whose head lies outside it. Rather than re-implementing that converter, the
rules are learned from pairs of gold trees and gold dependency trees:

- **Head child.** Per parent label, a decision list of (child label or label group,
  leftmost or rightmost) learned greedily, most precise rule first (as Collins's head
  table, but read off the data); a parent label the list does not cover takes its
  usual side.
- **Coordination.** A constituent whose conjunction (CC, CONJP) follows a conjunct
  is headed by its first conjunct, and what follows a conjunct attaches to that
  conjunct ("A, B and C": B to A; the comma, "and" and C to B), which is how CRAFT's
  conversion chains conjuncts.
- **Labels.** A backoff table over the attachment's context (parent, dependent and
  head child labels, side, both ends' POS, the dependent's word), the most specific
  context seen at least twice first.

On the gold trees of the 7 CRAFT development articles, rules learned from the 60
training articles give UAS 99.27 and LAS 95.26 against the gold dependencies. The
point of converting is another kind of parser as a member of a dependency vote:
a constituency parser's errors are not a dependency parser's.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from casflow.components.formats.penn.parse import Tree, category, constituent_spans, leaves, prune

ROOT = 0
ROOT_CONTEXT = "ROOT"
FALLBACK_LABEL = "dep"

PUNCTUATION = frozenset({",", ":", ".", "HYPH", "NFP", "-LRB-", "-RRB-", "``", "''"})
CONJUNCTIONS = frozenset({"CC", "CONJP"})
#: Label groups a head rule may name instead of one label ("the rightmost noun").
GROUPS: dict[str, frozenset[str]] = {
    "*NOUN": frozenset({"NN", "NNS", "NNP", "NNPS", "NML", "NX"}),
    "*PREP": frozenset({"IN", "TO", "VBG", "VBN", "RP"}),
    "*ADV": frozenset({"RB", "RBR", "RBS"}),
    "*ADJ": frozenset({"JJ", "JJR", "JJS"}),
    "*VERB": frozenset({"VB", "VBD", "VBZ", "VBP", "VBN", "VBG", "MD"}),
}
LEFT, RIGHT = "left", "right"


def matches(label: str, rule_label: str) -> bool:
    group = GROUPS.get(rule_label)
    return label == rule_label if group is None else label in group


def coordination_head(labels: Sequence[str]) -> int | None:
    """The first conjunct when a conjunction follows it, else None (not coordination).

    Determiners are skipped as CRAFT's "both"/"either" before the first conjunct.
    """
    conjunctions = [i for i, label in enumerate(labels) if label in CONJUNCTIONS]
    if not conjunctions:
        return None
    for i, label in enumerate(labels):
        if label in PUNCTUATION or label in CONJUNCTIONS or label == "DT":
            continue
        return i if i < conjunctions[-1] else None
    return None


@dataclass(frozen=True)
class HeadObservation:
    """One constituent of a gold tree: its label, its children's, which one heads it."""

    parent: str
    children: tuple[str, ...]
    head: int


@dataclass
class HeadRules:
    """Per parent label, ordered (label or group, side) rules and a default side."""

    rules: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    defaults: dict[str, str] = field(default_factory=dict)

    def head_child(self, parent: str, children: Sequence[str]) -> int:
        coordinated = coordination_head(children)
        if coordinated is not None:
            return coordinated
        for rule_label, side in self.rules.get(parent, ()):
            found = [i for i, label in enumerate(children) if matches(label, rule_label)]
            if found:
                return found[0] if side == LEFT else found[-1]
        return 0 if self.defaults.get(parent, LEFT) == LEFT else len(children) - 1


def learn_head_rules(
    observations: Iterable[HeadObservation], min_support: int = 3, min_precision: float = 0.5
) -> HeadRules:
    """A decision list per parent label, most precise rule first.

    Greedy: among the constituents no earlier rule fires on, take the rule with the
    highest smoothed precision (right / (fired + 2)) among those right at least
    ``min_support`` times; stop below ``min_precision``. Choosing by count instead
    lets broad groups win early and loses 10 points of head accuracy on CRAFT.
    """
    by_parent: dict[str, list[HeadObservation]] = defaultdict(list)
    for observation in observations:
        if coordination_head(observation.children) is None:
            by_parent[observation.parent].append(observation)
    learned = HeadRules()
    for parent, remaining in sorted(by_parent.items()):
        decision_list: list[tuple[str, str]] = []
        while remaining:
            best = _best_rule(remaining, min_support)
            if best is None or best[0] < min_precision:
                break
            _, _, rule_label, side = best
            decision_list.append((rule_label, side))
            remaining = [
                o for o in remaining if not any(matches(c, rule_label) for c in o.children)
            ]
        first = sum(1 for o in remaining if o.head == 0)
        last = sum(1 for o in remaining if o.head == len(o.children) - 1)
        learned.rules[parent] = decision_list
        learned.defaults[parent] = LEFT if first >= last else RIGHT
    return learned


def _best_rule(
    observations: Sequence[HeadObservation], min_support: int
) -> tuple[float, int, str, str] | None:
    candidates = {label for o in observations for label in o.children} | set(GROUPS)
    best: tuple[float, int, str, str] | None = None
    for rule_label in sorted(candidates):
        for side in (LEFT, RIGHT):
            right = fired = 0
            for o in observations:
                found = [i for i, c in enumerate(o.children) if matches(c, rule_label)]
                if not found:
                    continue
                fired += 1
                right += (found[0] if side == LEFT else found[-1]) == o.head
            if right < min_support:
                continue
            score = (right / (fired + 2), right, rule_label, side)
            if best is None or score[:2] > best[:2]:
                best = score
    return best


# -- trees ---------------------------------------------------------------------------


def prepared(tree: Tree) -> Tree | None:
    """The tree as the rules see it: no empty elements, categories without function
    tags or indices, an unlabelled root named ROOT (as treebank files and casflow's
    parsers give it)."""
    root = prune(tree, {"-NONE-"})
    if root is None:
        return None
    # prune's copy is ours to relabel in place
    for node in root.subtrees():
        if node.word is None:
            node.label = category(node.label)
    if not root.label:
        root.label = "ROOT"
    return root


@dataclass(frozen=True)
class ArcContext:
    """Where a word was attached: the constituent, its own and its head's child labels."""

    parent: str
    dependent: str
    head: str
    side: str  # the dependent is LEFT or RIGHT of its head
    grandparent: str


def _walk(
    tree: Tree,
    rules: HeadRules,
    index: dict[int, int],
    heads: list[int],
    contexts: list[ArcContext | None],
) -> int:
    """Attach the words under ``tree``; return its head word (0-based; ``index`` maps
    each preterminal to its word's position)."""
    # the label above each node, which its arcs' contexts name as the grandparent
    parent_label = {id(child): node.label for node in tree.subtrees() for child in node.children}
    parent_label[id(tree)] = "TOP"
    head_word: dict[int, int] = {}
    for node in tree.post_order():
        if node.word is not None:
            head_word[id(node)] = index[id(node)]
            continue
        grandparent = parent_label[id(node)]
        head_words = [head_word.pop(id(child)) for child in node.children]
        labels = [child.label for child in node.children]
        head = rules.head_child(node.label, labels)
        chained = coordination_head(labels) is not None
        previous_conjunct = head
        for i, word in enumerate(head_words):
            if i == head:
                continue
            target = previous_conjunct if chained and i > head else head
            heads[word] = head_words[target] + 1
            contexts[word] = ArcContext(
                node.label, labels[i], labels[target], LEFT if i < target else RIGHT, grandparent
            )
            if chained and i > head and labels[i] not in PUNCTUATION | CONJUNCTIONS:
                previous_conjunct = i
        head_word[id(node)] = head_words[head]
    return head_word[id(tree)]


def attach(
    tree: Tree, rules: HeadRules
) -> tuple[list[int], list[ArcContext | None], list[tuple[str, str]]]:
    """Heads (1-based, 0 for the root), each word's attachment context (None for the
    root) and the ``(word, tag)`` leaves of a :func:`prepared` tree."""
    index = {id(node): i for i, node in enumerate(tree.preterminals())}
    heads = [ROOT] * len(index)
    contexts: list[ArcContext | None] = [None] * len(index)
    top = _walk(tree, rules, index, heads, contexts)
    heads[top] = ROOT
    contexts[top] = None
    return heads, contexts, leaves(tree)


def head_observations(tree: Tree, heads: Sequence[int]) -> list[HeadObservation]:
    """Each constituent of a :func:`prepared` gold tree with the child holding its one
    word whose gold head is outside it; constituents with more or fewer such words
    (trees and dependencies made apart) teach nothing and are skipped."""
    spans = {id(node): (start, end) for node, start, end in constituent_spans(tree)}
    found = []
    for node in tree.subtrees():
        if node.word is not None:
            continue
        start, end = spans[id(node)]
        outside = [w for w in range(start, end) if not start <= heads[w] - 1 < end]
        if len(outside) == 1:
            head = next(
                i
                for i, child in enumerate(node.children)
                if spans[id(child)][0] <= outside[0] < spans[id(child)][1]
            )
            found.append(HeadObservation(node.label, tuple(c.label for c in node.children), head))
    return found


# -- labels --------------------------------------------------------------------------


def label_keys(
    context: ArcContext | None, dependent: tuple[str, str], head: tuple[str, str] | None
) -> list[str]:
    """Contexts from most to least specific; ``dependent``/``head`` are (word, tag)."""
    if context is None:
        return [ROOT_CONTEXT]
    word, tag = dependent[0].lower(), dependent[1]
    head_tag = head[1] if head else ROOT_CONTEXT
    c = context
    parts = [
        (c.parent, c.dependent, c.head, c.side, tag, head_tag, word, c.grandparent),
        (c.parent, c.dependent, c.head, c.side, tag, head_tag, word),
        (c.parent, c.dependent, c.head, c.side, tag, head_tag),
        (c.parent, c.dependent, c.head, c.side, tag),
        (c.parent, c.dependent, c.side, tag),
        (c.dependent, tag, c.side),
        (tag,),
    ]
    return ["\t".join(p) for p in parts]


@dataclass
class LabelTable:
    """Per backoff level (most specific first), context -> label.

    A context is looked up from the most specific level down; the first level that
    knows it gives the label. :func:`learn_labels` keeps only what changes the answer.
    """

    levels: list[dict[str, str]] = field(default_factory=list)

    def label(self, keys: Sequence[str]) -> str:
        for level, key in zip(self.levels, keys, strict=False):
            label = level.get(key)
            if label is not None:
                return label
        return FALLBACK_LABEL


def learn_labels(arcs: Iterable[tuple[list[str], str]], min_count: int = 2) -> LabelTable:
    """The most frequent label per context, pruned to what changes a lookup.

    Each level's context determines the next level's (the keys drop one part at a
    time), so from the least specific level up, a context seen fewer than
    ``min_count`` times, or whose label the levels below already give, is dropped:
    lookups answer as the full table would (contexts seen once aside), and the
    table for CRAFT shrinks from 9.5 MB to 152 KB.
    """
    counts: list[dict[str, Counter[str]]] = []
    below: list[dict[str, str]] = []  # per level, context -> the next level's context
    for keys, label in arcs:
        while len(counts) < len(keys):
            counts.append(defaultdict(Counter))
            below.append({})
        for depth, key in enumerate(keys):
            counts[depth][key][label] += 1
            if depth + 1 < len(keys):
                below[depth][key] = keys[depth + 1]
    levels: list[dict[str, str]] = [{} for _ in counts]
    for depth in reversed(range(len(counts))):
        last = depth == len(counts) - 1
        for key, labels in counts[depth].items():
            # ties go to the alphabetically first label, so a table is the same every time
            best = min(labels.items(), key=lambda item: (-item[1], item[0]))[0]
            if last:
                levels[depth][key] = best
                continue
            if sum(labels.values()) < min_count:
                continue
            if _lookup(levels, below, depth + 1, below[depth][key]) != best:
                levels[depth][key] = best
    return LabelTable(levels)


def _lookup(
    levels: Sequence[Mapping[str, str]], below: Sequence[Mapping[str, str]], depth: int, key: str
) -> str:
    while True:
        label = levels[depth].get(key)
        if label is not None or depth == len(levels) - 1:
            return label or FALLBACK_LABEL
        key = below[depth][key]
        depth += 1


# -- the converter -------------------------------------------------------------------


@dataclass
class Converter:
    """Head rules and labels: a tree in, a labelled dependency tree out."""

    rules: HeadRules
    labels: LabelTable
    root_label: str = "root"

    def convert(self, tree: Tree) -> tuple[list[int], list[str], list[tuple[str, str]]]:
        """``(heads, labels, words)`` of a tree (run :func:`prepared` first)."""
        heads, contexts, words = attach(tree, self.rules)
        labels = []
        for i, (head, context) in enumerate(zip(heads, contexts, strict=True)):
            if head == ROOT:
                labels.append(self.root_label)
                continue
            keys = label_keys(context, words[i], words[head - 1])
            labels.append(self.labels.label(keys))
        return heads, labels, words

    def to_json(self) -> dict[str, Any]:
        return {
            "format": "casflow.headrules/1",
            "rules": {p: [list(r) for r in rs] for p, rs in self.rules.rules.items()},
            "defaults": self.rules.defaults,
            "root_label": self.root_label,
            "labels": self.labels.levels,
        }

    @classmethod
    def from_json(cls, data: Any, source: str = "<data>") -> Converter:
        """The converter :meth:`to_json` wrote; ValueError naming ``source`` and what is
        wrong for anything else (a damaged or hand-edited file)."""
        if not isinstance(data, Mapping) or data.get("format") != "casflow.headrules/1":
            found = (
                f"format {data.get('format')!r}"
                if isinstance(data, Mapping)
                else f"a JSON {type(data).__name__}, not an object"
            )
            raise ValueError(
                f"{source}: not a head-rules model ({found}, expected format "
                "'casflow.headrules/1'); train one with train.headrules.v1"
            )
        problem = _model_problem(data)
        if problem:
            raise ValueError(
                f"{source}: damaged head-rules model: {problem}; train it again with "
                "train.headrules.v1"
            )
        rules = HeadRules(
            {p: [(r[0], r[1]) for r in rs] for p, rs in data["rules"].items()},
            dict(data["defaults"]),
        )
        levels = [dict(level) for level in data["labels"]]
        return cls(rules, LabelTable(levels), data["root_label"])

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), sort_keys=True), encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> Converter:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise ValueError(f"{path}: cannot read a head-rules model: {error}") from error
        return cls.from_json(data, str(path))


def _is_str_map(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    )


def _model_problem(data: Mapping[str, Any]) -> str | None:
    """What is missing or malformed in a head-rules model's JSON, or None."""
    missing = [key for key in ("rules", "defaults", "labels", "root_label") if key not in data]
    if missing:
        return f"no {', '.join(missing)}"
    rules = data["rules"]
    if not isinstance(rules, dict):
        return "'rules' must map a parent label to a list of [label, side] rules"
    for parent, decision_list in rules.items():
        if not isinstance(decision_list, list):
            return f"rules of {parent!r} must be a list of [label, side] rules"
        for rule in decision_list:
            if not (
                isinstance(rule, list)
                and len(rule) == 2
                and isinstance(rule[0], str)
                and rule[1] in (LEFT, RIGHT)
            ):
                return (
                    f"rule {rule!r} of {parent!r} is not [label, side] with side "
                    f"{LEFT!r} or {RIGHT!r}"
                )
    defaults = data["defaults"]
    if not _is_str_map(defaults) or any(side not in (LEFT, RIGHT) for side in defaults.values()):
        return f"'defaults' must map a parent label to {LEFT!r} or {RIGHT!r}"
    labels = data["labels"]
    if not isinstance(labels, list) or not all(_is_str_map(level) for level in labels):
        return "'labels' must be a list of objects mapping a context to a label"
    if not isinstance(data["root_label"], str):
        return "'root_label' must be a string"
    return None


def learn_converter(
    examples: Iterable[tuple[Tree, Sequence[int], Sequence[str]]],
) -> Converter:
    """Rules and labels from (prepared gold tree, gold heads, gold labels) triples.

    Labels are learned from the words the learned rules attach correctly, in the
    contexts those rules give them, which are the contexts a parser's trees will give.
    """
    pairs = list(examples)
    rules = learn_head_rules(o for tree, heads, _ in pairs for o in head_observations(tree, heads))
    root_labels: Counter[str] = Counter()
    arcs: list[tuple[list[str], str]] = []
    for tree, gold_heads, gold_labels in pairs:
        heads, contexts, words = attach(tree, rules)
        for i, (head, gold_head) in enumerate(zip(heads, gold_heads, strict=True)):
            if gold_head == ROOT:
                root_labels[gold_labels[i]] += 1
            if head != gold_head or head == ROOT:
                continue
            arcs.append((label_keys(contexts[i], words[i], words[head - 1]), gold_labels[i]))
    root_label = root_labels.most_common(1)[0][0] if root_labels else "root"
    return Converter(rules, learn_labels(arcs), root_label)
