"""Small components used only by the engine tests.

They are registered under ``test.*`` names by the ``test_components`` fixture
so workflows in tests can use them like any other component.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
import time
import warnings
from collections.abc import Mapping, Sequence
from types import ModuleType

import cassis
from pydantic import Field

from casflow.pipeline.component import ComponentConfig, DocumentWarning, Processor, RunContext
from casflow.typesystem import POS, SENTENCE, TOKEN


class WhitespaceTokenizerConfig(ComponentConfig):
    fail_on: str | None = Field(None, description="Raise when the text contains this string.")
    fail_after_on: str | None = Field(
        None, description="Annotate, then raise, when the text contains this string."
    )
    crash_on: str | None = Field(
        None, description="Kill the process when the text contains this string."
    )
    hang_on: str | None = Field(
        None, description="Sleep forever when the text contains this string."
    )
    warn_on: str | None = Field(
        None, description="Raise a DocumentWarning when the text contains this string."
    )
    sleep: float = Field(0.0, description="Seconds to sleep per document (to make runs slow).")
    record_builds: str | None = Field(
        None, description="Append the process id to this file each time the component is built."
    )
    refuse_to_start: bool = Field(
        False, description="Raise from __init__, after recording the build (a missing model)."
    )
    refuse_first_builds: int = Field(
        0,
        description="Raise from __init__ while record_builds holds at most this many builds "
        "(a failure that passes: memory taken by another model loading).",
    )
    record_runs: str | None = Field(
        None,
        description="Append the text's first word, the process id and the start and end "
        "times of each document processed to this file.",
    )


class WhitespaceTokenizer(Processor[WhitespaceTokenizerConfig]):
    name = "test.whitespace_tokenizer.v1"
    produces = (TOKEN, SENTENCE)

    def __init__(self, config: WhitespaceTokenizerConfig, context: RunContext) -> None:
        super().__init__(config, context)
        if config.record_builds:
            with open(config.record_builds, "a", encoding="utf-8") as builds:
                builds.write(f"{os.getpid()}\n")
        if config.refuse_to_start:
            raise FileNotFoundError("no model at model.bin")
        if config.refuse_first_builds and config.record_builds:
            with open(config.record_builds, encoding="utf-8") as builds:
                if len(builds.read().split()) <= config.refuse_first_builds:
                    raise MemoryError("while another model loaded")

    def process(self, view: cassis.Cas) -> None:
        started = time.time()
        text = view.sofa_string
        if self.config.fail_on and self.config.fail_on in text:
            raise RuntimeError(f"refusing text with {self.config.fail_on!r}")
        if self.config.crash_on and self.config.crash_on in text:
            os._exit(3)
        if self.config.hang_on and self.config.hang_on in text:
            time.sleep(3600)
        if self.config.warn_on and self.config.warn_on in text:
            warnings.warn(
                DocumentWarning(f"{self.config.warn_on!r} in the text, kept as it is"),
                stacklevel=2,
            )
        if self.config.sleep:
            time.sleep(self.config.sleep)
        token_type = view.typesystem.get_type(TOKEN)
        sentence_type = view.typesystem.get_type(SENTENCE)
        view.add_all(token_type(begin=m.start(), end=m.end()) for m in re.finditer(r"\S+", text))
        if text.strip():
            begin = len(text) - len(text.lstrip())
            view.add(sentence_type(begin=begin, end=len(text.rstrip())))
        if self.config.fail_after_on and self.config.fail_after_on in text:
            raise RuntimeError(f"refusing text with {self.config.fail_after_on!r}, too late")
        if self.config.record_runs:
            with open(self.config.record_runs, "a", encoding="utf-8") as runs:
                runs.write(f"{text.split()[0]} {os.getpid()} {started} {time.time()}\n")


class BatchTokenizer(WhitespaceTokenizer):
    """The same, behind a ``process_batch`` of its own (as a tool that batches)."""

    name = "test.batch_tokenizer.v1"

    def process_batch(self, views: Sequence[cassis.Cas]) -> None:
        for view in views:
            self.process(view)


class UpperTaggerConfig(ComponentConfig):
    tag: str = Field("NN", description="Tag given to every token.")


class ConstantTagger(Processor[UpperTaggerConfig]):
    name = "test.constant_tagger.v1"
    requires = (TOKEN,)
    produces = (POS, f"{TOKEN}:pos")

    def process(self, view: cassis.Cas) -> None:
        pos_type = view.typesystem.get_type(POS)
        for token in view.select(TOKEN):
            pos = pos_type(begin=token.begin, end=token.end, PosValue=self.config.tag)
            view.add(pos)
            token.pos = pos


STAND_IN_DOC = "test.module_probe.v1's stand-in"


class ModuleProbeConfig(ComponentConfig):
    used: list[str] = Field(default_factory=list, description="Modules declared used.")
    not_used: list[str] = Field(default_factory=list, description="Modules declared not used.")
    probe: list[str] = Field(
        default_factory=list, description="Modules tried while the component is built."
    )
    loaded: list[str] = Field(
        default_factory=list, description="Modules looked for, not imported, in sys.modules."
    )
    stand_in: list[str] = Field(
        default_factory=list, description="Modules offered a stand-in (STAND_IN_DOC)."
    )
    record: str = Field(description="JSON lines file: one line per build, what it found.")


class ModuleProbe(Processor[ModuleProbeConfig]):
    """Records, while it is built, which of ``probe`` it could import (``"stand-in"``
    where it got a probe's stand-in), and which of ``loaded`` the steps built before
    it had imported."""

    name = "test.module_probe.v1"

    def __init__(self, config: ModuleProbeConfig, context: RunContext) -> None:
        super().__init__(config, context)
        loaded = {m: sys.modules.get(m) is not None for m in config.loaded}
        importable = {}
        for module in config.probe:
            try:
                found = importlib.import_module(module)
                importable[module] = "stand-in" if found.__doc__ == STAND_IN_DOC else True
            except ImportError:
                importable[module] = False
        line = {"pid": os.getpid(), "loaded": loaded, "importable": importable}
        with open(config.record, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")

    @classmethod
    def modules_used(cls, config: ModuleProbeConfig, context: RunContext) -> frozenset[str]:
        return frozenset(config.used)

    @classmethod
    def modules_not_used(cls, config: ModuleProbeConfig, context: RunContext) -> frozenset[str]:
        return frozenset(config.not_used)

    @classmethod
    def stand_in_modules(
        cls, config: ModuleProbeConfig, context: RunContext
    ) -> Mapping[str, ModuleType]:
        return {name: ModuleType(name, STAND_IN_DOC) for name in config.stand_in}

    def process(self, view: cassis.Cas) -> None:
        pass


TEST_COMPONENTS = [WhitespaceTokenizer, BatchTokenizer, ConstantTagger, ModuleProbe]
