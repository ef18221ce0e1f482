"""The README's plug-in, exactly as written there: its files are taken from the README,
built and installed by pip (into a folder of its own on PYTHONPATH, so the environment
running the tests is left alone), then listed and run in the README's workflow by the
casflow command."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import cassis
import pytest

from casflow.typesystem import GENE_MENTION, load_typesystem

ROOT = Path(__file__).resolve().parent.parent
CASFLOW = Path(sys.executable).parent / "casflow"


def readme_files() -> dict[str, str]:
    """The README plug-in section's code blocks that start with a ``# <path>`` line."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Writing a component plug-in", 1)[1].split("\n## ", 1)[0]
    files = {}
    for block in re.findall(r"^```\w+\n(.*?)^```", section, re.S | re.M):
        first, _, rest = block.partition("\n")
        if re.fullmatch(r"# [\w./-]+", first):
            # a pyproject or workflow keeps its first line as a comment; so may a module
            files[first[2:]] = block
    return files


def test_the_readme_section_holds_the_whole_plugin() -> None:
    assert set(readme_files()) == {
        "casflow-gene-list/pyproject.toml",
        "casflow-gene-list/casflow_gene_list/__init__.py",
        "genes.yaml",
    }


@pytest.mark.slow
def test_the_readme_plugin_installs_and_runs_in_its_workflow(tmp_path: Path) -> None:
    for relative, text in readme_files().items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    site = tmp_path / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(site),
         str(tmp_path / "casflow-gene-list")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert install.returncode == 0, install.stdout[-2000:] + install.stderr[-2000:]
    env = {**os.environ, "PYTHONPATH": str(site)}

    listed = subprocess.run(
        [str(CASFLOW), "components", "genelist.genes.v1"],
        capture_output=True, text=True, check=False, env=env, cwd=ROOT,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert "genelist.genes.v1  [processor, entry point from casflow-gene-list]" in listed.stdout
    assert "config names (list[str], required)" in listed.stdout

    # The workflow names its input relative to the repository root, as the README runs it.
    out = tmp_path / "out"
    run = subprocess.run(
        [str(CASFLOW), "run", str(tmp_path / "genes.yaml"), "--output", str(out), "--quiet"],
        capture_output=True, text=True, check=False, env=env, cwd=ROOT,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    cas = cassis.load_cas_from_xmi(
        (out / "xmi" / "example-abstract.xmi").read_text("utf-8"), typesystem=load_typesystem()
    )
    genes = [(m.get_covered_text(), m.value) for m in cas.select(GENE_MENTION)]
    assert genes == [
        ("Sonic hedgehog", "GENE"),
        ("Shh", "GENE"),
        ("Shh", "GENE"),
        ("Gli2", "GENE"),
        ("Shh", "GENE"),
    ]
