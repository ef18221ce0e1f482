"""Read the inputs of the pure evaluation modules out of a CAS view.

Each function selects every type it needs once per view and works on plain
offsets afterwards, so evaluating a long document stays linear-ish.

Conventions:

- Spans are character offsets ``(begin, end)`` into the view's text.
- POS: a token's tag comes from ``Token.pos``; tokens without it fall back to a
  POS annotation with the same span (readers that add POS without linking it).
- Dependencies (DKPro): one word per Dependent token, taken from the basic
  relation (``flavor`` empty or ``basic``); the root is a ``ROOT`` relation or
  one whose Governor is its Dependent. Words are grouped by the Sentence that
  starts last at or before them (the whole view is one sentence when there are
  no Sentence annotations); upos is ``POS.coarseValue``, xpos ``POS.PosValue``.
- Mentions: every annotation of the type or its subtypes; label from ``value``
  (the short type name when empty), accepted alternatives from ``alternatives``
  and pieces from ``fragments`` where the type has those features.
- Constituents (DKPro): one tree per ``ROOT`` constituent (or, without any,
  per constituent that is no other constituent's child), built from the
  ``children`` arrays; Token children become preterminals tagged with their
  POS, EmptyCategory children ``-NONE-`` preterminals. The root becomes the
  unlabeled treebank bracket ``( ... )``, which PARSEVAL counts as EVALB does
  (``eval.constituents.v1``'s ``outer_bracket`` option drops it).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import cassis

from casflow.cas.metadata import find_document_id
from casflow.components.formats.penn.parse import Tree
from casflow.components.metrics.dependency import DepWord
from casflow.components.metrics.matching import Mention
from casflow.components.metrics.pos import TaggedToken
from casflow.components.metrics.segmentation import trim_span
from casflow.pipeline.component import DocumentError, evaluation_memo
from casflow.typesystem import (
    CONSTITUENT,
    CONSTITUENT_ROOT,
    DEPENDENCY,
    DEPENDENCY_ROOT,
    EMPTY_CATEGORY,
    PENN_TREE,
    POS,
    SENTENCE,
    TOKEN,
    TREEBANK_CONSTITUENT,
    short_name,
)

Span = tuple[int, int]
POS_FEATURES = ("PosValue", "coarseValue")
ROOT_CONSTITUENT_LABELS = frozenset({"", "ROOT", "TOP"})
BASIC_FLAVORS = frozenset({"", "basic"})
MISSING_TAG = "UNK"


class CasInputError(DocumentError, ValueError):
    """Annotations the evaluator cannot read; the message names the document."""

    hint = "check the component or reader that wrote these annotations"


def document_id(view: cassis.Cas) -> str:
    """The document id from DocumentMetaData (in any view), or ``"<unknown document>"``."""
    return find_document_id(view) or "<unknown document>"


def view_text(view: cassis.Cas) -> str:
    return view.sofa_string or ""


def spans(view: cassis.Cas, type_name: str) -> list[Span]:
    """``(begin, end)`` of every annotation of ``type_name`` (subtypes included)."""
    return [(a.begin, a.end) for a in view.select(type_name)]


def sentence_spans(view: cassis.Cas) -> list[Span]:
    return spans(view, SENTENCE)


def token_spans(view: cassis.Cas) -> list[Span]:
    return spans(view, TOKEN)


def _pos_by_span(view: cassis.Cas) -> dict[Span, Any]:
    return {(p.begin, p.end): p for p in view.select(POS)}


# Features are read with getattr rather than FeatureStructure.get, which parses a
# feature path on every call: over a corpus, the evaluators read millions of them.


def _token_pos(token: Any, fallback: dict[Span, Any] | None) -> Any:
    pos = getattr(token, "pos", None)
    if pos is None and fallback is not None:
        pos = fallback.get((token.begin, token.end))
    return pos


def tagged_tokens(
    view: cassis.Cas, feature: str = "PosValue", *, keep_untagged: bool = False
) -> list[TaggedToken]:
    """One TaggedToken per Token with a tag in ``feature`` (``PosValue`` or ``coarseValue``).

    ``keep_untagged`` keeps Tokens without a tag too, with ``tag=None``: the system side
    is scored that way, so a token the tagger left untagged counts as wrong (as the CoNLL
    2018 scorer counts a ``_`` tag) instead of vanishing from the accuracy. Without any
    Token, the POS annotations themselves are the tagged units.
    """
    if feature not in POS_FEATURES:
        raise ValueError(f"POS feature must be one of {POS_FEATURES}, got {feature!r}")
    tokens = view.select(TOKEN)
    if not tokens:
        return [
            TaggedToken(p.begin, p.end, getattr(p, feature, None))
            for p in view.select(POS)
            if getattr(p, feature, None) is not None
        ]
    fallback = (
        None if all(getattr(t, "pos", None) is not None for t in tokens) else _pos_by_span(view)
    )
    tagged = []
    for token in tokens:
        pos = _token_pos(token, fallback)
        tag = getattr(pos, feature, None) if pos is not None else None
        if tag is not None or keep_untagged:
            tagged.append(TaggedToken(token.begin, token.end, tag))
    return tagged


def is_root_relation(dependency: Any, is_root_type: Callable[[Any], bool]) -> bool:
    """A DKPro ROOT (``is_root_type``, from :func:`subsumed_by`), or a relation without a
    Governor or whose Governor is its Dependent."""
    if is_root_type(dependency.type):
        return True
    governor, dependent = dependency.Governor, dependency.Dependent
    return governor is None or (governor.begin == dependent.begin and governor.end == dependent.end)


def dependency_sentences(view: cassis.Cas, *, keep_unattached: bool = False) -> list[list[DepWord]]:
    """Dependency words grouped by sentence, in text order (read once per view while the
    engine evaluates a document: the gold serves every system view).

    ``keep_unattached`` adds a word with ``attached=False`` for each Token that is the
    Dependent of no basic relation: the system side is read that way, so a token the
    parser left out counts as wrong (as conll18_ud_eval scores every system word)
    instead of vanishing, which would raise precision and aligned accuracy.
    """
    memo = evaluation_memo()
    key = ("dependency_sentences", view.get_sofa().sofaID, keep_unattached)
    if memo is not None and key in memo:
        return [list(sentence) for sentence in memo[key]]
    sentences = _dependency_sentences(view, keep_unattached)
    if memo is not None:
        memo[key] = sentences
    return [list(sentence) for sentence in sentences]


def _dependency_sentences(view: cassis.Cas, keep_unattached: bool) -> list[list[DepWord]]:
    doc = document_id(view)
    is_root_type = subsumed_by(view.typesystem, DEPENDENCY_ROOT)
    relation_of: dict[Span, Any] = {}
    for dependency in view.select(DEPENDENCY):
        if (getattr(dependency, "flavor", None) or "") not in BASIC_FLAVORS:
            continue
        dependent = getattr(dependency, "Dependent", None)
        if dependent is None:
            raise CasInputError(
                f"document {doc}: Dependency at ({dependency.begin}, {dependency.end}) "
                "has no Dependent token"
            )
        span = (dependent.begin, dependent.end)
        if span in relation_of:
            raise CasInputError(
                f"document {doc}: token {span} is the Dependent of two basic Dependency "
                "relations; a token has one head (mark extra relations with flavor 'enhanced')"
            )
        relation_of[span] = dependency
    unattached = (
        [t for t in view.select(TOKEN) if (t.begin, t.end) not in relation_of]
        if keep_unattached
        else []
    )
    if not relation_of and not unattached:
        return []
    # (token, head span or None, label, attached) of every word, the unattached too
    entries: list[tuple[Any, Span | None, str, bool]] = []
    for dependency in relation_of.values():
        governor = dependency.Governor
        root = is_root_relation(dependency, is_root_type)
        head = None if root else (governor.begin, governor.end)
        entries.append(
            (dependency.Dependent, head, getattr(dependency, "DependencyType", None) or "", True)
        )
    entries.extend((token, None, "", False) for token in unattached)
    fallback = None
    sentence_starts = sorted(begin for begin, _ in sentence_spans(view))
    grouped: dict[int, list[DepWord]] = {}
    for token, head, deprel, attached in entries:
        pos = getattr(token, "pos", None)
        if pos is None:
            fallback = fallback if fallback is not None else _pos_by_span(view)
            pos = fallback.get((token.begin, token.end))
        word = DepWord(
            token.begin,
            token.end,
            head,
            deprel,
            upos=(getattr(pos, "coarseValue", None) or "") if pos is not None else "",
            xpos=(getattr(pos, "PosValue", None) or "") if pos is not None else "",
            attached=attached,
        )
        number = max(0, bisect.bisect_right(sentence_starts, token.begin) - 1)
        grouped.setdefault(number, []).append(word)
    return [sorted(grouped[number], key=lambda w: w.span) for number in sorted(grouped)]


def _feature_fs(fs: Any, name: str) -> list[Any]:
    array = getattr(fs, name, None)
    return list(array.elements) if array is not None and array.elements else []


def mentions(view: cassis.Cas, type_name: str) -> list[Mention]:
    """Mentions of ``type_name`` and its subtypes, with alternatives and fragments."""
    doc = document_id(view)
    found = []
    for annotation in view.select(type_name):
        label = getattr(annotation, "value", None) or short_name(annotation.type.name)
        alternatives = tuple((a.begin, a.end) for a in _feature_fs(annotation, "alternatives"))
        fragments = tuple((f.begin, f.end) for f in _feature_fs(annotation, "fragments"))
        try:
            found.append(
                Mention(
                    annotation.begin,
                    annotation.end,
                    label,
                    alternatives=alternatives,
                    fragments=fragments,
                )
            )
        except ValueError as exc:
            raise CasInputError(f"document {doc}: {exc}") from exc
    return found


def subsumed_by(typesystem: cassis.TypeSystem, type_name: str) -> Callable[[Any], bool]:
    """``is_a(t)``: whether type ``t`` is ``type_name`` or one of its subtypes, answered
    once per type (cassis walks the type's ancestors on every ``subsumes`` call)."""
    parent = typesystem.get_type(type_name)
    known: dict[str, bool] = {}

    def is_a(child: Any) -> bool:
        found = known.get(child.name)
        if found is None:
            found = known[child.name] = typesystem.subsumes(parent, child)
        return found

    return is_a


def _constituent_label(node: Any, is_treebank: Callable[[Any], bool]) -> str:
    original = getattr(node, "originalLabel", None) if is_treebank(node.type) else None
    if original:
        return str(original)
    label = getattr(node, "constituentType", None) or ""
    function = getattr(node, "syntacticFunction", None)
    return f"{label}-{function}" if label and function else label


class _TreeBuilder:
    """Converts DKPro constituents to penn Trees (tags looked up once per view)."""

    def __init__(self, view: cassis.Cas, require_tags: bool = False) -> None:
        self.view = view
        self.require_tags = require_tags
        self.doc = document_id(view)
        self.typesystem = view.typesystem
        self.types = {
            name: subsumed_by(self.typesystem, name)
            for name in (CONSTITUENT, TOKEN, EMPTY_CATEGORY, POS, TREEBANK_CONSTITUENT)
        }
        self._fallback: dict[Span, Any] | None = None

    def _is(self, fs: Any, type_name: str) -> bool:
        return self.types[type_name](fs.type)

    def _label(self, node: Any) -> str:
        return _constituent_label(node, self.types[TREEBANK_CONSTITUENT])

    def _tag(self, token: Any) -> str:
        pos = getattr(token, "pos", None)
        if pos is None:
            if self._fallback is None:
                self._fallback = _pos_by_span(self.view)
            pos = self._fallback.get((token.begin, token.end))
        tag = getattr(pos, "PosValue", None) if pos is not None else None
        if not tag and self.require_tags:
            raise CasInputError(
                f"document {self.doc}: token {token.get_covered_text()!r} at ({token.begin}, "
                f"{token.end}) of a constituent tree has no POS tag (Token.pos PosValue); "
                "constituency scores delete punctuation and empty elements by tag, as EVALB "
                "reads them from the tree, so give the step that writes the trees its POS "
                "layer too (e.g. layers: [pos, constituents])"
            )
        return tag or MISSING_TAG

    def tree(self, root: Any) -> Tree:
        label = self._label(root)
        node = self._node(root)
        if label.upper() in ROOT_CONSTITUENT_LABELS:
            node.label = ""
            return node
        # A root carrying a real category (S, NP) sits under the treebank's outer bracket.
        return Tree("", [node])

    def _node(self, top: Any) -> Tree:
        # Depth first with a stack of its own, children in order, so a tree thousands of
        # levels deep (a right-branching parse of a long sentence) is no RecursionError.
        # Each frame: a constituent, its children left to visit, the subtrees made so far.
        frames: list[tuple[Any, Iterator[Any], list[Tree]]] = []
        on_path: set[int] = set()
        fs = top
        while True:
            made = self._leaf(fs)
            if made is None:  # a constituent: visit its children first
                if id(fs) in on_path:
                    raise CasInputError(
                        f"document {self.doc}: the constituent at ({fs.begin}, {fs.end}) is "
                        "its own ancestor; the children arrays form a cycle"
                    )
                on_path.add(id(fs))
                frames.append((fs, iter(_feature_fs(fs, "children")), []))
            else:
                if not frames:
                    return made
                frames[-1][2].append(made)
            while True:  # climb until a constituent has a child left to visit
                constituent, pending, children = frames[-1]
                following = next(pending, _NO_CHILD_LEFT)
                if following is not _NO_CHILD_LEFT:
                    fs = following
                    break
                frames.pop()
                on_path.discard(id(constituent))
                if not children:
                    raise CasInputError(
                        f"document {self.doc}: constituent {self._label(constituent)!r} "
                        f"at ({constituent.begin}, {constituent.end}) has no children"
                    )
                made = Tree(self._label(constituent), children)
                if not frames:
                    return made
                frames[-1][2].append(made)

    def _leaf(self, fs: Any) -> Tree | None:
        """The preterminal for a Token, EmptyCategory or POS; None for a constituent."""
        if self._is(fs, TOKEN):
            return Tree(self._tag(fs), word=fs.get_covered_text())
        if self._is(fs, EMPTY_CATEGORY):
            return Tree("-NONE-", word=getattr(fs, "value", None) or "*")
        if self._is(fs, POS):
            return Tree(getattr(fs, "PosValue", None) or MISSING_TAG, word=fs.get_covered_text())
        if not self._is(fs, CONSTITUENT):
            raise CasInputError(
                f"document {self.doc}: a constituent child at ({fs.begin}, {fs.end}) is a "
                f"{short_name(fs.type.name)}; children must be Constituents, Tokens or "
                "EmptyCategories"
            )
        return None


_NO_CHILD_LEFT = object()


def _tree_roots(view: cassis.Cas) -> list[Any]:
    roots = list(view.select(CONSTITUENT_ROOT))
    if roots:
        return roots
    constituents = view.select(CONSTITUENT)
    children = {id(child) for c in constituents for child in _feature_fs(c, "children")}
    return [c for c in constituents if id(c) not in children]


def constituent_trees(view: cassis.Cas, require_tags: bool = False) -> list[tuple[Span, Tree]]:
    """``(root span, tree)`` for every constituency tree of the view, in text order.

    A token without a POS tag becomes the preterminal ``UNK``, or, with
    ``require_tags``, a :class:`CasInputError` naming the token. While the engine
    evaluates a document, a view's trees are read once and shared by its evaluators
    and system views (the metrics read trees, never change them).
    """
    memo = evaluation_memo()
    key = ("constituent_trees", view.get_sofa().sofaID, require_tags)
    if memo is not None and key in memo:
        return list(memo[key])
    builder = _TreeBuilder(view, require_tags)
    roots = sorted(_tree_roots(view), key=lambda r: (r.begin, r.end))
    trees = [((root.begin, root.end), builder.tree(root)) for root in roots]
    if memo is not None:
        memo[key] = trees
    return list(trees)


# "( (S", "(TOP (S", "(ROOT (S": the outer bracket's label, then the first child.
_OUTER_BRACKET = re.compile(r"\s*\(\s*([^\s()]*)\s*\(")
WRAPPER_LABELS = frozenset({"", "TOP", "ROOT"})


def written_outer_bracket(line: str) -> str | None:
    """The outer bracket of a tree line as written: ``""`` for ``( (S ...) )``, ``"TOP"``
    or ``"ROOT"`` for those wrappers, None when the line has none (``(S ...)``)."""
    match = _OUTER_BRACKET.match(line)
    if match is None or match.group(1) not in WRAPPER_LABELS:
        return None
    return match.group(1)


def written_outer_brackets(view: cassis.Cas) -> dict[Span, str | None]:
    """Per tree span, the outer bracket its ``PennTree`` line was written with (trees
    read from treebank files carry one; trees from parsers in the chain do not)."""
    return {
        (tree.begin, tree.end): written_outer_bracket(tree.get("PennTree") or "")
        for tree in view.select(PENN_TREE)
    }


def as_written(tree: Tree, outer: str | None) -> Tree:
    """A tree from :func:`constituent_trees` (unlabeled root) with the outer bracket its
    file had: relabelled TOP/ROOT, or removed when the file had no wrapper around one
    phrase."""
    if outer is None:
        if len(tree.children) == 1 and tree.children[0].word is None:
            return tree.children[0]
        return tree
    return Tree(outer, tree.children) if outer else tree


def pair_by_span(
    gold: Sequence[tuple[Span, Any]], system: Iterable[tuple[Span, Any]], text: str
) -> tuple[list[tuple[Span, Any, Any | None]], list[Span]]:
    """Pair items by whitespace-trimmed span: ``(gold span, gold, system or None)``.

    Returns the pairs in gold order and the spans of system items left unpaired.
    """
    waiting: dict[Span, list[tuple[Span, Any]]] = {}
    for span, item in system:
        waiting.setdefault(trim_span(text, *span), []).append((span, item))
    pairs = []
    for span, item in gold:
        candidates = waiting.get(trim_span(text, *span))
        pairs.append((span, item, candidates.pop(0)[1] if candidates else None))
    unpaired = sorted(span for items in waiting.values() for span, _ in items)
    return pairs, unpaired
