"""The import boundaries of docs/architecture.md, checked on the source.

The engine (pipeline/) knows components only through the registry's table of
built-ins, so a component can be added, moved or removed without touching the
engine; the CAS helpers (cas/) and the type system know neither. Components use
of the engine only the modules docs/architecture.md lists.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: The one engine module allowed to name casflow.components, and what it may import.
REGISTRY_TABLE = ("pipeline/registry.py", "casflow.components.builtin")


def imports(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` of every import in the file, those inside functions included."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            # ``from casflow import components`` names the package through an alias
            found.extend((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)
    return found


def violations(folder: str, forbidden: tuple[str, ...]) -> list[str]:
    bad = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        for line, module in imports(path):
            table_file, table_module = REGISTRY_TABLE
            if relative == table_file and (
                module == table_module or module.startswith(table_module + ".")
            ):
                continue
            if any(module == f or module.startswith(f + ".") for f in forbidden):
                bad.append(f"{relative}:{line} imports {module}")
    return bad


@pytest.mark.parametrize(
    ("folder", "forbidden"),
    [
        ("pipeline", ("casflow.components",)),
        ("cas", ("casflow.pipeline", "casflow.components")),
        ("typesystem", ("casflow.pipeline", "casflow.components", "casflow.cas")),
    ],
)
def test_import_boundaries(folder: str, forbidden: tuple[str, ...]) -> None:
    assert violations(folder, forbidden) == []


#: What components/ may import from casflow.pipeline (docs/architecture.md's table);
#: of ``training`` only these names, the driver being the engine's.
COMPONENT_PIPELINE_MODULES = {
    "component",
    "counts",
    "files",
    "fingerprints",
    "gold_sources",
    "locks",
    "jvm",
    "uima_java",
    "journal",
    "packed",
    "significance",
    "training",
}
COMPONENT_TRAINING_NAMES = {"LogLines", "TrainingDataError"}


def pipeline_violations(folder: Path) -> list[str]:
    bad = []
    for path in sorted(folder.rglob("*.py")):
        relative = path.relative_to(folder.parent).as_posix()
        for line, module in imports(path):
            # ``from casflow.pipeline import x`` also yields the bare package; x is checked
            parts = module.split(".")
            if parts[:2] != ["casflow", "pipeline"] or len(parts) < 3:
                continue
            if parts[2] not in COMPONENT_PIPELINE_MODULES or (
                parts[2] == "training"
                and len(parts) > 3
                and parts[3] not in COMPONENT_TRAINING_NAMES
            ):
                bad.append(f"{relative}:{line} imports {module}")
    return bad


def test_components_import_from_the_pipeline_only_what_the_table_lists() -> None:
    assert pipeline_violations(ROOT / "components") == [], "see docs/architecture.md"


def test_the_pipeline_check_refuses_the_training_driver(tmp_path: Path) -> None:
    folder = tmp_path / "components"
    folder.mkdir()
    (folder / "m.py").write_text(
        "from casflow.pipeline.training import LogLines, train_workflow\n"
        "from casflow.pipeline import runner\n",
        encoding="utf-8",
    )
    bad = [b.split(" imports ")[1] for b in pipeline_violations(folder)]
    assert bad == ["casflow.pipeline.training.train_workflow", "casflow.pipeline.runner"]


def test_the_check_sees_imports_inside_functions(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "def f():\n    from casflow.components.evaluators.base import CasEvaluator\n"
        "from casflow import components\n",
        encoding="utf-8",
    )
    assert (2, "casflow.components.evaluators.base") in imports(module)
    assert (3, "casflow.components") in imports(module)


def test_the_registry_table_is_the_engine_s_only_way_to_components() -> None:
    assert (REGISTRY_TABLE[1]) in {m for _, m in imports(ROOT / REGISTRY_TABLE[0])}


def _assigns_hint(node: ast.ClassDef) -> bool:
    """``hint = ...`` in the class body, or ``self.hint = ...`` in one of its methods."""
    for item in node.body:
        if isinstance(item, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "hint" for t in item.targets
        ):
            return True
    for item in ast.walk(node):
        if isinstance(item, ast.Assign) and any(
            isinstance(t, ast.Attribute)
            and t.attr == "hint"
            and isinstance(t.value, ast.Name)
            and t.value.id == "self"
            for t in item.targets
        ):
            return True
    return False


def test_exceptions_with_a_hint_are_document_errors() -> None:
    # The engine reads a hint only from a DocumentError (the contract declares it):
    # a hint on any other exception would never reach the run report.
    bad = []
    for folder in ("pipeline", "components"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if not isinstance(node, ast.ClassDef) or not _assigns_hint(node):
                    continue
                bases = {b.id if isinstance(b, ast.Name) else ast.unparse(b) for b in node.bases}
                if node.name != "DocumentError" and "DocumentError" not in bases:
                    bad.append(f"{path.relative_to(ROOT)}: {node.name}")
    assert bad == [], "subclass casflow.pipeline.component.DocumentError: " + ", ".join(bad)
