"""spaCy imported without its command line, in a run's worker.

``import spacy`` runs ``from .cli.info import info`` (for ``spacy.info``), which
imports all of ``spacy.cli``: typer, click, weasel, httpx, rich, jinja2 and
requests, some 360 modules and about a quarter of a worker's CPU before its first
document, though a run's components only load and apply pipelines. While a
worker builds a spaCy step, a stand-in for ``spacy.cli.info`` sits in
``sys.modules`` (``Component.stand_in_modules``). spaCy's import takes ``info``
from it: a function that imports spaCy's own when first called. At that moment
the stand-in leaves ``sys.modules``, and ``spacy`` gets a module ``__getattr__``
that imports ``spacy.cli`` when the attribute is first read: afterwards
``import spacy.cli``, ``from spacy.cli import train`` and ``spacy.cli.download``
all get spaCy's real command line, as before.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import Any

SPACY_CLI_INFO = "spacy.cli.info"


def cli_stand_in() -> dict[str, ModuleType]:
    """What a spaCy step's ``stand_in_modules`` returns (a new stand-in each time)."""
    return {SPACY_CLI_INFO: _CliInfoStandIn(SPACY_CLI_INFO, "Stand-in for spacy.cli.info")}


def info(*args: Any, **kwargs: Any) -> Any:
    """``spacy.info``: spaCy's ``spacy.cli.info.info``, imported when first called."""
    from spacy.cli.info import info as spacy_info

    return spacy_info(*args, **kwargs)


def _spacy_getattr(name: str) -> Any:
    # PEP 562: read only for attributes the module lacks; importing spacy.cli sets it.
    if name == "cli":
        return importlib.import_module("spacy.cli")
    raise AttributeError(f"module 'spacy' has no attribute {name!r}")


class _CliInfoStandIn(ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # the import system probing (__path__): a plain module
            raise AttributeError(name)
        self._leave()
        if name == "info":  # spacy/__init__.py's ``from .cli.info import info``
            return info
        return getattr(importlib.import_module(SPACY_CLI_INFO), name)

    def _leave(self) -> None:
        if sys.modules.get(self.__name__) is self:
            del sys.modules[self.__name__]
        spacy = sys.modules.get("spacy")
        if spacy is not None and "__getattr__" not in vars(spacy):
            spacy.__getattr__ = _spacy_getattr  # type: ignore[method-assign]
