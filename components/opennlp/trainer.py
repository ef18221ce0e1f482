"""``train.opennlp.v1``: OpenNLP models (sentence detector, tokenizer, POS tagger,
chunker, chunking parser) from gold CAS views.

casflow writes each chosen layer in OpenNLP's own training format from the gold views
(see :func:`training_files`) and OpenNLP's trainers run in the worker's one JVM
(:mod:`casflow.components.opennlp.server`): ``SentenceDetectorME.train``,
``TokenizerME.train``, ``POSTaggerME.train``, ``ChunkerME.train`` and the chunking
``Parser.train`` with the English head rules of :mod:`casflow.components.opennlp.head_rules`.
The model folder holds one file per layer under the names ``opennlp.pipeline.v1``
looks for (``model: <folder>``). Each layer's model is reused when its settings, seed
and data are unchanged, so a later run that adds a layer (the parser) trains only that.

Formats (one file per layer, UTF-8):

- sentences: one sentence per line (its text, whitespace runs as one space), an
  empty line between documents;
- tokens: one sentence per line, tokens apart where the text has whitespace and
  joined by ``<SPLIT>`` where it has none;
- pos: one sentence per line of ``word_TAG``;
- chunks: ``word TAG B-NP`` lines, an empty line after each sentence; the chunks are
  the view's DKPro ``Chunk`` annotations, or with ``chunks_from: trees`` the base
  phrases of the gold trees (a phrase whose children are all words; CRAFT has trees
  but no chunks);
- constituents: one Penn tree per line under ``(TOP ...)``, empty elements removed,
  labels without function tags or indices, words as :func:`~.model.parser_word`.

Scores (percentages, casflow's metrics): sentence and token F from raw text (one
structure block at a time, as ``opennlp.pipeline.v1`` runs); POS accuracy, chunk F
and PARSEVAL F (Collins settings) on the gold sentences and tokens. The parser gets
the words as ``opennlp.pipeline.v1`` gives them (:func:`~.model.parser_words`:
brackets raw), and its trees are scored without the outer bracket (the gold line's
``TOP`` is deleted): ``eval.constituents.v1`` with ``outer_bracket: drop``.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import cassis
from pydantic import Field

from casflow.components.evaluators.adapters import constituent_trees
from casflow.components.formats.penn.parse import (
    Tree,
    category,
    parse_tree,
    prune,
    training_line,
)
from casflow.components.metrics.parseval import parseval_counts, score_parseval
from casflow.components.metrics.pos import TaggedToken, pos_counts, score_pos
from casflow.components.metrics.segmentation import score_segmentation, segmentation_counts
from casflow.components.opennlp.head_rules import head_rules_text
from casflow.components.opennlp.model import (
    MODEL_FILES,
    TOOL_NAMES,
    chunk_spans,
    chunk_tags,
    indexed_tree,
    parser_word,
    parser_words,
    word,
)
from casflow.components.opennlp.server import (
    OpenNlpError,
    OpenNlpServer,
    opennlp_problem,
    release,
    shared_server,
    to_code_points,
)
from casflow.components.rules.sentences import structure_breaks, text_blocks
from casflow.pipeline.component import ComponentConfig, RunContext, Trainer, TrainingContext
from casflow.pipeline.counts import Counts, add_counts
from casflow.pipeline.fingerprints import fingerprint, forget, mark_done, step_status
from casflow.pipeline.training import TrainingDataError
from casflow.typesystem import (
    BLOCK_STRUCTURE_TYPES,
    CHUNK,
    CONSTITUENT,
    POS,
    SENTENCE,
    TOKEN,
)

Span = tuple[int, int]
#: What OpenNLP's "Training data must contain more than one outcome" means for a layer's
#: training file: all its events share one label.
ONE_OUTCOME = {
    "sentences": "each '.', '?' or '!' in the text ends a sentence, or none does; the "
    "detector also needs ones inside sentences, as after abbreviations",
    "tokens": "no token touches another without whitespace between them, or all do; the "
    "tokenizer learns where to split inside whitespace-free strings such as 'IL-2'",
    "pos": "every token has the same POS tag",
    "chunks": "every token has the same chunk tag",
}
_SPACES = re.compile(r"\s+")
_LAYER_ORDER = ("sentences", "tokens", "pos", "chunks", "constituents")


@dataclass
class OpenNlpExample:
    """One gold document in the shapes OpenNLP's formats and casflow's metrics need."""

    doc_id: str
    text: str
    breaks: list[int]
    sentences: list[Span]
    tokens: list[list[Span]]  # per sentence
    tags: list[list[str]] = field(default_factory=list)  # per sentence, when learned
    chunks: list[list[tuple[int, int, str]]] = field(default_factory=list)
    trees: list[str] = field(default_factory=list)  # (TOP ...) lines, parser words
    # each tree's words as the text has them (what the parser gets when it is scored)
    tree_words: list[list[str]] = field(default_factory=list)


class OpenNlpTrainerConfig(ComponentConfig):
    language: str = Field("en", description="Language code stored in the models.")
    algorithm: Literal["MAXENT", "PERCEPTRON"] = Field(
        "MAXENT", description="OpenNLP's learner for every model (its Algorithm parameter)."
    )
    iterations: int = Field(100, ge=1, description="Training iterations (OpenNLP's default 100).")
    cutoff: int = Field(
        5, ge=0, description="Features seen fewer times are dropped (OpenNLP's default 5)."
    )
    parser_iterations: int | None = Field(
        None, ge=1, description="Iterations of the parser's four models; none: iterations."
    )
    parser_cutoff: int | None = Field(
        None, ge=0, description="Cutoff of the parser's models and dictionary; none: cutoff."
    )
    chunks_from: Literal["chunks", "trees"] = Field(
        "chunks",
        description="Gold chunks: the view's Chunk annotations, or the base phrases of its "
        "constituent trees.",
    )
    beam_size: int = Field(20, ge=1, description="Parser beam when the model is scored.")


class OpenNlpTrainer(Trainer[OpenNlpTrainerConfig]):
    name = "train.opennlp.v1"
    description = (
        "Apache OpenNLP sentence detector, tokenizer, POS tagger, chunker and chunking parser "
        "trained by OpenNLP from gold views written in its training formats."
    )
    layers: ClassVar[dict[str, tuple[str, ...]]] = {
        "sentences": (SENTENCE,),
        "tokens": (SENTENCE, TOKEN),
        "pos": (SENTENCE, TOKEN, POS),
        "chunks": (SENTENCE, TOKEN, POS),
        "constituents": (TOKEN, POS, CONSTITUENT),
    }

    def __init__(self, config: OpenNlpTrainerConfig, context: TrainingContext) -> None:
        super().__init__(config, context)
        self.seed = context.seed
        self.chosen = tuple(
            layer for layer in _LAYER_ORDER if layer in (context.layers or self.layers)
        )

    @classmethod
    def layer_requirements(cls, config: OpenNlpTrainerConfig, layer: str) -> tuple[str, ...]:
        needed = super().layer_requirements(config, layer)
        if layer == "chunks":
            # the gold chunks are the view's Chunk annotations or its trees' base phrases
            needed += (CHUNK,) if config.chunks_from == "chunks" else (CONSTITUENT,)
        return needed

    @classmethod
    def check_config(cls, config: OpenNlpTrainerConfig, context: RunContext) -> list[str]:
        problem = opennlp_problem()
        return [f"{cls.name}: {problem}"] if problem else []

    # -- gold data ----------------------------------------------------------------------------

    def example(self, view: cassis.Cas, doc_id: str) -> OpenNlpExample:
        text = view.sofa_string or ""
        sentences = sorted((s.begin, s.end) for s in view.select(SENTENCE) if s.end > s.begin)
        tokens_by_sentence: list[list[Any]] = [[] for _ in sentences]
        starts = [b for b, _ in sentences]
        for token in sorted(view.select(TOKEN), key=lambda t: (t.begin, t.end)):
            i = bisect.bisect_right(starts, token.begin) - 1
            if token.end > token.begin and i >= 0 and token.begin < sentences[i][1]:
                tokens_by_sentence[i].append(token)
        example = OpenNlpExample(
            doc_id,
            text,
            structure_breaks(view, BLOCK_STRUCTURE_TYPES),
            sentences,
            [[(t.begin, t.end) for t in s] for s in tokens_by_sentence],
        )
        if {"pos", "chunks"} & set(self.chosen):
            example.tags = [[_tag(t, doc_id) for t in s] for s in tokens_by_sentence]
        if "chunks" in self.chosen:
            example.chunks = self._gold_chunks(view, doc_id, tokens_by_sentence)
        if "constituents" in self.chosen:
            for _, tree in constituent_trees(view):
                line = _top(tree)
                if line:
                    example.trees.append(line)
                    example.tree_words.append(_words(tree))
            if not example.trees and text.strip():
                raise ValueError(f"document {doc_id}: the gold view has no constituent trees")
        return example

    def _gold_chunks(
        self, view: cassis.Cas, doc_id: str, tokens: Sequence[Sequence[Any]]
    ) -> list[list[tuple[int, int, str]]]:
        if self.config.chunks_from == "trees":
            token_spans = sorted((t.begin, t.end) for t in view.select(TOKEN) if t.end > t.begin)
            starts = [b for b, _ in token_spans]
            spans = []
            for (begin, end), tree in constituent_trees(view):
                first = bisect.bisect_left(starts, begin)
                last = bisect.bisect_left(starts, end)
                spans += _base_phrases(tree, token_spans[first:last])
        else:
            spans = [(c.begin, c.end, c.chunkValue or "") for c in view.select(CHUNK)]
            if not spans and (view.sofa_string or "").strip():
                raise ValueError(
                    f"document {doc_id}: the gold view has no Chunk annotations; give the "
                    "reader's chunk layer, or set chunks_from: trees to take base phrases"
                )
        result = []
        for sentence_tokens in tokens:
            index = {t.begin: i for i, t in enumerate(sentence_tokens)}
            ends = {t.end: i for i, t in enumerate(sentence_tokens)}
            result.append(
                [
                    (index[b], ends[e] + 1, label)
                    for b, e, label in spans
                    if b in index and e in ends and ends[e] >= index[b]
                ]
            )
        return result

    # -- training -----------------------------------------------------------------------------

    def train(
        self,
        train: Sequence[OpenNlpExample],
        dev: Sequence[OpenNlpExample],
        output_dir: Path,
        log: Callable[[str], None],
    ) -> Path:
        output_dir = Path(output_dir)
        data = output_dir / "data"
        data.mkdir(parents=True, exist_ok=True)
        files = training_files(train, self.chosen, data)
        rules = data / "en_head_rules"
        rules.write_text(head_rules_text(), encoding="utf-8")
        model = output_dir / "model"
        model.mkdir(parents=True, exist_ok=True)
        for layer, name in MODEL_FILES.items():
            if layer not in self.chosen:
                # a model of a layer not learned now is not part of this model folder
                (model / name).unlink(missing_ok=True)
                forget(output_dir / f"done-{layer}.json")
        server = shared_server()
        try:
            for layer in self.chosen:
                self._train_layer(server, layer, files[layer], rules, model, output_dir, log)
        finally:
            release(server)
        return model

    def _train_layer(
        self,
        server: OpenNlpServer,
        layer: str,
        data: Path,
        rules: Path,
        model: Path,
        output_dir: Path,
        log: Callable[[str], None],
    ) -> None:
        """Train one layer's model, or reuse it when its settings and data are unchanged
        (each layer on its own: adding the parser later retrains nothing else)."""
        target = model / MODEL_FILES[layer]
        marker = output_dir / f"done-{layer}.json"
        key = fingerprint(
            self.config.language,
            self._params(layer),
            self.seed,
            files=[data, rules] if layer == "constituents" else [data],
        )
        status = step_status(marker, key, target)
        if status == "done":
            log(f"OpenNLP {layer} model already trained with these settings and data; reused")
            return
        if status == "changed":
            log(
                f"OpenNLP {layer} model: the settings or data changed since it was trained, "
                f"or {target} is not the file trained (damaged or replaced); training it again"
            )
        forget(marker)
        # the server writes NAME.partial and renames it: one left by a killed run goes
        partial = target.with_name(target.name + ".partial")
        partial.unlink(missing_ok=True)
        log(f"OpenNLP: training the {layer} model on {data}")
        try:
            server.request(
                "train",
                kind=layer,
                data=str(data.resolve()),
                output=str(target.resolve()),
                language=self.config.language,
                params=self._params(layer),
                head_rules=str(rules.resolve()),
            )
        except OpenNlpError as exc:
            partial.unlink(missing_ok=True)
            params = self._params(layer)
            settings = ", ".join(f"{k} {params[k]}" for k in ("Algorithm", "Iterations", "Cutoff"))
            if "more than one outcome" in str(exc):
                # every event has the same label: no cutoff helps, only other data
                advice = (
                    f"Every decision the {TOOL_NAMES[layer]} learns has the same answer in "
                    f"this data ({ONE_OUTCOME.get(layer, 'one label only')}): give training "
                    "documents with both kinds"
                )
            elif "InsufficientTrainingData" in str(exc):
                # OpenNLP's words for a cutoff that leaves no feature, or too little data
                advice = (
                    "Its settings leave nothing to learn from this data: lower cutoff (or "
                    "parser_cutoff), or give more training documents"
                )
            else:
                advice = "Check the training data and the settings"
            raise TrainingDataError(
                f"OpenNLP could not train the {TOOL_NAMES[layer]} model ({layer}) from "
                f"{data}: {str(exc).rstrip('.')}. {advice} (the settings of {self.name}, "
                f"as OpenNLP's parameters: {settings})"
            ) from exc
        log(f"OpenNLP {layer} model: {target} ({target.stat().st_size / 1e6:.1f} MB)")
        mark_done(marker, key, outputs=[target])

    def _params(self, layer: str) -> dict[str, str]:
        base = {
            "Algorithm": self.config.algorithm,
            "Iterations": str(self.config.iterations),
            "Cutoff": str(self.config.cutoff),
            "Threads": "1",
        }
        if layer != "constituents":
            return base
        if self.config.parser_iterations is not None:
            base["Iterations"] = str(self.config.parser_iterations)
        if self.config.parser_cutoff is not None:
            base["Cutoff"] = str(self.config.parser_cutoff)
        # The chunking parser trains four models, each reading its own namespace, and
        # builds its word dictionary with the "dict" cutoff.
        params = dict(base)
        for namespace in ("build", "check", "tagger", "chunker"):
            params.update({f"{namespace}.{k}": v for k, v in base.items()})
        params["dict.Cutoff"] = base["Cutoff"]
        return params

    # -- scoring ------------------------------------------------------------------------------

    def evaluate(self, model_dir: Path, examples: Sequence[OpenNlpExample]) -> dict[str, float]:
        server = shared_server()
        try:
            return _evaluate(server, Path(model_dir), examples, self.chosen, self.config)
        finally:
            release(server)

    def describe(self) -> str:
        return (
            "Apache OpenNLP 2 (Debian package opennlp) models trained by OpenNLP's own "
            f"trainers ({self.config.algorithm}, {self.config.iterations} iterations, cutoff "
            f"{self.config.cutoff}) from the gold views written in OpenNLP's training formats; "
            "the parser is OpenNLP's chunking parser with casflow's English head rules (Collins "
            "1999). Scores: sentence and token F from raw text; POS accuracy, chunk F and "
            "PARSEVAL F (Collins settings, the outer bracket not counted: "
            "eval.constituents.v1 with outer_bracket: drop) on the gold sentences and "
            "tokens, the parser given the words as opennlp.pipeline.v1 gives them."
        )


def _tag(token: Any, doc_id: str) -> str:
    pos = token.pos
    tag = pos.PosValue if pos is not None else None
    if not tag:
        raise ValueError(
            f"document {doc_id}: token at ({token.begin}, {token.end}) has no POS tag; give "
            "the gold reader its pos layer"
        )
    return str(tag)


def _top(tree: Tree) -> str | None:
    """A gold tree as an OpenNLP training line: ``(TOP ...)``, see the module docstring."""
    return training_line(tree, "TOP", parser_word)


def _words(tree: Tree) -> list[str]:
    """The words of a gold tree's training line (:func:`_top`) as the text has them."""
    pruned = prune(tree, {"-NONE-"})
    return [] if pruned is None else [leaf.word or "" for leaf in pruned.preterminals()]


def _base_phrases(tree: Tree, tokens: Sequence[Span]) -> list[tuple[int, int, str]]:
    """Character spans of the phrases whose children are all words (chunks from trees);
    ``tokens`` are the spans of the tree's words (empty elements aside), in order."""
    pruned = prune(tree, {"-NONE-"})
    if pruned is None:
        return []
    leaves = list(pruned.preterminals())
    if len(leaves) != len(tokens):
        return []
    spans = {id(leaf): span for leaf, span in zip(leaves, tokens, strict=True)}
    result = []
    for node in pruned.subtrees():
        if node.word is None and node.children and all(c.word is not None for c in node.children):
            label = category(node.label)
            if label and label not in ("TOP", "ROOT"):
                result.append(
                    (spans[id(node.children[0])][0], spans[id(node.children[-1])][1], label)
                )
    return result


def training_files(
    examples: Sequence[OpenNlpExample], layers: Sequence[str], folder: Path
) -> dict[str, Path]:
    """Write one OpenNLP training file per layer (formats in the module docstring)."""
    writers = {
        "sentences": _sentence_lines,
        "tokens": _token_lines,
        "pos": _pos_lines,
        "chunks": _chunk_lines,
        "constituents": lambda e: [*e.trees],
    }
    files = {}
    for layer in layers:
        lines: list[str] = []
        for example in examples:
            lines.extend(writers[layer](example))
            if layer == "sentences":
                lines.append("")  # a document boundary
        path = folder / f"{layer}.train"
        path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
        files[layer] = path
    return files


def _sentence_lines(example: OpenNlpExample) -> list[str]:
    return [
        line for b, e in example.sentences if (line := _SPACES.sub(" ", example.text[b:e]).strip())
    ]


def _token_lines(example: OpenNlpExample) -> list[str]:
    lines = []
    text = example.text
    for spans in example.tokens:
        if not spans:
            continue
        pieces = [word(text[spans[0][0] : spans[0][1]])]
        for (_, previous_end), (b, e) in zip(spans, spans[1:], strict=False):
            between = text[previous_end:b]
            # Characters between two tokens that are no token's are left out.
            pieces.append(" " if any(c.isspace() for c in between) else "<SPLIT>")
            pieces.append(word(text[b:e]))
        lines.append("".join(pieces))
    return lines


def _pos_lines(example: OpenNlpExample) -> list[str]:
    text = example.text
    return [
        " ".join(f"{word(text[b:e])}_{tag}" for (b, e), tag in zip(spans, tags, strict=True))
        for spans, tags in zip(example.tokens, example.tags, strict=True)
        if spans
    ]


def _chunk_lines(example: OpenNlpExample) -> list[str]:
    text = example.text
    lines = []
    for spans, tags, chunks in zip(example.tokens, example.tags, example.chunks, strict=True):
        if not spans:
            continue
        bio = chunk_tags(len(spans), chunks)
        lines += [
            f"{word(text[b:e])} {tag} {c}" for (b, e), tag, c in zip(spans, tags, bio, strict=True)
        ]
        lines.append("")
    return lines


def _evaluate(
    server: OpenNlpServer,
    model_dir: Path,
    examples: Sequence[OpenNlpExample],
    chosen: Sequence[str],
    config: OpenNlpTrainerConfig,
) -> dict[str, float]:
    keys = {layer: server.load(layer, model_dir / MODEL_FILES[layer]) for layer in chosen}
    counts: Counts = {}
    chunk_tp = chunk_fp = chunk_fn = 0
    for example in examples:
        text = example.text
        gold_tokens = [span for spans in example.tokens for span in spans]
        if {"sentences", "tokens"} & set(chosen):
            if "sentences" in chosen:
                blocks = [(b, e) for b, e in text_blocks(text, example.breaks) if text[b:e].strip()]
                found = server.request(
                    "sentences", model=keys["sentences"], texts=[text[b:e] for b, e in blocks]
                )["spans"]
                sentences = [
                    (start + b, start + e)
                    for (start, end), spans in zip(blocks, found, strict=True)
                    for b, e in to_code_points(text[start:end], spans)
                ]
            else:
                sentences = list(example.sentences)
            if "tokens" in chosen:
                found = server.request(
                    "tokens", model=keys["tokens"], texts=[text[b:e] for b, e in sentences]
                )["spans"]
                tokens = [
                    (start + b, start + e)
                    for (start, end), spans in zip(sentences, found, strict=True)
                    for b, e in to_code_points(text[start:end], spans)
                    if e > b
                ]
            else:
                tokens = gold_tokens
            add_counts(
                counts,
                segmentation_counts(text, example.sentences, sentences, gold_tokens, tokens).counts,
            )
        words = [[word(text[b:e]) for b, e in spans] for spans in example.tokens if spans]
        if "pos" in chosen:
            tags = server.request("pos", model=keys["pos"], sentences=words)["tags"]
            add_counts(
                counts,
                pos_counts(
                    [
                        TaggedToken(b, e, t)
                        for spans, gold in zip(example.tokens, example.tags, strict=True)
                        for (b, e), t in zip(spans, gold, strict=True)
                    ],
                    [
                        TaggedToken(b, e, t)
                        for spans, system in zip(
                            [s for s in example.tokens if s], tags, strict=True
                        )
                        for (b, e), t in zip(spans, system, strict=True)
                    ],
                ).counts,
            )
        if "chunks" in chosen:
            kept = [i for i, spans in enumerate(example.tokens) if spans]
            system = server.request(
                "chunk",
                model=keys["chunks"],
                sentences=words,
                tags=[example.tags[i] for i in kept],
            )["chunks"]
            for i, bio in zip(kept, system, strict=True):
                gold_set = set(example.chunks[i])
                system_set = set(chunk_spans(bio))
                chunk_tp += len(gold_set & system_set)
                chunk_fp += len(system_set - gold_set)
                chunk_fn += len(gold_set - system_set)
        if "constituents" in chosen:
            gold_trees = [parse_tree(line) for line in example.trees]
            answers = server.request(
                "parse",
                model=keys["constituents"],
                # the words as opennlp.pipeline.v1 gives them (brackets raw), so the
                # score is the component's, not that of a parser given -LRB-
                sentences=[parser_words(words) for words in example.tree_words],
                beam=config.beam_size,
            )["trees"]
            for gold, answer in zip(gold_trees, answers, strict=True):
                leaves = [leaf.word or "" for leaf in gold.preterminals()]
                test = None
                if answer is not None:
                    test = indexed_tree(answer, len(leaves))
                    for leaf, w in zip(test.preterminals(), leaves, strict=True):
                        leaf.word = w
                # (TOP ...): TOP is deleted (COLLINS.prm), so the outer bracket is not
                # counted, as eval.constituents.v1 with outer_bracket: drop
                add_counts(counts, parseval_counts(gold, test))
    scores: dict[str, float] = {}
    segmentation = score_segmentation(counts)
    if "sentences" in chosen and "sentence" in segmentation:
        scores["sentences_f"] = segmentation["sentence"]["f1"]
    if "tokens" in chosen and "token" in segmentation:
        scores["tokens_f"] = segmentation["token"]["f1"]
    if "pos/aligned" in counts:
        scores["pos"] = score_pos(counts)["accuracy"]
    if "chunks" in chosen:
        precision = chunk_tp / (chunk_tp + chunk_fp) if chunk_tp + chunk_fp else 0.0
        recall = chunk_tp / (chunk_tp + chunk_fn) if chunk_tp + chunk_fn else 0.0
        scores["chunks_f"] = (
            2 * precision * recall / (precision + recall) if precision + recall else 0.0
        )
    if "constituents" in chosen:
        parseval = score_parseval(counts)
        scores["parseval_f"] = parseval["f1"]
        scores["parser_pos"] = parseval["tagging_accuracy"]
    return {k: round(100 * float(v), 2) for k, v in scores.items()}
