"""``train.udpipe.v1``: a UDPipe 1 model (tokenizer, tagger, parser) from gold CAS views.

Each gold view is written as CoNLL-U by casflow's own CoNLL-U code (what
``conllu.writer.v1`` writes: FORM, LEMMA, UPOS, XPOS, HEAD, DEPREL and
``SpaceAfter=No``, from which UDPipe's tokenizer learns where tokens and
sentences end), and UDPipe's ``Trainer`` trains the chosen parts in-process
(``morphodita_parsito``). The development documents are UDPipe's heldout data
(``heldout: true``), which its tagger and parser use to keep the best iteration.
Training is deterministic for a seed (UDPipe's ``seed`` option of each part is
set from it). A finished model is reused when the settings, seed and data are
unchanged. The model is scored from raw text, one structure block at a time as
``udpipe.v1`` runs it, with casflow's evaluators; a model without a tokenizer (layers
without tokens and sentences) tags and parses the gold sentences and tokens, as
``udpipe.v1`` runs it over another tool's (``use_existing_tokens`` and
``use_existing_sentences``).
"""

from __future__ import annotations

import difflib
import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import cassis
from pydantic import Field

from casflow.components.formats.conllu.parse import format_conllu
from casflow.components.formats.conllu.writer import view_sentences
from casflow.components.metrics.dependency import (
    DepWord,
    dependency_counts,
    full_deprel,
    score_dependencies,
)
from casflow.components.metrics.pos import TaggedToken, pos_counts, score_pos
from casflow.components.metrics.segmentation import score_segmentation, segmentation_counts
from casflow.components.rules.sentences import structure_breaks, text_blocks
from casflow.components.spacy.gold import GoldSyntaxDocument
from casflow.components.spacy.gold_cas import gold_syntax_from_view
from casflow.components.udpipe.model import (
    MODEL_FILE,
    UdpipeModel,
    Word,
    udpipe_missing,
    udpipe_module,
    words_at,
)
from casflow.pipeline.component import ComponentConfig, RunContext, Trainer, TrainingContext
from casflow.pipeline.counts import Counts, add_counts
from casflow.pipeline.fingerprints import fingerprint, forget, mark_done, step_status
from casflow.pipeline.training import TrainingDataError
from casflow.typesystem import BLOCK_STRUCTURE_TYPES, DEPENDENCY, LEMMA, POS, SENTENCE, TOKEN

METHOD = "morphodita_parsito"
#: The columns casflow's CAS does not keep are neither used nor predicted.
TAGGER_COLUMNS = "use_feats=0;provide_feats=0"


@dataclass
class UdpipeExample:
    """One gold document: its syntax for scoring, its CoNLL-U for UDPipe (picklable)."""

    gold: GoldSyntaxDocument
    conllu: str
    breaks: list[int] = field(default_factory=list)


class UdpipeTrainerConfig(ComponentConfig):
    tokenizer: str = Field(
        "epochs=20;dimension=24;batch_size=50;learning_rate=0.005;dropout=0.1",
        description="UDPipe tokenizer options (name=value;...), used when the layers include "
        "tokens or sentences.",
    )
    tagger: str = Field(
        "iterations=20;guesser_suffix_rules=8",
        description="UDPipe tagger options, used for the pos and lemma layers (FEATS are "
        "never used).",
    )
    parser: str = Field(
        "iterations=10;hidden_layer=200;embedding_form=50;embedding_lemma=0;embedding_feats=0",
        description="UDPipe parser options, used for the dependencies layer.",
    )
    heldout: bool = Field(
        True, description="Give the development documents to UDPipe as heldout data."
    )


class UdpipeTrainer(Trainer[UdpipeTrainerConfig]):
    name = "train.udpipe.v1"
    description = (
        "UDPipe 1 tokenizer, tagger (XPOS, UPOS, lemma) and parser trained in-process from "
        "gold views written as CoNLL-U."
    )
    libraries = ("ufal.udpipe",)
    layers: ClassVar[dict[str, tuple[str, ...]]] = {
        "tokens": (TOKEN,),
        "sentences": (SENTENCE,),
        "pos": (TOKEN, POS),
        "lemma": (TOKEN, LEMMA),
        "dependencies": (TOKEN, DEPENDENCY),
    }

    def __init__(self, config: UdpipeTrainerConfig, context: TrainingContext) -> None:
        super().__init__(config, context)
        self.seed = context.seed
        self.chosen = tuple(context.layers or self.layers)

    @classmethod
    def check_layers(cls, config: UdpipeTrainerConfig, layers: Sequence[str]) -> list[str]:
        problems = []
        if "dependencies" in layers and "pos" not in layers:
            problems.append("the UDPipe parser uses the tagger's tags: learn pos too")
        if ("tokens" in layers) != ("sentences" in layers):
            problems.append("UDPipe's tokenizer learns tokens and sentences together: learn both")
        return problems

    @classmethod
    def check_config(cls, config: UdpipeTrainerConfig, context: RunContext) -> list[str]:
        problem = udpipe_missing()
        problems = [problem] if problem else []
        # UDPipe ignores an option it does not know and crashes on some values (a batch
        # of 0 kills the process): both are refused before any document is read.
        for part in ("tokenizer", "tagger", "parser"):
            problems += option_problems(part, getattr(config, part))
        return [f"{cls.name}: {p}" for p in problems]

    def example(self, view: cassis.Cas, doc_id: str) -> UdpipeExample:
        gold = gold_syntax_from_view(
            view, doc_id, pos="pos" in self.chosen, dependencies="dependencies" in self.chosen
        )
        sentences = view_sentences(view, doc_id)
        if sentences:
            # Document and paragraph starts tell UDPipe's tokenizer where a text begins.
            sentences[0].comments[:0] = [f"# newdoc id = {doc_id}", "# newpar"]
        return UdpipeExample(
            gold, format_conllu(sentences), structure_breaks(view, BLOCK_STRUCTURE_TYPES)
        )

    def _options(self) -> tuple[str, str, str]:
        seed = f"seed={self.seed}"
        chosen = set(self.chosen)
        tokenizer = (
            _join(self.config.tokenizer, seed) if {"tokens", "sentences"} & chosen else "none"
        )
        if {"pos", "lemma"} & chosen:
            columns = [TAGGER_COLUMNS]
            if "lemma" not in chosen:
                columns.append("use_lemma=0;provide_lemma=0")
            tagger = _join(self.config.tagger, *columns)
        else:
            tagger = "none"
        parser = _join(self.config.parser, seed) if "dependencies" in chosen else "none"
        return tokenizer, tagger, parser

    def train(
        self,
        train: Sequence[UdpipeExample],
        dev: Sequence[UdpipeExample],
        output_dir: Path,
        log: Callable[[str], None],
    ) -> Path:
        udpipe = udpipe_module()
        output_dir = Path(output_dir)
        data = output_dir / "data"
        data.mkdir(parents=True, exist_ok=True)
        train_file = data / "train.conllu"
        dev_file = data / "dev.conllu"
        heldout = dev if self.config.heldout else []
        train_text, replaced = storable_lemmas(
            "".join(e.conllu for e in train), keep="lemma" in self.chosen
        )
        dev_text, _ = storable_lemmas(
            "".join(e.conllu for e in heldout), keep="lemma" in self.chosen
        )
        if replaced:
            log(
                f"UDPipe: {len(replaced)} lemmas stand for more than {MAX_FORMS_PER_LEMMA} "
                f"forms, which UDPipe's dictionary cannot store ({', '.join(replaced[:5])}); "
                "those words are trained with their form as lemma"
            )
        train_file.write_text(train_text, encoding="utf-8")
        dev_file.write_text(dev_text, encoding="utf-8")
        options = self._options()
        model = output_dir / "model"
        marker = output_dir / "done.json"
        key = fingerprint(
            self.config.model_dump(mode="json"),
            list(options),
            self.seed,
            files=[train_file, dev_file],
        )
        status = step_status(marker, key, model / MODEL_FILE)
        if status == "done":
            log(f"UDPipe model already trained with these settings and data ({model}); reused")
            return model
        if status == "changed":
            log(
                "UDPipe model: the settings or data changed since it was trained, or "
                f"{model / MODEL_FILE} is not the file trained (damaged or replaced); "
                "training it again"
            )
        forget(marker)
        train_sentences = _read_conllu(udpipe, train_file)
        dev_sentences = _read_conllu(udpipe, dev_file)
        log(
            f"UDPipe: training on {len(train_sentences)} sentences "
            f"({len(dev_sentences)} heldout); tokenizer: {options[0]}; tagger: {options[1]}; "
            f"parser: {options[2]} (UDPipe reports its progress on stderr)"
        )
        error = udpipe.ProcessingError()
        trained = udpipe.Trainer.train(METHOD, train_sentences, dev_sentences, *options, error)
        if error.occurred() or not trained:
            raise TrainingDataError(
                f"UDPipe training failed: {error.message.strip()}. Check the data and the "
                f"tokenizer, tagger and parser options of {self.name} (tokenizer: "
                f"{options[0]}; tagger: {options[1]}; parser: {options[2]})"
            )
        if model.exists():
            shutil.rmtree(model)
        model.mkdir(parents=True)
        (model / MODEL_FILE).write_bytes(trained)
        mark_done(marker, key, outputs=[model / MODEL_FILE])
        log(f"UDPipe model: {model / MODEL_FILE} ({len(trained) / 1e6:.1f} MB)")
        return model

    def evaluate(self, model_dir: Path, examples: Sequence[UdpipeExample]) -> dict[str, float]:
        model = UdpipeModel(Path(model_dir) / MODEL_FILE)
        chosen = set(self.chosen)
        # check_layers: tokens and sentences are learned together or not at all
        segments = "tokens" in chosen
        counts: Counts = {}
        for example in examples:
            gold = example.gold
            text = gold.text
            if segments:
                sentences = _tokenized(model, text, example.breaks)
            else:
                # A model without a tokenizer tags and parses another tool's tokens
                # (udpipe.v1 with use_existing_tokens and use_existing_sentences): the gold.
                sentences = [
                    words_at(text, gold.tokens[first:end])
                    for first, end in gold.sentence_token_ranges()
                ]
            words = [
                model.analyse(
                    given,
                    tag=bool({"pos", "lemma"} & chosen),
                    parse="dependencies" in chosen,
                )
                for given in sentences
            ]
            if segments:
                add_counts(
                    counts,
                    segmentation_counts(
                        text,
                        gold.sentences,
                        [(s[0].begin, s[-1].end) for s in sentences],
                        gold.tokens,
                        [(w.begin, w.end) for s in sentences for w in s],
                    ).counts,
                )
            if "pos" in chosen:
                add_counts(
                    counts,
                    pos_counts(
                        [
                            TaggedToken(b, e, t)
                            for (b, e), t in zip(gold.tokens, gold.tags, strict=True)
                        ],
                        [TaggedToken(w.begin, w.end, w.xpos) for s in words for w in s],
                    ).counts,
                )
            if "dependencies" in chosen:
                from casflow.components.spacy.evaluate_syntax import gold_dependencies

                system = [
                    [
                        DepWord(
                            w.begin,
                            w.end,
                            None if w.head is None else (s[w.head].begin, s[w.head].end),
                            w.deprel,
                            xpos=w.xpos,
                        )
                        for w in s
                    ]
                    for s in words
                ]
                add_counts(
                    counts,
                    dependency_counts(
                        gold_dependencies(gold), system, label_key=full_deprel
                    ).counts,
                )
        scores: dict[str, float] = {}
        segmentation = score_segmentation(counts)
        for key, name in (("token", "tokens_f"), ("sentence", "sentences_f")):
            if key in segmentation:
                scores[name] = segmentation[key]["f1"]
        if "pos/aligned" in counts:
            scores["xpos"] = score_pos(counts)["accuracy"]
        if "uas/gold" in counts:
            dependencies = score_dependencies(counts)
            scores["uas"] = dependencies["uas"]["f1"]
            scores["las"] = dependencies["las"]["f1"]
        return {k: round(100 * float(v), 2) for k, v in scores.items()}

    def describe(self) -> str:
        scored = (
            "from raw text: token and sentence F, XPOS"
            if "tokens" in self.chosen
            else "on the gold sentences and tokens (the model has no tokenizer): XPOS"
        )
        return (
            "UDPipe 1 (morphodita_parsito): a GRU tokenizer and sentence splitter, a "
            "MorphoDiTa averaged-perceptron tagger (XPOS, UPOS, lemma) and a Parsito "
            "transition-based neural parser, trained in-process from the gold views written "
            "as CoNLL-U; the options are UDPipe's own (see its training manual). Scores are "
            f"casflow's evaluators on whole texts {scored} accuracy, UAS and LAS (CoNLL "
            "2018 alignment, full labels)."
        )


def _tokenized(model: UdpipeModel, text: str, breaks: Sequence[int]) -> list[list[Word]]:
    """Sentences as words from the model's tokenizer, one structure block at a time, as
    udpipe.v1 runs it (a model trained here has no multiword tokens: the gold views it
    learns from have a Token per word)."""
    sentences: list[list[Word]] = []
    for start, end in text_blocks(text, breaks):
        if text[start:end].strip():
            sentences += [
                [word.moved(start) for word in words] for words in model.tokenize(text[start:end])
            ]
    return sentences


#: UDPipe's tagger dictionary (MorphoDiTa) stores at most 255 forms per lemma and fails
#: with "Should encode value N in one byte!" beyond; CRAFT's lemma "0" has over 1,000.
MAX_FORMS_PER_LEMMA = 255


def storable_lemmas(conllu: str, *, keep: bool) -> tuple[str, list[str]]:
    """``conllu`` with lemmas UDPipe can store: a lemma of more than
    :data:`MAX_FORMS_PER_LEMMA` distinct forms (a placeholder such as CRAFT's "0" for
    numbers) becomes each word's form; without ``keep`` every lemma does (no lemma is
    learned). Returns the text and the lemmas replaced."""
    lines = conllu.split("\n")
    rows = [line.split("\t") for line in lines]
    forms: dict[str, set[str]] = {}
    for row in rows:
        if len(row) == 10 and row[0].isdigit():
            forms.setdefault(row[2], set()).add(row[1])
    crowded = {lemma for lemma, found in forms.items() if len(found) > MAX_FORMS_PER_LEMMA}
    if keep and not crowded:
        return conllu, []
    for i, row in enumerate(rows):
        if len(row) == 10 and row[0].isdigit() and (not keep or row[2] in crowded):
            row[2] = row[1]
            lines[i] = "\t".join(row)
    return "\n".join(lines), sorted(crowded)


@dataclass(frozen=True)
class _Option:
    """One of UDPipe's training options: its kind of value and the values it takes."""

    kind: Literal["int", "float", "bool", "text"]
    #: the least value UDPipe trains with (inclusive), for int and float
    least: float | None = None
    #: the values it takes, when only a few
    choices: tuple[str, ...] = ()
    #: set by casflow: why the option may not be given
    casflow: str = ""


_BOOL = _Option("bool")
_TEXT = _Option("text")
_COUNT = _Option("int", least=0)
_SEED = _Option("int", casflow="casflow sets it from the training workflow's seed")
#: UDPipe 1's training options of method morphodita_parsito (its manual, "Training
#: UDPipe Models", and trainer_morphodita_parsito.cpp), by the part they train.
UDPIPE_OPTIONS: dict[str, dict[str, _Option]] = {
    "tokenizer": {
        "model": _Option("text", choices=("gru", "generic")),
        "from_model": _TEXT,
        "detokenize": _TEXT,
        "detokenize_handout": _BOOL,
        "tokenize_url": _BOOL,
        "allow_spaces": _BOOL,
        "segment_size": _Option("int", least=10),
        "dimension": _Option("int", choices=("16", "24", "64")),
        "epochs": _Option("int", least=1),
        "batch_size": _Option("int", least=1),
        "learning_rate": _Option("float", least=0),
        "learning_rate_final": _Option("float", least=0),
        "dropout": _Option("float", least=0),
        "initialization_range": _Option("float", least=0),
        "early_stopping": _BOOL,
        "run": _COUNT,
        "seed": _SEED,
    },
    "tagger": {
        "from_model": _TEXT,
        "models": _Option("int", choices=("1", "2", "3", "4")),
        "run": _COUNT,
        "use_lemma": _BOOL,
        "provide_lemma": _BOOL,
        "use_xpostag": _BOOL,
        "provide_xpostag": _BOOL,
        "use_feats": _Option("bool", casflow="casflow never uses FEATS (use_feats=0)"),
        "provide_feats": _Option("bool", casflow="casflow never predicts FEATS (provide_feats=0)"),
        "dictionary_model": _TEXT,
        "dictionary": _TEXT,
        "dictionary_accuracy": _TEXT,
        "dictionary_suffix_len": _COUNT,
        "dictionary_flat_lemmas": _TEXT,
        "dictionary_max_form_analyses": _COUNT,
        "dictionary_lemma_encoding": _Option("int", choices=("0", "1", "2")),
        "guesser_suffix_len": _COUNT,
        "guesser_suffix_rules": _COUNT,
        "guesser_prefixes_max": _COUNT,
        "guesser_prefix_min_count": _COUNT,
        "guesser_enrich_dictionary": _COUNT,
        "order": _Option("float", choices=("2", "2.5", "3")),
        "iterations": _Option("int", least=1),
        "prune_features": _BOOL,
        "early_stopping": _BOOL,
        "templates": _TEXT,
    },
    "parser": {
        "from_model": _TEXT,
        "run": _COUNT,
        "transition_system": _Option("text", choices=("projective", "swap", "link2")),
        "transition_oracle": _Option(
            "text", choices=("static", "dynamic", "static_eager", "static_lazy")
        ),
        "embedding_upostag": _COUNT,
        "embedding_feats": _COUNT,
        "embedding_xpostag": _COUNT,
        "embedding_form": _COUNT,
        "embedding_form_file": _TEXT,
        "embedding_form_mincount": _Option("int", least=1),
        "embedding_lemma": _COUNT,
        "embedding_lemma_file": _TEXT,
        "embedding_lemma_mincount": _Option("int", least=1),
        "embedding_deprel": _COUNT,
        "single_root": _BOOL,
        "iterations": _Option("int", least=1),
        "hidden_layer": _Option("int", least=1),
        "batch_size": _Option("int", least=1),
        "structured_interval": _COUNT,
        "learning_rate": _Option("float", least=0),
        "learning_rate_final": _Option("float", least=0),
        "l2": _Option("float", least=0),
        "early_stopping": _BOOL,
        "use_gold_tags": _BOOL,
        "seed": _SEED,
    },
}


def option_problems(part: str, options: str) -> list[str]:
    """What is wrong with ``options`` (``name=value;...``) for UDPipe's ``part``: names
    it does not know, values it cannot parse or train with, options casflow sets."""
    known = UDPIPE_OPTIONS[part]
    problems = []
    for item in options.split(";"):
        if not item.strip():
            continue
        name, equals, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not equals:
            problems.append(f"{part}: {item.strip()!r} is not name=value")
            continue
        # the tagger's options may be given per model: iterations_2=10
        base = re.sub(r"_[1-9]$", "", name) if part == "tagger" and name not in known else name
        option = known.get(base)
        if option is None:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            problems.append(
                f"{part}: {name!r} is not an option of UDPipe's {part}{hint}; its options: "
                + ", ".join(sorted(n for n, o in known.items() if not o.casflow))
            )
        elif option.casflow:
            problems.append(f"{part}: {name}: {option.casflow}; leave it out")
        elif (problem := _value_problem(option, value)) is not None:
            problems.append(f"{part}: {name}={value}: {problem}")
    return problems


def _value_problem(option: _Option, value: str) -> str | None:
    if option.kind == "text":
        if option.choices and value not in option.choices:
            return "UDPipe takes " + " or ".join(option.choices)
        return None
    try:
        number = float(value) if option.kind == "float" else int(value)
    except ValueError:
        return "not a number" if option.kind == "float" else "not a whole number"
    if option.kind == "bool" and number not in (0, 1):
        return "0 or 1"
    if option.choices and number not in {float(c) for c in option.choices}:
        return "UDPipe takes " + " or ".join(option.choices)
    if option.least is not None and number < option.least:
        return f"at least {option.least:g}" if option.least else "not negative"
    return None


def _join(*options: str) -> str:
    return ";".join(o.strip(";") for o in options if o.strip(";"))


def _read_conllu(udpipe: Any, path: Path) -> Any:
    sentences = udpipe.Sentences()
    reader = udpipe.InputFormat.newConlluInputFormat()
    reader.setText(path.read_text(encoding="utf-8"))
    error = udpipe.ProcessingError()
    sentence = udpipe.Sentence()
    while reader.nextSentence(sentence, error):
        sentences.push_back(sentence)
        sentence = udpipe.Sentence()
    if error.occurred():
        raise ValueError(f"{path}: UDPipe cannot read this CoNLL-U: {error.message}")
    return sentences
