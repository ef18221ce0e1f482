"""``bc2.import.v1``: BioCreative II mention lines (system output) into a view.

Adds the mention lines of one file (GENE.eval format, the text after the
offsets optional) to a view of documents whose id is the sentence id, e.g.
after ``bc2gm.reader.v1`` in view ``gold``. Lines of sentences that are not
documents of the run are ignored.

A line whose text differs from the text at its offsets fails the document by
default: the file is then of another format (e.g. GENETAG's token indices,
which ``genetag.import.v1`` reads) or of other sentences, and scoring it would
give a silent near-zero. ``on_mismatch: warn`` keeps such offsets with a
warning instead (the official scorer compares offsets only; the BC2GM training
GENE.eval has four such lines). Lines without text cannot be checked.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Literal

import cassis
from pydantic import Field, field_validator

from casflow.components.formats.bc2 import parse as bc2
from casflow.components.formats.cas_builders import (
    add_mentions,
    linked_specs,
    resolve_mention_type,
)
from casflow.components.formats.common import FormatError
from casflow.components.formats.document_files import ImportFormatError, document_id
from casflow.components.inputs import resolve_input
from casflow.pipeline.component import ComponentConfig, Processor, RunContext
from casflow.typesystem import ALTERNATIVE, GENE_MENTION

OnMismatch = Literal["raise", "warn"]
GENE_VALUE = "GENE"
MISMATCH_HINT = (
    "; the file does not fit these sentences: check that it is in BioCreative II format "
    "(offsets count non-space characters; GENETAG's token indices need genetag.import.v1) "
    "and belongs to this corpus, or set on_mismatch: warn to keep the offsets"
)


def _resolve(path: str, context: RunContext) -> Path:
    return Path(resolve_input(path, context.workflow_dir))


class Bc2ImportConfig(ComponentConfig):
    path: str = Field(
        description="Mention lines 'SENTENCE_ID|start end|text' for all documents (GENE.eval "
        "format; the text is optional). Relative: working directory, then the workflow's folder."
    )
    alternatives: str | None = Field(
        None, description="ALTGENE.eval-style lines attached to the overlapping mentions."
    )
    type: str = Field(GENE_MENTION, description="Mention type, full or short name.")
    value: str = Field(GENE_VALUE, description="Mention value (class label).")
    on_mismatch: OnMismatch = Field(
        "raise",
        description="A line whose text differs from the text at its offsets: fail the "
        "document (the file is of another format or other sentences), or warn and keep "
        "the offsets.",
    )

    @field_validator("type")
    @classmethod
    def _mention_type(cls, name: str) -> str:
        return resolve_mention_type(name)


def _by_sentence(path: Path) -> dict[str, list[bc2.Bc2Mention]]:
    grouped: dict[str, list[bc2.Bc2Mention]] = defaultdict(list)
    for mention in bc2.read_mentions(path):
        grouped[mention.sentence_id].append(mention)
    return dict(grouped)


class Bc2Import(Processor[Bc2ImportConfig]):
    """BC2 mention lines of the document's sentence id into the step's view."""

    name = "bc2.import.v1"
    description = "Import BioCreative II mention lines (e.g. system output) into a view."

    def __init__(self, config: Bc2ImportConfig, context: RunContext | None = None) -> None:
        super().__init__(config, context)
        self._mentions: dict[str, list[bc2.Bc2Mention]] | None = None
        self._alternatives: dict[str, list[bc2.Bc2Mention]] = {}

    @classmethod
    def requirements(cls, config: Bc2ImportConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
        produced = getattr(config, "type", GENE_MENTION)
        alternatives = (ALTERNATIVE,) if getattr(config, "alternatives", None) else ()
        return (), (produced, *alternatives)

    @classmethod
    def check_config(cls, config: Bc2ImportConfig, context: RunContext) -> list[str]:
        problems = []
        for option in ("path", "alternatives"):
            value = getattr(config, option)
            if value is not None and not _resolve(value, context).is_file():
                problems.append(f"{option}: the file {_resolve(value, context)} does not exist")
        return problems

    def _load(self) -> dict[str, list[bc2.Bc2Mention]]:
        # Read once per process: one file holds the lines of every document.
        if self._mentions is None:
            try:
                self._mentions = _by_sentence(_resolve(self.config.path, self.context))
                if self.config.alternatives:
                    self._alternatives = _by_sentence(
                        _resolve(self.config.alternatives, self.context)
                    )
            except (FormatError, OSError) as exc:
                raise ImportFormatError(str(exc)) from exc
        return self._mentions

    def process(self, view: cassis.Cas) -> None:
        lines = self._load()
        doc_id = document_id(view)
        sentence = bc2.Bc2Sentence(doc_id, view.sofa_string or "")
        try:
            mentions = bc2.locate_mentions(
                [sentence], lines.get(doc_id, []), on_mismatch=self.config.on_mismatch
            )
            alternatives = bc2.locate_mentions(
                [sentence], self._alternatives.get(doc_id, []), on_mismatch=self.config.on_mismatch
            )
        except FormatError as exc:
            raise ImportFormatError(f"document {doc_id}: {exc}{MISMATCH_HINT}") from exc
        unattached = bc2.link_alternatives(mentions, alternatives)
        specs, free = linked_specs(mentions, unattached, self.config.value)
        add_mentions(view, self.config.type, specs, unattached_alternatives=free)
