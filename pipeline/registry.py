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
from importlib.metadata import entry_points

from casflow.pipeline.component import Component

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
            "a plug-in cannot replace a built-in component: give the plug-in's a name of its "
            "own (entry point key and class name)"
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
        module_name, _, attr = target.partition(":")
        try:
            module = importlib.import_module(module_name)
            cls = module
            for part in attr.split("."):
                cls = getattr(cls, part)
        except Exception as exc:  # whatever a plug-in's import raises, not only ImportError
            raise ComponentLoadError(
                f"component {name!r} ({self._origins[name]}) cannot be loaded from {target!r}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        if not (isinstance(cls, type) and issubclass(cls, Component)):
            raise ComponentLoadError(
                f"{target!r} registered as {name!r} is not a casflow Component"
            )
        if getattr(cls, "name", None) != name:
            raise ComponentLoadError(
                f"{target!r} is registered as {name!r} but declares name {getattr(cls, 'name', None)!r}"
            )
        self._loaded[name] = cls
        return cls


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
