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
  root (HEAD 0) is a DKPro ``ROOT`` whose Governor is its Dependent. Its
  ``DependencyType`` is ``root_label`` ("ROOT", as the CRAFT reader writes it, so
  gold and system agree; none keeps the file's DEPREL) when its DEPREL is ``root``
  in any case (``ROOT``, ``root:x``); any other DEPREL is kept, so a parser that
  hangs the right word from 0 under another label (``0 punct``) loses LAS on it
  as in conll18_ud_eval.py.

Multiword tokens (a range line ``3-4`` over words 3 and 4), as ``stanza.pipeline.v1``
writes them (:mod:`casflow.components.formats.multiword_tokens`): words whose forms
concatenated are exactly the range's FORM (UD English ``won't`` = ``wo`` + ``n't``,
``cannot`` = ``can`` + ``not``) are a Token each at their own offsets, like any word;
otherwise (``won't`` = ``will`` + ``n't``, French ``du`` = ``de`` + ``le``) the range
is one Token (``id`` the range, ``3-4``) with the POS, lemma and relation of its head
word (the word nearest the root), no relation between its own words, and the
relations of other words to any of them governed by that Token, so the sentence's
relations still form a tree; one warning per document counts these, naming the
file and line of the first.

Not loaded: FEATS, DEPS and MISC. Empty nodes (``3.1``) belong to the
enhanced graph only and are skipped. The HEADs must form a tree (each 0 or a word
of the sentence, none the word itself, no cycle), else the document fails before
anything is added. Text after the file's last word (a truncated or empty file) is
kept, without annotations, with a warning.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import cassis
from pydantic import Field

from casflow.components.formats.cas_builders import (
    ROOT_LABEL,
    TokenSpec,
    add_sentences,
    is_root_relation,
)
from casflow.components.formats.common import FormatError, warn
from casflow.components.formats.conllu.parse import ConlluSentence, ConlluWord, parse_conllu
from casflow.components.formats.conllu.parse import align_to_text as align_conllu
from casflow.components.formats.document_files import (
    FileImport,
    FileImportConfig,
    ImportFileMalformed,
    ImportFormatError,
    warn_uncovered_text,
)
from casflow.components.formats.multiword_tokens import Span, head_words, spelled_word_spans
from casflow.typesystem import DEPENDENCY, DEPENDENCY_ROOT, LEMMA, POS, SENTENCE, TOKEN

ConlluLayer = Literal["sentences", "tokens", "pos", "lemmas", "dependencies"]
ALL_CONLLU_LAYERS: tuple[ConlluLayer, ...] = (
    "sentences",
    "tokens",
    "pos",
    "lemmas",
    "dependencies",
)


def _value(column: str) -> str | None:
    return None if column == "_" else column


def _root_deprel(deprel: str, root_label: str | None) -> str | None:
    """DependencyType of a word at HEAD 0: ``root_label`` only for a root DEPREL; any
    other label is kept, as the tool wrappers keep it (:func:`cas_builders.root_label`)."""
    if not root_label:
        return deprel
    value = _value(deprel)
    return root_label if value is not None and is_root_relation(value) else value


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
    # Words whose chain is known to reach 0 end later walks: without them a chain of n
    # words (a long sentence parsed as one branch) took n^3 steps, minutes for 5,000.
    reaches_root: set[int] = set()
    for start in range(1, len(words) + 1):
        path: dict[int, int] = {}  # word -> its place on this walk
        node: int | None = start
        while node and node not in reaches_root and node not in path:
            path[node] = len(path)
            node = heads[node - 1]
        if node and node in path:  # came back to a word already on the path: a cycle
            cycle = list(path)[path[node] :]
            raise ImportFileMalformed(
                f"{where}:{words[cycle[0] - 1].line}: the HEADs of words "
                f"{', '.join(str(n) for n in sorted(cycle))} form a cycle with no path to the "
                "root (HEAD 0); the dependency tree is broken"
            )
        reaches_root.update(path)
    return heads


class ConlluImportConfig(FileImportConfig):
    layers: list[ConlluLayer] = Field(
        default_factory=lambda: list(ALL_CONLLU_LAYERS),
        description="What to import; tokens are always added when any token layer is asked for.",
    )
    root_label: str | None = Field(
        ROOT_LABEL,
        description="DependencyType of a root relation (HEAD 0) whose DEPREL is root, in "
        "any case (none: the file's DEPREL); other DEPRELs at HEAD 0 are kept.",
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
        where = f"document {doc_id}: {path}"
        units = [
            _token_units(sentence, word_spans)
            for sentence, word_spans in zip(document.sentences, spans, strict=True)
        ]
        # Checked before anything is added: a broken tree fails the document as a whole.
        heads = [
            _check_heads(unit.words, where) if "dependencies" in layers else _heads(unit.words)
            for unit in units
        ]
        # per Token, the index of the word whose analysis it carries
        head_indexes = [u.head_word_indexes(h) for u, h in zip(units, heads, strict=True)]
        sentences = [
            [
                _token_spec(span, unit.words[index], layers)
                for span, index in zip(unit.spans, indexes, strict=True)
            ]
            for unit, indexes in zip(units, head_indexes, strict=True)
        ]
        if layers == {"sentences"}:
            self._add_sentences_only(view, document.sentences, sentences)
            return
        _warn_merged(units, path)
        tokens = add_sentences(
            view,
            sentences,
            ids=[s.sent_id for s in document.sentences],
            with_sentences="sentences" in layers,
        )
        for unit, sentence_tokens in zip(units, tokens, strict=True):
            for token, token_id in zip(sentence_tokens, unit.ids, strict=True):
                token.id = token_id
        if "dependencies" in layers:
            self._add_dependencies(view, units, tokens, heads, head_indexes)

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
        units: Sequence[_TokenUnits],
        tokens: Sequence[Sequence[Any]],
        heads: Sequence[Sequence[int | None]],
        head_indexes: Sequence[Sequence[int]],
    ) -> None:
        typesystem = view.typesystem
        dependency_type = typesystem.get_type(DEPENDENCY)
        root_type = typesystem.get_type(DEPENDENCY_ROOT)
        out = []
        for unit, sentence_tokens, sentence_heads, indexes in zip(
            units, tokens, heads, head_indexes, strict=True
        ):
            for token, index in zip(sentence_tokens, indexes, strict=True):
                word = unit.words[index]
                head = sentence_heads[index]
                if head is None:
                    continue
                if head == 0:
                    out.append(
                        root_type(
                            begin=token.begin,
                            end=token.end,
                            Governor=token,
                            Dependent=token,
                            DependencyType=_root_deprel(word.deprel, self.config.root_label),
                            flavor="basic",
                        )
                    )
                    continue
                out.append(
                    dependency_type(
                        begin=token.begin,
                        end=token.end,
                        # the Token of the head word, which is a merged token's when the
                        # head is any of its words
                        Governor=sentence_tokens[unit.word_units[head - 1]],
                        Dependent=token,
                        DependencyType=_value(word.deprel),
                        flavor="basic",
                    )
                )
        view.add_all(out)


@dataclass
class _TokenUnits:
    """A sentence's syntactic words grouped into the Tokens they become."""

    #: the words with integer ids, in order (the dependency tree's nodes)
    words: list[ConlluWord] = field(default_factory=list)
    #: per word, the index of its Token
    word_units: list[int] = field(default_factory=list)
    #: per Token, its span and CoNLL-U ID (a word's, or a merged token's range)
    spans: list[Span] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    #: multiword tokens whose words do not spell them, with those words
    merged: list[tuple[ConlluWord, list[ConlluWord]]] = field(default_factory=list)

    def add(self, token_id: str, span: Span, words: Sequence[ConlluWord]) -> None:
        for word in words:
            self.words.append(word)
            self.word_units.append(len(self.spans))
        self.spans.append(span)
        self.ids.append(token_id)

    def head_word_indexes(self, heads: Sequence[int | None]) -> list[int]:
        """Per Token, the index of the word whose analysis it carries."""
        chosen = head_words(self.word_units, heads)
        return [chosen[unit] for unit in range(len(self.spans))]


def _token_spec(span: Span, word: ConlluWord, layers: Collection[str]) -> TokenSpec:
    return TokenSpec(
        *span,
        pos=_value(word.xpos) if "pos" in layers else None,
        coarse_pos=_value(word.upos) if "pos" in layers else None,
        lemma=_value(word.lemma) if "lemmas" in layers else None,
    )


def _token_units(sentence: ConlluSentence, spans: Sequence[Span | None]) -> _TokenUnits:
    """One Token per word, except for a multiword token whose words do not spell its
    FORM: its words share one (see :mod:`casflow.components.formats.multiword_tokens`)."""
    groups: list[tuple[ConlluWord | None, Span, list[ConlluWord]]] = []
    range_last = 0
    for word, span in zip(sentence.words, spans, strict=True):
        if word.is_empty_node or span is None:
            continue  # enhanced graph only
        word_range = word.range
        if word_range is not None:
            groups.append((word, span, []))
            range_last = word_range[1]
        elif int(word.id) <= range_last:
            groups[-1][2].append(word)
        else:
            groups.append((None, span, [word]))
    units = _TokenUnits()
    for range_word, span, words in groups:
        if range_word is None:
            units.add(words[0].id, span, words)
            continue
        pieces = spelled_word_spans(range_word.form, span[0], [w.form for w in words])
        if pieces is not None:
            for word, piece in zip(words, pieces, strict=True):
                units.add(word.id, piece, [word])
        elif words:
            units.add(range_word.id, span, words)
            units.merged.append((range_word, words))
    return units


def _heads(words: Sequence[ConlluWord]) -> list[int | None]:
    """HEADs as read, for choosing a merged token's head word when no tree is imported
    (and so none checked): a HEAD that is no word of the sentence counts as none."""
    return [
        int(w.head) if _HEAD.fullmatch(w.head) and int(w.head) <= len(words) else None
        for w in words
    ]


def _warn_merged(units: Sequence[_TokenUnits], path: Path) -> None:
    merged = [pair for unit in units for pair in unit.merged]
    if not merged:
        return
    shown = "; ".join(
        f"line {r.line}: {r.id} {r.form!r} = {' + '.join(w.form for w in words)}"
        for r, words in merged[:3]
    )
    more = f" and {len(merged) - 3} more" if len(merged) > 3 else ""
    warn(
        f"{len(merged)} multiword token{'s' if len(merged) > 1 else ''} whose words do not "
        f"spell the FORM ({shown}{more}): each is one Token with the POS, lemma and relation "
        "of its head word (the word nearest the root); relations between its own words are "
        "not imported, and relations of other words to any of them attach to that Token",
        source=str(path),
        line=merged[0][0].line,
    )
