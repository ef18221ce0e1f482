"""BioCreative II gene mention (BC2GM) corpus: ``bc2gm.reader.v1``.

``bc2gm.reader.v1`` makes one document per sentence of the ``.in`` file; the
document id is the sentence id and the text the sentence as written. Gold genes
(``GENE.eval``) become ``GeneMention`` (``value`` "GENE"), and each accepted
alternative (``ALTGENE.eval``) an ``Alternative`` listed in ``alternatives`` of
every gold gene of the sentence it overlaps (the rule of ``alt_eval.perl``, see
:func:`casflow.components.formats.bc2.parse.link_alternatives`). Alternatives that
overlap no gene are still added (indexed, listed by no gene). One ``Sentence``
covers the text.

The files are parsed once, in the parent process, when the documents are
listed: each :class:`DocumentRef` carries its sentence text and spans as compact
JSON in ``data``, so loading a document in a worker reads no file.

The importer of system output in this format, ``bc2.import.v1``, is
:mod:`casflow.components.formats.bc2.importer`.

Offsets whose text differs from the line's text are kept with a warning by
default (the official scorer compares offsets only; the training data has four
such lines); ``on_mismatch: raise`` makes them errors. An error in a mention line
(offsets outside the sentence, or such a mismatch) fails only its sentence; the
others are read. A gold line repeating another (same sentence and span) is read
once, with one warning per file. An empty sentence or GENE.eval file, an empty
``ids`` selection, ids the sentence file lacks, and ``ids`` with ``ids_file`` are
validation errors. A byte-order mark at the start of a file is skipped.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

import cassis
from pydantic import Field, model_validator

from casflow.components.corpora import locations
from casflow.components.corpora.selection import (
    IdSelectionError,
    one_id_list,
    unknown_ids,
    wanted_ids,
)
from casflow.components.formats.bc2 import parse as bc2
from casflow.components.formats.cas_builders import (
    MentionSpec,
    Span,
    add_mentions,
    linked_specs,
    set_text,
)
from casflow.components.formats.common import FormatError
from casflow.components.formats.mentions import MentionCorpus
from casflow.components.inputs import resolve_input
from casflow.pipeline.component import (
    ComponentConfig,
    DocumentError,
    DocumentRef,
    Reader,
    RunContext,
)
from casflow.typesystem import ALTERNATIVE, GENE_MENTION, SENTENCE

OnMismatch = Literal["warn", "raise"]
GENE_VALUE = "GENE"


class Bc2DataError(DocumentError, ValueError):
    hint = "check the reader's 'corpus', 'split' or file options and the named file"


def corpus_folder(name: str) -> str:
    """``$CASFLOW_CORPORA/<name>``, else ``../shared/corpora/<name>``."""
    return locations.default_corpus(name)


def default_corpus() -> str:
    """``$CASFLOW_CORPORA/bc2gm``, else ``../shared/corpora/bc2gm``."""
    return corpus_folder("bc2gm")


class Bc2gmReaderConfig(ComponentConfig):
    corpus: str | None = Field(
        None,
        description="The BC2GM folder (holding bc2-format/); default "
        f"{locations.describe_default('bc2gm')}.",
    )
    split: Literal["train", "devel"] = Field(
        "devel", description="Portion of the corpus: bc2-format/<split>/."
    )
    folder: str | None = Field(
        None,
        description="A folder holding one portion as distributed (its one *.in file, "
        "GENE.eval and ALTGENE.eval, the latter two read when there), e.g. the test "
        "portion; instead of corpus and split.",
    )
    sentences: str | None = Field(
        None,
        description="An explicit .in file instead of the corpus's; then genes and "
        "alternatives are read only when given.",
    )
    genes: str | None = Field(None, description="An explicit GENE.eval file.")
    alternatives: str | None = Field(None, description="An explicit ALTGENE.eval file.")
    ids: list[str] | None = Field(None, description="Only these sentence ids (in file order).")
    ids_file: str | None = Field(
        None, description="A file of sentence ids, one a line ('#' comments allowed), as 'ids'."
    )
    limit: int | None = Field(
        None, ge=1, description="Read only the first N sentences (quick runs)."
    )
    value: str = Field(GENE_VALUE, description="GeneMention value (class label).")
    on_mismatch: OnMismatch = Field(
        "warn",
        description="A mention whose text differs from its offsets: keep it with a "
        "warning, or fail its sentence.",
    )

    @model_validator(mode="after")
    def _one_id_list(self) -> Bc2gmReaderConfig:
        one_id_list(self.ids, self.ids_file)
        return self


def _resolve(path: str, context: RunContext) -> Path:
    return Path(resolve_input(path, context.workflow_dir))


class GoldFileOptions(Protocol):
    """The file options of a sentence + mention-lines corpus reader's configuration
    (read-only, as the frozen configs give them)."""

    @property
    def corpus(self) -> str | None: ...

    @property
    def folder(self) -> str | None: ...

    @property
    def sentences(self) -> str | None: ...

    @property
    def genes(self) -> str | None: ...

    @property
    def alternatives(self) -> str | None: ...

    @property
    def ids(self) -> list[str] | None: ...

    @property
    def ids_file(self) -> str | None: ...


def gold_files(
    config: GoldFileOptions,
    context: RunContext,
    corpus: str,
    portion: str,
    names: tuple[str, str, str],
    sentence_globs: tuple[str, ...] = (),
    error: type[DocumentError] = Bc2DataError,
) -> tuple[Path, Path | None, Path | None]:
    """(sentences, genes, alternatives): with an explicit ``sentences`` option the explicit
    files (genes and alternatives only when given); with ``folder`` the files there (the
    sentence file the first of ``sentence_globs`` that matches one file, the mention files
    ``names[1:]`` when they exist); else ``names`` in the ``portion`` folder of the corpus
    (``corpus`` its default). An explicit file option replaces its file in every case."""
    explicit = [
        _resolve(path, context) if path else None
        for path in (config.sentences, config.genes, config.alternatives)
    ]
    if explicit[0] is not None:
        return explicit[0], explicit[1], explicit[2]
    if config.folder is not None:
        given = _resolve(config.folder, context)
        sentences = _one_match(given, sentence_globs or (names[0],), error)
        genes, alternatives = (
            path or (given / name if (given / name).is_file() else None)
            for path, name in zip(explicit[1:], names[1:], strict=True)
        )
        return sentences, genes, alternatives
    folder = _resolve(config.corpus or corpus, context) / portion
    sentences, genes, alternatives = (
        path or folder / name for path, name in zip(explicit, names, strict=True)
    )
    return sentences, genes, alternatives


def corpus_problem(config: GoldFileOptions, context: RunContext, name: str) -> str | None:
    """The corpus folder (``name``'s default, or 'corpus') or the 'folder' that the
    configuration reads its files from, when it does not exist: one problem naming it
    and what to set, rather than one per file inside it."""
    if config.sentences is not None:
        return None
    if config.folder is not None:
        folder = _resolve(config.folder, context)
        if folder.is_dir():
            return None
        return (
            f"the folder {os.path.abspath(folder)} ('folder') does not exist; give the folder "
            "holding one portion of the corpus as distributed"
        )
    folder = _resolve(config.corpus or corpus_folder(name), context)
    return locations.missing_corpus(name, folder, given=config.corpus is not None)


def _one_match(folder: Path, globs: Sequence[str], error: type[DocumentError]) -> Path:
    """The one file of ``folder`` the first matching glob names (a path that does not
    exist, for the error, when none matches)."""
    for pattern in globs:
        found = sorted(p for p in folder.glob(pattern) if p.is_file())
        if len(found) > 1:
            raise error(
                f"{folder} holds {len(found)} files matching {pattern} "
                f"({', '.join(p.name for p in found[:3])}); name one with 'sentences'"
            )
        if found:
            return found[0]
    return folder / globs[0]


def selected_ids(
    config: GoldFileOptions, context: RunContext, error: type[DocumentError] = Bc2DataError
) -> list[str] | None:
    try:
        return wanted_ids(config.ids, config.ids_file, context.workflow_dir)
    except IdSelectionError as exc:
        raise error(str(exc)) from exc


def missing_files(files: Sequence[Path | None], names: Sequence[str], holding: str) -> list[str]:
    """A problem for each named file (of :func:`gold_files`) that does not exist; the
    corpus folder is the one ``holding`` that."""
    return [
        f"the {what} file {path} does not exist; check 'corpus' (the folder holding "
        f"{holding}), 'split' or the explicit file options"
        for what, path in zip(names, files, strict=True)
        if path is not None and not path.is_file()
    ]


def _is_blank(path: Path) -> bool:
    with path.open("rb") as f:
        return not f.read().decode("utf-8", errors="replace").strip("\ufeff \t\r\n")


def file_problems(
    config: GoldFileOptions,
    context: RunContext,
    files: Sequence[Path | None],
    names: Sequence[str],
    holding: str,
    sentence_ids: Callable[[Path], list[str]],
    error: type[DocumentError] = Bc2DataError,
) -> list[str]:
    """What :meth:`check_config` of a sentence reader reports: a missing file, an empty
    sentence or gold file (every sentence would have no gold), a selection of no id, and
    ids the sentence file (read with ``sentence_ids``) does not hold."""
    try:
        ids = selected_ids(config, context, error)
    except DocumentError as exc:
        return [str(exc)]
    problems = missing_files(files, names, holding)
    if problems:
        return problems
    sentences = files[0]
    for what, path in zip(names[:2], files[:2], strict=True):
        if path is not None and _is_blank(path):
            problems.append(
                f"the {what} file {path} is empty"
                + ("" if path == sentences else ": no sentence would have a gold mention")
                + "; check 'corpus', 'split' or the explicit file options"
            )
    if ids is not None and not ids:
        problems.append(
            f"the ids_file {config.ids_file} lists no id"
            if config.ids_file is not None
            else "'ids' is empty: the configuration selects no sentence"
        )
    if ids and not problems and sentences is not None:
        # the sentence file is small (a few MB): unknown ids are found before the run
        try:
            problem = unknown_ids(ids, set(sentence_ids(sentences)), str(sentences))
        except (FormatError, OSError) as exc:
            problem = str(exc)
        if problem:
            problems.append(problem)
    return problems


def bc2gm_files(
    config: Bc2gmReaderConfig, context: RunContext
) -> tuple[Path, Path | None, Path | None]:
    """(sentences, genes, alternatives) files the configuration names."""
    return gold_files(
        config,
        context,
        default_corpus(),
        f"bc2-format/{config.split}",
        (f"{config.split}.in", "GENE.eval", "ALTGENE.eval"),
        ("*.in",),
    )


def encode_sentence(
    text: str, specs: Sequence[MentionSpec], unattached: Sequence[Span], **extra: Any
) -> bytes:
    """Compact JSON of one sentence document (``DocumentRef.data``); ``extra`` keys ride along."""
    # Alternatives are listed once per sentence and referred to by index, so a span
    # shared by two genes stays one Alternative in the CAS.
    alternatives: dict[Span, int] = {}
    for span in [a for s in specs for a in s.alternatives] + list(unattached):
        alternatives.setdefault(span, len(alternatives))
    payload = {
        "t": text,
        "g": [[s.begin, s.end, [alternatives[a] for a in s.alternatives]] for s in specs],
        "a": [list(span) for span in alternatives],
        **extra,
    }
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def decode_sentence(
    data: bytes, value: str
) -> tuple[str, list[MentionSpec], list[Span], dict[str, Any]]:
    """Inverse of :func:`encode_sentence`: text, mentions, unattached alternatives, payload."""
    payload = json.loads(data)
    spans = [(a[0], a[1]) for a in payload["a"]]
    specs = [
        MentionSpec(b, e, value, alternatives=tuple(spans[i] for i in alts))
        for b, e, alts in payload["g"]
    ]
    listed = {a for s in specs for a in s.alternatives}
    return payload["t"], specs, [s for s in spans if s not in listed], payload


def sentence_refs(
    corpus: MentionCorpus[Any, Any],
    sentences_path: Path,
    limit: int | None,
    value: str,
    extra: Callable[[Any], dict[str, Any]] = lambda sentence: {},
    ids: Sequence[str] | None = None,
    error: type[DocumentError] = Bc2DataError,
) -> Iterator[DocumentRef]:
    """One reference per sentence (only those of ``ids`` when given, then the first
    ``limit``), its text and gold mentions in ``data`` (see :func:`encode_sentence`;
    ``extra(sentence)`` adds keys). A sentence in ``corpus.failed`` (a mention line of it
    could not be located) comes with that error, so that it alone fails."""
    unattached: dict[str, list[Any]] = defaultdict(list)
    for alternative in corpus.orphan_alternatives:
        unattached[alternative.sentence_id].append(alternative)
    sentences = corpus.sentences
    if ids is not None:
        problem = unknown_ids(ids, {s.id for s in sentences}, str(sentences_path))
        if problem:
            raise error(problem)
        wanted = set(ids)
        sentences = [s for s in sentences if s.id in wanted]
    for sentence in sentences[:limit]:
        failure = corpus.failed.get(sentence.id)
        if failure is not None:
            yield DocumentRef(
                sentence.id, f"{sentences_path}:{sentence.line}", size=0, error=failure
            )
            continue
        specs, free = linked_specs(
            corpus.genes[sentence.id], unattached.get(sentence.id, []), value
        )
        text = sentence.text
        yield DocumentRef(
            sentence.id,
            f"{sentences_path}:{sentence.line}",
            encode_sentence(text, specs, free, **extra(sentence)),
            len(text),
        )


def load_sentence(
    ref: DocumentRef, cas: cassis.Cas, value: str, reader: str, error: type[Exception]
) -> tuple[list[MentionSpec], list[Span], dict[str, Any]]:
    """Text and Sentence of a reference from :func:`sentence_refs` into ``cas``; returns
    its gold mentions, unattached alternatives and payload for the reader to add."""
    if ref.data is None:
        raise error(
            f"document {ref.doc_id}: no sentence data; {reader} documents come "
            "from its own iter_documents"
        )
    text, specs, free, payload = decode_sentence(ref.data, value)
    set_text(cas, text, ref.doc_id, ref.uri)
    add_sentence(cas, ref.doc_id)
    return specs, free, payload


def add_sentence(view: cassis.Cas, sentence_id: str) -> None:
    """One Sentence over the whole (trimmed) text of a sentence document."""
    text = view.sofa_string or ""
    stripped = text.strip()
    if stripped:
        begin = text.index(stripped[0])
        sentence_type = view.typesystem.get_type(SENTENCE)
        view.add(sentence_type(begin=begin, end=begin + len(stripped), id=sentence_id))


class Bc2gmReader(Reader[Bc2gmReaderConfig]):
    """BC2GM sentences with gold genes and alternatives (see the module docstring)."""

    name = "bc2gm.reader.v1"
    description = "BioCreative II gene mention corpus: one document per sentence, gold genes."
    produces = (SENTENCE, GENE_MENTION, ALTERNATIVE)

    @classmethod
    def check_config(cls, config: Bc2gmReaderConfig, context: RunContext) -> list[str]:
        problem = corpus_problem(config, context, "bc2gm")
        if problem:
            return [problem]
        try:
            files = bc2gm_files(config, context)
        except Bc2DataError as exc:
            return [str(exc)]
        return file_problems(
            config,
            context,
            files,
            ("sentence", "GENE.eval", "ALTGENE.eval"),
            "bc2-format/",
            lambda path: [s.id for s in bc2.read_sentences(path)],
        )

    def iter_documents(self) -> Iterator[DocumentRef]:
        sentences_path, genes_path, alternatives_path = bc2gm_files(self.config, self.context)
        try:
            corpus = bc2.load_bc2(
                sentences_path,
                genes_path,
                alternatives_path,
                on_mismatch=self.config.on_mismatch,
                keep_going=True,
            )
        except (FormatError, OSError) as exc:
            raise Bc2DataError(str(exc)) from exc
        yield from sentence_refs(
            corpus,
            sentences_path,
            self.config.limit,
            self.config.value,
            ids=selected_ids(self.config, self.context),
        )

    def load(self, ref: DocumentRef, cas: cassis.Cas) -> None:
        specs, free, _ = load_sentence(ref, cas, self.config.value, self.name, Bc2DataError)
        add_mentions(cas, GENE_MENTION, specs, unattached_alternatives=free)


__all__ = [
    "Bc2gmReader",
    "Bc2gmReaderConfig",
    "GoldFileOptions",
    "add_sentence",
    "bc2gm_files",
    "corpus_folder",
    "corpus_problem",
    "decode_sentence",
    "default_corpus",
    "encode_sentence",
    "file_problems",
    "gold_files",
    "load_sentence",
    "missing_files",
    "selected_ids",
    "sentence_refs",
]
