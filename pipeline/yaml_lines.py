"""YAML loading that remembers where every value came from.

Validation errors must point at the user's YAML (file and line), so the
workflow is composed into nodes first and a map ``path -> line`` is built
beside the plain Python data. Paths are tuples of keys and list indices, as in
pydantic's error locations.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

Path_ = tuple[str | int, ...]


@dataclass
class LocatedYaml:
    data: Any
    source: str
    lines: dict[Path_, int] = field(default_factory=dict)
    key_lines: dict[Path_, int] = field(default_factory=dict)

    def line_of(self, path: Path_) -> int | None:
        """Line of the value at ``path`` (or of its closest existing parent)."""
        path = tuple(path)
        while True:
            if path in self.key_lines:
                return self.key_lines[path]
            if path in self.lines:
                return self.lines[path]
            if not path:
                return None
            path = path[:-1]


class YamlLoadError(ValueError):
    def __init__(self, source: str, line: int | None, message: str) -> None:
        where = f"{source}:{line}" if line else source
        super().__init__(f"{where}: {message}")
        self.source = source
        self.line = line


def _walk(node: yaml.Node, path: Path_, out: LocatedYaml) -> Any:
    out.lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = (
                yaml.safe_load(yaml.serialize(key_node))
                if not isinstance(key_node, yaml.ScalarNode)
                else _scalar(key_node)
            )
            if key in result:
                raise YamlLoadError(
                    out.source, key_node.start_mark.line + 1, f"duplicate key {key!r}"
                )
            out.key_lines[path + (key,)] = key_node.start_mark.line + 1
            result[key] = _walk(value_node, path + (key,), out)
        return result
    if isinstance(node, yaml.SequenceNode):
        return [_walk(item, path + (i,), out) for i, item in enumerate(node.value)]
    return _scalar(node)


def _scalar(node: yaml.Node) -> Any:
    # Resolve the scalar with the safe loader's own constructors (ints, bools, nulls).
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(node, deep=True)
    finally:
        loader.dispose()


def load_located_yaml(text: str, source: str = "<string>") -> LocatedYaml:
    """Parse YAML text, keeping line numbers of keys and values."""
    out = LocatedYaml(data=None, source=source)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        raise YamlLoadError(source, line, f"not valid YAML: {exc.problem or exc}") from exc
    if node is None:
        out.data = {}
        return out
    out.data = _walk(node, (), out)
    return out


def load_located_yaml_file(path: str | Path) -> LocatedYaml:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise YamlLoadError(str(path), None, "workflow file not found") from exc
    except UnicodeDecodeError as exc:
        raise YamlLoadError(str(path), None, f"workflow file is not UTF-8: {exc}") from exc
    return load_located_yaml(text, source=str(path))
