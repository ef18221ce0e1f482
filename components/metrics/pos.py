"""Part-of-speech tagging: accuracy over aligned tokens and P/R/F of (span, tag).

Tokens are aligned by identical character spans. Accuracy counts only the tokens
whose span exists on both sides (``pos/aligned``), as the CoNLL 2018 scorer's
AlignedAccuracy does; P/R/F treat every (span, tag) pair as an item, so tokenisation
errors lower them (with identical tokenisation P = R = F = accuracy).

A system token whose tag is None (the tagger left it untagged) is aligned and
counted like any other, and is always wrong, as CoNLL 2018 scores a ``_`` tag; it has
no per-tag row.

Tag mapping: ``tag_map`` is applied to both sides (e.g. to coarsen tags) and
``system_tag_map`` to system tags only, before ``tag_map`` (e.g. to translate a
system's tag set into the gold one). Tags a map does not name are kept.

Counts (additive): ``pos/gold``, ``pos/system``, ``pos/aligned``, ``pos/correct``,
``pos/tp``, ``pos/fp``, ``pos/fn`` and per gold/system tag ``pos/tag/<TAG>/tp|fp|fn``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from casflow.pipeline.counts import Counts, EvaluationResult, prf, safe_div

POS_KEY = "pos"


@dataclass(frozen=True)
class TaggedToken:
    begin: int
    end: int
    tag: str | None  # None: a system token left untagged


def _map_tag(tag: str | None, *maps: Mapping[str, str] | None) -> str | None:
    if tag is None:
        return None
    for tag_map in maps:
        if tag_map is not None:
            tag = tag_map.get(tag, tag)
    return tag


def _by_span(tokens: Sequence[TaggedToken], side: str) -> dict[tuple[int, int], str | None]:
    spans: dict[tuple[int, int], str | None] = {}
    for token in tokens:
        span = (token.begin, token.end)
        if span in spans:
            raise ValueError(
                f"two {side} tokens share the span {span}; tokens must not repeat "
                "(check the tokenizer or the reader that produced them)"
            )
        spans[span] = token.tag
    return spans


def pos_counts(
    gold: Sequence[TaggedToken],
    system: Sequence[TaggedToken],
    *,
    tag_map: Mapping[str, str] | None = None,
    system_tag_map: Mapping[str, str] | None = None,
    text: str | None = None,
    key: str = POS_KEY,
) -> EvaluationResult:
    """Counts for one document; errors list aligned tokens whose tags differ.

    An error names its tags ``gold_tag`` and ``system_tag``: the report adds ``system``
    (the system view) and ``document`` to every error line, so error keys must not use
    those names.
    """
    gold_tags = {span: _map_tag(tag, tag_map) for span, tag in _by_span(gold, "gold").items()}
    system_tags = {
        span: _map_tag(tag, system_tag_map, tag_map)
        for span, tag in _by_span(system, "system").items()
    }
    aligned = gold_tags.keys() & system_tags.keys()
    correct = sum(
        1
        for span in aligned
        if system_tags[span] is not None and gold_tags[span] == system_tags[span]
    )

    counts: Counts = {
        f"{key}/gold": len(gold_tags),
        f"{key}/system": len(system_tags),
        f"{key}/aligned": len(aligned),
        f"{key}/correct": correct,
        f"{key}/tp": correct,
        f"{key}/fp": len(system_tags) - correct,
        f"{key}/fn": len(gold_tags) - correct,
    }
    # Spans are unique on each side, so (span, tag) items are sets.
    gold_items = {(span, tag) for span, tag in gold_tags.items() if tag is not None}
    system_items = set(system_tags.items())
    per_tag: Counter[str] = Counter()
    for kind, items in (
        ("tp", gold_items & system_items),
        ("fp", system_items - gold_items),
        ("fn", gold_items - system_items),
    ):
        for _, tag in items:
            if tag is not None:
                per_tag[f"{key}/tag/{tag}/{kind}"] += 1
    counts.update(per_tag)

    errors: list[dict[str, Any]] = []
    for span in sorted(aligned):
        if system_tags[span] is None or gold_tags[span] != system_tags[span]:
            error: dict[str, Any] = {
                "type": "TAG",
                "begin": span[0],
                "end": span[1],
                "gold_tag": gold_tags[span],
                "system_tag": system_tags[span],
            }
            if text is not None:
                error["text"] = text[span[0] : span[1]]
            errors.append(error)
    return EvaluationResult(counts=counts, errors=errors)


def score_pos(counts: Mapping[str, float], key: str = POS_KEY) -> dict[str, Any]:
    """Accuracy over aligned tokens, P/R/F of (span, tag), and P/R/F per tag."""
    tags: dict[str, dict[str, float]] = {}
    prefix = f"{key}/tag/"
    for name, value in counts.items():
        if name.startswith(prefix):
            tag, _, kind = name[len(prefix) :].rpartition("/")
            tags.setdefault(tag, {})[kind] = tags.get(tag, {}).get(kind, 0) + value
    return {
        "accuracy": safe_div(counts.get(f"{key}/correct", 0), counts.get(f"{key}/aligned", 0)),
        "aligned": counts.get(f"{key}/aligned", 0),
        "gold": counts.get(f"{key}/gold", 0),
        "system": counts.get(f"{key}/system", 0),
        **prf(counts.get(f"{key}/tp", 0), counts.get(f"{key}/fp", 0), counts.get(f"{key}/fn", 0)),
        "tag": {
            tag: prf(c.get("tp", 0), c.get("fp", 0), c.get("fn", 0))
            for tag, c in sorted(tags.items())
        },
    }
