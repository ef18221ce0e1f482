"""XPOS -> UPOS maps for pipelines whose tagger predicts only fine tags.

casflow's ``craft_syntax`` tagger predicts Penn XPOS; UPOS (``POS.coarseValue``,
what Stanza and scispaCy are compared on) is derived deterministically from it.
The map is learned from a treebank's CoNLL-U files: each XPOS gets the UPOS it
carries most often there (ties: the alphabetically first). In CRAFT's 60
training articles every XPOS carries one UPOS only (44 tags, 493,380 words, no
exception), so the derived UPOS is exactly what the treebank would say for
the predicted tag.

The map is a TSV file (``XPOS<TAB>UPOS`` lines after ``#`` comments) beside the
model, ``upos.tsv``; ``spacy.pipeline.v1`` reads it from the model's folder and
fills the UPOS of every token the pipeline leaves without one (XPOS the map does
not know become ``X``, UD's "other"). ``train.spacy.syntax.v1`` writes it into
the model it trains, learned from the gold views of the training documents
(:func:`learn_upos_pairs`); tests/test_upos.py checks that the CRAFT training
treebank gives the shipped map.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path

from casflow.components.formats.conllu.parse import read_conllu

UPOS_FILE = "upos.tsv"
UNKNOWN_UPOS = "X"


def learn_upos_map(conllu_files: Iterable[str | os.PathLike[str]]) -> dict[str, str]:
    """Each XPOS -> the UPOS it carries most often in the files (ties: alphabetical)."""
    return learn_upos_pairs(
        (word.xpos, word.upos)
        for path in conllu_files
        for sentence in read_conllu(path).sentences
        for word in sentence.syntactic_words
    )


def learn_upos_pairs(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Each XPOS -> the UPOS it is paired with most often (ties: alphabetical); pairs with
    an empty or ``_`` side are left out. ``train.spacy.syntax.v1`` learns the map of the
    model it trains from the gold views' tokens (XPOS ``PosValue``, UPOS ``coarseValue``)."""
    seen: dict[str, Counter[str]] = defaultdict(Counter)
    for xpos, upos in pairs:
        if xpos not in ("", "_") and upos not in ("", "_"):
            seen[xpos][upos] += 1
    return {
        xpos: min(counts, key=lambda upos: (-counts[upos], upos))
        for xpos, counts in sorted(seen.items())
    }


def format_upos_map(mapping: Mapping[str, str], source: str) -> str:
    lines = [
        "# XPOS -> UPOS, learned by casflow.components.spacy.upos.learn_upos_map",
        f"# from {source}",
    ]
    lines += [f"{xpos}\t{upos}" for xpos, upos in sorted(mapping.items())]
    return "\n".join(lines) + "\n"


def write_upos_map(mapping: Mapping[str, str], path: str | os.PathLike[str], source: str) -> None:
    Path(path).write_text(format_upos_map(mapping, source), encoding="utf-8")


def read_upos_map(path: str | os.PathLike[str]) -> dict[str, str]:
    """The map in a ``XPOS<TAB>UPOS`` file; ValueError naming the line when one is malformed."""
    mapping: dict[str, str] = {}
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 2 or not all(fields):
            raise ValueError(f"{path}:{number}: expected 'XPOS<TAB>UPOS', got {line!r}")
        mapping[fields[0]] = fields[1]
    return mapping


def model_upos_map(model_dir: str | os.PathLike[str] | None) -> dict[str, str] | None:
    """The ``upos.tsv`` beside a model, if the model folder has one."""
    if model_dir is None:
        return None
    path = Path(model_dir) / UPOS_FILE
    return read_upos_map(path) if path.is_file() else None
