"""``udpipe.v1``: a UDPipe 1 model (tokenizer, tagger, parser) over a CAS view.

Any UDPipe model file works (the UD models people download, or one trained by
``casflow train`` with ``train.udpipe.v1``). Written as DKPro types with exact
offsets: Sentence; Token; POS with XPOS as ``PosValue`` and UPOS as
``coarseValue``, linked from ``Token.pos``; Lemma linked from ``Token.lemma``;
basic Dependency, the root a ``ROOT`` whose Governor is its Dependent and whose
DependencyType is "ROOT" (as ``spacy.pipeline.v1`` and ``conllu.import.v1``).

- The tokenizer gets one structure block at a time (as the other segmenters,
  :mod:`casflow.components.segmenters`), so no sentence crosses a heading,
  paragraph or blank line.
- ``use_existing_sentences``: each Sentence of the view is tokenized on its own
  and becomes one UDPipe sentence (no Sentence is written).
- Multiword tokens of the tokenizer (one surface token, several words:
  ``dunno`` = ``do`` + ``n't`` + ``know``) follow the convention of
  ``stanza.pipeline.v1`` and ``conllu.import.v1``
  (:mod:`casflow.components.formats.multiword_tokens`): the tagger and parser get
  the words' own forms; words that spell the surface (``cannot`` = ``can`` +
  ``not``) are a Token each at their own offsets; otherwise the surface token is
  one Token with the POS, lemma and relation of its head word (the word nearest
  the root; without layer dependencies, no tree says which: the first word's),
  relations between its own words are not written, and relations of other words
  to any of them are governed by that Token.
- ``use_existing_tokens``: the view's tokens are the words (no Token is
  written); POS, Lemma and dependencies attach to them. Each Token is one word
  to the tagger and parser, with its text as form: a contraction another tool
  left whole is analysed as one word (UDPipe's tokenizer does not split it), so
  no multiword token arises there. Sentences are the view's (with
  ``use_existing_sentences``) or the UDPipe tokenizer's sentence ends, each
  sentence taking the tokens that start inside it.
- A model has only the parts it was trained with (``train.udpipe.v1`` writes
  those of the layers it learns): the tokenizer, tagger and parser the layers
  need are checked before any document is read, and UDPipe refusing a text is a
  document's error, never untagged words with every head the root.
- ``max_sentence_words``: a longer sentence is tagged and parsed in consecutive
  pieces of at most that many words (a multiword token's words stay together), each
  with its own root (and Sentence, unless the sentences are the view's), with a
  ``LongSentenceWarning``. UDPipe's parser time grows with the square of a sentence's
  length: one given Sentence of 20,000 words (a table flattened to text, or a
  splitter that found no sentence end in a 100 KB line) took 558 s, against 13 s in
  pieces of 500. UDPipe's own tokenizer ended that line's sentences every 500 words,
  so without given sentences the default seldom cuts.
"""

from __future__ import annotations

import bisect
import itertools
import warnings
from collections.abc import Sequence
from typing import Any, Literal

import cassis
from pydantic import Field, model_validator

from casflow.components.formats.cas_builders import dependency_annotation
from casflow.components.formats.multiword_tokens import distinct, head_words, surface_tokens
from casflow.components.layers import (
    add_annotations,
    long_sentence_warning,
    piece_bounds,
    produced_types,
)
from casflow.components.rules.sentences import structure_breaks, text_blocks
from casflow.components.segmenters import SegmenterConfig, structure_type_problems
from casflow.components.udpipe.model import (
    Analysed,
    UdpipeModel,
    Word,
    missing_model,
    model_file,
    udpipe_missing,
    words_at,
)
from casflow.pipeline.component import Processor, RunContext
from casflow.typesystem import DEPENDENCY, DEPENDENCY_ROOT, LEMMA, POS, SENTENCE, TOKEN

UdpipeLayer = Literal["sentences", "tokens", "pos", "lemma", "dependencies"]
ALL_LAYERS: tuple[UdpipeLayer, ...] = ("sentences", "tokens", "pos", "lemma", "dependencies")

Span = tuple[int, int]
#: Where UDPipe's own tokenizer ended the sentences of a line without sentence ends;
#: stanza.pipeline.v1's default too.
DEFAULT_MAX_SENTENCE_WORDS = 500


class UdpipeConfig(SegmenterConfig):
    model: str = Field(
        description="UDPipe model file (.udpipe), or the model folder written by casflow train "
        "(train.udpipe.v1); relative paths also from the workflow's folder."
    )
    layers: list[UdpipeLayer] = Field(
        default_factory=lambda: list(ALL_LAYERS),
        description=f"Layers to write, from: {', '.join(ALL_LAYERS)}.",
    )
    use_existing_tokens: bool = Field(
        False, description="Tag and parse the view's Token annotations (no Token is written)."
    )
    use_existing_sentences: bool = Field(
        False, description="Take the view's Sentence annotations as the sentences (none written)."
    )
    max_sentence_words: int = Field(
        DEFAULT_MAX_SENTENCE_WORDS,
        ge=1,
        description="A longer sentence is tagged and parsed in pieces of at most this many "
        "words, each with its own root (and Sentence, unless the view's sentences are used), "
        "with a warning: UDPipe's parser time grows with the square of the length (20,000 "
        "words took over 9 minutes).",
    )

    @model_validator(mode="after")
    def _consistent(self) -> UdpipeConfig:
        needs_tokens = {"pos", "lemma", "dependencies"} & set(self.layers)
        if needs_tokens and "tokens" not in self.layers and not self.use_existing_tokens:
            raise ValueError(
                f"layers {sorted(needs_tokens)} attach to tokens: add 'tokens' to layers "
                "or set use_existing_tokens: true"
            )
        return self

    def written_layers(self) -> set[str]:
        skip = set()
        if self.use_existing_tokens:
            skip.add("tokens")
        if self.use_existing_sentences:
            skip.add("sentences")
        return set[str](self.layers) - skip


class UdpipePipeline(Processor[UdpipeConfig]):
    name = "udpipe.v1"
    description = (
        "Runs a UDPipe 1 model: sentences, tokens, POS (XPOS and UPOS), lemmas, DKPro "
        "dependencies; can take the view's sentences and tokens."
    )

    def __init__(self, config: UdpipeConfig, context: RunContext | None = None) -> None:
        super().__init__(config, context)
        missing = missing_model(config.model, self.context.workflow_dir)
        if missing is not None:
            raise FileNotFoundError(missing)
        self.model = UdpipeModel(model_file(config.model, self.context.workflow_dir))
        layers = config.written_layers()
        self.tag = bool({"pos", "lemma"} & layers)
        self.parse = "dependencies" in layers
        problems = missing_parts(config, self.model)
        if problems:
            raise ValueError("; ".join(problems))

    @classmethod
    def requirements(cls, config: UdpipeConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
        requires = []
        if config.use_existing_tokens:
            requires.append(TOKEN)
        if config.use_existing_sentences:
            requires.append(SENTENCE)
        # UDPipe writes no entities: the mapping is empty and unmapped labels are dropped.
        produces = produced_types(config.written_layers(), {}, "drop")
        return tuple(requires), tuple(produces)

    @classmethod
    def views_read(cls, config: UdpipeConfig) -> dict[str, tuple[str, ...]]:
        # Structure types are optional there: a view without headings has no breaks.
        return {config.structure_view: ()} if config.structure_view else {}

    @classmethod
    def check_config(cls, config: UdpipeConfig, context: RunContext) -> list[str]:
        problem = udpipe_missing()
        if problem:
            return [f"{cls.name}: {problem}"]
        problems = structure_type_problems(config)
        if problems:
            return problems
        missing = missing_model(config.model, context.workflow_dir)
        if missing is not None:
            return [f"model {config.model!r}: {missing}"]
        try:
            model = UdpipeModel(model_file(config.model, context.workflow_dir))
        except ValueError as exc:
            return [f"model {config.model!r}: {exc}"]
        return [f"model {config.model!r}: {p}" for p in missing_parts(config, model)]

    # -- sentences as token spans ------------------------------------------------------------

    def _regions(self, view: cassis.Cas) -> list[Span]:
        text = view.sofa_string or ""
        if self.config.use_existing_sentences:
            return sorted((s.begin, s.end) for s in view.select(SENTENCE))
        source = view.get_view(self.config.structure_view) if self.config.structure_view else view
        return text_blocks(
            text,
            structure_breaks(source, self.config.structure_types),
            split_at_blank_lines=self.config.split_at_blank_lines,
            split_at_newlines=self.config.split_at_newlines,
        )

    def _tokenized(self, text: str, regions: Sequence[Span]) -> list[list[Word]]:
        """Sentences as words from UDPipe's tokenizer, region by region."""
        sentences: list[list[Word]] = []
        for start, end in regions:
            piece = text[start:end]
            if not piece.strip():
                continue
            found = [[word.moved(start) for word in words] for words in self.model.tokenize(piece)]
            if self.config.use_existing_sentences:
                found = [[word for words in found for word in words]] if found else []
            sentences.extend(found)
        return sentences

    def _existing(self, view: cassis.Cas, regions: Sequence[Span]) -> list[list[Any]]:
        """The view's tokens grouped into sentences (the view's, or UDPipe's sentence ends)."""
        text = view.sofa_string or ""
        tokens = sorted(
            (t for t in view.select(TOKEN) if t.end > t.begin), key=lambda t: (t.begin, t.end)
        )
        if self.config.use_existing_sentences:
            bounds = list(regions)
        else:
            bounds = [(s[0].begin, s[-1].end) for s in self._tokenized(text, regions)]
        starts = [b for b, _ in bounds]
        grouped: list[list[Any]] = [[] for _ in bounds]
        loose: list[Any] = []
        for token in tokens:
            i = bisect.bisect_right(starts, token.begin) - 1
            if i >= 0 and token.begin < bounds[i][1]:
                grouped[i].append(token)
            else:
                loose.append(token)
        result = [g for g in grouped if g]
        if loose and not self.config.use_existing_sentences:
            # Tokens starting where UDPipe's tokenizer saw only space join the sentence before.
            result = _attach_loose(result, loose)
        elif loose:
            result += [[t] for t in loose]  # outside every sentence: one-token sentences
        return sorted(result, key=lambda g: g[0].begin)

    # -- writing -------------------------------------------------------------------------------

    def process(self, view: cassis.Cas) -> None:
        text = view.sofa_string or ""
        if not text.strip():
            return
        regions = self._regions(view)
        layers = self.config.written_layers()
        ts = view.typesystem
        make_token, make_pos, make_lemma = ts.get_type(TOKEN), ts.get_type(POS), ts.get_type(LEMMA)
        make_dep, make_root = ts.get_type(DEPENDENCY), ts.get_type(DEPENDENCY_ROOT)
        make_sentence = ts.get_type(SENTENCE)
        sentences: list[tuple[list[Word], list[Any] | None]]
        if self.config.use_existing_tokens:
            groups = self._existing(view, regions)
            sentences = [(words_at(text, [(t.begin, t.end) for t in g]), g) for g in groups]
        else:
            sentences = [(words, None) for words in self._tokenized(text, regions)]
        most = self.config.max_sentence_words
        each = "root" if self.config.use_existing_sentences else "Sentence and root"
        sentences = [
            piece
            for words, existing in sentences
            for piece in sentence_pieces(view, words, existing, most, each)
        ]
        # Everything is analysed before the view is touched: a failure leaves it unchanged.
        analysed = [
            self.model.analyse(words, tag=self.tag, parse=self.parse) for words, _ in sentences
        ]
        new: list[Any] = []
        for (given, existing), words in zip(sentences, analysed, strict=True):
            if existing is None:
                tokens = _word_tokens(text, words, make_token)
                if "tokens" in layers:
                    new.extend(distinct(tokens))
            else:
                tokens = existing
            speaker = head_words(
                [id(token) for token in tokens],
                [None if w.head is None else w.head + 1 for w in words],
            )
            for i, (word, token) in enumerate(zip(words, tokens, strict=True)):
                if speaker[id(token)] != i:
                    continue  # another word of the same multiword token speaks for it
                if "pos" in layers and (word.xpos or word.upos):
                    token.pos = make_pos(
                        begin=token.begin,
                        end=token.end,
                        PosValue=_value(word.xpos),
                        coarseValue=_value(word.upos),
                    )
                    new.append(token.pos)
                if "lemma" in layers and _value(word.lemma):
                    token.lemma = make_lemma(begin=token.begin, end=token.end, value=word.lemma)
                    new.append(token.lemma)
                if "dependencies" in layers:
                    head = None if word.head is None else tokens[word.head]
                    new.append(
                        dependency_annotation(
                            make_dep, make_root, token, head, word.deprel, keep_root_label=True
                        )
                    )
            if "sentences" in layers:
                new.append(make_sentence(begin=given[0].begin, end=given[-1].end))
        add_annotations(view, new)


def sentence_pieces(
    view: cassis.Cas, words: list[Word], existing: list[Any] | None, most: int, each: str
) -> list[tuple[list[Word], list[Any] | None]]:
    """A sentence's words (and the view's tokens they are, if any) as consecutive pieces
    of at most ``most`` words, cut between tokens (the words of a multiword token share
    a span and stay together), with a warning; the sentence itself when not longer.
    ``each`` is what every piece gets of its own (for the warning)."""
    if len(words) <= most:
        return [(words, existing)]
    warnings.warn(
        long_sentence_warning(
            view, (words[0].begin, words[-1].end), len(words), "max_sentence_words", most, each
        ),
        stacklevel=3,
    )
    # a token's words share its span: the units cut between are the tokens
    sizes = [len(list(group)) for _, group in itertools.groupby(words, key=lambda w: w[:2])]
    starts = [0, *itertools.accumulate(sizes)]
    return [
        (
            words[starts[a] : starts[b]],
            existing[starts[a] : starts[b]] if existing is not None else None,
        )
        for a, b in piece_bounds(sizes, most)
    ]


def missing_parts(config: UdpipeConfig, model: UdpipeModel) -> list[str]:
    """The parts of a UDPipe model the configured layers need and the model lacks (a
    model trained by train.udpipe.v1 has only the parts of the layers it learned)."""
    layers = config.written_layers()
    needs: dict[str, str] = {}
    if not (config.use_existing_tokens and config.use_existing_sentences):
        needs["tokenizer"] = (
            "to make sentences and tokens: use a model with one, or set use_existing_tokens "
            "and use_existing_sentences to tag and parse the view's tokens and sentences"
        )
    tagged = [layer for layer in ALL_LAYERS if layer in layers & {"pos", "lemma", "dependencies"}]
    if tagged:
        needs["tagger"] = (
            f"for layers {', '.join(tagged)}: use a model trained with layer pos (and lemma "
            "for lemmas), or leave those layers out"
        )
    if "dependencies" in layers:
        needs["parser"] = (
            "for layer dependencies: use a model trained with layer dependencies, or leave it out"
        )
    found = model.parts()
    return [
        f"the UDPipe model {model.path} has no {part}, needed {why}"
        for part, why in needs.items()
        if part not in found
    ]


def _value(value: str) -> str | None:
    # UDPipe writes "_" for a column it does not fill.
    return value if value and value != "_" else None


def _word_tokens(text: str, words: Sequence[Analysed], make_token: Any) -> list[Any]:
    """Per word, its new Token (the words of a multiword token share its span)."""
    tokens: list[Any] = []
    for (begin, end), group in itertools.groupby(words, key=lambda w: (w.begin, w.end)):
        tokens += surface_tokens(text, begin, end, [w.form for w in group], make_token)
    return tokens


def _attach_loose(groups: list[list[Any]], loose: Sequence[Any]) -> list[list[Any]]:
    if not groups:
        return [list(loose)]
    starts = [g[0].begin for g in groups]
    for token in loose:
        i = max(bisect.bisect_right(starts, token.begin) - 1, 0)
        groups[i].append(token)
        groups[i].sort(key=lambda t: (t.begin, t.end))
    return groups
