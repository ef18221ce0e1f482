"""Penn Treebank bracketed trees: parse, write, and label/token helpers.

A :class:`Tree` is a node with a ``label`` and either ``children`` (a list of
trees) or, for a preterminal, a ``word`` (and no children). The outermost
unlabeled bracket of treebank files, ``( (S ...) )``, is a node with label
``""``. :func:`format_tree` writes the one-line style of the CRAFT treebank
files, so parse -> format gives back each CRAFT line exactly (trailing
whitespace aside).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

# Bracket escapes of the Penn Treebank tokenisation. CRAFT writes round
# brackets escaped but square brackets raw (``(-LRB- [)``); both unescape fine.
_BRACKET_ESCAPES = {
    "(": "-LRB-",
    ")": "-RRB-",
    "[": "-LSB-",
    "]": "-RSB-",
    "{": "-LCB-",
    "}": "-RCB-",
}
_BRACKET_UNESCAPES = {escaped: raw for raw, escaped in _BRACKET_ESCAPES.items()}
_INNER_ESCAPE = re.compile("|".join(_BRACKET_UNESCAPES))
ROUND_BRACKETS = "()"
ALL_BRACKETS = "".join(_BRACKET_ESCAPES)
OPEN_QUOTE = "``"
CLOSE_QUOTE = "''"

# Labels that begin and end with "-" are whole categories (-NONE-, -LRB-, ...),
# not a category followed by function tags.
_DASHED_CATEGORY = re.compile(r"^-[A-Za-z]+-$")
_LABEL_PARTS = re.compile(r"([-=])")
# Only ASCII whitespace separates tokens (as in EVALB's C isspace): CRAFT has
# words with Unicode spaces inside, e.g. "Xpd\u200aTTD" (hair space).
_TOKEN = re.compile(r"[ \t\n\r\f\v]*(?:(\()|(\))|([^ \t\n\r\f\v()]+))")


@dataclass
class Tree:
    """A constituent (``children``) or a preterminal (``word`` set, no children)."""

    label: str
    children: list[Tree] = field(default_factory=list)
    word: str | None = None

    @property
    def is_preterminal(self) -> bool:
        return self.word is not None

    def subtrees(self) -> Iterator[Tree]:
        """All nodes in pre-order (the node itself first), preterminals included."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def post_order(self) -> Iterator[Tree]:
        """All nodes, each after its children, children left to right (the order of a
        recursive walk's returns, without its depth limit: a parser's right-branching
        tree of a long sentence is thousands of levels deep)."""
        stack: list[tuple[Tree, bool]] = [(self, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded or not node.children:
                yield node
                continue
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(node.children))

    def preterminals(self) -> Iterator[Tree]:
        """Preterminal nodes from left to right."""
        return (node for node in self.subtrees() if node.is_preterminal)

    def __str__(self) -> str:
        return format_tree(self)


def _context(text: str, position: int) -> str:
    start = max(0, position - 30)
    return repr(text[start : position + 30])


def parse_tree(text: str) -> Tree:
    """Parse exactly one bracketed tree; raise ValueError naming the character position."""
    stack: list[Tree] = []
    root: Tree | None = None
    position = 0
    # After "(" the next atom is the label; after the label an atom is a word.
    expecting_label = False
    while True:
        match = _TOKEN.match(text, position)
        if match is None:
            break
        start = match.start(match.lastindex or 0)
        position = match.end()
        opening, closing, atom = match.groups()
        if root is not None:
            what = "unbalanced ')'" if closing else "text after the end of the tree"
            raise ValueError(f"{what} at character {start}: {_context(text, start)}")
        if opening:
            if stack and stack[-1].word is not None:
                raise ValueError(
                    f"a preterminal cannot also have subtrees, at character {start}: "
                    f"{_context(text, start)}"
                )
            if expecting_label:
                stack[-1].label = ""
            node = Tree(label="")
            if stack:
                stack[-1].children.append(node)
            stack.append(node)
            expecting_label = True
        elif closing:
            if not stack:
                raise ValueError(f"unbalanced ')' at character {start}: {_context(text, start)}")
            node = stack.pop()
            if not node.children and node.word is None:
                what = "'()'" if expecting_label else f"({node.label} ...)"
                raise ValueError(
                    f"empty bracket {what} with neither word nor subtrees, ending at "
                    f"character {start}: {_context(text, start)}"
                )
            expecting_label = False
            if not stack:
                root = node
        else:
            if not stack:
                raise ValueError(
                    f"word {atom!r} outside any bracket at character {start}: "
                    f"{_context(text, start)}"
                )
            node = stack[-1]
            if expecting_label:
                node.label = atom
                expecting_label = False
            elif node.children:
                raise ValueError(
                    f"word {atom!r} mixed with subtrees at character {start}: "
                    f"{_context(text, start)}"
                )
            elif node.word is not None:
                raise ValueError(
                    f"more than one word in preterminal ({node.label} {node.word} {atom} ...) "
                    f"at character {start}: {_context(text, start)}"
                )
            else:
                node.word = atom
    if stack:
        raise ValueError(
            f"unbalanced brackets: {len(stack)} still open at the end (character {len(text)})"
        )
    if root is None:
        raise ValueError("no tree found: the text is empty or blank")
    return root


def tree_texts(lines: Iterable[str]) -> Iterator[tuple[int, int, str]]:
    """``(first line, last line, text)`` of each bracketed tree, blank lines skipped.

    A tree may span several lines, as in the Penn Treebank's ``.mrg`` files and
    the pretty-printed output of most parsers: it ends on the line where its
    brackets balance. ``(`` and ``)`` are always brackets (words have them
    escaped, ``-LRB-``), so counting them finds the end without parsing. A tree
    whose brackets never balance runs to the end of the input, so its error
    names the line it starts on.
    """
    depth = 0
    first = last = 0
    pieces: list[str] = []
    for line_number, line in enumerate(lines, start=1):
        if not line.strip():
            if pieces:
                pieces.append(line)
            continue
        if not pieces:
            first = line_number
        pieces.append(line)
        last = line_number
        depth += line.count("(") - line.count(")")
        if depth <= 0:  # balanced, or a ')' too many (parse_tree names it)
            yield first, last, "\n".join(pieces)
            pieces, depth = [], 0
    if pieces:
        yield first, last, "\n".join(pieces).rstrip()


def tree_error(source: str, first: int, last: int, error: ValueError) -> str:
    """Where a tree's syntax error is: the file and its line, or lines."""
    where = f"line {first}" if first == last else f"lines {first}-{last}"
    return f"{source}, {where}: {error}; fix the bracketing of that tree"


def iter_trees(text: str | Iterable[str], source: str = "<string>") -> Iterator[Tree]:
    """Parse the trees of a treebank text, one or several lines each (blank lines
    skipped); errors name ``source`` and the tree's lines."""
    # split("\n"), not splitlines(): words may contain U+2028 or U+0085.
    lines = text.split("\n") if isinstance(text, str) else (line.rstrip("\n") for line in text)
    for first, last, tree_text in tree_texts(lines):
        try:
            yield parse_tree(tree_text)
        except ValueError as error:
            raise ValueError(tree_error(source, first, last, error)) from error


def read_trees(path: str | Path) -> list[Tree]:
    """All trees of a treebank file (UTF-8), one or several lines each."""
    path = Path(path)
    with path.open(encoding="utf-8") as handle:
        return list(iter_trees(handle, source=str(path)))


def format_tree(tree: Tree) -> str:
    """One-line bracketing in the CRAFT style: ``( (S (NP-SBJ (NN x)) ...) )``."""
    pieces: list[str] = []
    # Work items are either a node to open or a closing string to emit.
    stack: list[Tree | str] = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            pieces.append(item)
            continue
        if item.word is not None:
            if not item.label:
                raise ValueError(f"preterminal for word {item.word!r} has no label")
            pieces.append(f"({item.label} {item.word})")
            continue
        if not item.children:
            raise ValueError(f"node {item.label!r} has neither word nor children")
        # An unlabeled node (the treebank's outer bracket) is written "( child )".
        pieces.append(f"({item.label} " if item.label else "( ")
        stack.append(")" if item.label else " )")
        for index in range(len(item.children) - 1, -1, -1):
            stack.append(item.children[index])
            if index:
                stack.append(" ")
    return "".join(pieces)


def leaves(tree: Tree) -> list[tuple[str, str]]:
    """``(word, tag)`` pairs from left to right, empty elements (-NONE-) included."""
    # a preterminal always has its word
    return [(node.word or "", node.label) for node in tree.preterminals()]


def prune(tree: Tree, delete_tags: Iterable[str]) -> Tree | None:
    """A copy without the preterminals tagged ``delete_tags`` and the nodes left empty.

    Returns None when nothing is left. ``prune(tree, {"-NONE-"})`` removes empty elements.
    """
    deleted = frozenset(delete_tags)
    copies: dict[int, Tree | None] = {}
    # Reverse pre-order visits every node after all of its descendants.
    for node in reversed(list(tree.subtrees())):
        if node.word is not None:
            keep = node.label not in deleted
            copies[id(node)] = Tree(node.label, word=node.word) if keep else None
            continue
        kept = [copies[id(child)] for child in node.children]
        children = [child for child in kept if child is not None]
        copies[id(node)] = Tree(node.label, children) if children else None
    return copies[id(tree)]


def constituent_spans(tree: Tree) -> list[tuple[Tree, int, int]]:
    """Every node in pre-order with its word span ``(start, end)``, end exclusive."""
    nodes = list(tree.subtrees())
    spans: dict[int, tuple[int, int]] = {}
    position = 0
    for node in nodes:  # pre-order meets preterminals left to right
        if node.word is not None:
            spans[id(node)] = (position, position + 1)
            position += 1
    for node in reversed(nodes):
        if node.word is None:
            child_spans = [spans[id(child)] for child in node.children if id(child) in spans]
            if child_spans:
                spans[id(node)] = (child_spans[0][0], child_spans[-1][1])
    return [(node, *spans[id(node)]) for node in nodes if id(node) in spans]


# Treebanks use a few thousand distinct labels; evaluators split them per word.
@lru_cache(maxsize=8192)
def split_label(label: str) -> tuple[str, tuple[str, ...], int | None, int | None]:
    """Split ``NP-SBJ-1=2`` into ``("NP", ("SBJ",), 1, 2)``.

    Returns (category, function tags, coindex after "-", gap index after "=").
    ``-NONE-``, ``-LRB-``, ``-RRB-`` and the like are categories, not tags.
    """
    if not label or _DASHED_CATEGORY.match(label):
        return label, (), None, None
    parts = _LABEL_PARTS.split(label)
    category = parts[0]
    if not category:
        # A label starting with "-" that is not a dashed category: keep it whole.
        return label, (), None, None
    function_tags: list[str] = []
    coindex: int | None = None
    gapindex: int | None = None
    for separator, part in zip(parts[1::2], parts[2::2], strict=True):
        if not part:
            continue
        if part.isdigit():
            if separator == "=":
                gapindex = int(part) if gapindex is None else gapindex
            else:
                coindex = int(part) if coindex is None else coindex
        else:
            function_tags.append(part)
    return category, tuple(function_tags), coindex, gapindex


def category(label: str) -> str:
    """The label without function tags and indices (``NP-SBJ-1`` -> ``NP``)."""
    return split_label(label)[0]


def escape_token(token: str, *, opening_quote: bool = False) -> str:
    """PTB form of a raw token: ``(`` -> ``-LRB-`` etc.; ``"`` -> ````` or ``''``."""
    if token == '"':
        return OPEN_QUOTE if opening_quote else CLOSE_QUOTE
    return _BRACKET_ESCAPES.get(token, token)


def escape_brackets(word: str, brackets: str = ALL_BRACKETS) -> str:
    """``word`` with each of ``brackets`` in it, inside the word too, as its PTB escape:
    ``Ca(2+)`` -> ``Ca-LRB-2+-RRB-``. A raw ``(`` or ``)`` in a word cannot be read back
    (:func:`parse_tree` takes it for a bracket of the tree), so ``brackets`` should
    hold them."""
    if not any(bracket in word for bracket in brackets):
        return word
    return "".join(_BRACKET_ESCAPES[c] if c in brackets else c for c in word)


def unescape_brackets(word: str) -> str:
    """The inverse of :func:`escape_brackets` with every bracket escaped: each escape in
    the word as its bracket (``Ca-LRB-2+-RRB-`` -> ``Ca(2+)``)."""
    return _INNER_ESCAPE.sub(lambda match: _BRACKET_UNESCAPES[match.group()], word)


def escape_tokens(tokens: Iterable[str]) -> list[str]:
    """Escape a sentence's tokens; straight double quotes alternate opening/closing."""
    escaped: list[str] = []
    quote_open = False
    for token in tokens:
        if token == '"':
            quote_open = not quote_open
            escaped.append(escape_token(token, opening_quote=quote_open))
        else:
            escaped.append(escape_token(token))
    return escaped


def unescape_token(token: str) -> str:
    """Raw form of a PTB token: ``-LRB-`` -> ``(``; ````` and ``''`` -> ``"`` (lossy)."""
    if token in (OPEN_QUOTE, CLOSE_QUOTE):
        return '"'
    return _BRACKET_UNESCAPES.get(token, token)


def training_line(tree: Tree, root: str, word: Callable[[str], str]) -> str | None:
    """A gold tree as a parser's training line: under one ``root`` label, without empty
    elements (``-NONE-`` and the nodes left empty), labels without function tags and
    indices (``NP-SBJ-1`` -> ``NP``), each word written by ``word``; None when nothing
    is left. The treebank's own wrapper (unlabelled, TOP or ROOT) is replaced."""
    pruned = prune(tree, {"-NONE-"})
    if pruned is None:
        return None
    nodes = (
        pruned.children if pruned.word is None and pruned.label in ("", "TOP", "ROOT") else [pruned]
    )
    for node in nodes:
        for sub in node.subtrees():
            if sub.word is not None:
                sub.word = word(sub.word)
            else:
                sub.label = category(sub.label) or "X"
    return format_tree(Tree(root, list(nodes)))
