"""``train.spacy.syntax.v1``: a spaCy tokenizer + tagger + parser from gold views.

The trainer of ``casflow train`` for the syntax layers (tokens, sentences, Penn
XPOS, dependencies). Training runs in steps, each skipped when a finished one
with the same settings and data is on disk (:mod:`casflow.pipeline.fingerprints`):

1. *Word vectors* (optional): with ``vectors: {word2vec: ...}``, word2vec is
   trained on the text of the gold sources listed there (every non-empty line,
   CRAFT-tokenised so vector keys match the pipeline's tokens;
   :mod:`casflow.components.gensim.word2vec`), once per run
   (``<output>/vectors``, shared by the cross-validation folds). ``vectors`` may
   instead name an existing spaCy pipeline whose vectors are used as they are.
2. *Training Docs*: gold views become chunked ``DocBin`` files
   (:mod:`.training_docs`).
3. *Stages*: the first stage initialises the pipeline from the base config, every
   later one continues from the previous stage's best checkpoint (by the config's
   score weights on the development documents) with its own learning rate and
   step budget. Stages end at a fixed number of steps, so a run is the same for a
   given seed whatever the machine's speed; the last step is scored too when it is
   not a multiple of ``eval_frequency`` (spaCy's loop scores only those), so it can
   be the checkpoint kept.

The final pipeline is saved as casflow ships it (:func:`ship_pipeline`: CRAFT
tokenizer rules, newline sentence starts, no training paths).
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import cassis
from pydantic import BaseModel, ConfigDict, Field, Tag
from spacy.language import Language

from casflow.components.gensim.word2vec import (
    Word2VecParameters,
    fit_word2vec,
    gensim_missing,
    write_spacy_vectors,
)
from casflow.components.models import SHIPPED_PREFIX, is_shipped, shipped_model_path
from casflow.components.spacy.craft_tokenizer import blank_craft_english, craft_tokenizer
from casflow.components.spacy.gold import GoldSyntaxDocument
from casflow.components.spacy.gold_cas import gold_syntax_from_view
from casflow.components.spacy.right_to_left import (
    DIRECTION_KEY,
    GIVEN_SEGMENTATION_KEY,
    RIGHT_TO_LEFT,
    evaluate_given_sentences,
    reverse_gold,
)
from casflow.pipeline.component import (
    ComponentConfig,
    RunContext,
    Trainer,
    TrainingContext,
    mapping_is,
)
from casflow.pipeline.fingerprints import fingerprint, forget, mark_done, step_status
from casflow.pipeline.gold_sources import GoldSource, check_source, read_source
from casflow.pipeline.locks import building
from casflow.pipeline.training import LogLines
from casflow.typesystem import DEPENDENCY, POS, SENTENCE, TOKEN

CONFIG_DIR = Path(__file__).parent / "configs"
SYNTAX_CONFIG = CONFIG_DIR / "syntax.cfg"


class Stage(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    max_steps: int = Field(gt=0, description="Optimizer steps of this stage.")
    learn_rate: float = Field(gt=0, description="Adam learning rate.")
    eval_frequency: int = Field(500, gt=0, description="Steps between dev evaluations.")


def _default_stages() -> list[Stage]:
    # What the shipped craft_syntax model was trained with (see its MODEL_CARD.md):
    # best checkpoints at steps 8,500, 7,200 and 3,900 (the last two were the last steps run).
    return [
        Stage(max_steps=9000, learn_rate=0.001, eval_frequency=500),
        Stage(max_steps=7200, learn_rate=0.0003, eval_frequency=300),
        Stage(max_steps=3900, learn_rate=0.0001, eval_frequency=300),
    ]


class Word2VecSettings(Word2VecParameters):
    """Word2vec (skip-gram) vectors trained as the first step of the syntax trainer."""

    text: list[GoldSource] = Field(
        min_length=1,
        description="Gold sources whose text the vectors learn from, in order (every "
        "non-empty line of each view's text is a sentence).",
    )


class VectorsStep(ComponentConfig):
    word2vec: Word2VecSettings = Field(description="Train word2vec vectors (needs gensim).")


class SpacySyntaxTrainerConfig(ComponentConfig):
    base_config: str = Field(
        "casflow:syntax.cfg",
        description="spaCy training config (casflow:NAME: one of casflow's own, "
        "components/spacy/configs).",
    )
    vectors: (
        Annotated[
            Annotated[VectorsStep, Tag("VectorsStep")] | Annotated[str, Tag("str")],
            mapping_is("VectorsStep"),
        ]
        | None
    ) = Field(
        "casflow:craft_syntax",
        description="Static word vectors: {word2vec: {text: [gold sources], ...}} trains them "
        "first; a string names a spaCy pipeline whose vectors are used (casflow:NAME: a "
        "shipped model); none: no static vectors.",
    )
    stages: list[Stage] = Field(
        default_factory=_default_stages, min_length=1, description="Training stages, in order."
    )
    max_tokens: int = Field(
        200, gt=0, description="Training Docs hold whole sentences of about this many tokens."
    )
    overrides: dict[str, Any] = Field(
        default_factory=dict,
        description="spaCy config overrides, e.g. {components.tok2vec.model.encode.width: 128}.",
    )
    craft_tokenizer: bool = Field(
        True, description="Tokenize with casflow's CRAFT rules (else spaCy's English rules)."
    )
    threads: int = Field(1, ge=1, description="BLAS threads (1 keeps runs reproducible).")
    direction: Literal["left_to_right", "right_to_left"] = Field(
        "left_to_right",
        description="right_to_left: learn from every sentence with its tokens reversed, a "
        "second view of the data for voting (implies given_segmentation).",
    )
    given_segmentation: bool = Field(
        False,
        description="Learn from the gold tokens one sentence at a time (spaCy's gold_preproc) "
        "for a model that runs over given tokens and sentences (use_existing_tokens and "
        "use_existing_sentences); scores are then on the gold tokens and sentences.",
    )

    @property
    def on_given_segmentation(self) -> bool:
        return self.given_segmentation or self.direction == RIGHT_TO_LEFT


def resolve_config_path(name: str) -> Path:
    if is_shipped(name):
        return CONFIG_DIR / name[len(SHIPPED_PREFIX) :]
    return Path(name)


def resolve_vectors(name: str) -> Path:
    if is_shipped(name):
        return shipped_model_path(name)
    return Path(name)


class SpacySyntaxTrainer(Trainer[SpacySyntaxTrainerConfig]):
    name = "train.spacy.syntax.v1"
    description = (
        "spaCy CNN tokenizer/tagger/parser trained from gold Sentence, Token, POS and "
        "Dependency annotations (the model kind of the shipped craft_syntax)."
    )
    libraries = ("spacy",)
    needs_dev = "selects checkpoints on development documents"
    layers: ClassVar[dict[str, tuple[str, ...]]] = {
        "tokens": (TOKEN,),
        "sentences": (SENTENCE,),
        "pos": (TOKEN, POS),
        "dependencies": (TOKEN, DEPENDENCY),
    }

    def __init__(self, config: SpacySyntaxTrainerConfig, context: TrainingContext) -> None:
        super().__init__(config, context)
        self.seed = context.seed
        self.chosen = tuple(context.layers or self.layers)

    @classmethod
    def check_layers(cls, config: ComponentConfig, layers: Sequence[str]) -> list[str]:
        problems = []
        if not {"pos", "dependencies"} & set(layers):
            problems.append("learn pos or dependencies (or both): there is nothing else to train")
        if "sentences" in layers and "dependencies" not in layers:
            problems.append("sentences come from the parse: learn dependencies too")
        assert isinstance(config, SpacySyntaxTrainerConfig)
        if config.on_given_segmentation and {"tokens", "sentences"} & set(layers):
            setting = (
                "direction right_to_left"
                if config.direction == RIGHT_TO_LEFT
                else "given_segmentation"
            )
            problems.append(
                f"{setting} learns pos and dependencies over given tokens and sentences: "
                "remove tokens and sentences from layers"
            )
        return problems

    @classmethod
    def check_config(cls, config: ComponentConfig, context: RunContext) -> list[str]:
        assert isinstance(config, SpacySyntaxTrainerConfig)
        problems = []
        path = resolve_config_path(config.base_config)
        if not path.is_file():
            problems.append(f"base_config {config.base_config!r}: no file {path}")
        elif config.overrides:
            problems += override_problems(path, config.overrides)
        if isinstance(config.vectors, VectorsStep):
            for source in config.vectors.word2vec.text:
                problems += [f"vectors text: {p}" for p in check_source(source, context)]
            if missing := gensim_missing():
                problems.append(f"vectors: {missing}")
        elif config.vectors is not None:
            try:
                vectors = resolve_vectors(config.vectors)
            except FileNotFoundError as exc:
                problems.append(f"vectors: {exc}")
            else:
                if not (vectors / "vocab").is_dir():
                    problems.append(
                        f"vectors {config.vectors!r}: {vectors} is not a saved spaCy pipeline"
                    )
        return problems

    def example(self, view: cassis.Cas, doc_id: str) -> GoldSyntaxDocument:
        return gold_syntax_from_view(
            view, doc_id, pos="pos" in self.chosen, dependencies="dependencies" in self.chosen
        )

    def _pipeline_overrides(self, vectors: Path | None) -> dict[str, Any]:
        pipes = ["tok2vec"]
        if "pos" in self.chosen:
            pipes.append("tagger")
        if "dependencies" in self.chosen:
            pipes.append("parser")
        overrides: dict[str, Any] = {
            "nlp.pipeline": pipes,
            "system.seed": self.seed,
        }
        # A model for given sentences never splits them: its splits are not chosen for.
        splits = "parser" in pipes and not self.config.on_given_segmentation
        weights = {
            "tag_acc": 0.3 if "tagger" in pipes else None,
            "dep_las": (0.5 if splits else 0.7) if "parser" in pipes else None,
            "sents_f": 0.2 if splits else None,
        }
        for key, weight in weights.items():
            overrides[f"training.score_weights.{key}"] = weight
        if self.config.on_given_segmentation:
            # It only ever reads given tokens one sentence at a time: learn so, rather than
            # from what the tokenizer makes of the text (of reversed text: "died." -> ".died").
            overrides["corpora.train.gold_preproc"] = True
            overrides["corpora.dev.gold_preproc"] = True
        if vectors is not None:
            overrides["paths.vectors"] = str(vectors)
            overrides["components.tok2vec.model.embed.include_static_vectors"] = True
        overrides.update(self.config.overrides)
        return overrides

    def train(
        self,
        train: Sequence[GoldSyntaxDocument],
        dev: Sequence[GoldSyntaxDocument],
        output_dir: Path,
        log: Callable[[str], None],
    ) -> Path:
        from spacy.util import fix_random_seed

        from casflow.components.spacy.training_docs import write_training_corpus

        if not dev:  # validation requires gold.dev (needs_dev); a caller may not have run it
            raise ValueError(
                f"{self.name} {self.needs_dev}: give gold.dev in the training workflow"
            )
        _limit_threads(self.config.threads)
        output_dir = Path(output_dir)
        vectors = self.vectors(log)
        if self.config.direction == RIGHT_TO_LEFT:
            train = [reverse_gold(gold) for gold in train]
            dev = [reverse_gold(gold) for gold in dev]
            log("right to left: every sentence's tokens reversed")
        corpus = output_dir / "corpus"
        counts = write_training_corpus({"train": train, "dev": dev}, corpus, self.config.max_tokens)
        log(f"training Docs: {counts['train']} train, {counts['dev']} dev (in {corpus})")
        config_path = resolve_config_path(self.config.base_config)
        previous: Path | None = None
        for number, stage in enumerate(self.config.stages, start=1):
            stage_dir = output_dir / f"stage-{number}"
            best = stage_dir / "model-best"
            stage_fingerprint = self._fingerprint(number, corpus)
            done = stage_dir / "done.json"
            status = step_status(done, stage_fingerprint, best)
            if status == "done":
                log(f"stage {number}: already done ({best}); skipped")
                previous = best
                continue
            if status == "changed":
                log(f"stage {number}: settings or data changed since it ran; training it again")
            log(
                f"stage {number}/{len(self.config.stages)}: {stage.max_steps} steps at "
                f"learning rate {stage.learn_rate}"
                + (f", continuing from {previous}" if previous else "")
            )
            overrides = self._pipeline_overrides(vectors) if previous is None else {}
            overrides.update(
                {
                    "training.max_steps": stage.max_steps,
                    "training.optimizer.learn_rate": stage.learn_rate,
                    "training.eval_frequency": stage.eval_frequency,
                    "training.seed": self.seed,
                    "system.seed": self.seed,
                }
            )
            fix_random_seed(self.seed)
            if stage_dir.exists():
                shutil.rmtree(stage_dir)  # an interrupted stage starts over
            with LogLines(log) as stream:
                train_pipeline(
                    config_path,
                    corpus / "train.spacy",
                    corpus / "dev.spacy",
                    stage_dir,
                    overrides,
                    use_craft_tokenizer=self.config.craft_tokenizer,
                    resume_from=previous,
                    stdout=stream,
                )
            mark_done(done, stage_fingerprint)
            previous = best
        assert previous is not None
        model = output_dir / "model"
        if model.exists():
            shutil.rmtree(model)
        ship_pipeline(
            previous,
            model,
            craft_rules=self.config.craft_tokenizer,
            meta={
                DIRECTION_KEY: self.config.direction,
                GIVEN_SEGMENTATION_KEY: self.config.on_given_segmentation,
            },
        )
        self._write_upos_map(train, model, log)
        return model

    def _write_upos_map(
        self, train: Sequence[GoldSyntaxDocument], model: Path, log: Callable[[str], None]
    ) -> None:
        """``upos.tsv`` beside the model: the UPOS the gold views pair with each XPOS, so
        ``spacy.pipeline.v1`` can write UPOS for a tagger that predicts XPOS only."""
        from casflow.components.spacy.upos import UPOS_FILE, learn_upos_pairs, write_upos_map

        if "pos" not in self.chosen:
            return
        mapping = learn_upos_pairs(
            pair for doc in train if doc.pos for pair in zip(doc.tags, doc.pos, strict=True)
        )
        if mapping:
            source = (
                f"the gold views of the {len(train)} training documents (PosValue, coarseValue)"
            )
            write_upos_map(mapping, model / UPOS_FILE, source)
            log(f"XPOS -> UPOS map of {len(mapping)} tags -> {model / UPOS_FILE}")

    def vectors(self, log: Callable[[str], None]) -> Path | None:
        """The spaCy pipeline holding the static vectors: trained here (once per run,
        in ``<output>/vectors``) or named by the settings."""
        if self.config.vectors is None:
            return None
        if isinstance(self.config.vectors, str):
            return resolve_vectors(self.config.vectors)
        settings = self.config.vectors.word2vec
        log("word vectors: reading their text")
        sentences = word2vec_sentences(settings.text, self.context)
        folder = Path(self.context.output_dir) / "vectors"
        done = folder.parent / "vectors.done.json"
        step = fingerprint(settings.model_dump(mode="json"), self.seed, sentences)
        # the --fold K runs of one training may start together: one trains the vectors
        with building(folder, lambda line: log(f"word vectors: {line}")):
            if step_status(done, step, folder) == "done":
                log(f"word vectors: already trained ({folder}); skipped")
                return folder
            forget(done)
            log(
                f"word vectors: word2vec on {len(sentences)} lines "
                f"({sum(map(len, sentences))} tokens) -> {folder}"
            )
            if folder.exists():
                shutil.rmtree(folder)
            words, table = fit_word2vec(sentences, **settings.fit_arguments(), seed=self.seed)
            write_spacy_vectors(words, table, folder)
            mark_done(done, step)
            return folder

    def _fingerprint(self, stage: int, corpus: Path) -> str:
        """What a finished stage depends on: settings up to it, seed, layers, data."""
        settings = self.config.model_dump(mode="json")
        settings["stages"] = settings["stages"][:stage]
        return fingerprint(
            settings,
            self.seed,
            list(self.chosen),
            files=[corpus / name for name in ("train.spacy", "dev.spacy")],
        )

    def evaluate(self, model_dir: Path, examples: Sequence[GoldSyntaxDocument]) -> dict[str, float]:
        import spacy

        from casflow.components.spacy.evaluate_syntax import evaluate_pipeline

        nlp = spacy.load(model_dir)
        if self.config.on_given_segmentation:
            scores = evaluate_given_sentences(
                nlp, list(examples), right_to_left=self.config.direction == RIGHT_TO_LEFT
            )
        else:
            scores = evaluate_pipeline(nlp, list(examples))
        summary = scores.summary()
        names = {
            "tokens_f": "tokens_f",
            "sentences_f": "sentences_f",
            "xpos_accuracy": "xpos",
            "uas": "uas",
            "las": "las",
        }
        return {
            short: round(100 * float(summary[key]), 2)
            for key, short in names.items()
            if summary.get(key) is not None
        }

    def describe(self) -> str:
        scores = (
            "Scores are casflow's evaluators over the gold sentences and tokens (the model is "
            "trained on them one sentence at a time): XPOS accuracy, UAS and LAS (CoNLL 2018)."
            if self.config.on_given_segmentation
            else "Scores are casflow's evaluators on whole texts from raw text: token and "
            "sentence F, XPOS accuracy, UAS and LAS (CoNLL 2018 alignment)."
        )
        direction = (
            " It reads right to left: trained on every sentence reversed."
            if self.config.direction == RIGHT_TO_LEFT
            else ""
        )
        return (
            "spaCy pipeline: tok2vec (CNN) shared by the tagger and the parser, trained in "
            "stages (each from the previous stage's best checkpoint on the development "
            f"documents).{direction} {scores}"
        )


def override_problems(config_path: Path, overrides: dict[str, Any]) -> list[str]:
    """What is wrong with spaCy config ``overrides`` over the config at ``config_path``:
    the pipeline is built from them as training builds it (no data, no weights
    learned), so a misspelled or mistyped setting is refused before any document is
    read; a setting spaCy would accept but that no section has is refused too."""
    from confection import ConfigValidationError
    from spacy.util import load_config, load_model_from_config

    try:
        config = load_config(config_path, overrides=overrides, interpolate=False)
        filled = load_model_from_config(config, auto_fill=True, validate=True).config
    except ConfigValidationError as exc:
        where = exc.title or "spaCy config"
        return [
            f"overrides: {' -> '.join(str(part) for part in error['loc'])}: {error['msg']} "
            f"({where}; see {config_path.name})"
            for error in exc.errors or [{"loc": [], "msg": str(exc)}]
        ]
    except Exception as exc:  # spaCy's own errors (e.g. an unknown architecture)
        return [f"overrides: spaCy cannot build the pipeline: {type(exc).__name__}: {exc}"]
    problems = []
    for key in overrides:
        section: Any = filled
        for part in key.split("."):
            if not isinstance(section, dict) or part not in section:
                problems.append(
                    f"overrides: {key}: no such setting in {config_path.name} (spaCy would "
                    "ignore it)"
                )
                break
            section = section[part]
    return problems


def word2vec_sentences(sources: Sequence[GoldSource], context: RunContext) -> list[list[str]]:
    """Every non-empty line of every view of ``sources``, in order, as CRAFT tokens."""
    nlp = blank_craft_english()

    def lines(view: cassis.Cas, doc_id: str) -> list[list[str]]:
        return [
            [t.text for t in nlp.make_doc(line) if not t.is_space]
            for line in (view.sofa_string or "").splitlines()
            if line.strip()
        ]

    return [
        line for source in sources for doc in read_source(source, context, lines) for line in doc
    ]


def train_pipeline(
    config_path: str | Path,
    train_path: str | Path,
    dev_path: str | Path,
    output_dir: str | Path | None,
    overrides: dict[str, Any] | None = None,
    *,
    use_craft_tokenizer: bool = True,
    resume_from: str | Path | None = None,
    stdout: Any = sys.stdout,
) -> Language:
    """One stage: initialise and train the pipeline of ``config_path`` with spaCy's loop;
    returns the final ``nlp`` (``output_dir/model-best`` and ``model-last`` hold the
    saved ones).

    With ``resume_from`` (a trained pipeline folder) training continues from its
    weights under its own config plus ``overrides`` (e.g. a lower
    ``training.optimizer.learn_rate``); ``config_path`` is then not read.
    """
    import spacy
    from spacy.training.initialize import init_nlp
    from spacy.training.loop import train as train_loop
    from spacy.util import dot_to_dict, load_config

    settings = {"paths.train": str(train_path), "paths.dev": str(dev_path)}
    settings.update(overrides or {})
    if resume_from is not None:
        nlp = spacy.load(resume_from, config=dot_to_dict(settings))
    else:
        config = load_config(config_path, overrides=settings, interpolate=False)
        nlp = init_nlp(config, use_gpu=-1)
    if use_craft_tokenizer:
        # After initialisation (labels come from the gold side), before training: every
        # training and dev Doc is then tokenised as raw text will be.
        nlp.tokenizer = craft_tokenizer(nlp)
    start = time.time()
    output = Path(output_dir) if output_dir is not None else None
    if output is not None:
        output.mkdir(parents=True, exist_ok=True)
    train_loop(nlp, output, use_gpu=-1, stdout=stdout, stderr=sys.stderr)
    if output is not None:
        _consider_last_step(output, use_craft_tokenizer, stdout)
    print(f"training took {time.time() - start:.0f} s", file=stdout)
    return nlp


def _consider_last_step(output: Path, use_craft_tokenizer: bool, stdout: Any) -> None:
    """Make ``model-best`` consider the stage's last step, as if it had been evaluated.

    spaCy's loop evaluates (and may keep as ``model-best``) only the steps that are
    multiples of ``eval_frequency``; its last step, ``max_steps``, is then lost unless
    it is one. ``model-last`` holds that step (with the optimizer's averages, as an
    evaluation scores it): scored here by spaCy's own evaluation with the stage's score
    weights, it replaces ``model-best`` when it scores as well or better (spaCy's rule:
    a later checkpoint as good as the best is kept). A stage whose ``max_steps`` is a
    multiple of ``eval_frequency`` (every shipped recipe) is left as spaCy made it."""
    from spacy.util import load_config

    last, best = output / "model-last", output / "model-best"
    training = load_config(last / "config.cfg", interpolate=False)["training"]
    steps, every = int(training["max_steps"]), int(training["eval_frequency"])
    if not steps or steps % every == 0 or not best.is_dir():
        return
    scores = {path.name: _weighted_dev_score(path, use_craft_tokenizer) for path in (best, last)}
    kept = scores[last.name] >= scores[best.name]
    print(
        f"step {steps} (the last, not a multiple of eval_frequency {every}) scores "
        f"{scores[last.name]:.4f}, the best evaluated step {scores[best.name]:.4f}: "
        + ("model-best is now the last step" if kept else "model-best kept"),
        file=stdout,
    )
    if kept:
        shutil.rmtree(best)
        shutil.copytree(last, best)


def _weighted_dev_score(model: Path, use_craft_tokenizer: bool) -> float:
    """The score spaCy's training loop gives ``model`` on its development corpus."""
    import spacy
    from spacy.schemas import ConfigSchemaTraining
    from spacy.training.loop import create_evaluation_callback
    from spacy.util import registry, resolve_dot_names

    nlp = spacy.load(model)
    if use_craft_tokenizer:
        nlp.tokenizer = craft_tokenizer(nlp)  # as in training (see train_pipeline)
    config = nlp.config.interpolate()
    training = registry.resolve(config["training"], schema=ConfigSchemaTraining)
    (dev_corpus,) = resolve_dot_names(config, [training["dev_corpus"]])
    score, _ = create_evaluation_callback(nlp, dev_corpus, training["score_weights"])()
    return float(score)


def add_newline_sentence_starts(nlp: Language, name: str = "newline_sentences") -> None:
    """Put a built-in ``attribute_ruler`` first that starts a sentence after every
    whitespace token holding a line break; the parser keeps preset sentence starts.

    In CRAFT a line break ends a sentence all but 4 times in 21,731 (headings and
    titles are lines of their own).
    """
    if name in nlp.pipe_names:
        return
    from spacy.pipeline import AttributeRuler

    ruler = nlp.add_pipe("attribute_ruler", name=name, first=True)
    assert isinstance(ruler, AttributeRuler)
    ruler.add([[{"IS_SPACE": True, "TEXT": {"REGEX": "\n"}}, {}]], {"SENT_START": 1}, index=1)


def ship_pipeline(
    source: str | Path,
    target: str | Path,
    *,
    newline_sentences: bool = True,
    craft_rules: bool = True,
    meta: dict[str, Any] | None = None,
) -> Path:
    """Save the pipeline at ``source`` to ``target`` for distribution with ``nlp.to_disk``
    (no optimizer state, no corpus; ``meta.json`` name: the target folder's name): the
    current CRAFT tokenizer rules, :func:`add_newline_sentence_starts`, and the tokenizer
    pinned to ``spacy.Tokenizer.v1`` in its config so it loads with plain ``spacy.load``."""
    import spacy
    from spacy.util import load_config

    nlp = spacy.load(source)
    nlp.meta["name"] = Path(target).name
    nlp.meta["version"] = "0.1.0"
    nlp.meta["description"] = "casflow pipeline trained from gold corpora; see MODEL_CARD.md"
    nlp.meta.update(meta or {})
    # the rules are code: ship the current ones whatever the checkpoint was trained with
    if craft_rules:
        nlp.tokenizer = craft_tokenizer(nlp)
    if newline_sentences:
        add_newline_sentence_starts(nlp)
    target = Path(target)
    target.mkdir(parents=True, exist_ok=True)
    nlp.to_disk(target)
    config = load_config(target / "config.cfg", interpolate=False)
    config["nlp"]["tokenizer"] = {"@tokenizers": "spacy.Tokenizer.v1"}
    # training-time paths are of the machine that trained it; loading needs none
    for name in ("train", "dev", "vectors", "init_tok2vec"):
        if name in config["paths"]:
            config["paths"][name] = None
    config.to_disk(target / "config.cfg")
    return target


def _limit_threads(threads: int) -> None:
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(threads)
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn/numpy stacks
        pass
