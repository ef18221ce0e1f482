"""The runner under operations: one run per output folder, cleanup of only casflow's
own temporary files, output folder problems found before any document runs,
final files that cannot be written, the same workflow spelt differently."""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from casflow.pipeline import files
from casflow.pipeline.cli import main
from casflow.pipeline.journal import Journal
from casflow.pipeline.locks import OutputLock

CASFLOW = "import sys; from casflow.pipeline.cli import main; sys.exit(main(sys.argv[1:]))"


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(3):
        (folder / f"doc{i}.txt").write_text(f"Document {i} mentions p53.\n", encoding="utf-8")
    return folder


def _workflow(tmp_path: Path, corpus: Path, out: Path | str) -> Path:
    wf = tmp_path / "wf.yaml"
    wf.write_text(
        textwrap.dedent(
            f"""\
            reader:
              component: text.reader.v1
              config: {{input: "{corpus}"}}
            components:
              - component: test.whitespace_tokenizer.v1
            writers:
              - component: xmi.writer.v1
            run:
              output: "{out}"
              progress: false
            """
        ),
        encoding="utf-8",
    )
    return wf


def test_a_second_run_into_a_locked_folder_is_refused_naming_the_holder(
    tmp_path: Path, corpus: Path, test_components: None, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    wf = _workflow(tmp_path, corpus, out)
    holder = OutputLock(out)
    holder.acquire()
    try:
        assert main(["run", str(wf), "--quiet"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1
        assert f"{out} is in use by another casflow run (pid {os.getpid()} on " in err
        assert not (out / "xmi").exists()
    finally:
        holder.release()
    # The lock ends with its holder; then the folder is usable again.
    assert main(["run", str(wf), "--quiet"]) == 0
    assert len(list((out / "xmi").glob("*.xmi"))) == 3


def test_startup_cleanup_removes_only_casflow_temporary_files(
    tmp_path: Path, corpus: Path, test_components: None
) -> None:
    out = tmp_path / "out"
    (out / "xmi").mkdir(parents=True)
    (out / "notes").mkdir()
    ours = out / "xmi" / ".doc0.xmi.casflow-k3j_x9a2.tmp"
    theirs = [out / "xmi" / ".doc0.xmi.tmp", out / "notes" / ".draft.tmp", out / ".x.tmp"]
    for path in [ours, *theirs]:
        path.write_text("partial", encoding="utf-8")
    assert main(["run", str(_workflow(tmp_path, corpus, out)), "--quiet"]) == 0
    assert not ours.exists()
    assert all(path.exists() for path in theirs)


def test_atomic_writes_name_their_temporary_files_for_the_cleanup(tmp_path: Path) -> None:
    seen: list[str] = []
    real_replace = os.replace

    def spy(src: str, dst: str) -> None:
        seen.append(Path(src).name)
        real_replace(src, dst)

    os.replace = spy  # type: ignore[assignment]
    try:
        files.atomic_write_text(tmp_path / "a b.xmi", "x")
    finally:
        os.replace = real_replace  # type: ignore[assignment]
    (name,) = seen
    assert files.is_casflow_temporary(name), name
    assert not files.is_casflow_temporary(".a b.xmi.tmp")


# -- output folder problems ----------------------------------------------------------------


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    return err


def test_output_path_that_is_a_file_is_refused_before_anything_runs(
    tmp_path: Path, corpus: Path, test_components: None, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "out"
    target.write_text("not a folder", encoding="utf-8")
    wf = _workflow(tmp_path, corpus, target)
    assert main(["run", str(wf), "--quiet"]) == 2
    assert f"output folder {target} is a file, not a folder" in _one_line(capsys)
    under = target / "sub"
    assert main(["run", str(wf), "--output", str(under), "--quiet"]) == 2
    assert f"{under} cannot be created: {target} is a file" in _one_line(capsys)
    assert target.read_text("utf-8") == "not a folder"


def test_full_disk_is_refused_before_anything_runs(
    tmp_path: Path,
    corpus: Path,
    test_components: None,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = files.shutil.disk_usage

    def full(path: str) -> object:
        usage = real(path)
        return type(usage)(usage.total, usage.total, 0)

    monkeypatch.setattr(files.shutil, "disk_usage", full)
    out = tmp_path / "out"
    assert main(["run", str(_workflow(tmp_path, corpus, out)), "--quiet"]) == 2
    assert f"the disk holding output folder {out} is full (0 bytes free)" in _one_line(capsys)
    assert not out.exists()


def test_unwritable_or_read_only_output_is_refused(
    tmp_path: Path,
    corpus: Path,
    test_components: None,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parent = tmp_path / "parent"
    parent.mkdir()
    out = parent / "out"
    wf = _workflow(tmp_path, corpus, out)
    if os.geteuid() != 0:  # root writes anywhere; the read-only case below covers it
        parent.chmod(0o555)
        try:
            assert main(["run", str(wf), "--quiet"]) == 2
            assert "is not writable by this user (permission denied)" in _one_line(capsys)
        finally:
            parent.chmod(0o755)

    def read_only(*args: object, **kwargs: object) -> object:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(files.tempfile, "mkstemp", read_only)
    assert main(["run", str(wf), "--quiet"]) == 2
    assert f"{parent} is on a read-only file system" in _one_line(capsys)


# -- final files that cannot be written ------------------------------------------------------


def test_a_report_that_cannot_be_written_keeps_the_journal_and_the_resume(
    tmp_path: Path,
    corpus: Path,
    test_components: None,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from casflow.pipeline import run_report

    out = tmp_path / "out"
    wf = _workflow(tmp_path, corpus, out)

    def disk_full(path: Path, text: str) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    with monkeypatch.context() as patch:
        patch.setattr(run_report, "atomic_write_text", disk_full)
        assert main(["run", str(wf), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "could not write the run's final files" in err and "journal is intact" in err
    assert "run-report.json" in err and "Traceback" not in err
    journal = (out / ".casflow" / "journal.jsonl").read_text("utf-8").splitlines()
    assert sorted(json.loads(line)["doc_id"] for line in journal) == ["doc0", "doc1", "doc2"]
    assert main(["run", str(wf), "--quiet"]) == 0
    report = json.loads((out / "run-report.json").read_text("utf-8"))
    assert report["counts"]["skipped"] == 3


# -- the same workflow is the same workflow --------------------------------------------------


def test_the_same_input_spelt_differently_resumes(
    tmp_path: Path,
    corpus: Path,
    test_components: None,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    wf = _workflow(tmp_path, corpus, out)
    assert main(["run", str(wf), "--input", "in/", "--quiet"]) == 0
    for spelling in ("in", "./in", str(corpus), f"{corpus}/"):
        assert main(["run", str(wf), "--input", spelling, "--quiet"]) == 0, spelling
        report = json.loads((out / "run-report.json").read_text("utf-8"))
        assert report["counts"]["skipped"] == 3, spelling
    capsys.readouterr()


def test_a_really_different_workflow_is_refused_with_what_differs(
    tmp_path: Path, corpus: Path, test_components: None, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    wf = _workflow(tmp_path, corpus, out)
    assert main(["run", str(wf), "--quiet"]) == 0
    capsys.readouterr()
    other = tmp_path / "other.yaml"
    other.write_text(
        wf.read_text("utf-8").replace(
            "- component: test.whitespace_tokenizer.v1",
            "- component: test.whitespace_tokenizer.v1\n    id: tokens",
        ),
        "utf-8",
    )
    assert main(["run", str(other), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "holds the outputs of a different workflow" in err
    assert '  components -> 0 -> id: (absent) -> "tokens"' in err
    assert "--allow-changed-workflow" in err and "--overwrite" in err
    assert main(["run", str(other), "--allow-changed-workflow", "--quiet"]) == 0


# -- YAML that attacks the validator ------------------------------------------------------


def _bomb(levels: int, width: int = 9) -> str:
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels):
        refs = ", ".join([f"*l{level - 1}"] * width)
        lines.append(f"l{level}: &l{level} [{refs}]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_bomb(9), "expands to more than 10,000 values through its aliases"),  # 387 bytes
        (_bomb(24, 5), "expands to more than 10,000 values through its aliases"),  # about 1 KB
        (
            "reader: &r\n  component: text.reader.v1\n  config: {input: *r}\n",
            "refers to a value that contains it",
        ),
        ("a: &x [1, *x]\n", "refers to a value that contains it"),
        ("[" * 5000 + "]" * 5000 + "\n", "nested more than 100 levels deep"),
    ],
)
@pytest.mark.parametrize("command", ["validate", "run"])
def test_yaml_that_attacks_the_validator_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str, command: str
) -> None:
    import time

    wf = tmp_path / "attack.yaml"
    wf.write_text(text, encoding="utf-8")
    started = time.monotonic()
    assert main([command, str(wf)]) == 2
    # Refused before expanding: the smaller bomb alone expands to 9**9 values, which
    # takes far longer than this. The bound tells refusal from expansion, not speed
    # (1 s failed once in a CI run on a machine busy with two trainings: 1.1 s).
    assert time.monotonic() - started < 20.0
    assert message in _one_line(capsys)


def test_merge_keys_are_read_as_the_yaml_merge_spec_reads_them() -> None:
    # "<<: *name" repeats a step with changes (craft-combination.yaml does); it crashed
    # the line-tracking loader with a traceback.
    import yaml

    from casflow.pipeline.yaml_lines import load_located_yaml

    text = textwrap.dedent(
        """\
        base: &b {component: view.copy.v1, view: a, config: {from_view: gold}}
        more: &m {extra: 1, view: m}
        one: {<<: *b, view: b}
        two:
          <<: [*m, *b]
          config: {from_view: other}
        """
    )
    located = load_located_yaml(text, source="wf.yaml")
    pyyaml = yaml.safe_load(text)
    # PyYAML 6.0.4 lets the last of several merged mappings win for keys longer than
    # one character (yaml/pyyaml#953, against the merge-key spec); casflow follows
    # the spec (and PyYAML 6.0.3): earlier mappings win.
    pyyaml["two"]["view"] = "m"
    assert located.data == pyyaml
    assert located.data["one"] == {
        "component": "view.copy.v1",
        "view": "b",
        "config": {"from_view": "gold"},
    }
    assert located.data["two"]["view"] == "m"  # the first merged mapping wins
    assert located.key_lines[("one", "view")] == 3


def test_a_merge_key_without_a_mapping_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wf = tmp_path / "wf.yaml"
    wf.write_text("a: &a [1, 2]\nb: {<<: *a}\n", encoding="utf-8")
    assert main(["validate", str(wf)]) == 2
    assert "'<<' merges mappings" in _one_line(capsys)


def test_a_folder_given_as_the_workflow_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", str(tmp_path)]) == 2
    assert f"{tmp_path}: is a folder, not a workflow file" in _one_line(capsys)


def test_validate_finds_output_folder_problems_and_names_where_they_come_from(
    tmp_path: Path, corpus: Path, test_components: None, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    wf = _workflow(tmp_path, corpus, out)
    assert main(["validate", str(wf)]) == 0
    capsys.readouterr()
    out.mkdir()
    (out / "xmi").write_text("in the way", encoding="utf-8")  # the XMI writer's sub-folder
    assert main(["validate", str(wf)]) == 2
    line = _one_line(capsys)
    assert line.startswith(f"{wf}:9: run -> output: output folder {out / 'xmi'} is a file")
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    assert main(["validate", str(wf), "--output", str(blocker / "out")]) == 2
    line = _one_line(capsys)
    assert line.startswith(f"{wf}: --output: output folder {blocker / 'out'} cannot be created")


def test_a_bad_input_on_the_command_line_is_not_reported_against_a_yaml_line(
    tmp_path: Path, corpus: Path, test_components: None, capsys: pytest.CaptureFixture[str]
) -> None:
    wf = _workflow(tmp_path, corpus, tmp_path / "out")
    missing = tmp_path / "missing"
    assert main(["run", str(wf), "--input", str(missing), "--quiet"]) == 2
    line = _one_line(capsys)
    assert line.startswith(f"{wf}: --input: ") and str(missing) in line


def test_a_journal_that_cannot_be_appended_stops_the_run_and_the_next_resumes(
    tmp_path: Path,
    corpus: Path,
    test_components: None,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from casflow.pipeline.journal import Journal

    out = tmp_path / "out"
    wf = _workflow(tmp_path, corpus, out)
    wf.write_text(wf.read_text("utf-8").replace("run:", "run:\n  batch_size: 1"), "utf-8")
    real_append = Journal.append
    calls = []

    def append_then_fill_the_disk(self: Journal, entries: object) -> None:
        calls.append(1)
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_append(self, entries)  # type: ignore[arg-type]

    with monkeypatch.context() as patch:
        patch.setattr(Journal, "append", append_then_fill_the_disk)
        assert main(["run", str(wf), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "cannot append to the journal" in err and "Traceback" not in err
    report = json.loads((out / "run-report.json").read_text("utf-8"))
    assert "cannot append to the journal" in report["stopped_by"]
    assert main(["run", str(wf), "--quiet"]) == 0
    report = json.loads((out / "run-report.json").read_text("utf-8"))
    assert report["counts"]["skipped"] == 1 and report["counts"]["ok"] == 2


def _file_size_limit(limit: int) -> Callable[[], None]:
    """A child process's ``preexec_fn``: writes past ``limit`` bytes fail with EFBIG, as
    they fail with ENOSPC on a full disk (SIGXFSZ ignored: the write fails instead)."""

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return limited


def test_a_journal_whose_append_failed_closes_without_an_error(tmp_path: Path) -> None:
    """After an append failed (disk full), closing the journal wrote what was left in its
    buffer again and raised: the run ended in a traceback instead of its report."""
    code = textwrap.dedent(
        f"""\
        from casflow.pipeline.journal import Journal
        journal = Journal(__import__("pathlib").Path({str(tmp_path / "out")!r}))
        entries = [{{"doc_id": f"d{{i}}", "status": "ok", "pad": "x" * 300}} for i in range(10)]
        try:
            journal.append(entries)
        except OSError as exc:
            print("append:", exc.errno)
        journal.close()
        print("closed")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        preexec_fn=_file_size_limit(1000),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"append: {errno.EFBIG}", "closed"]
    # the torn last line is cut by the next run's first append
    Journal(tmp_path / "out").append([{"doc_id": "d9", "status": "ok"}])
    lines = (tmp_path / "out" / ".casflow" / "journal.jsonl").read_text().splitlines()
    assert [json.loads(line)["doc_id"] for line in lines] == ["d0", "d1", "d9"]


def test_a_disk_that_fills_up_ends_the_run_with_its_report_not_a_traceback(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(60):
        (folder / f"d{i:02d}.txt").write_text(f"Document {i} mentions p53.\n", encoding="utf-8")
    out = tmp_path / "out"
    wf = tmp_path / "wf.yaml"
    wf.write_text(
        textwrap.dedent(
            f"""\
            reader: {{component: text.reader.v1, config: {{input: "{folder}"}}}}
            components: [{{component: tokens.fine.v1}}]
            writers: [{{component: xmi.writer.v1}}]
            run: {{output: "{out}", batch_size: 4}}
            """
        )
    )
    command = [sys.executable, "-c", CASFLOW, "run", str(wf), "--quiet"]
    full = subprocess.run(
        command, preexec_fn=_file_size_limit(5000), capture_output=True, text=True
    )
    assert full.returncode == 1, full.stderr
    assert "Traceback" not in full.stderr, full.stderr
    assert "cannot append to the journal" in full.stderr
    report = json.loads((out / "run-report.json").read_text("utf-8"))
    assert "cannot append to the journal" in report["stopped_by"]
    again = subprocess.run(command, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    report = json.loads((out / "run-report.json").read_text("utf-8"))
    assert report["counts"]["skipped"] > 0
    assert report["counts"]["ok"] + report["counts"]["skipped"] == 60


def test_run_help_lists_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = capsys.readouterr().out
    assert "exit status:" in text
    for code in ("0 ", "1 ", "2 ", "130", "143"):
        assert f"\n  {code}" in text, code


@pytest.mark.slow
def test_workers_started_early_are_the_ones_the_run_uses(
    tmp_path: Path, corpus: Path, test_components: None
) -> None:
    from casflow.pipeline.runner import EarlyWorkers, run_workflow
    from casflow.pipeline.workflow import load_workflow

    builds = tmp_path / "builds.txt"
    wf = _workflow(tmp_path, corpus, tmp_path / "out")
    wf.write_text(
        wf.read_text("utf-8")
        .replace(
            "- component: test.whitespace_tokenizer.v1",
            f'- component: test.whitespace_tokenizer.v1\n    config: {{record_builds: "{builds}"}}',
        )
        .replace("run:", "run:\n  jobs: 2\n  batch_size: 1"),
        "utf-8",
    )
    workflow = load_workflow(wf)
    assert EarlyWorkers.start(workflow) is not None
    EarlyWorkers.wait()
    early = builds.read_text("utf-8").split()
    assert len(set(early)) == 2  # each worker built its chain before the run began
    report = run_workflow(workflow)
    assert report.counts["ok"] == 3
    # The run took the early workers over with their chains: nothing was built again.
    assert builds.read_text("utf-8").split() == early


def test_progress_prints_the_last_line_once(capsys: pytest.CaptureFixture[str]) -> None:
    from types import SimpleNamespace

    from casflow.pipeline.progress import Progress

    progress = Progress(total=None, log_every=0.0)
    for _ in range(3):
        progress.add_total()
    progress.listing_done()
    for _ in range(3):
        progress.update(SimpleNamespace(tokens=2, status="ok"))
    progress.close()
    lines = capsys.readouterr().err.splitlines()
    assert [line for line in lines if "3 of 3 processed" in line] == [lines[-1]]


@pytest.mark.parametrize("command", ["significance", "report"])
def test_significance_and_report_help_list_exit_statuses(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Scripts chaining casflow's commands read the statuses in --help, as for run,
    # validate, train and check-xmi.
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = capsys.readouterr().out
    assert "exit status:" in text
    for code in ("0 ", "2 "):
        assert f"\n  {code}" in text, code
