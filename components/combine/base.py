"""What the combine.* components share: members, tokens, sentences, agreement.

A combiner runs in its target view and reads its members from other views of
the same document (as ``view.copy.v1`` reads its source). Members must hold the
same text, and the syntax combiners need the same tokens (same offsets) in every
member: combination votes token by token, so a token one member splits
differently has no counterpart to vote with. Any mismatch fails the document
with a message naming the member view and the first differing token.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import cassis
from pydantic import Field, field_validator, model_validator

from casflow.cas.metadata import find_document_id
from casflow.components.combine.voting import Agreement
from casflow.pipeline.component import ComponentConfig, DocumentError, Processor
from casflow.typesystem import POS, SENTENCE, SENTENCE_AGREEMENT, TOKEN

Span = tuple[int, int]


class CombineInputError(DocumentError, ValueError):
    """The members cannot be combined on this document."""

    hint = (
        "combine views of the same text whose members share tokens (run them over the same "
        "tokens, e.g. taken from one tokenizer or copied with view.copy.v1), and check the "
        "member view names"
    )


class MemberConfig(ComponentConfig):
    view: str = Field(description="View holding this member's output.")
    weight: float = Field(
        1.0,
        gt=0,
        allow_inf_nan=False,
        description="Vote weight of the member (e.g. its development accuracy).",
    )
    label_weights: dict[str, float] = Field(
        default_factory=dict,
        description="Vote weight per label (dependency relation, constituent category or "
        "mention class, after label_mapping), e.g. the member's development accuracy on "
        "it; labels not listed take 'weight'.",
    )
    label_mapping: dict[str, str] = Field(
        default_factory=dict,
        description="Rename this member's labels before the vote, for members with other "
        "label sets (e.g. {ORGAN: Organ} or {nsubjpass: nsubj:pass}); labels not listed "
        "are kept.",
    )

    def label(self, value: str) -> str:
        return self.label_mapping.get(value, value)

    @field_validator("label_weights")
    @classmethod
    def _positive(cls, value: dict[str, float]) -> dict[str, float]:
        # NaN passes "<= 0" and an infinite weight makes every share NaN
        bad = {label: w for label, w in value.items() if not math.isfinite(w) or w <= 0}
        if bad:
            raise ValueError(f"label weights must be finite numbers > 0, got {bad}")
        return value

    @model_validator(mode="after")
    def _weights_after_mapping(self) -> MemberConfig:
        # the vote sees mapped labels only: a weight keyed by a label mapped away never counts
        unused = {
            label: self.label_mapping[label]
            for label in self.label_weights
            if label in self.label_mapping and label not in self.label_mapping.values()
        }
        if unused:
            keys = ", ".join(f"{a!r} -> {b!r}" for a, b in unused.items())
            raise ValueError(
                f"member {self.view!r}: label_weights name labels that label_mapping renames "
                f"before the vote ({keys}), so their weights would never count; key "
                "label_weights by the labels after label_mapping"
            )
        return self


class CombineConfig(ComponentConfig):
    members: list[MemberConfig] = Field(
        description="The views to combine, in order (a tie between labels, categories or "
        "POS tags goes to the earlier member): a view name, or {view, weight, "
        "label_weights, label_mapping}."
    )
    agreement: bool = Field(
        True,
        description="Write one SentenceAgreement per sentence: how much the members agree "
        "(a trust score for eval.agreement.v1 or for filtering).",
    )

    @field_validator("members", mode="before")
    @classmethod
    def _names_are_members(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"view": item} if isinstance(item, str) else item for item in value]
        return value

    @model_validator(mode="after")
    def _distinct_members(self) -> CombineConfig:
        views = [m.view for m in self.members]
        if len(views) < 2:
            raise ValueError(f"combine at least two member views, got {views}")
        repeated = sorted({v for v in views if views.count(v) > 1})
        if repeated:
            raise ValueError(f"member views must differ; repeated: {', '.join(repeated)}")
        return self


@dataclass
class Member:
    config: MemberConfig
    view: cassis.Cas


def view_name(view: cassis.Cas) -> str:
    return str(view.get_sofa().sofaID)


CombineConfigT = TypeVar("CombineConfigT", bound=CombineConfig)


class Combiner(Processor[CombineConfigT]):
    """Base of the combine.* processors: resolves members and writes agreement."""

    layer: str = ""

    def layer_name(self) -> str:
        """The ``layer`` written into SentenceAgreement (one per sentence and layer)."""
        return self.layer

    @classmethod
    def member_requires(cls, config: CombineConfigT) -> tuple[str, ...]:
        """What every member view must hold, checked before any document is read (a
        member with nothing for one document abstains, so a member view that never
        gets the layer would otherwise abstain silently everywhere)."""
        return ()

    @classmethod
    def view_problems(cls, config: CombineConfigT, view: str) -> list[str]:
        if any(member.view == view for member in config.members):
            return [
                f"{cls.name} writes view {view!r}, which is also one of its members; "
                "write the combination into a view of its own"
            ]
        return []

    @classmethod
    def views_read(cls, config: CombineConfigT) -> dict[str, tuple[str, ...]]:
        requires = cls.member_requires(config)
        return {member.view: requires for member in config.members}

    def document(self, view: cassis.Cas) -> str:
        return find_document_id(view) or "<unknown document>"

    def members(self, view: cassis.Cas) -> list[Member]:
        target = view_name(view)
        doc = self.document(view)
        found = []
        for member in self.config.members:
            if member.view == target:
                raise CombineInputError(
                    f"document {doc}: member view {member.view!r} is the view this combiner "
                    "writes; write the combination into a view of its own"
                )
            try:
                member_view = view.get_view(member.view)
            except Exception as exc:  # cassis raises KeyError for unknown views
                views = sorted(str(s.sofaID) for s in view.sofas)
                raise CombineInputError(
                    f"document {doc}: member view {member.view!r} does not exist "
                    f"(views: {', '.join(views)})"
                ) from exc
            if (member_view.sofa_string or "") != (view.sofa_string or ""):
                raise CombineInputError(
                    f"document {doc}: member view {member.view!r} holds a different text "
                    f"than view {target!r}; members must annotate the same text"
                )
            found.append(Member(member, member_view))
        return found

    def shared_tokens(self, view: cassis.Cas, members: Sequence[Member]) -> list[Any]:
        """The target view's tokens (copied from the first member that has some when it
        has none), after checking that every member has exactly these tokens.

        A member without any token produced nothing for this document (a tool that
        failed on it, an import with ``missing: empty``): it abstains, and the others
        are combined (see :meth:`SyntaxCombiner.voting_inputs` for abstaining on one
        sentence)."""
        doc = self.document(view)
        tokens = list(view.select(TOKEN))
        source = view_name(view)
        if not tokens:
            first = next((m for m in members if m.view.select(TOKEN)), None)
            if first is None:
                return []
            source = first.config.view
            token_type = view.typesystem.get_type(TOKEN)
            tokens = [token_type(begin=t.begin, end=t.end) for t in first.view.select(TOKEN)]
            view.add_all(tokens)
        spans = [(t.begin, t.end) for t in tokens]
        for member in members:
            theirs = [(t.begin, t.end) for t in member.view.select(TOKEN)]
            if theirs == spans or not theirs:
                continue
            where = next(
                (i for i, (a, b) in enumerate(zip(spans, theirs, strict=False)) if a != b),
                min(len(spans), len(theirs)),
            )
            ours = _describe_token(view, spans, where)
            other = _describe_token(view, theirs, where)
            raise CombineInputError(
                f"document {doc}: member view {member.config.view!r} has other tokens than "
                f"{source!r} ({len(theirs)} vs {len(spans)} tokens); token {where + 1} is "
                f"{other} there but {ours} in {source!r}"
            )
        return tokens

    def sentence_spans(self, view: cassis.Cas, members: Sequence[Member], copy: bool) -> list[Span]:
        """Sentences of the target view; else the first member's that has some (copied
        into the target when ``copy``); else the whole text as one sentence."""
        own = [(s.begin, s.end) for s in view.select(SENTENCE)]
        if own:
            return own
        for member in members:
            spans = [(s.begin, s.end) for s in member.view.select(SENTENCE)]
            if spans:
                if copy:
                    sentence_type = view.typesystem.get_type(SENTENCE)
                    view.add_all(sentence_type(begin=b, end=e) for b, e in spans)
                return spans
        text = view.sofa_string or ""
        return [(0, len(text))] if text else []

    def agreement_annotation(self, view: cassis.Cas, span: Span, agreement: Agreement) -> Any:
        return view.typesystem.get_type(SENTENCE_AGREEMENT)(
            begin=span[0],
            end=span[1],
            layer=self.layer_name(),
            members=agreement.members,
            majorityShare=agreement.majority_share,
            support=agreement.support,
            membersAgreeing=agreement.members_agreeing,
        )


class SyntaxCombineConfig(CombineConfig):
    pos: bool = Field(True, description="Vote POS tags too when the view's tokens have none.")


SyntaxConfigT = TypeVar("SyntaxConfigT", bound=SyntaxCombineConfig)


class SyntaxCombiner(Combiner[SyntaxConfigT]):
    """Base of the combiners that vote token by token (dependencies, constituents): the
    members and the view share tokens, the view's own sentences or the first member's
    are voted in, and the combination goes into a view that holds none of the layer yet
    (so members and result never mix)."""

    #: the annotation type of the layer: every member holds it, the view must not yet
    layer_type: str = ""
    #: what the combination writes besides tokens, sentences, the layer, POS and agreement
    also_produces: tuple[str, ...] = ()

    @classmethod
    def member_requires(cls, config: SyntaxConfigT) -> tuple[str, ...]:
        return (TOKEN, cls.layer_type)

    @classmethod
    def keeps_existing(cls, config: SyntaxConfigT) -> tuple[str, ...]:
        # the target view's own tokens and sentences are used where it has them
        return (TOKEN, SENTENCE)

    @classmethod
    def requirements(cls, config: SyntaxConfigT) -> tuple[tuple[str, ...], tuple[str, ...]]:
        produces = [TOKEN, SENTENCE, cls.layer_type, *cls.also_produces]
        if config.pos:
            produces += [POS, f"{TOKEN}:pos"]
        if config.agreement:
            produces.append(SENTENCE_AGREEMENT)
        return (), tuple(produces)

    def voting_inputs(self, view: cassis.Cas) -> tuple[str, list[Member], list[Any], list[Span]]:
        """The document id, the members, the shared tokens and the sentence spans (copied
        into the view when it has none) of a document to combine.

        Every token is in a sentence: each stretch of tokens outside every sentence
        (a title the splitter left out, tokens between a view's own sentences) is
        added to the view as a sentence of its own and combined like the others.

        A member abstains on a sentence where it has none of the layer (no basic
        dependency of a token there, no constituent over its tokens): it produced
        nothing there, so it is left out of that sentence's vote and agreement
        instead of voting against everything. A sentence every member abstains on
        gets nothing: no tree, no agreement.
        """
        doc = self.document(view)
        if view.select(self.layer_type):
            raise CombineInputError(
                f"document {doc}: the view already holds {self.layer}; write the "
                "combination into a view of its own"
            )
        members = self.members(view)
        tokens = self.shared_tokens(view, members)
        sentences = self.sentence_spans(view, members, copy=True)
        stretches = uncovered_stretches([(t.begin, t.end) for t in tokens], sentences)
        if stretches:
            sentence_type = view.typesystem.get_type(SENTENCE)
            view.add_all(sentence_type(begin=b, end=e) for b, e in stretches)
            sentences = sorted(sentences + stretches)
        return doc, members, tokens, sentences


def _describe_token(view: cassis.Cas, spans: Sequence[Span], index: int) -> str:
    if index >= len(spans):
        return "missing"
    begin, end = spans[index]
    return f"{(view.sofa_string or '')[begin:end]!r} at ({begin}, {end})"


def uncovered_stretches(tokens: Sequence[Span], sentences: Sequence[Span]) -> list[Span]:
    """Spans of the runs of ``tokens`` (ascending) that no sentence holds (as
    :func:`group_by_sentence` assigns them); a run ends where a sentence begins."""
    begins = [b for b, _ in sentences]
    stretches: list[Span] = []
    run: list[Span] = []
    run_after = -2  # the sentence the current run follows
    for begin, end in tokens:
        number = bisect.bisect_right(begins, begin) - 1
        covered = 0 <= number < len(sentences) and begin < sentences[number][1]
        if run and (covered or number != run_after):
            stretches.append((run[0][0], run[-1][1]))
            run = []
        if not covered:
            run.append((begin, end))
            run_after = number
    if run:
        stretches.append((run[0][0], run[-1][1]))
    return stretches


def group_by_sentence(starts: Sequence[int], sentences: Sequence[Span]) -> list[list[int]]:
    """Indices of items (by their start offsets, ascending) in each sentence; an item
    belongs to the sentence that starts last at or before it."""
    begins = [b for b, _ in sentences]
    grouped: list[list[int]] = [[] for _ in sentences]
    for index, start in enumerate(starts):
        number = bisect.bisect_right(begins, start) - 1
        if 0 <= number < len(sentences) and start < sentences[number][1]:
            grouped[number].append(index)
    return grouped
