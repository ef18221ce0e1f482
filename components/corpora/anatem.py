"""AnatEM 1.0.2: ``anatem.reader.v1``, one document per NERsuite file.

The document id is the file stem (``PMC-1044634-sec-01``), the documents those of
``splits/<split>-documents.list`` (without that list, the files of ``nersuite/<split>/``),
or the files ``input`` names (a copy laid out otherwise, a subset, the test portion). The text is rebuilt from the NERsuite offsets
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
from pydantic import Field, model_validator

from casflow.components.corpora import locations
from casflow.components.corpora.selection import (
    IdSelectionError,
    one_id_list,
    unknown_ids,
    wanted_ids,
)
from casflow.components.formats.anatem import parse as anatem
from casflow.components.formats.cas_builders import (
    MentionSpec,
    TokenSpec,
    add_mentions,
    add_sentences,
    set_text,
)
from casflow.components.formats.common import FormatError
from casflow.components.inputs import InputNotFoundError, iter_input_files, resolve_input
from casflow.pipeline.component import (
    ComponentConfig,
    DocumentError,
    DocumentRef,
    Reader,
    RunContext,
)
from casflow.typesystem import ANATOMY_MENTION, POS, SENTENCE, TOKEN


class AnatemDataError(DocumentError, ValueError):
    hint = "check the reader's 'corpus', 'split' or 'input' and the named file"


def default_corpus() -> str:
    """``$CASFLOW_CORPORA/anatem``, else ``../shared/corpora/anatem``."""
    return locations.default_corpus("anatem")


class AnatemReaderConfig(ComponentConfig):
    corpus: str | None = Field(
        None,
        description="The AnatEM folder (holding nersuite/ and splits/); default "
        f"{locations.describe_default('anatem')}.",
    )
    split: Literal["train", "devel", "test"] = Field(
        "devel",
        description="Documents of splits/<split>-documents.list (where that list is missing, "
        "every file of nersuite/<split>/). Not used when 'input' is given.",
    )
    input: str | list[str] | None = Field(
        None,
        description="NERsuite files to read instead of a split: a <id>.nersuite file, a folder, "
        "a glob or @list.txt (or a list of these); the id is the file stem.",
    )
    ids: list[str] | None = Field(
        None, description="Only these document ids (of the split or the input), in their order."
    )
    ids_file: str | None = Field(
        None, description="A file of document ids, one a line ('#' comments allowed), as 'ids'."
    )
    limit: int | None = Field(None, ge=1, description="Read only the first N documents.")
    pos: bool = Field(
        False, description="Add POS (PosValue) from the NERsuite POS column (tagger output)."
    )
    sentence_break: Literal[" ", "\n"] = Field(
        " ", description="First gap character after each sentence in the rebuilt text."
    )

    @model_validator(mode="after")
    def _one_id_list(self) -> AnatemReaderConfig:
        one_id_list(self.ids, self.ids_file)
        return self


def corpus_root(config: AnatemReaderConfig, context: RunContext) -> Path:
    return Path(resolve_input(config.corpus or default_corpus(), context.workflow_dir))


def nersuite_path(root: Path, split: str, doc_id: str) -> Path:
    return root / "nersuite" / split / f"{doc_id}.nersuite"


def documents(config: AnatemReaderConfig, context: RunContext) -> list[tuple[str, Path]]:
    """(id, NERsuite file) of the documents the configuration selects, in reading order."""
    if config.input is not None:
        found: dict[str, Path] = {}
        for spec in [config.input] if isinstance(config.input, str) else config.input:
            try:
                files = [
                    p
                    for p, _ in iter_input_files(
                        resolve_input(spec, context.workflow_dir), "**/*.nersuite"
                    )
                ]
            except InputNotFoundError as exc:
                raise AnatemDataError(f"{exc}; 'input' names NERsuite files") from exc
            for path in files:
                if path.stem in found:
                    raise AnatemDataError(
                        f"document {path.stem} is given twice: {found[path.stem]} and {path}"
                    )
                found[path.stem] = path
        listed = list(found.items())
        origin = "the 'input' files"
    else:
        root = corpus_root(config, context)
        problem = locations.missing_corpus("anatem", root, given=config.corpus is not None)
        if problem:
            raise AnatemDataError(f"{problem}; or give 'input'")
        folder = root / "nersuite" / config.split
        if (root / "splits" / f"{config.split}-documents.list").is_file() or not folder.is_dir():
            try:
                ids = anatem.document_ids(root, config.split)
            except (FormatError, OSError) as exc:
                raise AnatemDataError(
                    f"cannot read the {config.split} document list of {root}: {exc}; set "
                    "'corpus' to the AnatEM folder (holding nersuite/ and splits/), or give 'input'"
                ) from exc
        else:  # a copy without splits/: the split's folder is the list
            ids = sorted(path.stem for path in folder.glob("*.nersuite"))
        listed = [(doc_id, nersuite_path(root, config.split, doc_id)) for doc_id in ids]
        origin = f"the {config.split} split"
    try:
        wanted = wanted_ids(config.ids, config.ids_file, context.workflow_dir)
    except IdSelectionError as exc:
        raise AnatemDataError(str(exc)) from exc
    if wanted is not None:
        by_id = dict(listed)
        problem = unknown_ids(wanted, set(by_id), origin)
        if problem:
            raise AnatemDataError(problem)
        listed = [(doc_id, by_id[doc_id]) for doc_id in wanted]
    return listed[: config.limit]


class AnatemReader(Reader[AnatemReaderConfig]):
    """AnatEM documents: sentences, tokens and anatomical entity mentions."""

    name = "anatem.reader.v1"
    description = "AnatEM anatomical entity corpus (NERsuite files): sentences, tokens, mentions."

    @classmethod
    def requirements(cls, config: AnatemReaderConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
        produces = [SENTENCE, TOKEN, ANATOMY_MENTION]
        if getattr(config, "pos", False):
            produces += [POS, f"{POS}:PosValue", f"{TOKEN}:pos"]
        return (), tuple(produces)

    @classmethod
    def check_config(cls, config: AnatemReaderConfig, context: RunContext) -> list[str]:
        try:
            listed = documents(config, context)
        except AnatemDataError as exc:
            return [str(exc)]
        if not listed:
            if config.input is not None:
                return [
                    "'input' names no .nersuite file: the reader reads AnatEM's NERsuite form "
                    "(nersuite/<portion>/), whose offsets keep the text's spacing; the CoNLL "
                    "form (conll/) has no offsets"
                ]
            return ["the configuration selects no document; check 'corpus', 'split' or 'input'"]
        missing = [path for _, path in listed if not path.is_file()]
        if missing:
            return [f"{len(missing)} document(s) have no NERsuite file, e.g. {missing[0]}"]
        empty = [path for _, path in listed if path.stat().st_size == 0]
        if empty:
            return [f"{len(empty)} NERsuite file(s) are empty, e.g. {empty[0]}"]
        return []

    def iter_documents(self) -> Iterator[DocumentRef]:
        for doc_id, path in documents(self.config, self.context):
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
        if not document.sentences:
            raise AnatemDataError(f"document {ref.doc_id}: {ref.uri} has no token (empty file)")
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
