from __future__ import annotations

import textwrap
from pathlib import Path

import cassis
import pytest

from casflow.pipeline.cli import main
from casflow.pipeline.validation import WorkflowValidationError
from casflow.pipeline.workflow import load_workflow, load_workflow_text
from casflow.typesystem import load_typesystem


@pytest.fixture()
def inputs(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.txt").write_text("A short text.\n", encoding="utf-8")
    return folder


def _errors(text: str, inputs: Path) -> list[str]:
    with pytest.raises(WorkflowValidationError) as info:
        load_workflow_text(textwrap.dedent(text).replace("INPUT", str(inputs)), source="wf.yaml")
    return [issue.format("wf.yaml") for issue in info.value.issues]


def test_three_mistakes_are_reported_together_with_lines(
    inputs: Path, test_components: None
) -> None:
    errors = _errors(
        """\
        reader:
          component: text.reader.v1
          config:
            input: INPUT
            patern: "*.txt"
        components:
          - component: test.constant_tagger.v1
        writers:
          - component: xmi.writter.v1
        """,
        inputs,
    )
    assert len(errors) == 3, errors
    assert errors[0].startswith(
        "wf.yaml:5: reader -> config -> patern: unknown key 'patern'. Did you mean 'pattern'?"
    )
    assert errors[1].startswith("wf.yaml:7: components -> 0 -> component:")
    assert "requires Token" in errors[1]
    assert errors[2].startswith(
        "wf.yaml:9: writers -> 0 -> component: unknown component 'xmi.writter.v1'"
    )
    assert "Did you mean 'xmi.writer.v1'" in errors[2]


def test_wrong_value_type_and_unknown_top_level_key(inputs: Path) -> None:
    errors = _errors(
        """\
        reader:
          component: text.reader.v1
          config: {input: INPUT}
        run:
          jobs: many
        evaluatorz: []
        """,
        inputs,
    )
    assert any(e.startswith("wf.yaml:5: run -> jobs:") for e in errors), errors
    assert any(
        e.startswith("wf.yaml:6: evaluatorz: unknown key 'evaluatorz'. Did you mean 'evaluators'?")
        for e in errors
    )


def test_view_read_before_written(inputs: Path, test_components: None) -> None:
    errors = _errors(
        """\
        reader:
          component: text.reader.v1
          config: {input: INPUT}
        components:
          - component: test.whitespace_tokenizer.v1
            view: system
          - component: test.constant_tagger.v1
            view: sytem
        """,
        inputs,
    )
    assert len(errors) == 1
    assert errors[0].startswith("wf.yaml:7: components -> 1 -> component:")
    assert "view 'sytem', which nothing before it writes" in errors[0]


def test_requirement_met_in_same_view(inputs: Path, test_components: None) -> None:
    workflow = load_workflow_text(
        textwrap.dedent(
            f"""\
            reader:
              component: text.reader.v1
              config: {{input: {inputs}}}
            components:
              - component: test.whitespace_tokenizer.v1
                view: system
              - component: test.constant_tagger.v1
                view: system
            """
        ),
        source="wf.yaml",
    )
    assert workflow.views() == ["_InitialView", "system"]
    # Defaults are filled in the resolved workflow.
    assert workflow.resolved["components"][1]["config"] == {"tag": "NN"}
    assert workflow.resolved["run"]["jobs"] == 1


def test_missing_input_is_reported_before_the_run(tmp_path: Path) -> None:
    errors = _errors(
        """\
        reader:
          component: text.reader.v1
          config: {input: INPUT}
        """,
        tmp_path / "nowhere",
    )
    assert len(errors) == 1 and "is not a file, folder, glob or @list file" in errors[0]


def test_yaml_syntax_error_has_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("reader:\n  component: text.reader.v1\n  config: [unclosed\n", encoding="utf-8")
    with pytest.raises(WorkflowValidationError) as info:
        load_workflow(path)
    assert info.value.issues[0].line is not None


def test_cli_validate_exit_status(
    tmp_path: Path, inputs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(
        f"reader:\n  component: text.reader.v1\n  config: {{input: {inputs}}}\n", encoding="utf-8"
    )
    assert main(["validate", str(good)]) == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        f"reader:\n  component: text.reader.v1\n  config: {{input: {inputs}, encodin: x}}\nwriters:\n  - component: nope.v1\n",
        encoding="utf-8",
    )
    assert main(["validate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "2 problems" in err and f"{bad}:3:" in err and f"{bad}:5:" in err


def test_an_invalid_reader_setting_is_reported_once(inputs: Path, test_components: None) -> None:
    # The reader's error is the root cause: the views it would have written are not
    # reported again for every later step.
    errors = _errors(
        """\
        reader:
          component: craft.reader.v1
          view: gold
          config: {split: tset, layers: [tokens]}
        components:
          - component: test.constant_tagger.v1
            view: gold
        evaluators:
          - component: eval.tokens.v1
            config: {gold_view: gold, system_views: [gold]}
        """,
        inputs,
    )
    assert len(errors) == 1, errors
    assert errors[0].startswith("wf.yaml:4: reader -> config -> split:"), errors


def test_two_evaluators_with_one_label_are_refused_with_both_lines(
    inputs: Path, test_components: None
) -> None:
    # Results are keyed by label: the second evaluator's scores would replace the first's.
    errors = _errors(
        """\
        reader:
          component: text.reader.v1
          config: {input: INPUT}
        components:
          - component: test.whitespace_tokenizer.v1
          - component: test.whitespace_tokenizer.v1
            view: a
          - component: test.whitespace_tokenizer.v1
            view: b
        evaluators:
          - component: eval.tokens.v1
            config: {gold_view: _InitialView, system_views: [a]}
          - component: eval.tokens.v1
            config: {gold_view: b, system_views: [a]}
        """,
        inputs,
    )
    assert len(errors) == 1, errors  # one component in three views needs no id
    assert errors[0].startswith(
        "wf.yaml:13: evaluators -> 1 -> component: label 'eval.tokens.v1' is also the label "
        "of evaluators -> 0 (line 11)"
    ), errors
    assert "give each step its own 'id:'" in errors[0]


def test_two_steps_given_one_id_are_refused(inputs: Path, test_components: None) -> None:
    errors = _errors(
        """\
        reader:
          component: text.reader.v1
          config: {input: INPUT}
        components:
          - component: test.whitespace_tokenizer.v1
            id: step
          - component: test.constant_tagger.v1
            id: step
        """,
        inputs,
    )
    assert errors == [
        "wf.yaml:8: components -> 1 -> id: label 'step' is also the label of components -> 0 "
        "(line 6): time per stage and failures are reported by label, so one would hide the "
        "other; give each step its own 'id:'"
    ]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("name: 123", "wf.yaml:1: name: Input should be a valid string (got 123)"),
        ("description: [a, b]", "wf.yaml:1: description: Input should be a valid string"),
    ],
)
def test_a_name_or_description_that_is_not_text_is_an_issue(
    inputs: Path, line: str, expected: str
) -> None:
    errors = _errors(
        f"{line}\nreader: {{component: text.reader.v1, config: {{input: INPUT}}}}\n", inputs
    )
    assert len(errors) == 1 and errors[0].startswith(expected), errors


@pytest.mark.parametrize("timeout", ["1e10", ".inf"])
def test_a_timeout_no_timer_can_hold_is_refused(inputs: Path, timeout: str) -> None:
    errors = _errors(
        f"reader: {{component: text.reader.v1, config: {{input: INPUT}}}}\nrun: {{timeout: {timeout}}}\n",
        inputs,
    )
    assert len(errors) == 1 and errors[0].startswith(
        "wf.yaml:2: run -> timeout: Input should be less than or equal to 1000000"
    ), errors


def test_max_failures_zero_is_refused(inputs: Path) -> None:
    # 1 stops at the first failed document; 0 would stop before any.
    errors = _errors(
        "reader: {component: text.reader.v1, config: {input: INPUT}}\nrun: {max_failures: 0}\n",
        inputs,
    )
    assert len(errors) == 1 and errors[0].startswith("wf.yaml:2: run -> max_failures:"), errors


def test_command_line_values_are_blamed_on_their_options(
    tmp_path: Path, inputs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wf = tmp_path / "wf.yaml"
    wf.write_text(
        f"reader:\n  component: text.reader.v1\n  config: {{input: {inputs}}}\nrun:\n  progress: false\n",
        encoding="utf-8",
    )
    assert main(["validate", str(wf), "--jobs", "0", "--timeout", "-5"]) == 2
    err = capsys.readouterr().err
    assert f"{wf}: --jobs: Input should be greater than or equal to 1 (got 0)" in err
    assert f"{wf}: --timeout: Input should be greater than 0" in err
    assert f"{wf}:" + "5" not in err, err  # not the run section's line
    no_input = tmp_path / "bc2.yaml"
    no_input.write_text("reader:\n  component: bc2gm.reader.v1\n", encoding="utf-8")
    assert main(["validate", str(no_input), "--input", str(inputs)]) == 2
    err = capsys.readouterr().err
    assert f"{no_input}: --input: the reader bc2gm.reader.v1 has no 'input' option" in err, err
    assert "reader -> config -> input" not in err


def test_a_scheduler_without_the_dask_backend_is_refused(
    tmp_path: Path, inputs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wf = tmp_path / "wf.yaml"
    wf.write_text(
        f"reader:\n  component: text.reader.v1\n  config: {{input: {inputs}}}\n", encoding="utf-8"
    )
    assert main(["validate", str(wf), "--scheduler", "tcp://127.0.0.1:8786"]) == 2
    assert "--scheduler: a scheduler is used by backend 'dask' only" in capsys.readouterr().err
    args = ["--scheduler", "tcp://127.0.0.1:8786", "--backend", "dask"]
    assert main(["validate", str(wf), *args]) == 0


def test_a_writer_of_a_view_nothing_writes_is_an_issue(inputs: Path, test_components: None) -> None:
    errors = _errors(
        """\
        reader:
          component: text.reader.v1
          config: {input: INPUT}
        components:
          - component: test.whitespace_tokenizer.v1
            view: system
        writers:
          - component: xmi.writer.v1
            view: sytem
          - component: xmi.writer.v1
            view: system
        """,
        inputs,
    )
    assert len(errors) == 1, errors
    assert errors[0].startswith(
        "wf.yaml:9: writers -> 0 -> view: 'xmi.writer.v1' writes out view 'sytem', which "
        "nothing before it writes (views written: _InitialView, system). Did you mean 'system'?"
    ), errors


def test_a_writer_of_a_view_the_reader_writes_is_valid(tmp_path: Path) -> None:
    # The gold view is the reader's; the initial view exists in every CAS.
    folder = tmp_path / "xmi"
    folder.mkdir()
    cas = cassis.Cas(typesystem=load_typesystem())
    cas.create_view("gold").sofa_string = "Text."
    (folder / "d.xmi").write_text(cas.to_xmi(), encoding="utf-8")
    load_workflow_text(
        f"""\
reader:
  component: xmi.reader.v1
  view: gold
  config: {{input: "{folder}", views: {{gold: []}}}}
writers:
  - {{component: xmi.writer.v1, view: gold}}
  - {{component: xmi.writer.v1, view: _InitialView, id: initial}}
""",
        source="wf.yaml",
    )


def test_an_output_folder_inside_the_input_folder_is_refused(inputs: Path) -> None:
    errors = _errors(
        f"""\
        reader: {{component: text.reader.v1, config: {{input: INPUT}}}}
        run: {{output: "{inputs / "out"}"}}
        """,
        inputs,
    )
    assert len(errors) == 1 and "is inside the input folder" in errors[0], errors


def test_two_writers_writing_the_same_files_are_refused(inputs: Path) -> None:
    text = f"""\
        reader: {{component: text.reader.v1, config: {{input: INPUT}}}}
        components:
          - component: sentences.rules.v1
          - {{component: tokens.fine.v1, config: {{use_existing_sentences: true}}}}
        writers:
          - {{component: xmi.writer.v1}}
          - {{component: conllu.writer.v1, config: {{folder: same}}}}
          - SECOND
        run: {{output: "{inputs.parent / "out"}"}}
        """
    bio = "{component: bio.writer.v1, id: second, config: {folder: FOLDER, extension: .conllu}}"
    (error,) = _errors(text.replace("SECOND", bio.replace("FOLDER", "same")), inputs)
    assert error.startswith("wf.yaml:8: writers -> 2: second writes ")
    assert "same/document.conllu" in error and "writers -> 1" in error
    # another folder; or the same writer twice, which writes the same content
    for second in (
        bio.replace("FOLDER", "other"),
        "{component: conllu.writer.v1, id: second, config: {folder: same}}",
    ):
        load_workflow_text(
            textwrap.dedent(text).replace("INPUT", str(inputs)).replace("SECOND", second),
            source="wf.yaml",
        )


def test_sentences_or_tokens_made_again_in_a_view_that_has_them_are_refused(
    inputs: Path,
) -> None:
    text = """\
        reader: {component: text.reader.v1, config: {input: INPUT}}
        components:
          - component: sentences.rules.v1
          - {component: tokens.fine.v1, config: {use_existing_sentences: true}}
          - {component: conllu.import.v1, view: p1, config: {path: "p1/{doc_id}.conllu"}}
          - {component: conllu.import.v1, view: p2, config: {path: "p2/{doc_id}.conllu"}}
          - SECOND
        """
    (error,) = _errors(text.replace("SECOND", "{component: sentences.rules.v1, id: again}"), inputs)
    assert error.startswith("wf.yaml:7: components -> 4 -> component: 'sentences.rules.v1' ")
    assert "writes Sentence into view '_InitialView', which already holds Sentence" in error
    (error,) = _errors(text.replace("SECOND", "{component: tokens.fine.v1, id: again}"), inputs)
    assert "writes Token into view '_InitialView', which already holds Token" in error
    # in a view of its own, building on what is there, or a combiner (which takes the
    # target view's own sentences and tokens where it has them), it is valid
    for second in (
        "{component: sentences.rules.v1, id: again, view: other}",
        "{component: spacy.pipeline.v1, config: {model: 'casflow:craft_syntax', "
        "use_existing_sentences: true, use_existing_tokens: true, layers: [pos]}}",
        "{component: combine.dependencies.v1, config: {members: [p1, p2]}}",
    ):
        load_workflow_text(
            textwrap.dedent(text).replace("INPUT", str(inputs)).replace("SECOND", second),
            source="wf.yaml",
        )


def test_a_check_that_raises_is_a_problem_of_its_step(
    inputs: Path, test_components: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.helpers.components import ConstantTagger

    workflow = """\
        reader:
          component: text.reader.v1
          config: {input: INPUT}
        components:
          - component: test.whitespace_tokenizer.v1
          - component: test.constant_tagger.v1
        """

    def unreadable(cls: type, config: object, context: object) -> list[str]:
        raise ValueError("model.json is damaged")

    def buggy(cls: type, config: object, context: object) -> list[str]:
        raise KeyError("rules")

    monkeypatch.setattr(ConstantTagger, "check_config", classmethod(unreadable))
    (error,) = _errors(workflow, inputs)
    assert error.startswith("wf.yaml:6: components -> 1 -> config:")
    assert "'test.constant_tagger.v1': model.json is damaged" in error
    monkeypatch.setattr(ConstantTagger, "check_config", classmethod(buggy))
    (error,) = _errors(workflow, inputs)
    assert "KeyError: 'rules'" in error and "a bug in the component's check" in error


def test_a_combiner_writing_into_one_of_its_members_is_refused(inputs: Path) -> None:
    errors = _errors(
        """\
        reader:
          component: text.reader.v1
          config: {input: INPUT}
        components:
          - {component: view.copy.v1, view: a, config: {from_view: _InitialView}}
          - {component: view.copy.v1, view: b, config: {from_view: _InitialView}}
          - component: combine.mentions.v1
            view: a
            config: {members: [a, b], type: GeneMention}
        """,
        inputs,
    )
    assert any(
        e.startswith("wf.yaml:8: components -> 2 -> view:") and "also one of its members" in e
        for e in errors
    ), errors


def test_a_writers_step_view_it_does_not_write_is_refused(inputs: Path) -> None:
    # conllu.writer.v1 writes the view its config names: the step's view alone was
    # ignored, and the initial view (empty) written out without a word.
    base = """\
        reader: {component: text.reader.v1, config: {input: INPUT}}
        components:
          - {component: sentences.rules.v1, view: system}
          - {component: tokens.fine.v1, view: system}
        writers:
        """
    errors = _errors(base + "  - {component: conllu.writer.v1, view: system}\n", inputs)
    assert errors == [
        "wf.yaml:6: writers -> 0 -> view: 'conllu.writer.v1' does not use the step's view "
        "'system': it reads the views its config names (_InitialView); name 'system' in its "
        "config instead ('casflow components conllu.writer.v1' lists its options) and leave "
        "out 'view:'"
    ], errors
    text = base + "  - {component: conllu.writer.v1, view: system, config: {view: system}}\n"
    load_workflow_text(textwrap.dedent(text).replace("INPUT", str(inputs)), source="wf.yaml")


def test_an_evaluators_step_view_it_does_not_score_is_refused(inputs: Path) -> None:
    errors = _errors(
        """\
        reader: {component: text.reader.v1, view: gold, config: {input: INPUT}}
        components:
          - {component: sentences.rules.v1, view: gold}
          - {component: sentences.rules.v1, view: system}
        evaluators:
          - component: eval.sentences.v1
            view: sytem
            config: {gold_view: gold, system_views: [system]}
        """,
        inputs,
    )
    assert len(errors) == 1, errors
    assert errors[0].startswith(
        "wf.yaml:7: evaluators -> 0 -> view: 'eval.sentences.v1' does not use the step's "
        "view 'sytem': it reads the views its config names (gold, system)"
    ), errors


def test_a_view_read_before_the_step_that_writes_it_names_that_step(inputs: Path) -> None:
    errors = _errors(
        """\
        reader: {component: text.reader.v1, config: {input: INPUT}}
        components:
          - {component: view.copy.v1, view: copy, config: {from_view: system}}
          - {component: sentences.rules.v1, view: system}
        """,
        inputs,
    )
    assert len(errors) == 1, errors
    assert errors[0].endswith(
        "'view.copy.v1' reads view 'system', which nothing before it writes (views written: "
        "_InitialView); components -> 1 (line 4) writes it later: move this step after that one"
    ), errors


def test_a_view_a_step_reads_and_writes_itself_is_never_its_own_later_writer(
    inputs: Path,
) -> None:
    # A copy from view 'sys' into view 'sys' was told "components -> 0 writes it later:
    # move this step after that one", naming itself.
    alone = _errors(
        """\
        reader: {component: text.reader.v1, config: {input: INPUT}}
        components:
          - {component: view.copy.v1, view: sys, config: {from_view: sys}}
        """,
        inputs,
    )
    assert len(alone) == 1, alone
    assert "writes it later" not in alone[0], alone
    assert alone[0].endswith("Fix the view name, or add a step that writes it"), alone
    with_a_later_writer = _errors(
        """\
        reader: {component: text.reader.v1, config: {input: INPUT}}
        components:
          - {component: view.copy.v1, view: sys, config: {from_view: sys}}
          - {component: sentences.rules.v1, view: sys}
        """,
        inputs,
    )
    assert len(with_a_later_writer) == 1, with_a_later_writer
    assert with_a_later_writer[0].endswith(
        "components -> 1 (line 4) writes it later: move this step after that one"
    ), with_a_later_writer


def test_type_names_a_plugin_declares_wrongly_say_what_to_write(
    inputs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from casflow.pipeline import registry as registry_module
    from casflow.pipeline.component import Processor

    class ShortNames(Processor):
        name = "audit.short_names.v1"
        requires = ("Token",)
        produces = ("org.example.Acronym",)

        def process(self, view: cassis.Cas) -> None:
            pass

    monkeypatch.setattr(registry_module, "_REGISTRY", None)
    registry_module.registry().register(ShortNames.name, ShortNames, origin="tests")
    errors = _errors(
        """\
        reader: {component: text.reader.v1, config: {input: INPUT}}
        components:
          - {component: tokens.fine.v1}
          - {component: audit.short_names.v1}
        """,
        inputs,
    )
    assert errors == [
        "wf.yaml:4: components -> 1 -> component: 'audit.short_names.v1' (tests) declares type "
        "names the type system does not know: Token, org.example.Acronym; write "
        "de.tudarmstadt.ukp.dkpro.core.api.segmentation.type.Token for Token; install the "
        "plug-in that adds org.example.Acronym, or add them with a type-system plug-in "
        "(entry point group casflow.typesystems)"
    ], errors


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "reader:\n\tcomponent: text.reader.v1\n",
            "wf.yaml:2: not valid YAML: found character '\\t' that cannot start any token: "
            "YAML indents with spaces only; replace the tab with spaces",
        ),
        (
            "reader:\n  component: text.reader.v1\n  config: {input: a.txt\nwriters: []\n",
            "wf.yaml:4: not valid YAML: expected ',' or '}', but got ':' (while parsing a flow "
            "mapping that starts at line 3: is it closed?)",
        ),
        (
            "reader:\n  component: text.reader.v1\n  view: gold\n  component: xmi.reader.v1\n",
            "wf.yaml:4: duplicate key 'component' (also at line 2): a mapping holds each key "
            "once; keep one of them",
        ),
    ],
)
def test_yaml_mistakes_say_where_and_what_to_do(text: str, expected: str) -> None:
    with pytest.raises(WorkflowValidationError) as info:
        load_workflow_text(text, source="wf.yaml")
    assert [issue.format("wf.yaml") for issue in info.value.issues] == [expected]


def test_a_relative_glob_is_found_beside_the_workflow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As a relative file or folder is: from the working directory, else the workflow's
    # folder (it was taken from the working directory only, and matched nothing).
    project = tmp_path / "project"
    (project / "data").mkdir(parents=True)
    (project / "data" / "a.txt").write_text("A text.\n", encoding="utf-8")
    workflow = project / "wf.yaml"
    workflow.write_text(
        'reader: {component: text.reader.v1, config: {input: "data/*.txt"}}\n'
        'writers: [{component: xmi.writer.v1}]\nrun: {output: "../out"}\n',
        encoding="utf-8",
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    from casflow.pipeline.runner import RunOptions, run_workflow

    report = run_workflow(load_workflow(workflow), RunOptions(show_progress=False))
    assert report.counts["ok"] == 1
    assert (elsewhere.parent / "out" / "xmi" / "a.xmi").is_file()

    workflow.write_text(
        'reader: {component: text.reader.v1, config: {input: "data/*.nxml"}}\n', encoding="utf-8"
    )
    with pytest.raises(WorkflowValidationError) as info:
        load_workflow(workflow)
    # a glob names its files itself: the reader's folder pattern is not the reason
    assert [issue.message for issue in info.value.issues] == [
        "input 'data/*.nxml' matches no files (a relative path is taken from the working "
        "directory, else from the workflow file's folder; environment variables such as "
        "$HOME are not expanded)"
    ]


def test_validate_help_lists_its_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["validate", "--help"])
    out = capsys.readouterr().out
    assert "exit status:\n  0    the workflow is valid" in out and "\n  2    it is not" in out
