"""pyproject.toml lists every package folder, so wheels never drop one."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAPPING = {
    "pipeline": "casflow.pipeline",
    "components": "casflow.components",
    "typesystem": "casflow.typesystem",
    "cas": "casflow.cas",
}


def test_every_package_folder_is_listed() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    found = set()
    for folder, package in MAPPING.items():
        assert config["package-dir"][package] == folder
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            found.add(".".join([package, *rel.parts]) if rel.parts else package)
    assert found == listed, f"missing from pyproject: {sorted(found - listed)}; stale: {sorted(listed - found)}"


def test_no_top_level_casflow_init() -> None:
    # casflow is a namespace package: no folder may claim it alone.
    assert not (ROOT / "casflow").exists()
