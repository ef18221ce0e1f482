"""How a token is reduced to its dictionary key, the same way for entries and text.

Matching ignores case, writes Greek letters as their names ("α" -> "alpha"),
drops hyphens and dashes (so "T-cell", "T cell" and "T–cell" are one key) and
reduces English and Latin/Greek plurals to one form ("arteries" -> "artery",
"nuclei" -> "nucleus", "vertebrae" -> "vertebra", "cortices" -> "cortex",
"epithelia" and "epithelium" -> "epitheli", "testis" and "testes" -> "teste").
The reductions need not be words: they only have to map the singular and the
plural to the same key, and they are applied to both sides.
"""

from __future__ import annotations

from collections.abc import Sequence

from casflow.components.crfsuite.tokenize import Span, tokenize

GREEK = {
    "α": "alpha", "β": "beta", "γ": "gamma", "δ": "delta", "ε": "epsilon", "ζ": "zeta",
    "η": "eta", "θ": "theta", "ι": "iota", "κ": "kappa", "λ": "lambda", "μ": "mu",
    "ν": "nu", "ξ": "xi", "ο": "omicron", "π": "pi", "ρ": "rho", "σ": "sigma", "ς": "sigma",
    "τ": "tau", "υ": "upsilon", "φ": "phi", "χ": "chi", "ψ": "psi", "ω": "omega",
}  # fmt: skip
_GREEK_TABLE = str.maketrans(GREEK)

#: tokens that join words without being part of the name ("T-cell" is "T cell")
JOINERS = frozenset("-‐‑‒–—")


def stem(word: str) -> str:
    """One key for the singular and plural of a lower-case ``word``."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ices", "ix")):  # cortices/cortex, appendices/appendix
        return word[: -4 if word.endswith("ices") else -2] + "ex"
    if word.endswith(("us", "ss")):  # nucleus, gloss: singular already
        return word
    if word.endswith("is"):
        # Latin -is, plural -es (testis/testes, pelvis/pelves, diaphysis/diaphyses,
        # lateralis/laterales): both meet at -e, where the plural's "s" goes below.
        # Not for four letters: "this", "axis" and "iris" stay as they are.
        return word[:-2] + "e" if len(word) > 4 else word
    if word.endswith("i"):  # nuclei, bronchi, alveoli
        return word[:-1] + "us"
    if word.endswith(("ches", "shes", "xes", "sses")):
        word = word[:-2]
    elif word.endswith(("s", "ae")):  # cells; vertebrae, lamellae
        word = word[:-1]
    # Latin and Greek singulars and plurals meet at the stem: epithelium/epithelia,
    # ganglion/ganglia, vertebra(e); so do neuron(s), as both lose "on"
    if word.endswith(("um", "on")) and len(word) > 5:
        return word[:-2]
    if word.endswith("a") and len(word) > 4:
        return word[:-1]
    return word


def token_key(token: str) -> str:
    """The dictionary key of one token's text."""
    return stem(token.lower().translate(_GREEK_TABLE))


def keyed_tokens(text: str, spans: Sequence[Span]) -> tuple[list[str], list[Span]]:
    """Keys of the tokens at ``spans`` (joiners dropped) and the spans they came from."""
    keys: list[str] = []
    kept: list[Span] = []
    for begin, end in spans:
        token = text[begin:end]
        if token in JOINERS:
            continue
        keys.append(token_key(token))
        kept.append((begin, end))
    return keys, kept


def phrase_key(phrase: str) -> tuple[str, ...]:
    """The key of an entry: its tokens' keys, as casflow's tokenizer splits it."""
    return tuple(keyed_tokens(phrase, tokenize(phrase))[0])
