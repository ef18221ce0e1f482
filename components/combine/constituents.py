"""``combine.constituents.v1``: constituent voting over several views' trees.

Over :mod:`casflow.components.combine.bracket_vote` (Henderson and Brill's
constituent voting). Each member's DKPro constituents (read from its ``ROOT``
constituents down the ``children`` arrays; without ROOTs, from the constituents
no other one contains) become brackets over token positions; constituents over
empty elements only are left out. Brackets are voted sentence by sentence (a
bracket belongs to the sentence of its first token and is no vote when it
leaves that sentence). A member with no constituent (ROOT included) over a
sentence's tokens produced nothing there and abstains; a sentence no member
parses gets no tree and no agreement. Tokens outside every sentence make
sentences of their own.

The result is written as the Penn importer writes trees: per sentence a DKPro
``ROOT`` over the sentence's tokens and a ``Constituent`` per kept bracket
(``constituentType``, ``syntacticFunction``, ``parent``, ``children`` in text
order, tokens included), each token's ``parent`` its innermost constituent; POS
by weighted vote when the tokens have none; one ``SentenceAgreement`` (layer
``constituents``) per sentence. Tokens and sentences come as in
``combine.dependencies.v1``: the view's own, else the first member's, and every
member must have the same tokens.
"""

from __future__ import annotations

import bisect
from typing import Any, cast

import cassis

from casflow.components.combine.base import (
    CombineInputError,
    Member,
    SyntaxCombineConfig,
    SyntaxCombiner,
    group_by_sentence,
)
from casflow.components.combine.bracket_vote import (
    Bracket,
    CombinedTree,
    Label,
    MemberTree,
    first_crossing,
    vote_brackets,
)
from casflow.typesystem import (
    CONSTITUENT,
    CONSTITUENT_ROOT,
    POS,
    TOKEN,
)

Span = tuple[int, int]


class CombineConstituentsConfig(SyntaxCombineConfig):
    pass


def _children(fs: Any) -> list[Any]:
    array = getattr(fs, "children", None)
    return list(array.elements) if array is not None and array.elements else []


class CombineConstituents(SyntaxCombiner[CombineConstituentsConfig]):
    name = "combine.constituents.v1"
    description = (
        "Combines the constituency trees of several views by constituent voting "
        "(Henderson & Brill: brackets of more than half of the member weight, labels "
        "and POS by vote)."
    )
    layer = "constituents"
    layer_type = CONSTITUENT
    also_produces = (CONSTITUENT_ROOT, f"{TOKEN}:parent")

    def process(self, view: cassis.Cas) -> None:
        doc, members, tokens, sentences = self.voting_inputs(view)
        begins = [t.begin for t in tokens]
        ends = [t.end for t in tokens]
        sentence_of = [-1] * len(tokens)
        groups = group_by_sentence(begins, sentences)
        for number, indices in enumerate(groups):
            for i in indices:
                sentence_of[i] = number
        brackets = []
        parsed: list[set[int]] = []  # per member, the sentences it has a tree over
        for member in members:
            found, tops = self._brackets(view, member, begins, ends)
            brackets.append(found)
            parsed.append(
                {
                    number
                    for start, end in tops
                    for number in range(sentence_of[start], sentence_of[end - 1] + 1)
                }
            )
        tags = [self._tags(member) or [None] * len(tokens) for member in members]
        # Each member's brackets by sentence (a bracket leaving its sentence is no vote).
        by_sentence: list[dict[int, list[Bracket]]] = []
        for member_brackets in brackets:
            grouped: dict[int, list[Bracket]] = {}
            for b in member_brackets:
                number = sentence_of[b.start]
                if number >= 0 and sentence_of[b.end - 1] == number:
                    grouped.setdefault(number, []).append(b)
            by_sentence.append(grouped)
        out: list[Any] = []
        write_pos = self.config.pos and all(t.pos is None for t in tokens)
        for number, (sentence, indices) in enumerate(zip(sentences, groups, strict=True)):
            if not indices:
                continue
            first = indices[0]
            trees = []
            for member, grouped, member_tags, theirs in zip(
                members, by_sentence, tags, parsed, strict=True
            ):
                if number not in theirs:
                    continue  # the member produced nothing here: it abstains
                mine = grouped.get(number, [])
                self._check_nested(doc, member, mine, begins, ends)
                inside = [Bracket(b.start - first, b.end - first, b.label) for b in mine]
                trees.append(
                    MemberTree(
                        inside,
                        [member_tags[i] for i in indices],
                        member.config.weight,
                        member.config.label_weights,
                    )
                )
            if not trees:
                continue  # no member parsed it: nothing to vote
            combined = vote_brackets(len(indices), trees)
            words = [tokens[i] for i in indices]
            self._write_tree(view, words, combined, out)
            if write_pos:
                self._write_pos(view, words, combined, out)
            if self.config.agreement:
                out.append(self.agreement_annotation(view, sentence, combined.agreement))
        view.add_all(out)

    @staticmethod
    def _check_nested(
        doc: str, member: Member, brackets: list[Bracket], begins: list[int], ends: list[int]
    ) -> None:
        """Fail the document, naming the member view and the constituents by their
        character offsets, when two of the member's brackets in a sentence cross (a
        damaged import: a child reaching out of its parent)."""
        found = first_crossing([(begins[b.start], ends[b.end - 1]) for b in brackets])
        if found is not None:
            error = CombineInputError(
                f"document {doc}: member view {member.config.view!r} has crossing "
                f"constituents at character offsets {found[0]} and {found[1]}; a tree's "
                "constituents must nest"
            )
            error.hint = (
                "check the member's parser or importer: each constituent's children must "
                "lie inside it"
            )
            raise error

    @staticmethod
    def _tags(member: Member) -> list[tuple[str | None, str | None] | None]:
        found: list[tuple[str | None, str | None] | None] = []
        for token in member.view.select(TOKEN):
            # Attributes, not get(): this runs over every member's every token.
            pos = token.pos
            if pos is None or not (pos.PosValue or pos.coarseValue):
                found.append(None)
            else:
                found.append((pos.PosValue, pos.coarseValue))
        return found

    def _brackets(
        self, view: cassis.Cas, member: Member, begins: list[int], ends: list[int]
    ) -> tuple[list[Bracket], list[Span]]:
        """The member's brackets over token positions, in pre-order, and the token
        positions (start, end exclusive) of its trees' tops (ROOTs, else the
        constituents no other one contains) that hold tokens."""
        ts = view.typesystem
        constituent_type = ts.get_type(CONSTITUENT)
        root_type = ts.get_type(CONSTITUENT_ROOT)
        # Type tests looked up once per type: trees have hundreds of nodes per sentence.
        kinds: dict[str, tuple[bool, bool]] = {}

        def kind(fs: Any) -> tuple[bool, bool]:
            """(is a constituent, is a ROOT)"""
            found = kinds.get(fs.type.name)
            if found is None:
                found = kinds[fs.type.name] = (
                    ts.subsumes(constituent_type, fs.type),
                    ts.subsumes(root_type, fs.type),
                )
            return found

        constituents = member.view.select(CONSTITUENT)
        roots = [c for c in constituents if kind(c)[1]]
        if not roots:
            contained = {id(child) for c in constituents for child in _children(c)}
            roots = [c for c in constituents if id(c) not in contained]
        tops: list[Span] = []
        for top in roots:
            start = bisect.bisect_left(begins, top.begin)
            end = bisect.bisect_right(ends, top.end)
            if start < end:
                tops.append((start, end))
        found: list[Bracket] = []
        seen: set[int] = set()
        stack = list(reversed(sorted(roots, key=lambda r: (r.begin, -r.end))))
        while stack:
            node = stack.pop()
            if id(node) in seen:
                raise CombineInputError(
                    f"document {self.document(view)}: member view {member.config.view!r}: the "
                    f"constituent at ({node.begin}, {node.end}) is reached twice; the children "
                    "arrays must form trees"
                )
            seen.add(id(node))
            if not kind(node)[1]:
                start = bisect.bisect_left(begins, node.begin)
                end = bisect.bisect_right(ends, node.end)
                if start < end:  # constituents over empty elements only hold no token
                    category = member.config.label(node.constituentType or "")
                    label = Label(category, node.syntacticFunction)
                    found.append(Bracket(start, end, label))
            stack.extend(reversed([c for c in _children(node) if kind(c)[0]]))
        return found, tops

    @staticmethod
    def _write_tree(
        view: cassis.Cas, words: list[Any], combined: CombinedTree, out: list[Any]
    ) -> None:
        ts = view.typesystem
        fs_array = ts.get_type("uima.cas.FSArray")
        root = ts.get_type(CONSTITUENT_ROOT)(
            begin=words[0].begin, end=words[-1].end, constituentType="ROOT"
        )
        nodes = [
            ts.get_type(CONSTITUENT)(
                begin=words[b.start].begin,
                end=words[b.end - 1].end,
                constituentType=b.label.category,
                syntacticFunction=b.label.function,
            )
            for b in combined.brackets
        ]
        # In pre-order every later bracket over a token lies inside the earlier ones,
        # so the last one seen is the token's innermost constituent.
        innermost: list[int | None] = [None] * len(words)
        for index, bracket in enumerate(combined.brackets):
            for position in range(bracket.start, bracket.end):
                innermost[position] = index
        children: dict[int | None, list[tuple[int, Any]]] = {}
        for index, bracket in enumerate(combined.brackets):
            children.setdefault(bracket.parent, []).append((bracket.start, nodes[index]))
        for position, owner in enumerate(innermost):
            children.setdefault(owner, []).append((position, words[position]))
        for owner, items in children.items():
            parent = root if owner is None else nodes[owner]
            ordered = [fs for _, fs in sorted(items, key=lambda item: item[0])]
            parent.children = fs_array(elements=ordered)
            for child in ordered:
                child.parent = parent
        out.append(root)
        out.extend(nodes)

    @staticmethod
    def _write_pos(
        view: cassis.Cas, words: list[Any], combined: CombinedTree, out: list[Any]
    ) -> None:
        pos_type = view.typesystem.get_type(POS)
        for word, tag in zip(words, combined.tags, strict=True):
            if tag is None:
                continue
            # the vote returns what the members proposed: (PosValue, coarseValue) pairs
            fine, coarse = cast("tuple[str | None, str | None]", tag)
            word.pos = pos_type(begin=word.begin, end=word.end, PosValue=fine, coarseValue=coarse)
            out.append(word.pos)
