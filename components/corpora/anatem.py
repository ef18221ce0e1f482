"""AnatEM 1.0.2: ``anatem.reader.v1``, one document per NERsuite file.

The document id is the file stem (``PMC-1044634-sec-01``), the documents those of
``splits/<split>-documents.list``. The text is rebuilt from the NERsuite offsets
(each token at its offsets, every gap filled with spaces; with
``sentence_break: "\\n"`` the first gap character after each sentence is a
newline; see :mod:`casflow.components.formats.anatem.parse`). Loaded:

- ``Sentence`` (from the first to the last token) and ``Token`` (``id`` 1, 2, ...);
- ``AnatomyMention`` with ``value`` the AnatEM class (``Cell``, ``Organ``, ...);
- with ``pos: true``, ``POS`` (``PosValue``) from the NERsuite POS column: these
  tags come from the tagger the corpus authors ran, not from annotators, hence off
  by default.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import cassis
from pydantic import Field

from casflow.components.corpora import locations
from casflow.components.formats.anatem import parse as anatem
from casflow.components.formats.cas_builders import (
    MentionSpec,
    TokenSpec,
    add_mentions,
    add_sentences,
    set_text,
)
from casflow.components.formats.common import FormatError
from casflow.components.inputs import resolve_input
from casflow.pipeline.component import ComponentConfig, DocumentRef, Reader, RunContext
from casflow.typesystem import ANATOMY_MENTION, POS, SENTENCE, TOKEN


class AnatemDataError(ValueError):
    hint = "check the reader's 'corpus' and 'split' and the named file"


def default_corpus() -> str:
    """``$CASFLOW_CORPORA/anatem``, else ``../shared/corpora/anatem``."""
    return locations.default_corpus("anatem")


class AnatemReaderConfig(ComponentConfig):
    corpus: str | None = Field(
        None,
        description="The AnatEM folder (holding nersuite/ and splits/); default "
        f"{locations.describe_default('anatem')}.",
    )
    split: Literal["train", "devel"] = Field(
        "devel", description="Documents of splits/<split>-documents.list."
    )
    ids: list[str] | None = Field(None, description="Only these document ids (of the split).")
    limit: int | None = Field(None, ge=1, description="Read only the first N documents.")
    pos: bool = Field(
        False, description="Add POS (PosValue) from the NERsuite POS column (tagger output)."
    )
    sentence_break: Literal[" ", "\n"] = Field(
        " ", description="First gap character after each sentence in the rebuilt text."
    )


def corpus_root(config: AnatemReaderConfig, context: RunContext) -> Path:
    return Path(resolve_input(config.corpus or default_corpus(), context.workflow_dir))


def nersuite_path(root: Path, split: str, doc_id: str) -> Path:
    return root / "nersuite" / split / f"{doc_id}.nersuite"


def _document_ids(config: AnatemReaderConfig, root: Path) -> list[str]:
    try:
        ids = anatem.document_ids(root, config.split)
    except (FormatError, OSError) as exc:
        raise AnatemDataError(
            f"cannot read the {config.split} document list of {root}: {exc}"
        ) from exc
    if config.ids is not None:
        unknown = sorted(set(config.ids) - set(ids))
        if unknown:
            raise AnatemDataError(f"ids not in the {config.split} split: {', '.join(unknown[:5])}")
        wanted = set(config.ids)
        ids = [i for i in ids if i in wanted]
    return ids[: config.limit]


class AnatemReader(Reader):
    """AnatEM documents: sentences, tokens and anatomical entity mentions."""

    name = "anatem.reader.v1"
    description = "AnatEM anatomical entity corpus (NERsuite files): sentences, tokens, mentions."
    Config = AnatemReaderConfig

    config: AnatemReaderConfig

    def __init__(self, config: AnatemReaderConfig, context: RunContext) -> None:
        super().__init__(config, context)
        self.root = corpus_root(config, context)

    @classmethod
    def requirements(cls, config: AnatemReaderConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:  # type: ignore[override]
        produces = [SENTENCE, TOKEN, ANATOMY_MENTION]
        if getattr(config, "pos", False):
            produces += [POS, f"{POS}:PosValue", f"{TOKEN}:pos"]
        return (), tuple(produces)

    @classmethod
    def check_config(cls, config: AnatemReaderConfig, context: RunContext) -> list[str]:  # type: ignore[override]
        root = corpus_root(config, context)
        try:
            ids = _document_ids(config, root)
        except AnatemDataError as exc:
            return [f"{exc}; set 'corpus' to the AnatEM folder (holding nersuite/ and splits/)"]
        missing = [i for i in ids if not nersuite_path(root, config.split, i).is_file()]
        if missing:
            return [
                f"{len(missing)} document(s) have no NERsuite file, e.g. "
                f"{nersuite_path(root, config.split, missing[0])}"
            ]
        return []

    def iter_documents(self) -> Iterator[DocumentRef]:
        for doc_id in _document_ids(self.config, self.root):
            path = nersuite_path(self.root, self.config.split, doc_id)
            try:
                size = path.stat().st_size
            except OSError as exc:
                yield DocumentRef(doc_id, str(path), error=f"{path}: cannot read: {exc}")
                continue
            yield DocumentRef(doc_id, str(path), size=size)

    def load(self, ref: DocumentRef, cas: cassis.Cas) -> None:
        try:
            document = anatem.read_nersuite(
                ref.uri, doc_id=ref.doc_id, sentence_break=self.config.sentence_break
            )
        except (FormatError, OSError) as exc:
            raise AnatemDataError(f"document {ref.doc_id}: {exc}") from exc
        set_text(cas, document.text, ref.doc_id, ref.uri)
        use_pos = self.config.pos
        add_sentences(
            cas,
            [
                [
                    TokenSpec(t.begin, t.end, pos=t.pos if use_pos and t.pos != "_" else None)
                    for t in sentence.tokens
                ]
                for sentence in document.sentences
            ],
        )
        add_mentions(
            cas,
            ANATOMY_MENTION,
            [MentionSpec(m.begin, m.end, m.label) for m in document.mentions],
        )
