"""Penn trees aligned to a document's text, and the annotations built from them.

Shared by the CRAFT reader (its treebank) and ``penn.import.v1`` (trees per document).
Leaves are aligned to the text in order, allowing only whitespace between tokens;
PTB escapes are undone (``-LRB-`` matches ``(``, ``[`` or ``{``; ````` and ``''``
straight or curly quotes; an escape inside a word its bracket, ``Ca-LRB-2+-RRB-``
matches ``Ca(2+)``); a word's outer Unicode spaces are not part of the token.
``-NONE-`` leaves are not tokens but zero-width ``EmptyCategory`` annotations at the
start of the next token (the sentence end if none follows).

Annotations (see :func:`build_tree_layers`): one ``Sentence`` per tree (``id`` 0, 1,
...), a ``Token`` per token (``id`` 1, 2, ... in its sentence) whose ``POS.PosValue`` is
its preterminal label, the outer bracket a DKPro ``ROOT`` and each labeled bracket
a ``TreebankConstituent`` (category, function tags, indices, ``children``/``parent``
links), and a ``PennTree`` holding the tree line as written (a tree written over
several lines, as in ``.mrg`` files, on one line in the CRAFT style).
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cassis

from casflow.components.formats.penn.parse import (
    Tree,
    format_tree,
    parse_tree,
    split_label,
    tree_error,
    tree_texts,
    unescape_brackets,
)
from casflow.pipeline.component import DocumentError
from casflow.typesystem import (
    CONSTITUENT,
    CONSTITUENT_ROOT,
    EMPTY_CATEGORY,
    PENN_TREE,
    POS,
    SENTENCE,
    TOKEN,
    TREEBANK_CONSTITUENT,
)

__all__ = [
    "CONSTITUENT_LAYER",
    "AlignedTree",
    "TreeAlignmentError",
    "TreeTypes",
    "TreebankError",
    "align_trees",
    "build_constituents",
    "build_pos",
    "build_tokens",
    "build_tree_layers",
]

#: Types and features the "constituents" layer adds (for a component's ``requirements``).
CONSTITUENT_LAYER: tuple[str, ...] = (
    CONSTITUENT,
    CONSTITUENT_ROOT,
    TREEBANK_CONSTITUENT,
    EMPTY_CATEGORY,
    PENN_TREE,
    f"{TOKEN}:parent",
)

# Raw text forms of PTB token escapes; the word as written is always tried first.
_SURFACE_FORMS: dict[str, tuple[str, ...]] = {
    "-LRB-": ("(", "[", "{"),
    "-RRB-": (")", "]", "}"),
    "-LSB-": ("[",),
    "-RSB-": ("]",),
    "-LCB-": ("{",),
    "-RCB-": ("}",),
    "``": ('"', "\u201c", "'", "\u2018"),
    "''": ('"', "\u201d", "'", "\u2019"),
}


class TreebankError(DocumentError, ValueError):
    """A tree file cannot be read or parsed, or does not fit the text."""

    hint = "check that the tree file belongs to the document's text"


class TreeAlignmentError(TreebankError):
    """The leaves of a tree do not line up with the text."""


# ----------------------------------------------------------------------------- alignment


@dataclass
class AlignedTree:
    """One treebank tree with the text spans of its leaves (empty elements zero-width)."""

    number: int  # 1-based tree number in the file
    line: int  # line number in the .tree file (its first line)
    bracketed: str
    tree: Tree
    leaves: list[Tree]  # the preterminals, left to right
    leaf_spans: list[tuple[int, int]]  # parallel to leaves
    is_empty: list[bool]  # parallel too: -NONE- leaf?
    token_spans: list[tuple[int, int]] = field(init=False)
    tags: list[str] = field(init=False)  # Penn tags of the tokens

    def __post_init__(self) -> None:
        kept = [i for i, empty in enumerate(self.is_empty) if not empty]
        self.token_spans = [self.leaf_spans[i] for i in kept]
        self.tags = [self.leaves[i].label for i in kept]

    @property
    def span(self) -> tuple[int, int]:
        return self.token_spans[0][0], self.token_spans[-1][1]

    @property
    def top_category(self) -> str:
        """Category under the outer bracket (HEADING, S, CAPTION, ...)."""
        node = self.tree
        if not node.label and len(node.children) == 1:
            node = node.children[0]
        return split_label(node.label)[0]


def _spaced_at(text: str, form: str, position: int) -> bool:
    """Whether ``form`` stands at ``position`` with an ``_`` of it on whitespace of the
    text: a Penn leaf cannot hold a space, so ``penn.writer.v1`` writes one inside a
    token (``"a b"``) as ``_``, and reading its trees back must find the token."""
    if "_" not in form or position + len(form) > len(text):
        return False
    return all(
        f == t or (f == "_" and t.isspace())
        for f, t in zip(form, text[position : position + len(form)], strict=True)
    )


def _surface_forms(word: str) -> tuple[str, ...]:
    forms = (word, *_SURFACE_FORMS.get(word, ()))
    if "\\" in word:  # old PTB escapes \/ and \*
        forms += (word.replace("\\/", "/").replace("\\*", "*"),)
    inner = unescape_brackets(word)
    if inner != word and word not in _SURFACE_FORMS:  # Ca-LRB-2+-RRB- is Ca(2+)
        forms += (inner,)
    return forms


def align_trees(
    tree_path: Path,
    text: str,
    text_name: str,
    document: str | None = None,
    *,
    content: str | None = None,
) -> list[AlignedTree]:
    """Parse every tree of ``tree_path`` and align its leaves to ``text``.

    ``text_name`` names the text in messages (``123.txt``); ``document`` (``article
    123``), when given, starts every message but a tree's syntax error (which names
    file and line); leave it out when the caller puts its own prefix on the errors.
    ``content``, when given, is the file's text as the caller decoded it (then
    ``tree_path`` only names the file); else the file is read as UTF-8.
    """
    where = f"{document}: " if document is not None else ""
    if content is None:
        try:
            content = tree_path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise TreebankError(f"{where}cannot read {tree_path}: {exc}") from exc
    lines = content.split("\n")
    trees: list[AlignedTree] = []
    position = 0
    length = len(text)
    for line_number, last_line, tree_text in tree_texts(lines):
        try:
            tree = parse_tree(tree_text)
        except ValueError as exc:
            raise TreebankError(tree_error(str(tree_path), line_number, last_line, exc)) from exc
        # a one-line tree is kept as written (CRAFT's lines round-trip); a tree over
        # several lines becomes one line in the CRAFT style
        bracketed = tree_text.rstrip() if line_number == last_line else format_tree(tree)
        number = len(trees) + 1
        leaf_spans: list[tuple[int, int]] = []
        is_empty: list[bool] = []
        pending_empty = 0  # empty elements waiting for the next token's start
        leaves = list(tree.preterminals())
        for index, leaf in enumerate(leaves, start=1):
            if leaf.label == "-NONE-":
                leaf_spans.append((-1, -1))
                is_empty.append(True)
                pending_empty += 1
                continue
            word = (leaf.word or "").strip()
            while position < length and text[position].isspace():
                position += 1
            for form in _surface_forms(word):
                if form and (text.startswith(form, position) or _spaced_at(text, form, position)):
                    break
            else:
                raise TreeAlignmentError(
                    f"{where}sentence {number} (line {line_number} of {tree_path.name}), "
                    f"leaf {index} {leaf.word!r} (tag {leaf.label}) not found at offset "
                    f"{position} of {text_name}, which has {text[position : position + 20]!r} "
                    "there"
                )
            if pending_empty:
                _place_empties(leaf_spans, position)
                pending_empty = 0
            leaf_spans.append((position, position + len(form)))
            is_empty.append(False)
            position += len(form)
        if len(is_empty) == sum(is_empty):
            raise TreeAlignmentError(
                f"{where}sentence {number} (line {line_number} of {tree_path.name}) "
                "has no token, only empty elements"
            )
        if pending_empty:
            _place_empties(leaf_spans, leaf_spans[-1 - pending_empty][1])
        trees.append(
            AlignedTree(number, line_number, bracketed, tree, leaves, leaf_spans, is_empty)
        )
    rest = text[position:]
    if rest.strip():
        offset = position + len(rest) - len(rest.lstrip())
        raise TreeAlignmentError(
            f"{where}text from offset {offset} ({text[offset : offset + 30]!r}) is "
            f"in no tree of {tree_path.name}; the treebank misses sentences"
        )
    return trees


def _place_empties(leaf_spans: list[tuple[int, int]], position: int) -> None:
    for index in range(len(leaf_spans) - 1, -1, -1):
        if leaf_spans[index] != (-1, -1):
            break
        leaf_spans[index] = (position, position)


# ----------------------------------------------------------------------------- CAS building


@dataclass
class TreeTypes:
    """Type constructors of the tree layers, looked up once per document."""

    sentence: Any
    token: Any
    pos: Any
    constituent_root: Any
    constituent: Any
    empty: Any
    penn_tree: Any
    fs_array: Any

    @classmethod
    def of(cls, typesystem: cassis.TypeSystem) -> TreeTypes:
        get = typesystem.get_type
        return cls(
            sentence=get(SENTENCE),
            token=get(TOKEN),
            pos=get(POS),
            constituent_root=get(CONSTITUENT_ROOT),
            constituent=get(TREEBANK_CONSTITUENT),
            empty=get(EMPTY_CATEGORY),
            penn_tree=get(PENN_TREE),
            fs_array=get("uima.cas.FSArray"),
        )


def build_tree_layers(
    trees: Sequence[AlignedTree], layers: Collection[str], types: TreeTypes, out: list[Any]
) -> list[list[Any]]:
    """Append the annotations of ``layers`` ("sentences", "tokens", "pos",
    "constituents"; the last two only with "tokens") to ``out``; returns the tokens of
    each sentence ([] without "tokens") for the layers built on them."""
    if "sentences" in layers:
        # ids count from 0, as the sent_id of CRAFT's CoNLL-U files do
        for aligned in trees:
            begin, end = aligned.span
            out.append(types.sentence(begin=begin, end=end, id=str(aligned.number - 1)))
    if "tokens" not in layers:
        return []
    tokens = build_tokens(trees, types, out)
    if "pos" in layers:
        build_pos(trees, tokens, types, out)
    if "constituents" in layers:
        for aligned, sentence_tokens in zip(trees, tokens, strict=True):
            build_constituents(aligned, sentence_tokens, types, out)
    return tokens


def build_tokens(trees: Sequence[AlignedTree], types: TreeTypes, out: list[Any]) -> list[list[Any]]:
    """Token annotations per sentence, ``id`` numbering them from 1 as CoNLL-U does."""
    sentences = []
    for aligned in trees:
        tokens = [
            types.token(begin=begin, end=end, id=str(number))
            for number, (begin, end) in enumerate(aligned.token_spans, start=1)
        ]
        out.extend(tokens)
        sentences.append(tokens)
    return sentences


def build_pos(
    trees: Sequence[AlignedTree], tokens: Sequence[Sequence[Any]], types: TreeTypes, out: list[Any]
) -> None:
    for aligned, sentence_tokens in zip(trees, tokens, strict=True):
        for token, tag in zip(sentence_tokens, aligned.tags, strict=True):
            token.pos = types.pos(begin=token.begin, end=token.end, PosValue=tag)
            out.append(token.pos)


@functools.lru_cache(maxsize=4096)
def _label_features(label: str) -> tuple[str, str | None, str | None, str | None]:
    """Category, function tags joined by "-", coindex and gap index of a bracket label."""
    category, functions, coindex, gap = split_label(label)
    return (
        category,
        "-".join(functions) or None,
        None if coindex is None else str(coindex),
        None if gap is None else str(gap),
    )


def build_constituents(
    aligned: AlignedTree, tokens: Sequence[Any], types: TreeTypes, out: list[Any]
) -> None:
    """ROOT and TreebankConstituents of one tree, linked to its tokens and empty elements."""
    leaves = iter(zip(aligned.leaf_spans, aligned.is_empty, strict=True))
    token_iter = iter(tokens)
    sentence_begin, sentence_end = aligned.span

    def visit(node: Tree) -> tuple[Any, tuple[int, int] | None, int]:
        # Returns the annotation, the span of its tokens (None if it has none) and,
        # for an all-empty subtree, the position of its first empty element. Children
        # come first, in the order a recursive walk would meet them, without its depth limit.
        done: dict[int, tuple[Any, tuple[int, int] | None, int]] = {}
        for current in node.post_order():
            done[id(current)] = annotate(
                current, [done.pop(id(child)) for child in current.children]
            )
        return done[id(node)]

    def annotate(
        node: Tree, visited: list[tuple[Any, tuple[int, int] | None, int]]
    ) -> tuple[Any, tuple[int, int] | None, int]:
        if node.word is not None:
            span, empty = next(leaves)
            if empty:
                element = types.empty(begin=span[0], end=span[1], value=node.word)
                out.append(element)
                return element, None, span[0]
            return next(token_iter), span, span[0]
        token_spans = [span for _, span, _ in visited if span is not None]
        if token_spans:
            begin, end = token_spans[0][0], token_spans[-1][1]
        else:
            begin = end = visited[0][2]
        category, functions, coindex, gap = _label_features(node.label)
        constituent = types.constituent(
            begin=begin,
            end=end,
            constituentType=category,
            syntacticFunction=functions,
            coindex=coindex,
            gapIndex=gap,
            originalLabel=node.label,
            children=types.fs_array(elements=[child for child, _, _ in visited]),
        )
        for child, _, _ in visited:
            child.parent = constituent
        out.append(constituent)
        return constituent, (begin, end) if token_spans else None, begin

    tree = aligned.tree
    # The outer unlabeled bracket (or a TOP/ROOT label) is the DKPro ROOT; a tree
    # without one gets a ROOT above its top node.
    top_nodes = tree.children if tree.label in ("", "ROOT", "TOP") and tree.word is None else [tree]
    children = [visit(node)[0] for node in top_nodes]
    root = types.constituent_root(
        begin=sentence_begin,
        end=sentence_end,
        constituentType="ROOT",
        children=types.fs_array(elements=children),
    )
    for child in children:
        child.parent = root
    out.append(root)
    out.append(types.penn_tree(begin=sentence_begin, end=sentence_end, PennTree=aligned.bracketed))
