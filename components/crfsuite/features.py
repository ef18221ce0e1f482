"""Token features for the CRF taggers (BANNER / NERsuite style).

Each token becomes a list of feature strings: the word and its normalisations,
prefixes and suffixes, word shape, character n-grams, orthographic flags, Greek
letters, the whitespace around it (tokens split inside words, so "IL - 2" and
"IL-2" must differ), the whitespace-delimited word it sits in, a window of
neighbouring words and shapes, and optional dictionary-match tags.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from casflow.components.crfsuite.tokenize import Span

GREEK = frozenset(
    [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "epsilon",
        "zeta",
        "eta",
        "theta",
        "iota",
        "kappa",
        "lambda",
        "mu",
        "nu",
        "xi",
        "omicron",
        "pi",
        "rho",
        "sigma",
        "tau",
        "upsilon",
        "phi",
        "chi",
        "psi",
        "omega",
    ]
)
_ROMAN = re.compile(r"(?i)^(?:i|ii|iii|iv|v|vi|vii|viii|ix|x|xi|xii)$")
_DIGIT = re.compile(r"\d")


@dataclass(frozen=True)
class FeatureSettings:
    """Which feature groups to emit; stored with the model so tagging matches training."""

    window: int = 2
    affix_max: int = 4
    char_ngrams: tuple[int, ...] = (2, 3)
    word_context: bool = True
    bigrams: bool = True
    abbreviations: bool = False
    clusters: bool = False
    pos: bool = False
    embedding_clusters: bool = False


def shape(word: str) -> str:
    """``Abc-12`` -> ``Xxx-dd``; letters by case, digits as d, other characters kept."""
    out = []
    for c in word:
        if c.isupper():
            out.append("X")
        elif c.islower():
            out.append("x")
        elif c.isdigit():
            out.append("d")
        else:
            out.append(c)
    return "".join(out)


def short_shape(word: str) -> str:
    """The shape with runs collapsed: ``Xxx-dd`` -> ``Xx-d``."""
    full = shape(word)
    return "".join(c for i, c in enumerate(full) if i == 0 or c != full[i - 1])


def _word_class(word: str) -> list[str]:
    flags = []
    if word.isdigit():
        flags.append("DIGITS")
        flags.append(f"NDIG={min(len(word), 4)}")
    elif word.isalpha():
        if word.isupper():
            flags.append("ALLCAP" if len(word) > 1 else "ONECAP")
        elif word[0].isupper():
            flags.append("INITCAP" if word[1:].islower() else "MIXCAP")
        elif not word.islower():
            flags.append("LOWMIX")
        else:
            flags.append("LOWER")
        if word.lower() in GREEK:
            flags.append("GREEK")
        if _ROMAN.match(word):
            flags.append("ROMAN")
        if len(word) == 1:
            flags.append("ONELETTER")
    else:
        flags.append("PUNCT")
    flags.append(f"LEN={min(len(word), 8)}")
    return flags


def _chunk_bounds(text: str, spans: Sequence[Span]) -> list[tuple[int, int]]:
    """For each token, the index range of the whitespace-delimited chunk it belongs to."""
    bounds: list[tuple[int, int]] = []
    start = 0
    for i in range(1, len(spans) + 1):
        if i == len(spans) or spans[i][0] > spans[i - 1][1]:
            bounds.extend([(start, i)] * (i - start))
            start = i
    return bounds


def sentence_features(
    text: str,
    spans: Sequence[Span],
    settings: FeatureSettings = FeatureSettings(),
    dictionary_tags: Sequence[Sequence[str]] | None = None,
    extra: Sequence[Sequence[str]] | None = None,
) -> list[list[str]]:
    """Feature strings for each token span of one sentence of ``text``.

    ``dictionary_tags`` (per token, e.g. ``B-CL``) are emitted for the token and its
    neighbours; ``extra`` (per token) are emitted as given.
    """
    words = [text[b:e] for b, e in spans]
    n = len(words)
    lower = [w.lower() for w in words]
    shapes = [short_shape(w) for w in words]
    space_before = [i == 0 or spans[i][0] > spans[i - 1][1] for i in range(n)]
    space_after = [i == n - 1 or spans[i + 1][0] > spans[i][1] for i in range(n)]
    chunks = _chunk_bounds(text, spans)
    out: list[list[str]] = []
    for i, word in enumerate(words):
        lw = lower[i]
        f = [
            "bias",
            "w=" + word,
            "lw=" + lw,
            "nw=" + _DIGIT.sub("0", lw),
            "sh=" + shape(word)[:12],
            "ss=" + shapes[i],
            f"sp={int(space_before[i])}{int(space_after[i])}",
        ]
        f.extend(_word_class(word))
        for k in range(1, min(settings.affix_max, len(lw)) + 1):
            f.append(f"p{k}={lw[:k]}")
            f.append(f"s{k}={lw[-k:]}")
        if len(lw) > 3:
            padded = f"<{lw}>"
            for size in settings.char_ngrams:
                for j in range(len(padded) - size + 1):
                    f.append(f"c{size}={padded[j : j + size]}")
        if settings.word_context:
            first, last = chunks[i]
            if last - first > 1:
                chunk = text[spans[first][0] : spans[last - 1][1]]
                f.append("cw=" + chunk.lower())
                f.append("cs=" + short_shape(chunk))
                f.append(f"cpos={'B' if i == first else 'E' if i == last - 1 else 'I'}")
        for d in range(-settings.window, settings.window + 1):
            if d == 0:
                continue
            j = i + d
            if 0 <= j < n:
                f.append(f"lw[{d}]={lower[j]}")
                f.append(f"ss[{d}]={shapes[j]}")
            else:
                f.append(f"lw[{d}]=<PAD>")
        if settings.bigrams:
            f.append(f"bg-={lower[i - 1] if i else '<S>'}|{lw}")
            f.append(f"bg+={lw}|{lower[i + 1] if i < n - 1 else '</S>'}")
        if dictionary_tags is not None:
            f.extend("dict=" + tag for tag in dictionary_tags[i])
            for d in (-1, 1):
                j = i + d
                if 0 <= j < n:
                    f.extend(f"dict[{d}]={tag}" for tag in dictionary_tags[j])
        if extra is not None:
            f.extend(extra[i])
        out.append(f)
    return out
