"""Component registry: versioned names to component classes, resolved lazily.

Built-in components are listed in one place (``casflow.components.builtin``) as
``name -> "module:Class"`` strings, and plug-in packages add theirs through the
entry point group ``casflow.components``. Nothing is imported until a name is
asked for, so a broken optional plug-in cannot break unrelated workflows, and
registration never depends on import side effects. A name registered twice (by two
plug-ins, or by a plug-in and a built-in) is broken in the same way: asking for it
names both origins.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import re
import unicodedata
from importlib.metadata import entry_points
from typing import Any, get_args

from casflow.pipeline.component import Component, Role

ENTRY_POINT_GROUP = "casflow.components"


class UnknownComponentError(KeyError):
    def __init__(self, name: str, known: list[str]) -> None:
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        super().__init__(
            f"unknown component {name!r}.{hint} Run 'casflow components' to list the "
            f"{len(known)} components available."
        )
        self.name = name
        self.suggestions = close

    def __str__(self) -> str:
        return self.args[0]


class ComponentLoadError(ImportError):
    pass


class Registry:
    """Names to lazily imported component classes."""

    def __init__(self) -> None:
        self._targets: dict[str, str] = {}
        self._origins: dict[str, str] = {}
        self._loaded: dict[str, type[Component]] = {}
        # Names more than one origin claims (plug-ins, or a plug-in and a built-in):
        # name -> every origin. Such a name is refused when asked for, not at the scan,
        # so the clash cannot break workflows that do not use it.
        self._clashes: dict[str, list[str]] = {}
        self._plugins_scanned = False

    def register(self, name: str, target: str | type[Component], origin: str = "built-in") -> None:
        """Register ``name`` as a "module:Class" path or a class."""
        if name in self._targets or name in self._loaded:
            raise ValueError(
                f"component name {name!r} is registered twice ({self._origins[name]} and {origin}); "
                "component names must be unique, bump the version suffix for a new implementation"
            )
        if isinstance(target, str):
            self._targets[name] = target
        else:
            self._loaded[name] = target
            self._targets[name] = f"{target.__module__}:{target.__qualname__}"
        self._origins[name] = origin

    def _scan_plugins(self) -> None:
        if self._plugins_scanned:
            return
        self._plugins_scanned = True
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            dist = ep.dist.name if ep.dist is not None else "unknown distribution"
            origin = f"entry point from {dist}"
            if ep.name in self._targets:
                # Which one a workflow would get is not the user's choice: refuse both.
                self._clashes.setdefault(ep.name, [self._origins[ep.name]]).append(origin)
            else:
                self.register(ep.name, ep.value, origin=origin)

    def _clash(self, name: str) -> ComponentLoadError:
        origins = self._clashes[name]
        fix = (
            "a plug-in cannot replace a built-in component: uninstall the plug-in, or give "
            "its component a name of its own (entry point key and class name)"
            if "built-in" in origins
            else "uninstall all but one of them, or give one a name of its own"
        )
        return ComponentLoadError(
            f"component name {name!r} is registered twice ({' and '.join(origins)}); "
            f"component names must be unique: {fix}"
        )

    def target(self, name: str) -> str:
        """The "module:Class" path a name resolves to."""
        self._scan_plugins()
        if name not in self._targets:
            raise UnknownComponentError(name, self.names())
        return self._targets[name]

    def ensure(self, name: str, target: str) -> None:
        """Register ``name`` unless known (workers learn the parent's non-built-ins)."""
        self._scan_plugins()
        if name not in self._targets:
            self.register(name, target, origin="parent process")

    def names(self) -> list[str]:
        self._scan_plugins()
        return sorted(self._targets)

    def origin(self, name: str) -> str:
        self._scan_plugins()
        return self._origins[name]

    def get(self, name: str) -> type[Component]:
        self._scan_plugins()
        if name in self._clashes:
            raise self._clash(name)
        if name in self._loaded:
            return self._loaded[name]
        if name not in self._targets:
            raise UnknownComponentError(name, self.names())
        target = self._targets[name]
        module_name, colon, attr = target.partition(":")
        if not (colon and module_name and attr):
            raise ComponentLoadError(
                f"component {name!r} ({self._origins[name]}) points at {target!r}, which "
                "names no class: an entry point's value is 'module:Class' (e.g. "
                "'my_plugin:MyTagger'); fix it in the plug-in's pyproject.toml and reinstall it"
            )
        try:
            module = importlib.import_module(module_name)
            cls: Any = module  # a component class once contract_problem finds none
            for part in attr.split("."):
                cls = getattr(cls, part)
        except Exception as exc:  # whatever a plug-in's import raises, not only ImportError
            raise ComponentLoadError(
                f"component {name!r} ({self._origins[name]}) cannot be loaded from {target!r}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        problem = contract_problem(name, cls)
        if problem is not None:
            raise ComponentLoadError(
                f"component {name!r} ({self._origins[name]}, {target!r}) {problem}"
            )
        self._loaded[name] = cls
        return cls


#: ``<tool>.<what>.v<N>``: lower-case dotted parts, the last a version.
VERSIONED_NAME = re.compile(r"[a-z0-9_]+(?:\.[a-z0-9_]+)*\.v[0-9]+")
ROLES: tuple[str, ...] = get_args(Role)


_VERSION_SUFFIX = re.compile(r"\.v[0-9]+$", re.IGNORECASE)


def _name_problem(name: str) -> str:
    if not _VERSION_SUFFIX.search(name.strip()):
        return "has no version suffix"
    return (
        "has characters or parts a component name does not take (upper case, '-', "
        "spaces, an empty part)"
    )


def _suggested_name(name: str) -> str:
    """``name`` as a component name may be written: accents dropped, lower case, '_' for
    other characters, '.v1' only where it has no version."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    parts = [
        re.sub(r"[^a-z0-9_]+", "_", part.strip().lower()).strip("_")
        for part in ascii_name.split(".")
    ]
    suggested = ".".join(part for part in parts if part)
    return suggested if _VERSION_SUFFIX.search(suggested) else suggested + ".v1"


def contract_problem(name: str, cls: Any) -> str | None:
    """What keeps ``cls`` from serving as component ``name``, or None. Checked when a
    name is first asked for, so that a plug-in's mistake is one message naming it and
    what to do, before the workflow runs (not a traceback inside a worker, nor a
    misspelled option silently accepted)."""
    if not (isinstance(cls, type) and issubclass(cls, Component)):
        return (
            "is not a casflow component: derive the class from Reader, Processor, Writer, "
            "Evaluator or Trainer (casflow.pipeline.component)"
        )
    declared = getattr(cls, "name", None)
    if declared != name:
        return (
            f"declares name {declared!r}: the entry-point key and the class's 'name' must "
            "be the same; change one of them and reinstall the plug-in"
        )
    if not VERSIONED_NAME.fullmatch(name):
        return (
            f"{_name_problem(name)}: a component name is '<tool>.<what>.v<N>' in lower "
            f"case, letters, digits and '_' (e.g. {_suggested_name(name)!r}), the "
            "entry-point key and the class's 'name' alike"
        )
    if cls.role not in ROLES:
        return (
            f"declares role {cls.role!r}, not one of {', '.join(ROLES)}: derive the class "
            "from the base of its role and do not set 'role'"
        )
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(cls.__abstractmethods__))
        return f"does not implement {missing}, which a {cls.role} must: define them"
    if cls.Config.model_config.get("extra") != "forbid":
        return (
            f"has a config class {cls.Config.__name__} that accepts keys it does not "
            "define (model_config extra is not 'forbid'), so a misspelled option would be "
            "ignored: leave 'extra' as ComponentConfig sets it"
        )
    for attribute in ("requires", "produces"):
        value = getattr(cls, attribute)
        if not (isinstance(value, tuple | list) and all(isinstance(t, str) for t in value)):
            return (
                f"declares {attribute} = {value!r}, which is not a tuple of type names: "
                "write e.g. (TOKEN,), with the comma"
            )
    return None


_REGISTRY: Registry | None = None


def registry() -> Registry:
    """The process-wide registry with built-ins and plug-ins."""
    global _REGISTRY
    if _REGISTRY is None:
        from casflow.components.builtin import BUILTIN_COMPONENTS

        reg = Registry()
        for name, target in BUILTIN_COMPONENTS.items():
            reg.register(name, target)
        _REGISTRY = reg
    return _REGISTRY
