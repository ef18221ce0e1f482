"""Score a tagger on gold examples with casflow's mention evaluators."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from casflow.components.crfsuite.gold_view import GoldMention
from casflow.components.metrics.matching import STRICT, Mention
from casflow.components.metrics.mentions import alt_eval_counts, mention_counts
from casflow.pipeline.counts import Counts, add_counts

Predicted = Sequence[tuple[int, int, str]]


def gold_mentions(mentions: Iterable[GoldMention], alternatives: bool) -> list[Mention]:
    return [
        Mention(m.begin, m.end, m.label, m.alternatives if alternatives else ()) for m in mentions
    ]


def unit_counts(
    gold: Iterable[GoldMention],
    system: Predicted,
    *,
    with_alternatives: bool,
    accepted: Iterable[tuple[int, int]] = (),
) -> Counts:
    """Strict counts (and ``alt_eval`` counts when ``with_alternatives``) for one unit.

    ``accepted``: the unit's alternative spans that belong to no gold mention, which
    alt_eval.perl also accepts (see :func:`alt_eval_counts`).
    """
    system_mentions = [Mention(b, e, label) for b, e, label in system]
    gold = list(gold)
    counts = mention_counts(
        gold_mentions(gold, False), system_mentions, criteria=(STRICT,), errors_for=()
    ).counts
    if with_alternatives:
        add_counts(
            counts,
            alt_eval_counts(gold_mentions(gold, True), system_mentions, accepted=accepted).counts,
        )
    return counts
