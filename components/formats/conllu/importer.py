"""``conllu.import.v1``: a CoNLL-U file per document into a view.

Words are aligned to the view's text by their forms, in order, any whitespace
allowed between them and a space in a form matching any whitespace character
(:func:`casflow.components.formats.conllu.parse.align_to_text`);
a form not found where expected is an error naming the file, line, sentence and
the text there. Per ``layers`` (default all):

- ``sentences``: a ``Sentence`` from the first to the last word (``id`` from
  ``# sent_id``);
- ``tokens``: a ``Token`` per word (``id`` the CoNLL-U ID);
- ``pos``: ``POS`` with XPOS as ``PosValue`` and UPOS as ``coarseValue`` (``_`` is unset);
- ``lemmas``: ``Lemma`` (``_`` is no lemma);
- ``dependencies``: a basic ``Dependency`` per word with a HEAD (``_`` is none); the
  root (HEAD 0) is a DKPro ``ROOT`` whose Governor is its Dependent, with
  ``DependencyType`` ``root_label`` ("ROOT", as the CRAFT reader writes it, so
  gold and system agree; none keeps the file's DEPREL).

Not supported: multiword tokens (``3-4``, an error: the CAS has one Token per
span) and FEATS, DEPS and MISC (not loaded). Empty nodes (``3.1``) belong to the
enhanced graph only and are skipped. The HEADs must form a tree (each 0 or a word
of the sentence, none the word itself, no cycle), else the document fails before
anything is added. Text after the file's last word (a truncated or empty file) is
kept, without annotations, with a warning.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import cassis
from pydantic import Field

from casflow.components.formats.cas_builders import TokenSpec, add_sentences
from casflow.components.formats.common import FormatError
from casflow.components.formats.conllu.parse import ConlluSentence, parse_conllu
from casflow.components.formats.conllu.parse import align_to_text as align_conllu
from casflow.components.formats.document_files import (
    FileImport,
    FileImportConfig,
    ImportFileMalformed,
    ImportFormatError,
    warn_uncovered_text,
)
from casflow.typesystem import DEPENDENCY, DEPENDENCY_ROOT, LEMMA, POS, SENTENCE, TOKEN

ConlluLayer = Literal["sentences", "tokens", "pos", "lemmas", "dependencies"]
ALL_CONLLU_LAYERS: tuple[ConlluLayer, ...] = (
    "sentences",
    "tokens",
    "pos",
    "lemmas",
    "dependencies",
)
ROOT_LABEL = "ROOT"


def _value(column: str) -> str | None:
    return None if column == "_" else column


_HEAD = re.compile(r"0|[1-9][0-9]*")


def _check_heads(words: Sequence[Any], where: str) -> list[int | None]:
    """The HEAD of each word (None for ``_``), checked to form a tree: each HEAD a word
    of the sentence or 0, no word its own head, every chain of heads reaching 0. A
    loop would make a Dependency that reads as a root (Governor = Dependent) or a
    "tree" that scorers and converters walk forever."""
    heads: list[int | None] = []
    for number, word in enumerate(words, 1):
        if word.head == "_":
            heads.append(None)
            continue
        if not _HEAD.fullmatch(word.head) or int(word.head) > len(words):
            raise ImportFileMalformed(
                f"{where}:{word.line}: HEAD {word.head!r} of word {word.id} is not 0 or a word "
                f"id of the sentence (1-{len(words)})"
            )
        if int(word.head) == number:
            raise ImportFileMalformed(
                f"{where}:{word.line}: word {word.id} is its own HEAD; give it its governor's "
                "id, or 0 for the root"
            )
        heads.append(int(word.head))
    for start in range(1, len(words) + 1):
        seen: list[int] = []
        node: int | None = start
        while node and node not in seen:
            seen.append(node)
            node = heads[node - 1]
        if node:  # came back to a word already on the path: a cycle
            cycle = seen[seen.index(node) :]
            raise ImportFileMalformed(
                f"{where}:{words[cycle[0] - 1].line}: the HEADs of words "
                f"{', '.join(str(n) for n in sorted(cycle))} form a cycle with no path to the "
                "root (HEAD 0); the dependency tree is broken"
            )
    return heads


class ConlluImportConfig(FileImportConfig):
    layers: list[ConlluLayer] = Field(
        default_factory=lambda: list(ALL_CONLLU_LAYERS),
        description="What to import; tokens are always added when any token layer is asked for.",
    )
    root_label: str | None = Field(
        ROOT_LABEL,
        description="DependencyType of the root relation (none: the file's DEPREL).",
    )


class ConlluImport(FileImport[ConlluImportConfig]):
    """Sentences, tokens, POS, lemmas and dependencies of a CoNLL-U file."""

    name = "conllu.import.v1"
    description = "Import a CoNLL-U file per document (e.g. parser output) into a view."

    _PRODUCES: ClassVar[dict[str, tuple[str, ...]]] = {
        "sentences": (SENTENCE,),
        "tokens": (TOKEN,),
        "pos": (POS, f"{POS}:PosValue", f"{POS}:coarseValue", f"{TOKEN}:pos"),
        "lemmas": (LEMMA, f"{LEMMA}:value", f"{TOKEN}:lemma"),
        "dependencies": (DEPENDENCY, DEPENDENCY_ROOT),
    }

    @classmethod
    def requirements(cls, config: ConlluImportConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
        layers = set(getattr(config, "layers", ALL_CONLLU_LAYERS))
        if layers - {"sentences"}:
            layers.add("tokens")
        produces = [
            name for layer in ALL_CONLLU_LAYERS if layer in layers for name in cls._PRODUCES[layer]
        ]
        return (), tuple(produces)

    def process(self, view: cassis.Cas) -> None:
        doc_id, path, text = self.read_document_file(view)
        if path is None or text is None:
            return
        try:
            document = parse_conllu(text, str(path))
        except FormatError as exc:
            raise ImportFileMalformed(f"document {doc_id}: {exc}") from exc
        sofa = view.sofa_string or ""
        try:
            spans = align_conllu(document, sofa, text_source=f"document {doc_id}")
        except FormatError as exc:
            raise ImportFormatError(f"document {doc_id}: {exc}") from exc
        warn_uncovered_text(
            sofa, max((s[1] for ss in spans for s in ss if s is not None), default=0), path, "word"
        )
        layers = set(self.config.layers)
        sentences: list[list[TokenSpec]] = []
        kept_words: list[list[Any]] = []
        for sentence, word_spans in zip(document.sentences, spans, strict=True):
            specs, words = [], []
            for word, span in zip(sentence.words, word_spans, strict=True):
                if word.is_range:
                    raise ImportFileMalformed(
                        f"document {doc_id}: {path}:{word.line}: multiword token "
                        f"{word.id} {word.form!r} is not supported (the CAS has one Token per "
                        "span, its words would share one); write the tool's output without "
                        "multiword tokens (one line per surface token), e.g. with its "
                        "multiword-token expansion turned off"
                    )
                if word.is_empty_node or span is None:
                    continue
                specs.append(
                    TokenSpec(
                        span[0],
                        span[1],
                        pos=_value(word.xpos) if "pos" in layers else None,
                        coarse_pos=_value(word.upos) if "pos" in layers else None,
                        lemma=_value(word.lemma) if "lemmas" in layers else None,
                    )
                )
                words.append(word)
            sentences.append(specs)
            kept_words.append(words)
        where = f"document {doc_id}: {path}"
        # Checked before anything is added: a broken tree fails the document as a whole.
        heads = (
            [_check_heads(words, where) for words in kept_words] if "dependencies" in layers else []
        )
        if layers == {"sentences"}:
            self._add_sentences_only(view, document.sentences, sentences)
            return
        tokens = add_sentences(
            view,
            sentences,
            ids=[s.sent_id for s in document.sentences],
            with_sentences="sentences" in layers,
        )
        if "dependencies" in layers:
            self._add_dependencies(view, kept_words, tokens, heads)

    def _add_sentences_only(
        self,
        view: cassis.Cas,
        sentences: Sequence[ConlluSentence],
        specs: Sequence[Sequence[TokenSpec]],
    ) -> None:
        sentence_type = view.typesystem.get_type(SENTENCE)
        view.add_all(
            sentence_type(begin=words[0].begin, end=words[-1].end, id=sentence.sent_id)
            for sentence, words in zip(sentences, specs, strict=True)
            if words
        )

    def _add_dependencies(
        self,
        view: cassis.Cas,
        words: Sequence[Sequence[Any]],
        tokens: Sequence[Sequence[Any]],
        heads: Sequence[Sequence[int | None]],
    ) -> None:
        typesystem = view.typesystem
        dependency_type = typesystem.get_type(DEPENDENCY)
        root_type = typesystem.get_type(DEPENDENCY_ROOT)
        out = []
        for sentence_words, sentence_tokens, sentence_heads in zip(
            words, tokens, heads, strict=True
        ):
            for word, token, head in zip(
                sentence_words, sentence_tokens, sentence_heads, strict=True
            ):
                if head is None:
                    continue
                if head == 0:
                    out.append(
                        root_type(
                            begin=token.begin,
                            end=token.end,
                            Governor=token,
                            Dependent=token,
                            DependencyType=self.config.root_label or word.deprel,
                            flavor="basic",
                        )
                    )
                    continue
                out.append(
                    dependency_type(
                        begin=token.begin,
                        end=token.end,
                        Governor=sentence_tokens[head - 1],
                        Dependent=token,
                        DependencyType=_value(word.deprel),
                        flavor="basic",
                    )
                )
        view.add_all(out)
