"""BioCreative II gene mention (BC2GM): ``bc2gm.reader.v1`` and ``bc2.import.v1``.

``bc2gm.reader.v1`` makes one document per sentence of the ``.in`` file; the
document id is the sentence id and the text the sentence as written. Gold genes
(``GENE.eval``) become ``GeneMention`` (``value`` "GENE"), and each accepted
alternative (``ALTGENE.eval``) an ``Alternative`` listed in ``alternatives`` of
every gold gene of the sentence it overlaps (the rule of ``alt_eval.perl``, see
:func:`casflow.components.formats.bc2.link_alternatives`). Alternatives that
overlap no gene are still added (indexed, listed by no gene). One ``Sentence``
covers the text.

The files are parsed once, in the parent process, when the documents are
listed: each :class:`DocumentRef` carries its sentence text and spans as compact
JSON in ``data``, so loading a document in a worker reads no file.

``bc2.import.v1`` adds the mention lines of one file (system output in the
GENE.eval format, the text after the offsets optional) to a view of documents
whose id is the sentence id, e.g. after ``bc2gm.reader.v1`` in view ``gold``.
Lines of sentences that are not documents of the run are ignored.

Offsets whose text differs from the line's text are kept with a warning by
default (the official scorer compares offsets only; the training data has four
such lines); ``on_mismatch: raise`` makes them errors.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

import cassis
from pydantic import Field, field_validator

from casflow.components.formats import bc2
from casflow.components.formats.common import FormatError
from casflow.components.formats.mentions import MentionCorpus
from casflow.components.readers.cas_builders import (
    MentionSpec,
    Span,
    add_mentions,
    resolve_mention_type,
    set_text,
)
from casflow.components.readers.document_files import ImportFormatError, document_id
from casflow.components.readers.inputs import resolve_input
from casflow.pipeline.component import (
    ComponentConfig,
    DocumentRef,
    Processor,
    Reader,
    RunContext,
)
from casflow.typesystem import ALTERNATIVE, GENE_MENTION, SENTENCE

OnMismatch = Literal["warn", "raise"]
GENE_VALUE = "GENE"


class Bc2DataError(ValueError):
    hint = "check the reader's 'corpus', 'split' or file options and the named file"


def corpus_folder(name: str) -> str:
    """``$CASFLOW_CORPORA/<name>``, else ``../shared/corpora/<name>``."""
    base = os.environ.get("CASFLOW_CORPORA")
    return str(Path(base) / name) if base else f"../shared/corpora/{name}"


def default_corpus() -> str:
    """``$CASFLOW_CORPORA/bc2gm``, else ``../shared/corpora/bc2gm``."""
    return corpus_folder("bc2gm")


class Bc2gmReaderConfig(ComponentConfig):
    corpus: str | None = Field(
        None,
        description="The BC2GM folder (holding bc2-format/); default $CASFLOW_CORPORA/bc2gm, "
        "else ../shared/corpora/bc2gm.",
    )
    split: Literal["train", "devel"] = Field(
        "devel", description="Portion of the corpus: bc2-format/<split>/."
    )
    sentences: str | None = Field(
        None,
        description="An explicit .in file instead of the corpus's; then genes and "
        "alternatives are read only when given.",
    )
    genes: str | None = Field(None, description="An explicit GENE.eval file.")
    alternatives: str | None = Field(None, description="An explicit ALTGENE.eval file.")
    limit: int | None = Field(
        None, ge=1, description="Read only the first N sentences (quick runs)."
    )
    value: str = Field(GENE_VALUE, description="GeneMention value (class label).")
    on_mismatch: OnMismatch = Field(
        "warn",
        description="A mention whose text differs from its offsets: keep it with a "
        "warning, or fail.",
    )


def _resolve(path: str, context: RunContext) -> Path:
    return Path(resolve_input(path, context.workflow_dir))


class GoldFileOptions(Protocol):
    """The file options of a sentence + mention-lines corpus reader's configuration."""

    corpus: str | None
    sentences: str | None
    genes: str | None
    alternatives: str | None


def gold_files(
    config: GoldFileOptions,
    context: RunContext,
    corpus: str,
    portion: str,
    names: tuple[str, str, str],
) -> tuple[Path, Path | None, Path | None]:
    """(sentences, genes, alternatives): with an explicit ``sentences`` option the explicit
    files (genes and alternatives only when given), else ``names`` in the ``portion``
    folder of the corpus (``corpus`` its default), each replaced by an explicit option."""
    explicit = [
        _resolve(path, context) if path else None
        for path in (config.sentences, config.genes, config.alternatives)
    ]
    if explicit[0] is not None:
        return explicit[0], explicit[1], explicit[2]
    folder = _resolve(config.corpus or corpus, context) / portion
    sentences, genes, alternatives = (
        path or folder / name for path, name in zip(explicit, names, strict=True)
    )
    return sentences, genes, alternatives


def missing_files(files: Sequence[Path | None], names: Sequence[str], holding: str) -> list[str]:
    """A problem for each named file (of :func:`gold_files`) that does not exist; the
    corpus folder is the one ``holding`` that."""
    return [
        f"the {what} file {path} does not exist; check 'corpus' (the folder holding "
        f"{holding}), 'split' or the explicit file options"
        for what, path in zip(names, files, strict=True)
        if path is not None and not path.is_file()
    ]


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
    )


class LinkedMention(Protocol):
    """A located mention with its linked alternatives (bc2 and genetag both have these)."""

    begin: int
    end: int
    alternatives: list[Any]


def linked_specs(
    genes: Sequence[LinkedMention], unattached: Sequence[LinkedMention], value: str
) -> tuple[list[MentionSpec], list[Span]]:
    """Mention specs with their alternatives, and the alternative spans no gene lists."""
    specs = [
        MentionSpec(
            gene.begin,
            gene.end,
            value,
            alternatives=tuple((a.begin, a.end) for a in gene.alternatives),
        )
        for gene in genes
    ]
    return specs, [(a.begin, a.end) for a in unattached]


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
) -> Iterator[DocumentRef]:
    """One reference per sentence (the first ``limit``), its text and gold mentions in
    ``data`` (see :func:`encode_sentence`; ``extra(sentence)`` adds keys)."""
    unattached: dict[str, list[Any]] = defaultdict(list)
    for alternative in corpus.orphan_alternatives:
        unattached[alternative.sentence_id].append(alternative)
    for sentence in corpus.sentences[:limit]:
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


class Bc2gmReader(Reader):
    """BC2GM sentences with gold genes and alternatives (see the module docstring)."""

    name = "bc2gm.reader.v1"
    description = "BioCreative II gene mention corpus: one document per sentence, gold genes."
    Config = Bc2gmReaderConfig
    produces = (SENTENCE, GENE_MENTION, ALTERNATIVE)

    config: Bc2gmReaderConfig

    @classmethod
    def check_config(cls, config: Bc2gmReaderConfig, context: RunContext) -> list[str]:  # type: ignore[override]
        return missing_files(
            bc2gm_files(config, context), ("sentence", "GENE.eval", "ALTGENE.eval"), "bc2-format/"
        )

    def iter_documents(self) -> Iterator[DocumentRef]:
        sentences_path, genes_path, alternatives_path = bc2gm_files(self.config, self.context)
        try:
            corpus = bc2.load_bc2(
                sentences_path, genes_path, alternatives_path, on_mismatch=self.config.on_mismatch
            )
        except (FormatError, OSError) as exc:
            raise Bc2DataError(str(exc)) from exc
        yield from sentence_refs(corpus, sentences_path, self.config.limit, self.config.value)

    def load(self, ref: DocumentRef, cas: cassis.Cas) -> None:
        specs, free, _ = load_sentence(ref, cas, self.config.value, self.name, Bc2DataError)
        add_mentions(cas, GENE_MENTION, specs, unattached_alternatives=free)


# ----------------------------------------------------------------------------- import


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
        "warn", description="A line whose text differs from its offsets: warn and keep, or fail."
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


class Bc2Import(Processor):
    """BC2 mention lines of the document's sentence id into the step's view."""

    name = "bc2.import.v1"
    description = "Import BioCreative II mention lines (e.g. system output) into a view."
    Config = Bc2ImportConfig

    config: Bc2ImportConfig

    def __init__(self, config: Bc2ImportConfig, context: RunContext) -> None:
        super().__init__(config, context)
        self._mentions: dict[str, list[bc2.Bc2Mention]] | None = None
        self._alternatives: dict[str, list[bc2.Bc2Mention]] = {}

    @classmethod
    def requirements(cls, config: Bc2ImportConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:  # type: ignore[override]
        produced = getattr(config, "type", GENE_MENTION)
        alternatives = (ALTERNATIVE,) if getattr(config, "alternatives", None) else ()
        return (), (produced, *alternatives)

    @classmethod
    def check_config(cls, config: Bc2ImportConfig, context: RunContext) -> list[str]:  # type: ignore[override]
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
                raise Bc2DataError(str(exc)) from exc
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
            raise ImportFormatError(f"document {doc_id}: {exc}") from exc
        unattached = bc2.link_alternatives(mentions, alternatives)
        specs, free = linked_specs(mentions, unattached, self.config.value)
        add_mentions(view, self.config.type, specs, unattached_alternatives=free)


__all__ = [
    "Bc2Import",
    "Bc2ImportConfig",
    "Bc2gmReader",
    "Bc2gmReaderConfig",
    "GoldFileOptions",
    "add_sentence",
    "bc2gm_files",
    "corpus_folder",
    "decode_sentence",
    "default_corpus",
    "encode_sentence",
    "gold_files",
    "linked_specs",
    "load_sentence",
    "missing_files",
    "sentence_refs",
]
