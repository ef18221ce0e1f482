"""pyproject.toml declares every folder that ships files, so wheels never drop one and
the install prints no setuptools warning."""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAPPING = {
    "pipeline": "casflow.pipeline",
    "components": "casflow.components",
    "typesystem": "casflow.typesystem",
    "cas": "casflow.cas",
}


def _setuptools_config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def _shipped_files() -> dict[str, list[Path]]:
    """package name -> the files of its folder (no byte code, no hidden files)."""
    found: dict[str, list[Path]] = {}
    for folder, package in MAPPING.items():
        for path in sorted((ROOT / folder).rglob("*")):
            rel = path.relative_to(ROOT / folder)
            if (
                not path.is_file()
                or "__pycache__" in rel.parts
                or any(part.startswith(".") for part in rel.parts)
                or path.suffix == ".pyc"
            ):
                continue
            name = ".".join([package, *rel.parent.parts])
            found.setdefault(name, []).append(path)
    return found


def test_every_folder_with_code_or_data_is_a_listed_package() -> None:
    config = _setuptools_config()
    for package, folder in ((p, f) for f, p in MAPPING.items()):
        assert config["package-dir"][package] == folder
    listed = set(config["packages"])
    found = set(_shipped_files())
    assert found == listed, (
        f"missing from pyproject: {sorted(found - listed)}; stale: {sorted(listed - found)}"
    )


def test_every_data_file_is_matched_by_its_own_package_data() -> None:
    patterns = _setuptools_config()["package-data"]
    unmatched = [
        str(path.relative_to(ROOT))
        for package, files in _shipped_files().items()
        for path in files
        if path.suffix != ".py"
        and not any(fnmatch.fnmatch(path.name, p) for p in patterns.get(package, []))
    ]
    assert not unmatched, f"data files no package-data glob ships: {unmatched}"


def test_license_is_an_spdx_expression() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["license"] == "Apache-2.0"
    assert any(r.startswith("setuptools>=77") for r in project["build-system"]["requires"])


def _pip_warnings(tmp_path: Path, *args: str) -> list[str]:
    """Warning lines of ``pip -v ARGS ROOT``: with -v pip shows all the build backend
    prints, which is where setuptools warns (pip >= 25 shows its warnings even without)."""
    # With PYTHONDONTWRITEBYTECODE distutils logs "warning: byte-compiling is disabled".
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    result = subprocess.run(
        [sys.executable, "-m", "pip", "-v", *args, str(ROOT)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return [
        line
        for line in (result.stdout + result.stderr).splitlines()
        # in the words, not in a path (pipeline/document_warnings.py is copied)
        if "warn" in re.sub(r"\S*/\S*", "", line).lower()
        # this machine's pip configuration names local indexes that may not exist
        and "is ignored: it is neither a file nor a directory" not in line
    ]


@pytest.mark.slow
def test_wheel_builds_without_warnings_and_holds_every_file(tmp_path: Path) -> None:
    warnings = _pip_warnings(tmp_path, "wheel", "--no-deps", "-w", str(tmp_path))
    assert not warnings, "\n".join(warnings[:20])
    (wheel,) = tmp_path.glob("casflow-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        "casflow/" + "/".join([*package.split(".")[1:], path.name])
        for package, files in _shipped_files().items()
        for path in files
    }
    assert expected <= names, sorted(expected - names)[:10]


@pytest.mark.slow
def test_editable_install_prints_no_warning(tmp_path: Path) -> None:
    # into a prefix of its own, ignoring what is installed: without --ignore-installed pip
    # would uninstall the casflow of the environment running the tests
    warnings = _pip_warnings(
        tmp_path,
        "install",
        "--no-deps",
        "--ignore-installed",
        "--no-warn-script-location",
        "--prefix",
        str(tmp_path / "p"),
        "-e",
    )  # "-e" comes last: the project folder follows it
    assert not warnings, "\n".join(warnings[:20])
    assert list((tmp_path / "p").rglob("__editable__*casflow*"))


def _imported_top_level_modules() -> dict[str, str]:
    """Third-party top-level module -> a file importing it, over the shipped packages."""
    import ast

    found: dict[str, str] = {}
    for folder in MAPPING:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top != "casflow":
                        found.setdefault(top, str(path.relative_to(ROOT)))
    return found


@pytest.mark.slow
def test_every_imported_package_is_declared() -> None:
    # A package that arrives only through another one (scikit-learn through scispaCy)
    # disappears when that one changes its own dependencies.
    from importlib.metadata import packages_distributions

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = [*project["dependencies"]]
    for extra in project.get("optional-dependencies", {}).values():
        declared.extend(extra)
    names = {re.split(r"[<>=!~\[; ]", d, maxsplit=1)[0].lower() for d in declared}
    distributions = packages_distributions()
    missing = []
    for module, where in sorted(_imported_top_level_modules().items()):
        # a module of an extra that is not installed here is named like its distribution
        owners = {d.lower() for d in distributions.get(module, [])} or {module.lower()}
        if not owners & names:
            missing.append(f"{module} (imported in {where}; distribution {sorted(owners)})")
    assert missing == [], "declare in pyproject.toml: " + "; ".join(missing)
