"""Mention spans <-> per-token labels (BIO or BIOES)."""

from __future__ import annotations

from collections.abc import Sequence

from casflow.components.crfsuite.tokenize import Span

OUTSIDE = "O"


def token_range(spans: Sequence[Span], begin: int, end: int) -> tuple[int, int] | None:
    """Tokens covered by the character span [begin, end); None when nothing overlaps."""
    inside = [i for i, (b, e) in enumerate(spans) if b < end and e > begin]
    return (inside[0], inside[-1] + 1) if inside else None


def encode(n_tokens: int, ranges: Sequence[tuple[int, int, str]], scheme: str = "BIO") -> list[str]:
    """Labels for token ranges ``(first, last_exclusive, label)``; an overlapping range is dropped."""
    labels = [OUTSIDE] * n_tokens
    for first, last, label in sorted(ranges):
        if any(lab != OUTSIDE for lab in labels[first:last]):
            continue
        if scheme == "BIOES" and last - first == 1:
            labels[first] = "S-" + label
            continue
        labels[first] = "B-" + label
        for k in range(first + 1, last):
            labels[k] = "I-" + label
        if scheme == "BIOES":
            labels[last - 1] = "E-" + label
    return labels


def decode(labels: Sequence[str]) -> list[tuple[int, int, str]]:
    """Token ranges from BIO or BIOES labels; an I/E without a B starts a mention."""
    ranges: list[tuple[int, int, str]] = []
    start: int | None = None
    current = ""
    for i, tag in enumerate([*labels, OUTSIDE]):
        prefix, _, label = tag.partition("-")
        continues = prefix in ("I", "E") and start is not None and label == current
        if not continues and start is not None:
            ranges.append((start, i, current))
            start = None
        if prefix in ("B", "S") or (prefix in ("I", "E") and start is None):
            start, current = i, label
        if prefix in ("E", "S") and start is not None:
            ranges.append((start, i + 1, current))
            start = None
    return ranges
