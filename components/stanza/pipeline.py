"""``stanza.pipeline.v1``: any Stanza pipeline over a CAS view, from local model files.

Written as DKPro types with exact character offsets: Sentence; Token; POS with XPOS as
``PosValue`` and UPOS as ``coarseValue`` (linked from ``Token.pos``); Lemma (linked
from ``Token.lemma``); basic Dependency with the root a DKPro ``ROOT`` whose Governor
is its Dependent and whose DependencyType is "ROOT" (as ``spacy.pipeline.v1``);
entities as GeneMention / AnatomyMention / NamedEntity through a label mapping
(presets for Stanza's biomedical NER packages, see :mod:`.presets`); constituency
trees as one DKPro ``ROOT`` per sentence with ``TreebankConstituent`` children
(constituentType, syntacticFunction from function tags such as ``NP-SBJ``, parent,
children) over the sentence's tokens, and a ``PennTree``.

Multi-word tokens (Stanza's mwt: one surface token, several syntactic words): when the
words spell the surface text exactly (``cannot`` -> ``can`` + ``not``), each word
becomes a Token at its own offsets inside the surface token; otherwise (``du`` ->
``de`` + ``le``) the surface token is one Token carrying the analysis of the word that
heads the others (its head lies outside the token), relations between the words of
one token are not written, and the sentence gets no constituency tree (a tree's leaves
are the words, which then have no Token each). ``conllu.import.v1`` does the same
(:mod:`casflow.components.formats.multiword_tokens`).

- Raw text is given to Stanza one structure block at a time (as the other segmenters),
  all blocks of a batch of documents in one ``bulk_process`` call.
- ``use_existing_sentences`` + ``use_existing_tokens``: the view's tokens, grouped by
  the view's sentences, go to Stanza's pretokenized mode (``tokenize_pretokenized``);
  POS, Lemma, dependencies, entities and trees attach to those tokens (tokens outside
  every Sentence are left as they are). A token with inner whitespace goes to Stanza
  with no-break spaces, so Stanza keeps it one word.
- ``use_existing_pos`` (with existing tokens): the view's tags (XPOS ``PosValue``,
  UPOS ``coarseValue``) go to Stanza as its words' tags (Stanza's ``pretagged`` mode),
  so a parser uses another tool's tagger; no POS is written.
- ``ptb_brackets``: words are sent as a parser trained on Penn Treebank files saw them
  through Stanza's tree reader: ``{`` as ``-LCB-``, ``[`` as ``-LSB-`` (the reader turns
  only ``-LRB-``/``-RRB-`` back into round brackets, which therefore go raw).
- ``threads``: PyTorch's threads while the step runs (default 1, as the run already
  parallelises over documents; PyTorch's own default, one per core, made a step 35 times
  slower beside one busy core).
- ``max_sentence_words``: a sentence of more words (a table flattened to text is one
  "sentence" of thousands) goes to Stanza's taggers and parsers in consecutive pieces
  of at most that many words, each analysed as a sentence of its own (its own root and
  tree), with a ``LongSentenceWarning``: the dependency parser's memory grows with the
  square of a sentence's length (a tiny model took 21 GB and 140 s for one sentence of
  2,000 words; a 100 KB line without a sentence end got the process killed). With
  existing tokens the view's sentences are cut; otherwise Stanza's tokenizer (and mwt)
  run first, its sentences are cut at token boundaries (a multi-word token stays
  whole), each piece is a Sentence (unless the view's are used), and the processors
  after it run on the cut Documents (nothing changes when no sentence is that long).
  CRAFT's longest sentence has 376 words.
- ``use_existing_sentences`` alone: each Sentence is tokenized on its own with Stanza's
  ``tokenize_no_ssplit`` (one Stanza sentence, split only at a blank line inside it);
  no Sentence is written.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import cassis
from pydantic import Field, model_validator

from casflow.cas.metadata import find_document_id
from casflow.components.formats.cas_builders import BASIC_FLAVOR, root_label
from casflow.components.formats.multiword_tokens import distinct, head_words, surface_tokens
from casflow.components.formats.penn.alignment import (
    CONSTITUENT_LAYER,
    AlignedTree,
    TreeTypes,
    build_constituents,
)
from casflow.components.formats.penn.parse import (
    ROUND_BRACKETS,
    Tree,
    escape_brackets,
    escape_token,
    format_tree,
)
from casflow.components.layers import (
    ENTITY_TYPE_NAMES,
    EntityTarget,
    UnmappedEntities,
    add_annotations,
    long_sentence_warning,
    piece_bounds,
    produced_types,
)
from casflow.components.rules.sentences import structure_breaks, text_blocks
from casflow.components.segmenters import SegmenterConfig, structure_type_problems
from casflow.components.stanza.model import (
    ModelFiles,
    StanzaProcessor,
    as_read_from_treebank,
    build_pipeline,
    file_problems,
    run_threads_field,
    stanza_missing,
    torch_threads,
)
from casflow.components.stanza.presets import NER_PRESETS, StanzaNerPreset
from casflow.pipeline.component import DocumentError, Processor, RunContext
from casflow.typesystem import DEPENDENCY, DEPENDENCY_ROOT, LEMMA, POS, SENTENCE, TOKEN

StanzaLayer = Literal[
    "sentences", "tokens", "pos", "lemma", "dependencies", "entities", "constituents"
]
ALL_LAYERS: tuple[StanzaLayer, ...] = (
    "sentences",
    "tokens",
    "pos",
    "lemma",
    "dependencies",
    "entities",
    "constituents",
)
#: The processor each layer needs.
LAYER_PROCESSOR: dict[str, StanzaProcessor] = {
    "sentences": "tokenize",
    "tokens": "tokenize",
    "pos": "pos",
    "lemma": "lemma",
    "dependencies": "depparse",
    "entities": "ner",
    "constituents": "constituency",
}
DEFAULT_PROCESSORS: dict[StanzaProcessor, str] = {
    "tokenize": "default",
    "pos": "default",
    "lemma": "default",
    "depparse": "default",
}
#: Above CRAFT's longest sentence (376 words); a tiny parser needed 1 GB at 600 words.
DEFAULT_MAX_SENTENCE_WORDS = 500
Span = tuple[int, int]


class StanzaConfig(SegmenterConfig):
    lang: str = Field("en", description="Stanza language code.")
    processors: dict[StanzaProcessor, str] = Field(
        default_factory=lambda: dict(DEFAULT_PROCESSORS),
        description="Processors to run, each with its Stanza package (e.g. craft, genia, "
        "anatem; 'default' for the language's default); the package is ignored for a "
        "processor given in model_files.",
    )
    resources_dir: str | None = Field(
        None,
        description="Stanza resources directory (resources.json and <lang>/<processor>/"
        "<package>.pt, as stanza.download writes it); never downloaded at run time.",
    )
    model_files: dict[StanzaProcessor, ModelFiles] = Field(
        default_factory=dict,
        description="Local model files per processor ({model, pretrain, forward_charlm, "
        "backward_charlm}; only model required), e.g. models trained with Stanza's trainers.",
    )
    layers: list[StanzaLayer] | None = Field(
        None,
        description=f"Layers to write, from: {', '.join(ALL_LAYERS)}; default: every layer "
        "the processors provide.",
    )
    use_existing_tokens: bool = Field(
        False,
        description="Tag and parse the view's Tokens in Stanza's pretokenized mode (needs "
        "use_existing_sentences; no Token or Sentence is written).",
    )
    use_existing_sentences: bool = Field(
        False, description="Take the view's Sentence annotations as the sentences (none written)."
    )
    use_existing_pos: bool = Field(
        False,
        description="Give the view's POS tags (XPOS PosValue, UPOS coarseValue) to Stanza "
        "as its tags (pretagged): parsers use them, no POS is written (needs "
        "use_existing_tokens).",
    )
    ptb_brackets: bool = Field(
        False,
        description="Send square and curly brackets as Penn Treebank escapes (-LSB-, -LCB-, "
        "...), as parsers trained from treebank files by Stanza saw them (round brackets "
        "stay raw: Stanza's tree reader unescapes only those); casflow's CRAFT model does.",
    )
    ner_preset: StanzaNerPreset | None = Field(
        None,
        description=f"Label mapping of a Stanza NER package: {', '.join(NER_PRESETS)}.",
    )
    entity_mapping: dict[str, EntityTarget] = Field(
        default_factory=dict,
        description="Stanza NER label -> {type: gene|anatomy|named_entity, value: class}; "
        "overrides the preset's entries.",
    )
    unmapped_entities: UnmappedEntities = Field(
        "named_entity", description="Labels not mapped: named_entity (NamedEntity) or drop."
    )
    batch_size: int = Field(
        32, ge=1, description="Sentences per batch of Stanza's taggers and parsers."
    )
    max_sentence_words: int = Field(
        DEFAULT_MAX_SENTENCE_WORDS,
        ge=1,
        description="A longer sentence (the view's, or one of Stanza's tokenizer) is analysed "
        "in pieces of at most this many words, each its own sentence to Stanza's taggers and "
        "parsers (a parser's memory grows with the square of the length; written as a "
        "Sentence of its own when Stanza's tokenizer made it), with a warning.",
    )
    threads: int = run_threads_field()

    @model_validator(mode="after")
    def _consistent(self) -> StanzaConfig:
        if self.use_existing_tokens and not self.use_existing_sentences:
            raise ValueError(
                "use_existing_tokens needs use_existing_sentences: Stanza's pretokenized mode "
                "takes sentences of tokens (run a sentence splitter first)"
            )
        if self.use_existing_pos and not self.use_existing_tokens:
            raise ValueError(
                "use_existing_pos needs use_existing_tokens (and use_existing_sentences): "
                "the tags belong to the view's tokens"
            )
        if self.use_existing_pos and "pos" in self.processors:
            raise ValueError(
                "use_existing_pos gives Stanza the view's tags: remove pos from processors"
            )
        if not self.use_existing_tokens and "tokenize" not in self.processors:
            raise ValueError(
                "processors has no tokenize: add it, or set use_existing_tokens and "
                "use_existing_sentences to analyse the view's tokens"
            )
        if self.layers is not None:
            missing = sorted(
                {LAYER_PROCESSOR[layer] for layer in self.layers} - set(self.processors)
            )
            if missing:
                raise ValueError(
                    f"layers {self.layers} need the processors {missing}: add them to processors"
                )
            needs_tokens = set(self.layers) - {"sentences"}
            if needs_tokens and "tokens" not in self.layers and not self.use_existing_tokens:
                raise ValueError(
                    f"layers {sorted(needs_tokens)} attach to tokens: add 'tokens' to layers "
                    "or set use_existing_tokens: true"
                )
        return self

    def chosen_layers(self) -> set[str]:
        if self.layers is not None:
            return set(self.layers)
        return {layer for layer, proc in LAYER_PROCESSOR.items() if proc in self.processors}

    def written_layers(self) -> set[str]:
        skip = set()
        if self.use_existing_tokens:
            skip.add("tokens")
        if self.use_existing_sentences:
            skip.add("sentences")
        if self.use_existing_pos:
            skip.add("pos")
        return self.chosen_layers() - skip

    def label_mapping(self) -> dict[str, EntityTarget]:
        merged = dict(NER_PRESETS[self.ner_preset]) if self.ner_preset else {}
        merged.update(self.entity_mapping)
        return merged


@dataclass
class _Unit:
    """One Stanza input: a block of raw text, or one sentence of existing tokens."""

    view: int
    offset: int  # where the block starts in the view's text (raw text only)
    text: str
    tokens: list[Any] | None = None  # existing CAS tokens (pretokenized)
    tags: list[tuple[str, str | None]] | None = None  # their (XPOS, UPOS), pretagged


class StanzaPipeline(Processor[StanzaConfig]):
    name = "stanza.pipeline.v1"
    description = (
        "Runs a Stanza pipeline from local files: sentences, tokens (multi-word tokens "
        "split where exact), POS (XPOS and UPOS), lemmas, DKPro dependencies, entities "
        "(gene/anatomy presets), constituency trees; can take the view's sentences and tokens."
    )

    def __init__(self, config: StanzaConfig, context: RunContext | None = None) -> None:
        super().__init__(config, context)
        problem = stanza_missing()
        if problem:
            raise ImportError(problem)
        options: dict[str, Any] = {}
        if config.use_existing_sentences and not config.use_existing_tokens:
            options["tokenize_no_ssplit"] = True
        for name in config.processors:
            if name != "tokenize":
                options[f"{name}_batch_size"] = config.batch_size
        if config.use_existing_pos:
            options["pretagged"] = True
        self.nlp = build_pipeline(
            config.lang,
            config.processors,
            config.resources_dir,
            config.model_files,
            self.context.workflow_dir,
            options,
            pretokenized=config.use_existing_tokens,
        )
        self.writer = DocumentWriter(
            config.written_layers(), config.label_mapping(), config.unmapped_entities
        )

    @classmethod
    def requirements(cls, config: StanzaConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
        requires = []
        if config.use_existing_tokens:
            requires.append(TOKEN)
        if config.use_existing_sentences:
            requires.append(SENTENCE)
        if config.use_existing_pos:
            requires.append(POS)
        layers = config.written_layers()
        produces = list(produced_types(layers, config.label_mapping(), config.unmapped_entities))
        if "constituents" in layers:
            produces += list(CONSTITUENT_LAYER)
        return tuple(requires), tuple(produces)

    @classmethod
    def views_read(cls, config: StanzaConfig) -> dict[str, tuple[str, ...]]:
        return {config.structure_view: ()} if config.structure_view else {}

    @classmethod
    def modules_used(cls, config: StanzaConfig, context: RunContext) -> frozenset[str]:
        return frozenset({"torch"})  # Stanza's models are torch models

    @classmethod
    def check_config(cls, config: StanzaConfig, context: RunContext) -> list[str]:
        problem = stanza_missing()
        if problem:
            return [f"{cls.name}: {problem}"]
        problems = structure_type_problems(config)
        problems += file_problems(
            config.lang,
            config.processors,
            config.resources_dir,
            config.model_files,
            context.workflow_dir,
            pretokenized=config.use_existing_tokens,
        )
        return [f"{cls.name}: {p}" for p in problems]

    # -- input units ---------------------------------------------------------------------

    def _units(self, index: int, view: cassis.Cas) -> list[_Unit]:
        text = view.sofa_string or ""
        if not text.strip():
            return []
        if self.config.use_existing_sentences:
            regions = sorted((s.begin, s.end) for s in view.select(SENTENCE))
        else:
            source = (
                view.get_view(self.config.structure_view) if self.config.structure_view else view
            )
            regions = text_blocks(
                text,
                structure_breaks(source, self.config.structure_types),
                split_at_blank_lines=self.config.split_at_blank_lines,
                split_at_newlines=self.config.split_at_newlines,
            )
        if not self.config.use_existing_tokens:
            return [_Unit(index, b, text[b:e]) for b, e in regions if text[b:e].strip()]
        tokens = sorted(
            (t for t in view.select(TOKEN) if t.end > t.begin), key=lambda t: (t.begin, t.end)
        )
        units = []
        position = 0
        for begin, end in regions:
            while position < len(tokens) and tokens[position].begin < begin:
                position += 1  # outside every sentence: not analysed
            inside = []
            while position < len(tokens) and tokens[position].begin < end:
                inside.append(tokens[position])
                position += 1
            if not inside:
                continue
            tags = _view_tags(view, inside) if self.config.use_existing_pos else None
            most = self.config.max_sentence_words
            if len(inside) > most:
                warnings.warn(
                    long_sentence_warning(
                        view, (begin, end), len(inside), "max_sentence_words", most, "root"
                    ),
                    stacklevel=2,
                )
            for first in range(0, len(inside), most):
                piece_tags = tags[first : first + most] if tags is not None else None
                units.append(
                    _Unit(index, begin, text[begin:end], inside[first : first + most], piece_tags)
                )
        return units

    def _documents(self, units: Sequence[_Unit]) -> list[Any]:
        from stanza.models.common.doc import ID, TEXT, UPOS, XPOS, Document

        documents = []
        for unit in units:
            if unit.tokens is None:
                documents.append(Document([], text=unit.text))
            else:
                words = [
                    unit.text[t.begin - unit.offset : t.end - unit.offset] for t in unit.tokens
                ]
                # Stanza splits a token at whitespace nowhere in pretokenized mode, but its
                # vocabularies never saw inner spaces: a no-break space keeps the word whole.
                words = ["\u00a0".join(w.split()) or w for w in words]
                if self.config.ptb_brackets:
                    words = [
                        as_read_from_treebank(escape_token(w)) if w != '"' else w for w in words
                    ]
                sentence: list[dict[str, Any]] = [
                    {ID: (i,), TEXT: w} for i, w in enumerate(words, 1)
                ]
                if unit.tags is not None:
                    for entry, (xpos, upos) in zip(sentence, unit.tags, strict=True):
                        entry[XPOS] = xpos
                        if upos:
                            entry[UPOS] = upos
                documents.append(Document([sentence], text=" ".join(words)))
        return documents

    # -- processing ----------------------------------------------------------------------

    def process(self, view: cassis.Cas) -> None:
        self.process_batch([view])

    def process_batch(self, views: Sequence[cassis.Cas]) -> None:
        units = [unit for i, view in enumerate(views) for unit in self._units(i, view)]
        if not units:
            return
        # Everything is analysed before any view is touched: a failure leaves them unchanged.
        with torch_threads(self.config.threads):
            analysed = self._analyse(views, units)
        new: list[list[Any]] = [[] for _ in views]
        for unit, document in zip(units, analysed, strict=True):
            view = views[unit.view]
            self.writer.write(view, unit, document, new[unit.view])
        for view, added in zip(views, new, strict=True):
            add_annotations(view, added)

    def _analyse(self, views: Sequence[cassis.Cas], units: Sequence[_Unit]) -> list[Any]:
        """Stanza's Documents of ``units``, every sentence its taggers and parsers got of
        at most ``max_sentence_words`` words."""
        documents = self._documents(units)
        if self.config.use_existing_tokens:
            return list(self.nlp.bulk_process(documents))  # cut in _units already
        # Stanza's tokenizer makes one sentence of a long line without sentence ends (a
        # table flattened to text): over 100 KB, the parser then took all the memory
        # there was and the worker was killed. The sentences are cut between the
        # tokenizer and the processors after it, which run on the cut Documents.
        segmenting = [name for name in ("tokenize", "mwt") if name in self.nlp.processors]
        after = [name for name in self.nlp.processors if name not in segmenting]
        documents = self.nlp.bulk_process(documents, processors=segmenting)
        most = self.config.max_sentence_words
        # the view's Sentences are not written, Stanza's are
        each = "root and tree" if self.config.use_existing_sentences else "Sentence, root and tree"
        documents = [
            cut_long_sentences(views[unit.view], unit.offset, document, most, each)
            for unit, document in zip(units, documents, strict=True)
        ]
        if not after:
            return list(documents)
        return list(self.nlp.bulk_process(documents, processors=after))


def cut_long_sentences(
    view: cassis.Cas, offset: int, document: Any, most: int, each: str = "root and tree"
) -> Any:
    """``document`` (tokenized, not yet tagged; its text starting at ``offset`` in the
    view) with each sentence of more than ``most`` words cut into consecutive sentences
    of at most that many, at token boundaries (a multi-word token stays whole), with a
    warning (``each``: what every piece gets of its own); the document itself when no
    sentence is that long."""
    if all(len(sentence.words) <= most for sentence in document.sentences):
        return document
    from stanza.models.common.doc import Document

    sentences: list[list[dict[str, Any]]] = []
    for sentence in document.sentences:
        if len(sentence.words) <= most:
            sentences.append(_renumbered(sentence.tokens))
            continue
        span = (offset + sentence.tokens[0].start_char, offset + sentence.tokens[-1].end_char)
        warnings.warn(
            long_sentence_warning(
                view,
                span,
                len(sentence.words),
                "max_sentence_words",
                most,
                each,
            ),
            stacklevel=3,
        )
        tokens = sentence.tokens
        for start, end in piece_bounds([len(token.words) for token in tokens], most):
            sentences.append(_renumbered(tokens[start:end]))
    return Document(sentences, text=document.text)


def _renumbered(tokens: Sequence[Any]) -> list[dict[str, Any]]:
    """Stanza tokens (and their words) as the entries of a sentence of their own: word
    ids from 1, offsets and spacing kept."""
    from stanza.models.common.doc import ID

    shift = tokens[0].words[0].id - 1
    entries = []
    for token in tokens:
        for entry in token.to_dict():
            number = entry[ID]
            entry[ID] = (
                number - shift if isinstance(number, int) else tuple(i - shift for i in number)
            )
            entries.append(entry)
    return entries


class MissingTagError(DocumentError, ValueError):
    hint = "run a POS tagger before this step, or leave use_existing_pos off"


def _view_tags(view: cassis.Cas, tokens: Sequence[Any]) -> list[tuple[str, str | None]]:
    """(XPOS, UPOS) of each token from its POS (``Token.pos``, else a POS at its span)."""
    by_span: dict[tuple[int, int], Any] | None = None
    tags = []
    for token in tokens:
        pos = token.get("pos")
        if pos is None:
            if by_span is None:
                by_span = {(p.begin, p.end): p for p in view.select(POS)}
            pos = by_span.get((token.begin, token.end))
        xpos = pos.get("PosValue") if pos is not None else None
        if not xpos:
            raise MissingTagError(
                f"document {find_document_id(view) or '<unknown document>'}: token {token.get_covered_text()!r} at "
                f"({token.begin}, {token.end}) has no POS tag, and use_existing_pos gives "
                "the view's tags to Stanza: run a tagger before this step"
            )
        tags.append((str(xpos), pos.get("coarseValue") or None))
    return tags


class DocumentWriter:
    """Writes analysed Stanza Documents into CAS views (the mapping, apart from loading)."""

    def __init__(
        self,
        layers: set[str],
        mapping: dict[str, EntityTarget],
        unmapped: UnmappedEntities = "named_entity",
    ) -> None:
        self.layers = layers
        self.mapping = mapping
        self.unmapped = unmapped

    def write(self, view: cassis.Cas, unit: _Unit, document: Any, new: list[Any]) -> None:
        text = view.sofa_string or ""
        layers = self.layers
        ts = view.typesystem
        types = _Types(ts)
        sentences = document.sentences
        if unit.tokens is not None:
            words_tokens = [list(unit.tokens)]
            if len(sentences) != 1 or len(sentences[0].words) != len(unit.tokens):
                raise ValueError(
                    f"Stanza returned {sum(len(s.words) for s in sentences)} words in "
                    f"{len(sentences)} sentences for {len(unit.tokens)} pretokenized tokens"
                )
        else:
            words_tokens = [
                self._tokens_of(sentence, text, unit.offset, types, new) for sentence in sentences
            ]
        for sentence, word_tokens in zip(sentences, words_tokens, strict=True):
            if not word_tokens:
                continue
            self._analyses(sentence, word_tokens, types, new)
            if "sentences" in layers:
                new.append(types.sentence(begin=word_tokens[0].begin, end=word_tokens[-1].end))
            if "entities" in layers:
                self._entities(sentence, word_tokens, types, new)
            if "constituents" in layers and getattr(sentence, "constituency", None) is not None:
                self._tree(sentence, word_tokens, ts, new)

    def _tokens_of(
        self, sentence: Any, text: str, offset: int, types: _Types, new: list[Any]
    ) -> list[Any]:
        """One CAS Token per word (shared by the words of an unsplittable multi-word token)."""
        word_tokens: list[Any] = []
        write = "tokens" in self.layers
        for token in sentence.tokens:
            begin, end = _trim(text, offset + token.start_char, offset + token.end_char)
            if begin >= end:
                raise ValueError(
                    f"Stanza token {token.text!r} at {token.start_char}-{token.end_char} covers "
                    "only whitespace"
                )
            made = surface_tokens(text, begin, end, [w.text for w in token.words], types.token)
            word_tokens += made
            if write:
                new.extend(distinct(made))
        return word_tokens

    def _analyses(
        self, sentence: Any, word_tokens: list[Any], types: _Types, new: list[Any]
    ) -> None:
        layers = self.layers
        words = sentence.words
        speaker = head_words([id(token) for token in word_tokens], [w.head for w in words])
        for i, word in enumerate(words):
            token = word_tokens[i]
            if speaker[id(token)] != i:
                continue
            if "pos" in layers and (word.xpos or word.upos):
                token.pos = types.pos(
                    begin=token.begin,
                    end=token.end,
                    PosValue=word.xpos or None,
                    coarseValue=word.upos or None,
                )
                new.append(token.pos)
            if "lemma" in layers and word.lemma:
                token.lemma = types.lemma(begin=token.begin, end=token.end, value=word.lemma)
                new.append(token.lemma)
            if "dependencies" in layers and word.deprel is not None and word.head is not None:
                head = word_tokens[word.head - 1] if word.head else token
                if head is token:
                    new.append(
                        types.root(
                            begin=token.begin,
                            end=token.end,
                            Governor=token,
                            Dependent=token,
                            # the tool's label where it is not root, as conllu.import.v1
                            DependencyType=root_label(word.deprel),
                            flavor=BASIC_FLAVOR,
                        )
                    )
                else:
                    new.append(
                        types.dependency(
                            begin=token.begin,
                            end=token.end,
                            Governor=head,
                            Dependent=token,
                            DependencyType=word.deprel,
                            flavor=BASIC_FLAVOR,
                        )
                    )

    def _entities(
        self, sentence: Any, word_tokens: list[Any], types: _Types, new: list[Any]
    ) -> None:
        # Entities span Stanza tokens; their offsets come from the CAS tokens (exact in
        # every mode, pretokenized included, where Stanza's own offsets are its own text's).
        first_word = {}
        last_word = {}
        position = 0
        for token in sentence.tokens:
            first_word[id(token)] = position
            position += len(token.words)
            last_word[id(token)] = position - 1
        for entity in sentence.ents:
            label = entity.type
            target = self.mapping.get(label)
            if target is None:
                if self.unmapped == "drop":
                    continue
                kind, value = "named_entity", label
            else:
                kind, value = target.type, target.value or label
            begin = word_tokens[first_word[id(entity.tokens[0])]].begin
            end = word_tokens[last_word[id(entity.tokens[-1])]].end
            new.append(types.entity[kind](begin=begin, end=end, value=value))

    def _tree(
        self, sentence: Any, word_tokens: list[Any], ts: cassis.TypeSystem, new: list[Any]
    ) -> None:
        distinct = [t for i, t in enumerate(word_tokens) if i == 0 or t is not word_tokens[i - 1]]
        if len(distinct) != len(word_tokens):
            return  # a multi-word token without offsets per word: its words have no Token
        tree = penn_tree(sentence.constituency)
        if tree.label in ("ROOT", "TOP"):
            # Written as parsers' trees are scored and penn.writer.v1 writes them,
            # "( (S ...) )" (Stanza's root label is its own convention, not a phrase).
            tree = Tree("", tree.children)
        leaves = list(tree.preterminals())
        if len(leaves) != len(word_tokens):
            raise ValueError(
                f"Stanza's tree has {len(leaves)} leaves for a sentence of {len(word_tokens)} words"
            )
        spans = [(t.begin, t.end) for t in word_tokens]
        aligned = AlignedTree(0, 0, format_tree(tree), tree, leaves, spans, [False] * len(spans))
        build_constituents(aligned, word_tokens, TreeTypes.of(ts), new)


class _Types:
    def __init__(self, ts: cassis.TypeSystem) -> None:
        self.sentence = ts.get_type(SENTENCE)
        self.token = ts.get_type(TOKEN)
        self.pos = ts.get_type(POS)
        self.lemma = ts.get_type(LEMMA)
        self.dependency = ts.get_type(DEPENDENCY)
        self.root = ts.get_type(DEPENDENCY_ROOT)
        self.entity = {k: ts.get_type(v) for k, v in ENTITY_TYPE_NAMES.items()}


def _trim(text: str, begin: int, end: int) -> Span:
    while begin < end and text[begin].isspace():
        begin += 1
    while end > begin and text[end - 1].isspace():
        end -= 1
    return begin, end


def penn_tree(node: Any) -> Tree:
    """A Stanza constituency tree as casflow's Penn tree (leaves: the words, escaped).

    A round bracket inside a word is escaped too (``Ca(2`` -> ``Ca-LRB-2``): written
    raw, the ``PennTree`` line could not be read back."""
    # Children before parents with a stack of its own: a parse of a long sentence
    # may be thousands of levels deep.
    made: dict[int, Tree] = {}
    stack: list[tuple[Any, bool]] = [(node, False)]
    while stack:
        current, expanded = stack.pop()
        children = current.children
        if len(children) == 1 and not children[0].children:
            word = escape_brackets(escape_token(children[0].label), ROUND_BRACKETS)
            made[id(current)] = Tree(label=current.label, word=word)
        elif expanded:
            subtrees = [made.pop(id(child)) for child in children]
            made[id(current)] = Tree(label=current.label, children=subtrees)
        else:
            stack.append((current, True))
            stack.extend((child, False) for child in reversed(children))
    return made[id(node)]
