"""Tokenizer rules that reproduce CRAFT's (Penn Treebank-like, aggressive) tokenisation.

CRAFT splits off nearly every punctuation character inside words: hyphens
(``wild - type``, ``PGC - 1α − / −``), slashes (``C57BL / 6``), ``+``, brackets,
colons, primes (``3 ′``), commas, ``%`` and ``=`` / ``<`` / ``>`` (``p < 0.05``).
It keeps decimals (``0.05``, ``E12.5``), thousands (``32,000``), hyphens after a
few bound prefixes (``anti-rabbit``, ``non-BC``, ``co-transfected``),
abbreviations with their period (``Fig.``, ``i.e.``), ``°C``, ``'s`` as its own
token and URLs. The rules here are written from those observations on the CRAFT
training articles; the result is a plain :class:`spacy.tokenizer.Tokenizer`, so a
saved pipeline loads without casflow.
"""

from __future__ import annotations

import re

from spacy.lang.char_classes import ALPHA, ALPHA_LOWER, ALPHA_UPPER, CONCAT_QUOTES, PUNCT
from spacy.lang.en import English
from spacy.lang.tokenizer_exceptions import URL_MATCH
from spacy.language import Language
from spacy.symbols import ORTH
from spacy.tokenizer import Tokenizer
from spacy.util import compile_infix_regex, compile_prefix_regex, compile_suffix_regex

# Hyphen-like characters CRAFT splits off: hyphen-minus, minus sign, en and em dash.
DASHES = "\\-−–—‐"
# Other characters split off anywhere inside a token.
SPLIT_ANYWHERE = "/+:;=<>′″'\"“”‘’()\\[\\]{}~∼|×±≤≥→←↑↓^&@#$§†‡·•…?!®™©¤"

# Prefixes after which CRAFT keeps the hyphen inside the token.
BOUND_PREFIXES = (
    "anti",
    "non",
    "co",
    "pre",
    "post",
    "sub",
    "auto",
    "inter",
    "mid",
    "cross",
    "multi",
    "over",
    "pro",
    "re",
    "semi",
    "pseudo",
    "hetero",
    "micro",
    "intra",
    "pan",
    "extra",
    "homo",
)


def _not_after_prefixes() -> str:
    """Lookbehinds that stop a dash split right after a bound prefix at a token start."""
    parts = []
    for prefix in BOUND_PREFIXES:
        # sorted: a set's order changes with the hash seed, and so would the saved model
        for variant in sorted({prefix, prefix.capitalize()}):
            # (?<![^\W\d_]) would be nicer, but lookbehinds need a fixed width: use
            # "start of token or a non-letter" via two alternatives.
            parts.append(f"(?<!^{variant})")
    return "".join(parts)


def craft_prefixes() -> list[str]:
    return [
        rf"[{DASHES}]",
        r"[/+:;=<>′″\"“”‘’()\[\]{}~∼|×±≤≥→←↑↓^&@#$§†‡·•?!%,®™©¤]",
        r"\*+",
        r"'(?!s\b)",
        r"\.\.+",
        r"\.(?![0-9])",
    ]


def craft_suffixes() -> list[str]:
    return [
        rf"[{DASHES}]",
        r"[/+:;=<>″\"“”‘’()\[\]{}~∼|×±≤≥→←↑↓^&@#$§†‡·•?!%,®™©¤]",
        r"(?:(?<!′)′|′s)",
        r"\*+",
        r"'s",
        r"'S",
        r"’s",
        r"'",
        r"\.\.+",
        # a final period, unless it belongs to a one-letter initial or a dotted
        # abbreviation (i.e., e.g.) handled by special cases
        # (a single capital letter keeps its period: initials such as "S. cerevisiae")
        rf"(?<=[0-9{ALPHA}{PUNCT}{CONCAT_QUOTES}%°][0-9{ALPHA}{PUNCT}{CONCAT_QUOTES}%])\.",
        rf"(?<=[0-9{ALPHA_LOWER}{PUNCT}{CONCAT_QUOTES}%])\.",
    ]


def craft_infixes() -> list[str]:
    return [
        # "2-fold", "2.5-fold", "two-fold" stay whole
        _not_after_prefixes() + rf"[{DASHES}](?!fold\b)",
        rf"[{SPLIT_ANYWHERE}]",
        # runs of asterisks stay one token (** , ***)
        r"(?<!\*)\*+",
        # a Greek capital Delta ending a gene name is split off (pch2 Δ, Sox9 Δ / Δ)
        r"(?<=[a-z0-9])(?=Δ(?:$|/))",
        # commas split except inside numbers (32,000)
        r"(?<![0-9]),|,(?![0-9]{3}(?![0-9]))",
        # % splits everywhere
        r"%",
        r"\.\.+",
        # a period between a lowercase word and an uppercase word (end.Start)
        rf"(?<=[{ALPHA_LOWER}]{{2}})\.(?=[{ALPHA_UPPER}][{ALPHA_LOWER}])",
        rf"(?<=[{ALPHA}0-9])(?=°)",
        # a number glued to a unit (8μm) is split; decimals stay whole
        r"(?<=[0-9])(?=μm\b)",
    ]


def craft_special_cases() -> dict[str, list[dict[int, str]]]:
    cases: dict[str, list[dict[int, str]]] = {}
    for abbreviation in (
        "Fig.",
        "Figs.",
        "fig.",
        "figs.",
        "No.",
        "Nos.",
        "no.",
        "et al.",
        "al.",
        "e.g.",
        "i.e.",
        "vs.",
        "Vs.",
        "cf.",
        "approx.",
        "ca.",
        "Dr.",
        "Inc.",
        "Ltd.",
        "Co.",
        "Mm.",
        "Hs.",
        "Ref.",
        "Refs.",
        "Suppl.",
        "Eq.",
        "St.",
        "sp.",
        "spp.",
        "Drs.",
        "Prof.",
        "Corp.",
        "c.f.",
        "s.c.",
        "i.p.",
        "i.v.",
        "Chr.",
        "chr.",
        "Ph.",
        "abbr.",
        "cat.",
        "etc.",
        "Jr.",
        "Mr.",
        "U.S.",
        "U.S.A.",
        "S.E.M.",
        "s.e.m.",
        "r.m.s.",
    ):
        cases[abbreviation] = [{ORTH: abbreviation}]
    for negation, (first, second) in {
        "cannot": ("can", "not"),
        "Cannot": ("Can", "not"),
    }.items():
        cases[negation] = [{ORTH: first}, {ORTH: second}]
    for contraction in ("n't",):
        cases[contraction] = [{ORTH: contraction}]
    for word in ("don't", "doesn't", "didn't", "isn't", "aren't", "wasn't", "weren't"):
        cases[word] = [{ORTH: word[:-3]}, {ORTH: "n't"}]
    for word in ("post-hoc", "Post-hoc"):
        cases[word] = [{ORTH: word[:-4]}, {ORTH: "-"}, {ORTH: "hoc"}]
    for word in ("mid-late",):
        cases[word] = [{ORTH: "mid"}, {ORTH: "-"}, {ORTH: "late"}]
    for word in ("ECFP+", "EYFP+", "RFP+"):
        cases[word] = [{ORTH: word}]
    cases["°C"] = [{ORTH: "°C"}]
    cases["°F"] = [{ORTH: "°F"}]
    return cases


def craft_tokenizer(nlp: Language) -> Tokenizer:
    """A spaCy ``Tokenizer`` for ``nlp.vocab`` following CRAFT tokenisation."""
    tokenizer = Tokenizer(
        nlp.vocab,
        rules=craft_special_cases(),
        prefix_search=compile_prefix_regex(craft_prefixes()).search,
        suffix_search=compile_suffix_regex(craft_suffixes()).search,
        infix_finditer=compile_infix_regex(craft_infixes()).finditer,
        url_match=URL_MATCH,
    )
    return tokenizer


def blank_craft_english() -> Language:
    """A blank English pipeline with the CRAFT tokenizer."""
    nlp = English()
    nlp.tokenizer = craft_tokenizer(nlp)
    return nlp


__all__ = ["blank_craft_english", "craft_tokenizer", "re"]
