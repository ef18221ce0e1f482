"""``genetag.import.v1``: GENETAG mention lines (system output) into a view.

Adds the lines of one file in GENETAG's token-index format (``Gold.format``,
``Test.format``: ``@@ID|first last|text``, first and last 0-based token indices,
inclusive) to a view of documents whose id is the sentence id, as
``genetag.reader.v1`` reads them. The tokens are those of GENETAG's fixed
tokenization, which is how that reader builds the text: tokens joined by single
spaces; the importer cuts the view's text at single spaces to find them. Lines
of sentences that are not documents of the run are ignored.

A line whose text differs from its tokens (case aside: GENETAG's scorer
lowercases) fails the document by default (the file is then of another format
or of other sentences, e.g. BioCreative II character offsets); ``on_mismatch:
warn`` keeps the token indices instead. The
twin of ``genetag.writer.v1``: what it writes, this reads back.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Literal

import cassis
from pydantic import Field, field_validator

from casflow.components.formats.cas_builders import (
    add_mentions,
    linked_specs,
    resolve_mention_type,
)
from casflow.components.formats.common import FormatError
from casflow.components.formats.document_files import ImportFormatError, document_id
from casflow.components.formats.genetag import parse as genetag
from casflow.components.inputs import resolve_input
from casflow.pipeline.component import ComponentConfig, Processor, RunContext
from casflow.typesystem import ALTERNATIVE, GENE_MENTION

GENE_VALUE = "GENE"
MISMATCH_HINT = (
    "; the file does not fit these sentences: check that it is in GENETAG's token-index "
    "format (BioCreative II character offsets need bc2.import.v1) and belongs to this "
    "corpus, or set on_mismatch: warn to keep the token indices"
)


def _resolve(path: str, context: RunContext) -> Path:
    return Path(resolve_input(path, context.workflow_dir))


class GenetagImportConfig(ComponentConfig):
    path: str = Field(
        description="Mention lines '@@ID|first last|text' for all documents (GENETAG "
        "Gold.format / Test.format). Relative: working directory, then the workflow's folder."
    )
    alternatives: str | None = Field(
        None, description="Correct.Data-style lines attached to the overlapping mentions."
    )
    type: str = Field(GENE_MENTION, description="Mention type, full or short name.")
    value: str = Field(GENE_VALUE, description="Mention value (class label).")
    on_mismatch: Literal["raise", "warn"] = Field(
        "raise",
        description="A line whose text differs from its tokens: fail the document (the file "
        "is of another format or other sentences), or warn and keep the token indices.",
    )

    @field_validator("type")
    @classmethod
    def _mention_type(cls, name: str) -> str:
        return resolve_mention_type(name)


def _by_sentence(path: Path) -> dict[str, list[genetag.GenetagMention]]:
    grouped: dict[str, list[genetag.GenetagMention]] = defaultdict(list)
    for mention in genetag.read_mentions(path, strict=True):
        grouped[mention.sentence_id].append(mention)
    return dict(grouped)


class GenetagImport(Processor[GenetagImportConfig]):
    """GENETAG token-index mention lines of the document's sentence id into the step's view."""

    name = "genetag.import.v1"
    description = "Import GENETAG token-index mention lines (e.g. Test.format output) into a view."

    def __init__(self, config: GenetagImportConfig, context: RunContext | None = None) -> None:
        super().__init__(config, context)
        self._mentions: dict[str, list[genetag.GenetagMention]] | None = None
        self._alternatives: dict[str, list[genetag.GenetagMention]] = {}

    @classmethod
    def requirements(cls, config: GenetagImportConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
        produced = getattr(config, "type", GENE_MENTION)
        alternatives = (ALTERNATIVE,) if getattr(config, "alternatives", None) else ()
        return (), (produced, *alternatives)

    @classmethod
    def check_config(cls, config: GenetagImportConfig, context: RunContext) -> list[str]:
        problems = []
        for option in ("path", "alternatives"):
            value = getattr(config, option)
            if value is not None and not _resolve(value, context).is_file():
                problems.append(f"{option}: the file {_resolve(value, context)} does not exist")
        return problems

    def _load(self) -> dict[str, list[genetag.GenetagMention]]:
        # Read once per process: one file holds the lines of every document.
        if self._mentions is None:
            try:
                self._mentions = _by_sentence(_resolve(self.config.path, self.context))
                if self.config.alternatives:
                    self._alternatives = _by_sentence(
                        _resolve(self.config.alternatives, self.context)
                    )
            except (FormatError, OSError) as exc:
                raise ImportFormatError(
                    f"{exc}; genetag.import.v1 reads '@@ID|first last|text' lines"
                ) from exc
        return self._mentions

    def process(self, view: cassis.Cas) -> None:
        lines = self._load()
        doc_id = document_id(view)
        try:
            sentence = genetag.sentence_from_text(doc_id, view.sofa_string or "")
            mentions, alternatives = (
                genetag.locate_mentions(
                    [sentence],
                    found.get(doc_id, []),
                    on_mismatch=self.config.on_mismatch,
                    ignore_case=True,
                )
                for found in (lines, self._alternatives)
            )
        except FormatError as exc:
            raise ImportFormatError(f"document {doc_id}: {exc}{MISMATCH_HINT}") from exc
        except ValueError as exc:
            raise ImportFormatError(f"document {doc_id}: {exc}") from exc
        unattached = genetag.link_alternatives(mentions, alternatives)
        specs, free = linked_specs(mentions, unattached, self.config.value)
        add_mentions(view, self.config.type, specs, unattached_alternatives=free)
