"""``train.spacy.syntax.v1``: a spaCy tokenizer + tagger + parser from gold views.

The trainer of ``casflow train`` for the syntax layers (tokens, sentences, Penn
XPOS, dependencies). Gold views become chunked ``DocBin`` files
(:mod:`.spacy_docs`); training runs spaCy's loop in *stages*: the first stage
initialises the pipeline from the base config, every later one continues from
the previous stage's best checkpoint (by the config's score weights on the
development documents) with its own learning rate and step budget. Stages end at
a fixed number of steps, so a run is the same for a given seed whatever the
machine's speed. The final pipeline is saved as casflow ships it (CRAFT
tokenizer rules, newline sentence starts; :func:`.train.ship_pipeline`).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import cassis
from pydantic import BaseModel, ConfigDict, Field

from casflow.components.spacy.gold import GoldSyntaxDocument
from casflow.components.spacy.gold_cas import gold_syntax_from_view
from casflow.pipeline.component import ComponentConfig, RunContext, Trainer, TrainingContext
from casflow.pipeline.fingerprints import fingerprint, mark_done, step_status
from casflow.pipeline.training import LogLines
from casflow.typesystem import DEPENDENCY, POS, SENTENCE, TOKEN

SHIPPED_PREFIX = "casflow:"


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


class SpacySyntaxTrainerConfig(ComponentConfig):
    base_config: str = Field(
        "casflow:syntax.cfg",
        description="spaCy training config (casflow:NAME: one of casflow's own, "
        "components/spacy/configs).",
    )
    vectors: str | None = Field(
        "casflow:craft_syntax",
        description="A spaCy pipeline whose static vectors the model uses (casflow:NAME: a "
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


def resolve_config_path(name: str) -> Path:
    from casflow.components.spacy.train_cli import CONFIG_DIR

    if name.startswith(SHIPPED_PREFIX):
        return CONFIG_DIR / name[len(SHIPPED_PREFIX) :]
    return Path(name)


def resolve_vectors(name: str) -> Path:
    if name.startswith(SHIPPED_PREFIX):
        from casflow.components.models import shipped_model_path

        return shipped_model_path(name[len(SHIPPED_PREFIX) :])
    return Path(name)


class SpacySyntaxTrainer(Trainer[SpacySyntaxTrainerConfig]):
    name = "train.spacy.syntax.v1"
    description = (
        "spaCy CNN tokenizer/tagger/parser trained from gold Sentence, Token, POS and "
        "Dependency annotations (the model kind of the shipped craft_syntax)."
    )
    libraries = ("spacy",)
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
        return problems

    @classmethod
    def check_config(cls, config: ComponentConfig, context: RunContext) -> list[str]:
        assert isinstance(config, SpacySyntaxTrainerConfig)
        problems = []
        path = resolve_config_path(config.base_config)
        if not path.is_file():
            problems.append(f"base_config {config.base_config!r}: no file {path}")
        if config.vectors is not None:
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

    def _pipeline_overrides(self) -> dict[str, Any]:
        pipes = ["tok2vec"]
        if "pos" in self.chosen:
            pipes.append("tagger")
        if "dependencies" in self.chosen:
            pipes.append("parser")
        overrides: dict[str, Any] = {
            "nlp.pipeline": pipes,
            "system.seed": self.seed,
        }
        weights = {
            "tag_acc": 0.3 if "tagger" in pipes else None,
            "dep_las": 0.5 if "parser" in pipes else None,
            "sents_f": 0.2 if "parser" in pipes else None,
        }
        for key, weight in weights.items():
            overrides[f"training.score_weights.{key}"] = weight
        if self.config.vectors is not None:
            overrides["paths.vectors"] = str(resolve_vectors(self.config.vectors))
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

        from casflow.components.spacy.train_cli import (
            ship_pipeline,
            train_pipeline,
            write_training_corpus,
        )

        if not dev:
            raise ValueError(
                "train.spacy.syntax.v1 selects checkpoints on development documents: "
                "give gold.dev in the training workflow"
            )
        _limit_threads(self.config.threads)
        output_dir = Path(output_dir)
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
            overrides = self._pipeline_overrides() if previous is None else {}
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
        ship_pipeline(previous, model, craft_rules=self.config.craft_tokenizer)
        return model

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
        summary = evaluate_pipeline(nlp, list(examples)).summary()
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
        return (
            "spaCy pipeline: tok2vec (CNN) shared by the tagger and the parser, trained in "
            "stages (each from the previous stage's best checkpoint on the development "
            "documents). Scores are casflow's evaluators on whole texts from raw text: "
            "token and sentence F, XPOS accuracy, UAS and LAS (CoNLL 2018 alignment)."
        )


def _limit_threads(threads: int) -> None:
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(threads)
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn/numpy stacks
        pass
