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


# Aliases (``*name``) make a small file expand into a huge one ("billion laughs":
# 387 bytes that expand to 10^9 values) or into itself. A workflow has a few
# hundred values; these bounds refuse such files at once, in constant memory.
MAX_VALUES = 10_000
MAX_DEPTH = 100
#: the tag PyYAML's composer gives the merge key "<<"
MERGE_TAG = "tag:yaml.org,2002:merge"


class _Walker:
    def __init__(self, out: LocatedYaml) -> None:
        self.out = out
        self.values = 0
        self.open: set[int] = set()  # nodes being walked: one seen again is an alias to itself

    def refuse(self, node: yaml.Node, message: str) -> YamlLoadError:
        return YamlLoadError(self.out.source, node.start_mark.line + 1, message)

    def merge(self, node: yaml.Node, path: Path_) -> dict[Any, Any]:
        """The mappings a merge key names, earlier ones first on a shared key."""
        out: dict[Any, Any] = {}
        for item in _merged_nodes(node):
            if not isinstance(item, yaml.MappingNode):
                raise self.refuse(item, "'<<' merges mappings: give it *name or [*a, *b]")
            for key, value in self.walk(item, path).items():
                out.setdefault(key, value)
        return out

    def walk(self, node: yaml.Node, path: Path_) -> Any:
        self.values += 1
        if self.values > MAX_VALUES:
            raise self.refuse(
                node,
                f"the YAML expands to more than {MAX_VALUES:,} values through its aliases "
                "(*name), as an alias bomb does; a workflow needs far fewer: write the values "
                "out instead of nesting aliases",
            )
        if len(path) > MAX_DEPTH:
            raise self.refuse(node, f"the YAML is nested more than {MAX_DEPTH} levels deep")
        if id(node) in self.open:
            raise self.refuse(
                node, "an alias (*name) refers to a value that contains it; remove the alias"
            )
        self.out.lines[path] = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            self.open.add(id(node))
            result: dict[Any, Any] = {}
            merged: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    raise self.refuse(
                        key_node, "a key must be a plain value, not a list or mapping"
                    )
                if key_node.tag == MERGE_TAG:
                    # "<<: *name" (or a list of them): the keys of those mappings, unless
                    # this mapping sets them itself (YAML's merge key, as PyYAML reads it)
                    for key, value in self.merge(value_node, path).items():
                        merged.setdefault(key, value)
                    continue
                key = _scalar(key_node)
                if key in result:
                    first = self.out.key_lines[path + (key,)]
                    raise self.refuse(
                        key_node,
                        f"duplicate key {key!r} (also at line {first}): a mapping holds each "
                        "key once; keep one of them",
                    )
                self.out.key_lines[path + (key,)] = key_node.start_mark.line + 1
                result[key] = self.walk(value_node, path + (key,))
            self.open.discard(id(node))
            return {**merged, **result} if merged else result
        if isinstance(node, yaml.SequenceNode):
            self.open.add(id(node))
            items = [self.walk(item, path + (i,)) for i, item in enumerate(node.value)]
            self.open.discard(id(node))
            return items
        return _scalar(node)


def _merged_nodes(node: yaml.Node) -> list[yaml.Node]:
    return list(node.value) if isinstance(node, yaml.SequenceNode) else [node]


def _scalar(node: yaml.Node) -> Any:
    # Resolve the scalar with the safe loader's own constructors (ints, bools, nulls).
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(node, deep=True)
    finally:
        loader.dispose()


def _check_depth(text: str, source: str) -> None:
    # The composer recurses once per level: thousands of "[" take seconds to reach
    # Python's recursion limit. The event stream is flat, so depth is checked there.
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                mark = event.start_mark
                raise YamlLoadError(
                    source,
                    mark.line + 1 if mark is not None else None,
                    f"the YAML is nested more than {MAX_DEPTH} levels deep",
                )
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _yaml_problem(exc: yaml.MarkedYAMLError) -> str:
    """PyYAML's problem, with where an unclosed bracket or quote opened (the problem's
    line is where the parser gave up, often lines later) and what to do about tabs."""
    problem = str(exc.problem or exc)
    if "'\\t'" in problem:  # PyYAML shows the character as '\t'
        return f"{problem}: YAML indents with spaces only; replace the tab with spaces"
    opened = exc.context_mark
    if (
        exc.context
        and opened is not None
        and exc.problem_mark is not None
        and opened.line != exc.problem_mark.line
    ):
        return f"{problem} ({exc.context} that starts at line {opened.line + 1}: is it closed?)"
    return problem


def load_located_yaml(text: str, source: str = "<string>") -> LocatedYaml:
    """Parse YAML text, keeping line numbers of keys and values."""
    out = LocatedYaml(data=None, source=source)
    try:
        _check_depth(text, source)
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        raise YamlLoadError(source, line, f"not valid YAML: {_yaml_problem(exc)}") from exc
    except yaml.YAMLError as exc:
        raise YamlLoadError(source, None, f"not valid YAML: {exc}") from exc
    except RecursionError:
        raise YamlLoadError(
            source, None, f"the YAML is nested more than {MAX_DEPTH} levels deep"
        ) from None
    if node is None:
        out.data = {}
        return out
    out.data = _Walker(out).walk(node, ())
    return out


def load_located_yaml_file(path: str | Path) -> LocatedYaml:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise YamlLoadError(str(path), None, "workflow file not found") from exc
    except IsADirectoryError as exc:
        raise YamlLoadError(
            str(path), None, "is a folder, not a workflow file; give the workflow's YAML file"
        ) from exc
    except OSError as exc:
        raise YamlLoadError(
            str(path), None, f"cannot read the workflow file: {exc.strerror or exc}"
        ) from exc
    except UnicodeDecodeError as exc:
        raise YamlLoadError(str(path), None, f"workflow file is not UTF-8: {exc}") from exc
    return load_located_yaml(text, source=str(path))
