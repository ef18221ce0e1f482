"""What the importers of gene-mention line files share (``bc2.import.v1``, ``genetag.import.v1``).

Both formats hold one file of ``SENTENCE_ID|span|text`` lines for a whole corpus
(and optionally a file of accepted alternatives): the file is read once per
process, grouped by sentence id, and the lines of a document's sentence are
located in its text, linked to their alternatives as ``alt_eval.perl`` links
them, and added to the view. A format supplies how its lines are read and how
they are located; a line that does not fit the text fails the document, since
scoring a file of another format would give a silent near-zero.
"""

from __future__ import annotations

from abc import abstractmethod
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeVar

import cassis
from pydantic import Field, field_validator

from casflow.components.formats.cas_builders import (
    LinkedMention,
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


def resolve_path(path: str, context: RunContext) -> Path:
    return Path(resolve_input(path, context.workflow_dir))


class MentionLinesConfig(ComponentConfig):
    """Options every mention-line importer has; subclasses document ``path``'s format."""

    path: str = Field(description="Mention lines for all documents.")
    alternatives: str | None = Field(
        None, description="Accepted-alternative lines attached to the overlapping mentions."
    )
    type: str = Field(GENE_MENTION, description="Mention type, full or short name.")
    value: str = Field(GENE_VALUE, description="Mention value (class label).")
    on_mismatch: OnMismatch = Field(
        "raise",
        description="A line whose text differs from the text it points at: fail the "
        "document (the file is of another format or other sentences), or warn and keep it.",
    )

    @field_validator("type")
    @classmethod
    def _mention_type(cls, name: str) -> str:
        return resolve_mention_type(name)


ConfigT = TypeVar("ConfigT", bound=MentionLinesConfig)


class MentionLinesImport(Processor[ConfigT]):
    """The lines of the document's sentence id, located in its text, into the step's view."""

    #: Appended to a mismatch error: which format this importer reads, and the other one.
    mismatch_hint: ClassVar[str] = ""
    #: Appended to an error while reading the files.
    read_hint: ClassVar[str] = ""

    def __init__(self, config: ConfigT, context: RunContext | None = None) -> None:
        super().__init__(config, context)
        self._mentions: dict[str, list[Any]] | None = None
        self._alternatives: dict[str, list[Any]] = {}
        self._read_error: str | None = None

    @abstractmethod
    def read_lines(self, path: Path) -> list[Any]:
        """Every mention line of a file (objects with a ``sentence_id``)."""

    @abstractmethod
    def locate(self, doc_id: str, text: str, lines: Sequence[Any]) -> list[Any]:
        """The lines of one sentence located in its text (raises FormatError on a mismatch)."""

    @abstractmethod
    def link_alternatives(
        self, mentions: list[Any], alternatives: list[Any]
    ) -> Sequence[LinkedMention]:
        """Attach alternatives to the mentions they overlap; return those attached to none."""

    @classmethod
    def requirements(cls, config: ConfigT) -> tuple[tuple[str, ...], tuple[str, ...]]:
        alternatives = (ALTERNATIVE,) if config.alternatives else ()
        return (), (config.type, *alternatives)

    @classmethod
    def check_config(cls, config: ConfigT, context: RunContext) -> list[str]:
        problems = []
        for option, value in (("path", config.path), ("alternatives", config.alternatives)):
            if value is None:
                continue
            path = resolve_path(value, context)
            if not path.is_file():
                problems.append(f"{option}: the file {path} does not exist")
                continue
            # One file holds every document's lines: a line it cannot read would fail
            # every document with the same error, so it is found before the run.
            try:
                cls(config, context).read_lines(path)
            except (FormatError, OSError, UnicodeDecodeError) as exc:
                problems.append(f"{option}: {exc}{cls.read_hint}")
        return problems

    def _by_sentence(self, option: str) -> dict[str, list[Any]]:
        grouped: dict[str, list[Any]] = defaultdict(list)
        for mention in self.read_lines(resolve_path(option, self.context)):
            grouped[mention.sentence_id].append(mention)
        return dict(grouped)

    def _load(self) -> dict[str, list[Any]]:
        # Read once per process: one file holds the lines of every document (and a file
        # that cannot be read fails the rest with the same error, not read again each).
        if self._read_error is not None:
            raise ImportFormatError(self._read_error)
        if self._mentions is None:
            try:
                self._mentions = self._by_sentence(self.config.path)
                if self.config.alternatives:
                    self._alternatives = self._by_sentence(self.config.alternatives)
            except (FormatError, OSError, UnicodeDecodeError) as exc:
                self._read_error = f"{exc}{self.read_hint}"
                raise ImportFormatError(self._read_error) from exc
        return self._mentions

    def process(self, view: cassis.Cas) -> None:
        lines = self._load()
        doc_id = document_id(view)
        text = view.sofa_string or ""
        try:
            mentions = self.locate(doc_id, text, lines.get(doc_id, []))
            alternatives = self.locate(doc_id, text, self._alternatives.get(doc_id, []))
        except FormatError as exc:
            raise ImportFormatError(f"document {doc_id}: {exc}{self.mismatch_hint}") from exc
        except ValueError as exc:
            raise ImportFormatError(f"document {doc_id}: {exc}") from exc
        unattached = self.link_alternatives(mentions, alternatives)
        specs, free = linked_specs(mentions, unattached, self.config.value)
        add_mentions(view, self.config.type, specs, unattached_alternatives=free)
