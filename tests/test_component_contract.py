"""The component contract itself: config declared once, default context, declared hooks."""

from __future__ import annotations

from pathlib import Path

import cassis
import pytest
from pydantic import Field

from casflow.components.evaluators.pos import PosEvaluator, PosEvaluatorConfig
from casflow.components.spacy.scispacy import ScispacyCore, ScispacyCoreConfig
from casflow.components.views.copy import CopyAnnotations, CopyAnnotationsConfig
from casflow.pipeline.component import (
    ComponentConfig,
    Evaluator,
    EvaluatorConfig,
    Processor,
    RunContext,
    Writer,
)
from casflow.typesystem import POS, TOKEN


class _ShoutConfig(ComponentConfig):
    word: str = Field("HI", description="What to shout.")


class _Shout(Processor[_ShoutConfig]):
    name = "test.shout.v1"

    def process(self, view: cassis.Cas) -> None:
        view.sofa_string = self.config.word


def test_the_config_class_comes_from_the_base() -> None:
    assert _Shout.Config is _ShoutConfig
    assert CopyAnnotations.Config is CopyAnnotationsConfig
    assert PosEvaluator.Config is PosEvaluatorConfig
    # A preset narrows its parent's config (new defaults) and says so once.
    assert ScispacyCore.Config is ScispacyCoreConfig


def test_a_second_different_config_declaration_is_refused() -> None:
    class Other(ComponentConfig):
        pass

    with pytest.raises(TypeError, match="declare the config class once"):

        class Twice(Processor[_ShoutConfig]):  # noqa: F841 - the class statement raises
            Config = Other


def test_a_subclass_config_must_extend_the_parents() -> None:
    class Unrelated(ComponentConfig):
        pass

    with pytest.raises(TypeError, match="must extend its parent's config class _ShoutConfig"):

        class Preset(_Shout):  # noqa: F841 - the class statement raises
            Config = Unrelated


def test_components_that_need_no_run_setting_build_without_a_context() -> None:
    shout = _Shout(_Shout.Config())
    assert shout.context.output_dir == Path.cwd()
    copy = CopyAnnotations(CopyAnnotations.Config(from_view="gold"))
    assert copy.config.from_view == "gold"


def test_a_writer_needs_the_run_context() -> None:
    class Nowhere(Writer[ComponentConfig]):
        name = "test.nowhere.v1"

        def output_paths(self, doc_id: str) -> list[Path]:
            return []

        def write(self, cas: cassis.Cas, doc_id: str) -> list[Path]:
            return []

    with pytest.raises(TypeError):
        Nowhere(ComponentConfig())  # type: ignore[call-arg]
    assert Nowhere(ComponentConfig(), RunContext(output_dir=Path("x"))).context.output_dir == Path(
        "x"
    )


def test_an_evaluator_reads_its_gold_and_system_views() -> None:
    config = PosEvaluatorConfig(gold_view="g", system_views=["a", "b"])
    needs = (TOKEN, POS)
    assert PosEvaluator.views_read(config) == {"g": needs, "a": needs, "b": needs}
    assert CopyAnnotations.views_read(CopyAnnotationsConfig(from_view="gold")) == {"gold": ()}
    assert _Shout.views_read(_ShoutConfig()) == {}


def test_evaluator_hooks_have_declared_defaults() -> None:
    assert Evaluator.summary_decimals is None
    assert PosEvaluator.summary_decimals == 2
    evaluator = PosEvaluator(PosEvaluatorConfig())
    assert evaluator.batch_metric("no/such/path") is None
    assert EvaluatorConfig().significance is None
