"""GENETAG (BioCreative I task 1A): ``genetag.reader.v1``.

One document per sentence; the id is the sentence id as written (``@@86474344011``).
The corpus has no character offsets, so the text is the sentence's tokens joined
by single spaces (the form the mention lines use; see
:mod:`casflow.components.formats.genetag.parse`). What is loaded:

- one ``Sentence`` over the text and a ``Token`` per corpus token (``id`` 1, 2, ...);
- gold genes (``Gold.format``) as ``GeneMention`` (``value`` "GENE"), accepted
  alternatives (``Correct.Data``) as ``Alternative`` listed in ``alternatives`` of
  every gene whose tokens they overlap (the ``alt_eval.perl`` rule); alternatives
  overlapping no gene are indexed but listed by none;
- with ``pos: true``, ``POS`` (``PosValue``) from ``TAGGED_GENE_CORPUS`` for every
  token whose tag is a part of speech: gene tokens are tagged ``NEWGENE``/``NEWGENE1``
  there instead, and a few tokens ``CELL``, ``CHEM`` or ``ORG``, so they get a Token
  without POS (a POS evaluator must not score them); a sentence read from
  ``TOKENIZED_CORPUS`` (every tag ``TAG``) gets none. Off by default since the POS
  layer is partial.

As for BC2GM, the files are parsed once in the parent and each reference carries
its sentence as compact JSON. Two kinds of damage in the distributed mention files
are repaired with a warning (see ``genetag.parse_mentions``), and mention lines whose
text differs from their tokens are kept with a warning (``on_mismatch``). Otherwise
the files are checked as BC2GM's (:mod:`casflow.components.corpora.bc2gm`): a bad
mention line fails its sentence only, a repeated gold line is read once, empty
files and selections are validation errors; a token holding whitespace (a tab) is
an error naming the line.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import cassis
from pydantic import Field, model_validator

from casflow.components.corpora.bc2gm import (
    GENE_VALUE,
    corpus_folder,
    corpus_problem,
    file_problems,
    gold_files,
    load_sentence,
    selected_ids,
    sentence_refs,
)
from casflow.components.corpora.locations import describe_default
from casflow.components.corpora.selection import one_id_list
from casflow.components.formats.cas_builders import TokenSpec, add_mentions, add_sentences
from casflow.components.formats.common import FormatError
from casflow.components.formats.genetag import parse as genetag
from casflow.pipeline.component import (
    ComponentConfig,
    DocumentError,
    DocumentRef,
    Reader,
    RunContext,
)
from casflow.typesystem import ALTERNATIVE, GENE_MENTION, POS, SENTENCE, TOKEN

#: TAGGED_GENE_CORPUS tags that are not parts of speech: gene tokens, and the 78 tokens
#: of train and devtest marked as a cell line, chemical or organism instead of a POS
#: (``HeLa/CELL``, ``Albendazole/CHEM``): no tagger outputs these, so as gold POS they
#: would count against every one.
NOT_POS_TAGS = frozenset({*genetag.GENE_TAGS, "CELL", "CHEM", "ORG"})
#: The tag of every token of TOKENIZED_CORPUS (whose sentence-final period alone keeps ".").
UNTAGGED = "TAG"


class GenetagDataError(DocumentError, ValueError):
    hint = "check the reader's 'corpus', 'split' or file options and the named file"


def default_corpus() -> str:
    """``$CASFLOW_CORPORA/genetag``, else ``../shared/corpora/genetag``."""
    return corpus_folder("genetag")


class GenetagReaderConfig(ComponentConfig):
    corpus: str | None = Field(
        None,
        description="The GENETAG folder (holding train/ and devtest/); default "
        f"{describe_default('genetag')}.",
    )
    split: Literal["train", "devtest"] = Field("devtest", description="Portion: <corpus>/<split>/.")
    folder: str | None = Field(
        None,
        description="A folder holding one portion as distributed (TAGGED_GENE_CORPUS, else "
        "TOKENIZED_CORPUS; Gold.format and Correct.Data read when there), e.g. the round1 "
        "test portion; instead of corpus and split.",
    )
    sentences: str | None = Field(
        None,
        description="An explicit sentence file (TAGGED_GENE_CORPUS or TOKENIZED_CORPUS form) "
        "instead of the corpus's; then genes and alternatives are read only when given.",
    )
    genes: str | None = Field(None, description="An explicit Gold.format file.")
    alternatives: str | None = Field(None, description="An explicit Correct.Data file.")
    ids: list[str] | None = Field(None, description="Only these sentence ids (in file order).")
    ids_file: str | None = Field(
        None, description="A file of sentence ids, one a line ('#' comments allowed), as 'ids'."
    )
    limit: int | None = Field(None, ge=1, description="Read only the first N sentences.")
    value: str = Field(GENE_VALUE, description="GeneMention value (class label).")
    pos: bool = Field(
        False,
        description="Add POS (PosValue) from TAGGED_GENE_CORPUS to the tokens whose tag is a "
        "part of speech (not gene tokens, nor the few tagged CELL, CHEM or ORG).",
    )
    on_mismatch: Literal["warn", "raise"] = Field(
        "warn",
        description="A mention whose text differs from its tokens: warn and keep, or fail its "
        "sentence.",
    )

    @model_validator(mode="after")
    def _one_id_list(self) -> GenetagReaderConfig:
        one_id_list(self.ids, self.ids_file)
        return self


def genetag_files(
    config: GenetagReaderConfig, context: RunContext
) -> tuple[Path, Path | None, Path | None]:
    """(sentences, genes, alternatives) files the configuration names."""
    return gold_files(
        config,
        context,
        default_corpus(),
        config.split,
        ("TAGGED_GENE_CORPUS", "Gold.format", "Correct.Data"),
        ("TAGGED_GENE_CORPUS", "TOKENIZED_CORPUS"),
        GenetagDataError,
    )


def _token_payload(sentence: genetag.GenetagSentence) -> dict[str, Any]:
    # [begin, end, Penn tag or None]. A sentence of TOKENIZED_CORPUS has no POS at all:
    # its final "./." would otherwise be the only gold POS, scored as if tagged.
    untagged = any(t.tag == UNTAGGED for t in sentence.tokens)
    return {
        "k": [
            [t.begin, t.end, None if untagged or t.tag in NOT_POS_TAGS else t.tag]
            for t in sentence.tokens
        ]
    }


class GenetagReader(Reader[GenetagReaderConfig]):
    """GENETAG sentences with tokens, gold genes and alternatives (see the module docstring)."""

    name = "genetag.reader.v1"
    description = "GENETAG gene mention corpus: one document per sentence, tokens, gold genes."

    @classmethod
    def requirements(cls, config: GenetagReaderConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
        produces = [SENTENCE, TOKEN, GENE_MENTION, ALTERNATIVE]
        if getattr(config, "pos", False):
            produces += [POS, f"{POS}:PosValue", f"{TOKEN}:pos"]
        return (), tuple(produces)

    @classmethod
    def check_config(cls, config: GenetagReaderConfig, context: RunContext) -> list[str]:
        problem = corpus_problem(config, context, "genetag")
        if problem:
            return [problem]
        try:
            files = genetag_files(config, context)
        except GenetagDataError as exc:
            return [str(exc)]
        return file_problems(
            config,
            context,
            files,
            ("sentence", "Gold.format", "Correct.Data"),
            "train/ and devtest/",
            lambda path: [s.id for s in genetag.read_sentences(path)],
            GenetagDataError,
        )

    def iter_documents(self) -> Iterator[DocumentRef]:
        sentences_path, genes_path, alternatives_path = genetag_files(self.config, self.context)
        try:
            corpus = genetag.load_genetag(
                sentences_path,
                genes_path,
                alternatives_path,
                on_mismatch=self.config.on_mismatch,
                keep_going=True,
            )
        except (FormatError, OSError) as exc:
            raise GenetagDataError(str(exc)) from exc
        yield from sentence_refs(
            corpus,
            sentences_path,
            self.config.limit,
            self.config.value,
            _token_payload,
            ids=selected_ids(self.config, self.context, GenetagDataError),
            error=GenetagDataError,
        )

    def load(self, ref: DocumentRef, cas: cassis.Cas) -> None:
        specs, free, payload = load_sentence(
            ref, cas, self.config.value, self.name, GenetagDataError
        )
        tokens = [
            TokenSpec(begin, end, pos=tag if self.config.pos else None)
            for begin, end, tag in payload["k"]
        ]
        add_sentences(cas, [tokens], with_sentences=False)
        add_mentions(cas, GENE_MENTION, specs, unattached_alternatives=free)
