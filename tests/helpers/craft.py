"""CRAFT articles for the tests that run on the corpus (``craft_dir``, from conftest.py):
the ids of a split and one article as ``craft.reader.v1`` reads it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import cassis


def craft_ids(craft_dir: Path, split: str) -> list[str]:
    """The article ids of CRAFT's ``train``, ``dev`` or ``test`` split, in the file's order."""
    return (craft_dir / "articles" / "ids" / f"craft-ids-{split}.txt").read_text().split()


def craft_article(
    craft_dir: Path, article: str, layers: Sequence[str], output_dir: Path = Path(".")
) -> cassis.Cas:
    """One article with the gold ``layers`` in its initial view (no ontology concepts)."""
    from casflow.components.corpora.craft import CraftReader, CraftReaderConfig
    from casflow.pipeline.component import DocumentRef, RunContext
    from casflow.typesystem import load_typesystem

    reader = CraftReader(
        CraftReaderConfig(corpus=str(craft_dir), layers=list(layers), ontologies=[]),
        RunContext(output_dir=output_dir),
    )
    cas = cassis.Cas(typesystem=load_typesystem())
    reader.load(DocumentRef(article, str(reader.paths.text(article))), cas)
    return cas
