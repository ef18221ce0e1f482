"""``opennlp.pipeline.v1``: Apache OpenNLP's sentence detector, tokenizer, POS tagger,
chunker and chunking parser over a CAS view, through one JVM per worker process.

One component with a ``layers`` choice rather than five: OpenNLP keeps one model file
per tool, so each layer names its model (or all come from the model folder
``train.opennlp.v1`` writes), and the layers of one step share one request per
document to the JVM. A chain mixing tools still works: with ``use_existing_sentences``
/ ``use_existing_tokens`` any layer runs over another tool's sentences and tokens, and
``chunks`` alone tags with the POS already on the view's tokens.

Written as DKPro types with exact offsets: Sentence (OpenNLP's sentence spans, one
structure block at a time so no sentence crosses a heading or paragraph), Token (the
tokenizer's spans within each sentence; Java does not take U+0085 for whitespace, so
sentences are trimmed of it and tokens cut at it), POS linked from ``Token.pos``, Chunk
with ``chunkValue``, and for ``constituents`` one DKPro ``ROOT`` per sentence with
``TreebankConstituent`` children (constituentType, parent, children) over the
sentence's tokens, a ``PennTree``, and the parser's own tags as the tokens' POS (the
chunking parser tags as it parses, so ``pos`` and ``constituents`` are not chosen
together). A sentence the parser cannot parse gets no tree; one of more than
``max_parse_words`` words (a table flattened to text) is parsed in pieces, each with
a tree of its own, with a ``LongSentenceWarning``.
"""

from __future__ import annotations

import bisect
import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import cassis
from pydantic import Field, model_validator

from casflow.components.formats.penn.alignment import (
    CONSTITUENT_LAYER,
    AlignedTree,
    TreeTypes,
    build_constituents,
)
from casflow.components.formats.penn.parse import Tree, format_tree
from casflow.components.layers import add_annotations, long_sentence_warning
from casflow.components.opennlp.model import (
    ALL_LAYERS,
    TOOL_NAMES,
    OpenNlpLayer,
    chunk_spans,
    indexed_tree,
    parser_word,
    parser_words,
    resolve_model,
    where_model_looked,
    word,
)
from casflow.components.opennlp.server import (
    OpenNlpServer,
    opennlp_problem,
    release,
    shared_server,
    to_code_points,
)
from casflow.components.rules.sentences import structure_breaks, text_blocks
from casflow.components.segmenters import (
    SegmenterConfig,
    clean_spans,
    structure_type_problems,
)
from casflow.pipeline.component import Processor, RunContext
from casflow.typesystem import CHUNK, POS, SENTENCE, TOKEN

Span = tuple[int, int]
#: A range of a sentence's tokens: (sentence index, first token, end token).
Span3 = tuple[int, int, int]
# Python's whitespace, which takes in U+0085 (NEL) where Java's does not.
_NON_SPACE = re.compile(r"\S+")
DEFAULT_LAYERS: tuple[OpenNlpLayer, ...] = ("sentences", "tokens", "pos")


class OpenNlpConfig(SegmenterConfig):
    model: str | None = Field(
        None,
        description="Model folder written by casflow train (train.opennlp.v1), holding one "
        "model file per layer, or casflow:craft_opennlp (shipped, trained on CRAFT train); "
        "the *_model options override single files.",
    )
    sentence_model: str | None = Field(None, description="OpenNLP sentence detector model file.")
    token_model: str | None = Field(None, description="OpenNLP tokenizer model file.")
    pos_model: str | None = Field(None, description="OpenNLP POS tagger model file.")
    chunker_model: str | None = Field(None, description="OpenNLP chunker model file.")
    parser_model: str | None = Field(
        None, description="OpenNLP parser model file (chunking parser, e.g. en-parser-chunking)."
    )
    layers: list[OpenNlpLayer] = Field(
        default_factory=lambda: list(DEFAULT_LAYERS),
        description=f"Layers to write, from: {', '.join(ALL_LAYERS)} (constituents also "
        "writes the parser's POS tags).",
    )
    use_existing_sentences: bool = Field(
        False, description="Take the view's Sentence annotations as the sentences."
    )
    use_existing_tokens: bool = Field(
        False, description="Tag, chunk and parse the view's Token annotations."
    )
    beam_size: int = Field(20, ge=1, description="Parses the parser keeps (OpenNLP's default 20).")
    max_parse_words: int = Field(
        500,
        ge=1,
        description="constituents: a longer sentence is parsed in pieces of at most this many "
        "words, each with a tree of its own, with a warning (the chunking parser took over "
        "8 minutes on one sentence of 5,000 words, 3 s on 500).",
    )

    @model_validator(mode="after")
    def _consistent(self) -> OpenNlpConfig:
        layers = set(self.layers)
        if {"pos", "constituents"} <= layers:
            raise ValueError(
                "the OpenNLP parser tags the tokens as it parses: choose pos or "
                "constituents, not both (constituents writes the parser's tags)"
            )
        if "sentences" in layers and self.use_existing_sentences:
            raise ValueError("use_existing_sentences: the sentences layer would write them again")
        if "tokens" in layers and self.use_existing_tokens:
            raise ValueError("use_existing_tokens: the tokens layer would write them again")
        if layers - {"sentences"} and not (self.use_existing_sentences or "sentences" in layers):
            raise ValueError(
                "tokens, tags and trees are made per sentence: add 'sentences' to layers or "
                "set use_existing_sentences: true"
            )
        if layers & {"pos", "chunks", "constituents"} and not (
            self.use_existing_tokens or "tokens" in layers
        ):
            raise ValueError(
                "pos, chunks and constituents attach to tokens: add 'tokens' to layers or set "
                "use_existing_tokens: true"
            )
        if (
            "chunks" in layers
            and not (layers & {"pos", "constituents"})
            and not (self.use_existing_tokens)
        ):
            raise ValueError("the chunker needs POS tags: add pos (or constituents) to layers")
        return self

    def explicit_models(self) -> dict[str, str | None]:
        """Each layer's own model file setting (None: its file in ``model``)."""
        return {
            "sentences": self.sentence_model,
            "tokens": self.token_model,
            "pos": self.pos_model,
            "chunks": self.chunker_model,
            "constituents": self.parser_model,
        }

    def model_files(self, base_dir: Path | None) -> dict[str, Path]:
        explicit = self.explicit_models()
        files: dict[str, Path] = {}
        for layer in self.layers:
            path = resolve_model(layer, explicit[layer], self.model, base_dir)
            if path is not None:
                files[layer] = path
        return files


class OpenNlpPipeline(Processor[OpenNlpConfig]):
    name = "opennlp.pipeline.v1"
    description = (
        "Apache OpenNLP sentence detector, tokenizer, POS tagger, chunker and parser (DKPro "
        "types, one JVM per worker); can take the view's sentences and tokens."
    )

    def __init__(self, config: OpenNlpConfig, context: RunContext | None = None) -> None:
        super().__init__(config, context)
        self.files = config.model_files(self.context.workflow_dir)
        missing = [layer for layer in config.layers if layer not in self.files]
        if missing:
            raise ValueError(_missing_message(missing))
        self._server: OpenNlpServer | None = None
        self._keys: dict[str, str] = {}

    @classmethod
    def requirements(cls, config: OpenNlpConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
        requires = []
        if config.use_existing_sentences:
            requires.append(SENTENCE)
        if config.use_existing_tokens:
            requires.append(TOKEN)
        if "chunks" in config.layers and not {"pos", "constituents"} & set(config.layers):
            requires += [POS, f"{TOKEN}:pos"]
        produces: list[str] = []
        if "sentences" in config.layers:
            produces.append(SENTENCE)
        if "tokens" in config.layers:
            produces.append(TOKEN)
        if {"pos", "constituents"} & set(config.layers):
            produces += [POS, f"{TOKEN}:pos"]
        if "chunks" in config.layers:
            produces.append(CHUNK)
        if "constituents" in config.layers:
            produces += list(CONSTITUENT_LAYER)
        return tuple(requires), tuple(dict.fromkeys(produces))

    @classmethod
    def views_read(cls, config: OpenNlpConfig) -> dict[str, tuple[str, ...]]:
        return {config.structure_view: ()} if config.structure_view else {}

    @classmethod
    def check_config(cls, config: OpenNlpConfig, context: RunContext) -> list[str]:
        problem = opennlp_problem()
        if problem:
            return [f"{cls.name}: {problem}"]
        problems = structure_type_problems(config)
        files = config.model_files(context.workflow_dir)
        missing = [layer for layer in config.layers if layer not in files]
        if missing:
            problems.append(_missing_message(missing))
        explicit = config.explicit_models()
        for layer, path in files.items():
            if not path.is_file():
                looked = where_model_looked(
                    layer, explicit[layer], config.model, context.workflow_dir
                )
                problems.append(
                    f"layer {layer}: no OpenNLP {TOOL_NAMES[layer]} model at {looked}; give "
                    "the model file, or the model folder of casflow train (train.opennlp.v1)"
                )
        return problems

    # -- the JVM --------------------------------------------------------------------------------

    def _model(self, layer: str) -> tuple[OpenNlpServer, str]:
        if self._server is None:
            self._server = shared_server()
        if layer not in self._keys:
            self._keys[layer] = self._server.load(layer, self.files[layer])
        return self._server, self._keys[layer]

    def _ask(self, layer: str, op: str, key: str, **fields: Any) -> Any:
        server, model = self._model(layer)
        return server.request(op, model=model, **fields)[key]

    def close(self) -> None:
        if self._server is not None:
            release(self._server)
            self._server = None
            self._keys.clear()

    # -- segmentation -------------------------------------------------------------------------

    def _sentences(self, view: cassis.Cas, text: str) -> list[Span]:
        if self.config.use_existing_sentences:
            return sorted((s.begin, s.end) for s in view.select(SENTENCE) if s.end > s.begin)
        source = view.get_view(self.config.structure_view) if self.config.structure_view else view
        blocks = [
            (b, e)
            for b, e in text_blocks(
                text,
                structure_breaks(source, self.config.structure_types),
                split_at_blank_lines=self.config.split_at_blank_lines,
                split_at_newlines=self.config.split_at_newlines,
            )
            if text[b:e].strip()
        ]
        pieces = [text[b:e] for b, e in blocks]
        found = self._ask("sentences", "sentences", "spans", texts=pieces)
        # Java does not take U+0085 for whitespace: a sentence may end with it, or be one.
        return [
            span
            for (start, end), piece, spans in zip(blocks, pieces, found, strict=True)
            for span in clean_spans(
                text, [(start + b, start + e) for b, e in to_code_points(piece, spans)], start, end
            )
        ]

    def _tokenized(self, text: str, sentences: Sequence[Span]) -> list[list[Span]]:
        pieces = [text[b:e] for b, e in sentences]
        found = self._ask("tokens", "tokens", "spans", texts=pieces)
        # Java does not take U+0085 for whitespace: a token may hold it ('.\x85Next', two
        # tokens to Python), end with it, or be one; each token is cut at whitespace.
        return [
            [
                (m.start(), m.end())
                for b, e in to_code_points(piece, spans)
                for m in _NON_SPACE.finditer(text, start + b, start + e)
            ]
            for (start, _), piece, spans in zip(sentences, pieces, found, strict=True)
        ]

    @staticmethod
    def _existing_tokens(view: cassis.Cas, sentences: Sequence[Span]) -> list[list[Any]]:
        """The view's tokens per sentence (by start); tokens outside every sentence are
        sentences of their own, so nothing is left untagged."""
        tokens = sorted(
            (t for t in view.select(TOKEN) if t.end > t.begin), key=lambda t: (t.begin, t.end)
        )
        starts = [b for b, _ in sentences]
        grouped: list[list[Any]] = [[] for _ in sentences]
        loose = []
        for token in tokens:
            i = bisect.bisect_right(starts, token.begin) - 1
            if i >= 0 and token.begin < sentences[i][1]:
                grouped[i].append(token)
            else:
                loose.append([token])
        return sorted((g for g in [*grouped, *loose] if g), key=lambda g: g[0].begin)

    # -- processing ---------------------------------------------------------------------------

    def process(self, view: cassis.Cas) -> None:
        text = view.sofa_string or ""
        if not text.strip():
            return
        layers = set(self.config.layers)
        ts = view.typesystem
        types = TreeTypes.of(ts)
        make_chunk = ts.get_type(CHUNK)
        new: list[Any] = []
        sentences = self._sentences(view, text)
        if "sentences" in layers:
            new += [types.sentence(begin=b, end=e) for b, e in sentences]
        if not layers - {"sentences"}:
            add_annotations(view, new)
            return
        # Everything is computed before the view changes: a failure leaves it as it was.
        if self.config.use_existing_tokens:
            tokens = self._existing_tokens(view, sentences)
        else:
            spans = self._tokenized(text, sentences)
            tokens = [[types.token(begin=b, end=e) for b, e in s] for s in spans if s]
            new += [t for s in tokens for t in s]
        words = [[text[t.begin : t.end] for t in s] for s in tokens]
        tags: list[list[str]] | None = None
        trees: list[AlignedTree | None] = []
        parsed: list[Sequence[Any]] = []  # the tokens of each tree
        if "pos" in layers:
            tags = self._ask("pos", "pos", "tags", sentences=[[word(w) for w in s] for s in words])
        if "constituents" in layers:
            pieces = self._parse_pieces(view, tokens)
            answers = self._ask(
                "constituents",
                "parse",
                "trees",
                sentences=[parser_words(words[i][lo:hi]) for i, lo, hi in pieces],
                beam=self.config.beam_size,
            )
            tags = [[""] * len(s) for s in tokens]
            for n, (answer, (i, lo, hi)) in enumerate(zip(answers, pieces, strict=True), 1):
                if answer is None:
                    trees.append(None)
                    continue
                tree = _aligned(answer, tokens[i][lo:hi], words[i][lo:hi], n)
                trees.append(tree)
                tags[i][lo:hi] = tree.tags
            parsed = [tokens[i][lo:hi] for i, lo, hi in pieces]
        if tags is not None:
            for sentence_tokens, sentence_tags in zip(tokens, tags, strict=True):
                for token, tag in zip(sentence_tokens, sentence_tags, strict=True):
                    if tag:
                        token.pos = types.pos(begin=token.begin, end=token.end, PosValue=tag)
                        new.append(token.pos)
        if "chunks" in layers:
            if tags is None:
                tags = [[_existing_tag(t) for t in s] for s in tokens]
            chunk_tags = self._ask(
                "chunks",
                "chunk",
                "chunks",
                sentences=[[word(w) for w in s] for s in words],
                tags=[[t or "UNK" for t in s] for s in tags],
            )
            for sentence_tokens, bio in zip(tokens, chunk_tags, strict=True):
                for first, end, label in chunk_spans(bio):
                    new.append(
                        make_chunk(
                            begin=sentence_tokens[first].begin,
                            end=sentence_tokens[end - 1].end,
                            chunkValue=label,
                        )
                    )
        if "constituents" in layers:
            for aligned, piece_tokens in zip(trees, parsed, strict=True):
                if aligned is not None:
                    build_constituents(aligned, piece_tokens, types, new)
        add_annotations(view, new)

    def _parse_pieces(self, view: cassis.Cas, tokens: Sequence[Sequence[Any]]) -> list[Span3]:
        """``(sentence, first, end)`` token ranges the parser gets: each sentence whole, or
        in pieces of ``max_parse_words`` when it is longer (with a warning)."""
        most = self.config.max_parse_words
        pieces: list[Span3] = []
        for i, sentence in enumerate(tokens):
            if len(sentence) > most:
                warnings.warn(
                    long_sentence_warning(
                        view,
                        (sentence[0].begin, sentence[-1].end),
                        len(sentence),
                        "max_parse_words",
                        most,
                        "tree",
                    ),
                    stacklevel=3,
                )
            pieces += [
                (i, lo, min(lo + most, len(sentence))) for lo in range(0, len(sentence), most)
            ]
        return pieces


def _aligned(answer: str, tokens: Sequence[Any], words: Sequence[str], number: int) -> AlignedTree:
    tree = indexed_tree(answer, len(tokens))
    leaves = list(tree.preterminals())
    spans = [(t.begin, t.end) for t in tokens]
    for leaf, text in zip(leaves, words, strict=True):
        leaf.word = parser_word(text)
    # A sentence's ROOT spans its tokens; TOP is OpenNLP's name for the outer bracket,
    # written "( (S ...) )" as every parser's tree in the chain (Stanza's too), so that
    # eval.constituents.v1 counts its outer bracket as it counts gold's: written
    # "(TOP ...)", it was scored as a tree without one (F 76.10 against 78.29).
    if tree.label in ("TOP", "ROOT"):
        tree = Tree("", tree.children)
    return AlignedTree(number, 0, format_tree(tree), tree, leaves, spans, [False] * len(spans))


def _existing_tag(token: Any) -> str:
    pos = token.pos
    return (pos.PosValue or "") if pos is not None else ""


def _missing_message(layers: Sequence[str]) -> str:
    return (
        f"no OpenNLP model for layer(s) {', '.join(layers)}: give model (a folder from "
        "casflow train) or the layer's *_model file"
    )
