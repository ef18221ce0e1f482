"""The README's workflow examples, as written there: the workflow that shows every key
and the training workflow validate, and the validation output it quotes is what
``casflow validate`` prints. (The plug-in section has tests/test_readme_plugin.py.)"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from casflow.pipeline.cli import main

README = Path(__file__).resolve().parent.parent / "README.md"


def section(title: str) -> str:
    """The README's text under ``## title``, up to the next section."""
    text = README.read_text(encoding="utf-8")
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def first_yaml_block(text: str) -> str:
    match = re.search(r"^```yaml\n(.*?)^```", text, re.S | re.M)
    assert match, "no yaml block"
    return match.group(1)


def test_the_workflow_that_shows_every_key_validates(
    corpora_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "every-key.yaml"
    path.write_text(first_yaml_block(section("Workflow YAML")), encoding="utf-8")
    status = main(["validate", str(path)])
    printed = capsys.readouterr()
    assert status == 0, printed.out + printed.err
    assert "valid" in printed.out + printed.err


def test_the_training_workflow_validates(
    corpora_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "training.yaml"
    path.write_text(first_yaml_block(section("Training models")), encoding="utf-8")
    status = main(["train", str(path), "--validate-only"])
    printed = capsys.readouterr()
    assert status == 0, printed.out + printed.err
    assert "valid training workflow (train.spacy.syntax.v1)" in printed.out + printed.err


# A workflow with the three mistakes the README's validation example reports, each on
# the line the example names.
WF_WITH_THREE_PROBLEMS = """\
reader:
  component: text.reader.v1
  config:
    input: texts
    patern: "*.txt"
components:
  - component: tokens.nltk.treebank.v1
writers:
  - component: xmi.writter.v1
"""


def test_the_quoted_validation_output_is_what_validate_prints(tmp_path: Path) -> None:
    quoted = section("Workflow YAML").split("then exit with status 2:\n\n", 1)[1]
    quoted_lines = [line[4:] for line in quoted.split("\n\n", 1)[0].splitlines()]
    assert quoted_lines[0] == "3 problems in wf.yaml:", quoted_lines
    (tmp_path / "texts").mkdir()
    (tmp_path / "texts" / "a.txt").write_text("Shh binds Gli2.\n", encoding="utf-8")
    (tmp_path / "wf.yaml").write_text(WF_WITH_THREE_PROBLEMS, encoding="utf-8")
    # In a process of its own, as a user runs it: the suite's test components, added to
    # this process's registry by other tests, would change the count of components
    # the message names. From tmp_path: the messages name the file as it was given.
    printed = subprocess.run(
        [
            sys.executable,
            "-c",
            "from casflow.pipeline.cli import main; raise SystemExit(main())",
            "validate",
            "wf.yaml",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert printed.returncode == 2, printed.stderr
    said = (printed.stdout + printed.stderr).splitlines()
    assert said == quoted_lines, (
        "README.md, 'Validation': the quoted output is no longer what casflow validate "
        "prints; update the quote"
    )
