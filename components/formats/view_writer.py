"""Shared bases of the writers: one file per document in a sub-folder of the run's
output (:class:`FolderWriter`), from one view of the CAS (:class:`ViewWriter`).

The chain hands writers the whole CAS; which view a format writer writes is its
config's ``view`` (default ``_InitialView``), so one workflow can write the gold
and the system view side by side (two steps with different ``view``/``folder``).
Writers declare no requirements: the workflow validator checks a step's
requirements in the step-level ``view:``, which a writer does not read, so the
writer checks its view itself and fails the document with a message naming the
view and what is missing.

Sentences and tokens: a writer of token formats takes the ``Token`` annotations
of each ``Sentence`` (in text order); a view without sentences is one sentence.
"""

from __future__ import annotations

import bisect
import os
import re
import tarfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

import cassis
from pydantic import Field

from casflow.pipeline.component import (
    INITIAL_VIEW,
    ComponentConfig,
    DocumentError,
    RunContext,
    Writer,
)
from casflow.pipeline.files import atomic_write_bytes, safe_file_stem
from casflow.pipeline.journal import Journal
from casflow.pipeline.packed import GZIP_SUFFIX, archive_name, gzip_bytes, tar_bytes
from casflow.typesystem import LEMMA, POS, SENTENCE, TOKEN, short_name


class ViewContentError(DocumentError, ValueError):
    hint = (
        "the view lacks what this format needs; check the writer's 'view' and that an "
        "earlier step writes those annotations there"
    )


class DocumentIdError(DocumentError, ValueError):
    """The document id cannot stand in the format's id field (BC2 and GENETAG lines)."""

    hint = (
        "the format's lines carry the document id and cannot hold this one; give the "
        "documents ids the format can hold (rename the input files, or read them with "
        "the format's own reader)"
    )


class FolderWriterConfig(ComponentConfig):
    folder: str = Field("out", description="Sub-folder of the run's output folder.")


FolderWriterConfigT = TypeVar("FolderWriterConfigT", bound=FolderWriterConfig)


class FolderWriter(Writer[FolderWriterConfigT]):
    """Writes ``<folder>/<doc>{extension}``, one file per document."""

    #: The file name ending; a writer whose config chooses it sets it in ``__init__``.
    extension: str = ""

    def __init__(self, config: FolderWriterConfigT, context: RunContext) -> None:
        super().__init__(config, context)
        self.folder = Path(context.output_dir) / config.folder

    def output_paths(self, doc_id: str) -> list[Path]:
        return [self.folder / f"{safe_file_stem(doc_id)}{self.extension}"]

    def discard(self, doc_id: str) -> None:
        # The document failed after this writer wrote it: its file goes (a run-level
        # file that finish() combines from these must not include it either).
        for path in self.output_paths(doc_id):
            path.unlink(missing_ok=True)


# What archive_name makes: <first document>-<12 hex digits>.tar
_ARCHIVE_NAME = re.compile(r".+-[0-9a-f]{12}\.tar\Z")


class PackedWriterConfig(FolderWriterConfig):
    compress: Literal["none", "gzip"] = Field(
        "none",
        description="gzip each document's file (<doc>.xmi.gz): XMI and JSON shrink about "
        "tenfold; xmi.reader.v1 and casflow check-xmi read them as they are.",
    )
    compress_level: int = Field(6, ge=1, le=9, description="gzip level: 1 fastest, 9 smallest.")
    archive: Literal["none", "tar"] = Field(
        "none",
        description="Put the files of each batch of documents into one .tar (run.batch_size "
        "documents a batch: raise it for fewer, larger archives), for file systems that "
        "suffer from millions of small files.",
    )


PackedWriterConfigT = TypeVar("PackedWriterConfigT", bound=PackedWriterConfig)


class PackedFolderWriter(FolderWriter[PackedWriterConfigT]):
    """A :class:`FolderWriter` whose files may be gzipped and archived by batch.

    Subclasses give the bytes of a document (:meth:`serialize`). With ``archive:
    tar`` the documents of a batch are kept in memory and written as one archive
    at the end of the batch (:meth:`end_batch`), before the parent records any
    of them; every document's output is then the archive.
    """

    def __init__(self, config: PackedWriterConfigT, context: RunContext) -> None:
        super().__init__(config, context)
        self._archive: Path | None = None
        self._members: list[tuple[str, bytes]] = []

    def serialize(self, cas: cassis.Cas, doc_id: str) -> bytes:
        raise NotImplementedError

    def file_name(self, doc_id: str) -> str:
        gz = GZIP_SUFFIX if self.config.compress == "gzip" else ""
        return f"{safe_file_stem(doc_id)}{self.extension}{gz}"

    def output_paths(self, doc_id: str) -> list[Path]:
        if self.config.archive == "tar" and self._archive is not None:
            return [self._archive]
        return [self.folder / self.file_name(doc_id)]

    def start_batch(self, doc_ids: Sequence[str]) -> None:
        self._members = []
        self._archive = None
        if self.config.archive == "tar" and doc_ids:
            name = archive_name(doc_ids, safe_file_stem(doc_ids[0]))
            self._archive = self.folder / name

    def write(self, cas: cassis.Cas, doc_id: str) -> list[Path]:
        data = self.serialize(cas, doc_id)
        if self.config.compress == "gzip":
            data = gzip_bytes(data, self.config.compress_level)
        if self.config.archive == "none":
            (path,) = self.output_paths(doc_id)
            atomic_write_bytes(path, data)
            return [path]
        if self._archive is None:  # called outside a batch: an archive of its own
            self.start_batch([doc_id])
            self._members.append((self.file_name(doc_id), data))
            return self.end_batch()
        self._members.append((self.file_name(doc_id), data))
        return [self._archive]

    def discard(self, doc_id: str) -> None:
        if self.config.archive == "tar":
            # Not in the batch's archive: a later run that processes the document
            # writes it into an archive of its own, so it would be there twice.
            name = self.file_name(doc_id)
            self._members = [(n, data) for n, data in self._members if n != name]
            return
        super().discard(doc_id)

    def end_batch(self) -> list[Path]:
        archive, members = self._archive, self._members
        self._archive, self._members = None, []
        if archive is None or not members:
            return []
        atomic_write_bytes(archive, tar_bytes(members))
        return [archive]

    def finish(self) -> list[Path]:
        """Remove what a killed run left in the archives (parent, end of a run).

        A run killed after a worker wrote an archive but before the parent
        recorded its documents leaves that archive behind; one killed while the
        parent was recording them leaves some of them unrecorded. The next run
        writes the unrecorded documents again, in another batch. So an archive no
        finished document points to is removed, and one that holds documents
        recorded elsewhere (or not at all) is written again without them: once a
        run has finished, every document is in exactly one archive. Only archives
        named as this writer names them are looked at.
        """
        if self.config.archive == "none" or not self.folder.is_dir():
            return []
        output_dir = Path(self.context.output_dir)
        recorded: dict[str, set[str]] = {}  # archive -> the member names pointing to it
        for doc_id, outputs in Journal(output_dir).finished_outputs().items():
            for output in outputs:
                if _ARCHIVE_NAME.match(os.path.basename(output)):  # not other writers' files
                    archive = os.path.abspath(output_dir / output)
                    recorded.setdefault(archive, set()).add(self.file_name(doc_id))
        for path in self.folder.iterdir():
            if not _ARCHIVE_NAME.match(path.name):
                continue
            names = recorded.get(os.path.abspath(path))
            if names is None:
                path.unlink(missing_ok=True)
            else:
                _keep_members(path, names)
        return []


def _keep_members(archive: Path, names: set[str]) -> None:
    """Write ``archive`` again with only the members ``names``, when it holds others.

    The headers are listed first (an uncompressed tar is not read through for
    that); an archive that cannot be read, or that holds none of ``names``, is
    left as it is rather than lose what it holds.
    """
    try:
        with tarfile.open(archive, mode="r:") as tar:
            members = [m for m in tar.getmembers() if m.isfile()]
            if all(m.name in names for m in members):
                return
            kept = []
            for member in members:
                handle = tar.extractfile(member)
                if member.name in names and handle is not None:
                    kept.append((member.name, handle.read()))
    except (tarfile.TarError, OSError, EOFError):
        return
    if kept:
        atomic_write_bytes(archive, tar_bytes(kept))


class ViewWriterConfig(FolderWriterConfig):
    view: str = Field(INITIAL_VIEW, description="The CAS view to write.")


ViewWriterConfigT = TypeVar("ViewWriterConfigT", bound=ViewWriterConfig)


class ViewWriter(FolderWriter[ViewWriterConfigT]):
    """Writes ``<folder>/<doc>{extension}`` from the configured view."""

    @classmethod
    def views_read(cls, config: ViewWriterConfigT) -> dict[str, tuple[str, ...]]:
        # The writer checks what its format needs itself (see the module docstring).
        return {config.view: ()}

    def source_view(self, cas: cassis.Cas, doc_id: str) -> cassis.Cas:
        try:
            return cas.get_view(self.config.view)
        except KeyError:
            views = ", ".join(sorted(s.sofaID for s in cas.sofas))
            raise ViewContentError(
                f"document {doc_id}: no view {self.config.view!r} to write (views: {views})"
            ) from None


def mention_label(mention: Any) -> str:
    """A mention's class: its ``value``, else its short type name."""
    return getattr(mention, "value", None) or short_name(mention.type.name)


def _position(annotation: Any) -> tuple[int, int]:
    return annotation.begin, annotation.end


def sentences_with_tokens(view: cassis.Cas, doc_id: str) -> list[tuple[Any | None, list[Any]]]:
    """``(sentence, its tokens)`` in text order; ``(None, all tokens)`` without sentences.

    A token outside every sentence is an error (it would be lost).
    """
    # select() lists subtypes after their supertype; a token format needs text order.
    tokens = sorted(view.select(TOKEN), key=_position)
    sentences = sorted(view.select(SENTENCE), key=_position)
    if not sentences:
        return [(None, list(tokens))] if tokens else []
    starts = [s.begin for s in sentences]
    grouped: list[list[Any]] = [[] for _ in sentences]
    for token in tokens:
        index = bisect.bisect_right(starts, token.begin) - 1
        if index < 0 or token.end > sentences[index].end:
            raise ViewContentError(
                f"document {doc_id}: token {token.get_covered_text()!r} at ({token.begin}, "
                f"{token.end}) is in no sentence of view {view.get_sofa().sofaID!r}"
            )
        grouped[index].append(token)
    return list(zip(sentences, grouped, strict=True))


class TokenFeatures:
    """POS and lemma of tokens: ``Token.pos``/``Token.lemma``, else an annotation with the
    same span (readers that do not link them)."""

    def __init__(self, view: cassis.Cas) -> None:
        self.view = view
        self._pos: dict[tuple[int, int], Any] | None = None
        self._lemma: dict[tuple[int, int], Any] | None = None

    def pos(self, token: Any) -> Any:
        pos = token.get("pos")
        if pos is None:
            if self._pos is None:
                self._pos = {(p.begin, p.end): p for p in self.view.select(POS)}
            pos = self._pos.get((token.begin, token.end))
        return pos

    def lemma(self, token: Any) -> str | None:
        lemma = token.get("lemma")
        if lemma is None:
            if self._lemma is None:
                self._lemma = {(m.begin, m.end): m for m in self.view.select(LEMMA)}
            lemma = self._lemma.get((token.begin, token.end))
        return lemma.get("value") if lemma is not None else None
