"""uima.engine.v1: a UIMA Java analysis engine of our own, compiled here against
uimaj-core, run through the bridge. Marked ``slow`` and ``java``; they skip when
java/javac or uimaj-core.jar is missing."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

import cassis
import pytest

from casflow.components.uima import engine as engine_module
from casflow.components.uima.engine import (
    UimaEngine,
    UimaEngineConfig,
    UimaEngineError,
    UimaOffsetWarning,
    uima_missing,
)
from casflow.pipeline.component import RunContext
from casflow.pipeline.registry import registry
from casflow.pipeline.uima_java import find_uima_jar
from casflow.typesystem import NAMED_ENTITY, SENTENCE, TOKEN, load_typesystem

pytestmark = [
    pytest.mark.slow,
    pytest.mark.java,
    pytest.mark.skipif(uima_missing() is not None, reason=str(uima_missing())),
]

# Splits at whitespace and writes one annotation of the configured type per word; a
# type with a "kind" feature gets "upper" or "lower" from the word's first character.
ANNOTATOR = """
import org.apache.uima.UimaContext;
import org.apache.uima.analysis_component.CasAnnotator_ImplBase;
import org.apache.uima.cas.CAS;
import org.apache.uima.cas.Feature;
import org.apache.uima.cas.Type;
import org.apache.uima.cas.text.AnnotationFS;
import org.apache.uima.resource.ResourceInitializationException;

public class SpaceTokenizer extends CasAnnotator_ImplBase {
  private String typeName;

  @Override
  public void initialize(UimaContext context) throws ResourceInitializationException {
    super.initialize(context);
    typeName = (String) context.getConfigParameterValue("TypeName");
  }

  @Override
  public void process(CAS cas) {
    Type type = cas.getTypeSystem().getType(typeName);
    Feature kind = type.getFeatureByBaseName("kind");
    String text = cas.getDocumentText();
    int i = 0;
    while (i < text.length()) {
      while (i < text.length() && Character.isWhitespace(text.charAt(i))) i++;
      int begin = i;
      while (i < text.length() && !Character.isWhitespace(text.charAt(i))) i++;
      if (i > begin) {
        AnnotationFS word = cas.createAnnotation(type, begin, i);
        if (kind != null) {
          word.setStringValue(kind,
              Character.isUpperCase(text.charAt(begin)) ? "upper" : "lower");
        }
        cas.addFsToIndexes(word);
      }
    }
  }
}
"""

# One annotation per UTF-16 unit that is not whitespace, as OpenNLP's tokenizer may cut
# a character beyond the BMP into its two halves.
UNIT_ANNOTATOR = """
import org.apache.uima.analysis_component.CasAnnotator_ImplBase;
import org.apache.uima.cas.CAS;
import org.apache.uima.cas.Type;

public class UnitTokenizer extends CasAnnotator_ImplBase {
  @Override
  public void process(CAS cas) {
    Type type = cas.getTypeSystem().getType(
        "de.tudarmstadt.ukp.dkpro.core.api.segmentation.type.Token");
    String text = cas.getDocumentText();
    for (int i = 0; i < text.length(); i++) {
      if (!Character.isWhitespace(text.charAt(i))) {
        cas.addFsToIndexes(cas.createAnnotation(type, i, i + 1));
      }
    }
  }
}
"""

DESCRIPTOR = """<?xml version="1.0" encoding="UTF-8"?>
<analysisEngineDescription xmlns="http://uima.apache.org/resourceSpecifier">
  <frameworkImplementation>org.apache.uima.java</frameworkImplementation>
  <primitive>true</primitive>
  <annotatorImplementationName>SpaceTokenizer</annotatorImplementationName>
  <analysisEngineMetaData>
    <name>SpaceTokenizer</name>
    <configurationParameters>
      <configurationParameter>
        <name>TypeName</name><type>String</type>
        <multiValued>false</multiValued><mandatory>true</mandatory>
      </configurationParameter>
    </configurationParameters>
    <configurationParameterSettings>
      <nameValuePair><name>TypeName</name><value><string>{type}</string></value></nameValuePair>
    </configurationParameterSettings>
    <typeSystemDescription><types>
      <typeDescription>
        <name>org.example.Word</name><supertypeName>uima.tcas.Annotation</supertypeName>
        <features><featureDescription>
          <name>kind</name><rangeTypeName>uima.cas.String</rangeTypeName>
        </featureDescription></features>
      </typeDescription>
    </types></typeSystemDescription>
    <operationalProperties>
      <modifiesCas>true</modifiesCas><multipleDeploymentAllowed>true</multipleDeploymentAllowed>
      <outputsNewCASes>false</outputsNewCASes>
    </operationalProperties>
  </analysisEngineMetaData>
</analysisEngineDescription>
"""

# A character outside the BMP (two UTF-16 units in Java) before later words, a double
# space and a newline: offsets must come back in code points.
TEXT = "Ca\U0001d6fc binds  p53.\nThe MDM2 gene."


@pytest.fixture(scope="module")
def annotator_jar(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("annotator")
    (folder / "SpaceTokenizer.java").write_text(ANNOTATOR, encoding="utf-8")
    (folder / "UnitTokenizer.java").write_text(UNIT_ANNOTATOR, encoding="utf-8")
    classes = folder / "classes"
    classes.mkdir()
    sources = ["SpaceTokenizer.java", "UnitTokenizer.java"]
    subprocess.run(
        ["javac", "-cp", str(find_uima_jar()), "-d", str(classes), *sources],
        cwd=folder,
        check=True,
    )
    jar = folder / "space-tokenizer.jar"
    subprocess.run(["jar", "cf", str(jar), "-C", str(classes), "."], check=True)
    return jar


def _descriptor(folder: Path, type_name: str, annotator: str = "SpaceTokenizer") -> Path:
    path = folder / "space-tokenizer.xml"
    text = DESCRIPTOR.replace("{type}", type_name)
    text = text.replace(
        ">SpaceTokenizer</annotatorImplementationName>",
        f">{annotator}</annotatorImplementationName>",
    )
    path.write_text(text, encoding="utf-8")
    return path


def _cas(text: str = TEXT) -> tuple[cassis.Cas, cassis.Cas]:
    cas = cassis.Cas(typesystem=load_typesystem())
    cas.sofa_string = "the initial view differs"
    view = cas.create_view("system")
    view.sofa_string = text
    sentence = cas.typesystem.get_type(SENTENCE)
    view.add(sentence(begin=0, end=text.index("\n")))
    view.add(sentence(begin=text.index("\n") + 1, end=len(text)))
    return cas, view


def _words(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]


def _token_engine(annotator_jar: Path, tmp_path: Path) -> UimaEngine:
    """uima.engine.v1 running the test annotator as a tokenizer (DKPro Token per word)."""
    config = UimaEngineConfig(
        descriptor=str(_descriptor(tmp_path, TOKEN)),
        classpath=[str(annotator_jar)],
        produces=[TOKEN],
    )
    component = registry().get("uima.engine.v1")(config, RunContext(output_dir=tmp_path))
    assert isinstance(component, UimaEngine)
    return component


def test_engine_adds_dkpro_tokens_with_exact_offsets_and_keeps_the_view(
    annotator_jar: Path, tmp_path: Path
) -> None:
    component = _token_engine(annotator_jar, tmp_path)
    try:
        cas, view = _cas()
        sentences_before = list(view.select(SENTENCE))
        component.process(view)
        tokens = sorted(view.select(TOKEN), key=lambda t: t.begin)
        assert [(t.begin, t.end) for t in tokens] == _words(TEXT)
        assert [t.get_covered_text() for t in tokens] == TEXT.split()
        assert tokens[0].get_covered_text() == "Ca\U0001d6fc"
        # The view keeps its sentences, as the same objects, and gains nothing else.
        assert list(view.select(SENTENCE)) == sentences_before
        assert {fs.type.name for fs in view.select_all_fs()} == {SENTENCE, TOKEN}
        # Other views are untouched.
        assert list(cas.get_view("_InitialView").select_all_fs()) == []

        # The same JVM serves the next document; nothing from the first leaks into it.
        process = component._jvm._process if component._jvm else None
        other = "Second document\nhere"
        _, second = _cas(other)
        component.process(second)
        assert component._jvm is not None and component._jvm._process is process
        assert [(t.begin, t.end) for t in second.select(TOKEN)] == _words(other)

        # A JVM that died is started again, with the engine loaded again, for the next one.
        assert process is not None
        process.kill()
        process.wait()
        _, third = _cas()
        component.process(third)
        assert [(t.begin, t.end) for t in third.select(TOKEN)] == _words(TEXT)
        assert component._jvm._process is not process
        process = component._jvm._process
    finally:
        component.close()
    assert process is not None and process.poll() is not None
    assert engine_module._SHARED.current is None


def test_engine_types_are_mapped_onto_ours_with_feature_renames(
    annotator_jar: Path, tmp_path: Path
) -> None:
    descriptor = _descriptor(tmp_path, "org.example.Word")
    base = UimaEngineConfig(descriptor=descriptor.name, classpath=[str(annotator_jar)])
    context = RunContext(output_dir=tmp_path, workflow_dir=tmp_path)

    unmapped = UimaEngine(base, context)
    try:
        with pytest.raises(UimaEngineError, match=r"org\.example\.Word.*types:"):
            unmapped.process(_cas()[1])
    finally:
        unmapped.close()

    mapped = UimaEngine(
        UimaEngineConfig(
            descriptor=descriptor.name,
            classpath=[str(annotator_jar)],
            types={"org.example.Word": {"type": NAMED_ENTITY, "features": {"kind": "value"}}},
        ),
        context,
    )
    try:
        _, view = _cas()
        mapped.process(view)
        found = [(e.begin, e.end, e.value) for e in view.select(NAMED_ENTITY)]
        expected = [(b, e, "upper" if TEXT[b].isupper() else "lower") for b, e in _words(TEXT)]
        assert sorted(found) == expected
    finally:
        mapped.close()


def test_engine_offsets_inside_a_surrogate_pair_become_whole_characters(
    annotator_jar: Path, tmp_path: Path
) -> None:
    descriptor = _descriptor(tmp_path, TOKEN, annotator="UnitTokenizer")
    config = UimaEngineConfig(descriptor=str(descriptor), classpath=[str(annotator_jar)])
    component = UimaEngine(config, RunContext(output_dir=tmp_path))
    text = "a\U0001f9ecb\n\U0001d6fc"
    try:
        _, view = _cas(text)
        with pytest.warns(UimaOffsetWarning) as caught:
            component.process(view)
    finally:
        component.close()
    # Each half of a character is widened to the whole character (both kept).
    spans = [(t.begin, t.end) for t in view.select(TOKEN)]
    assert spans == [(0, 1), (1, 2), (1, 2), (2, 3), (4, 5), (4, 5)]
    assert len(caught) == 1  # once for the document
    assert "put 4 annotation(s) between the two UTF-16 halves" in str(caught[0].message)
    assert f"first: {TOKEN} at UTF-16 [1,2)" in str(caught[0].message)


def test_mapping_targets_that_are_not_our_types_are_validation_errors(tmp_path: Path) -> None:
    from casflow.pipeline.validation import WorkflowValidationError
    from casflow.pipeline.workflow import load_workflow_text

    _descriptor(tmp_path, "org.example.Word")
    (tmp_path / "a.txt").write_text("x", encoding="utf-8")
    text = f"""\
reader: {{component: text.reader.v1, config: {{input: "{tmp_path / "a.txt"}"}}}}
components:
  - component: uima.engine.v1
    config:
      descriptor: space-tokenizer.xml
      types:
        org.example.Group:
          type: org.nowhere.Bogus
        org.example.Word: {{type: NamedEntity, features: {{kind: nowhere}}}}
      tags:
        "org.example.Word:tag": {{type: org.nowhere.Tag, value_feature: PosValue}}
        "org.example.Word:pos": {{type: POS, value_feature: NoSuchValue}}
run: {{output: "{tmp_path / "out"}"}}
"""
    with pytest.raises(WorkflowValidationError) as info:
        load_workflow_text(text, source=str(tmp_path / "wf.yaml"))
    found = {(i.line, i.message.split(" is not ")[0]) for i in info.value.issues}
    assert found == {
        (8, "Value error, org.nowhere.Bogus"),
        (9, "Value error, features: target 'nowhere'"),
        (11, "Value error, org.nowhere.Tag"),
        (12, "Value error, value_feature 'NoSuchValue'"),
    }, info.value
    # Short names of our types are taken, as elsewhere.
    config = UimaEngineConfig(
        descriptor="x.xml", types={"org.example.Word": {"type": "NamedEntity"}}
    )
    assert config.types["org.example.Word"].type == NAMED_ENTITY


def test_engine_failures_name_the_descriptor(tmp_path: Path) -> None:
    broken = tmp_path / "broken.xml"
    broken.write_text("<analysisEngineDescription/>", encoding="utf-8")
    config = UimaEngineConfig(descriptor=str(broken))
    component = UimaEngine(config, RunContext(output_dir=tmp_path))
    try:
        with pytest.raises(UimaEngineError, match="broken.xml: UIMA could not build"):
            component.process(_cas()[1])
    finally:
        component.close()
    problems = UimaEngine.check_config(
        UimaEngineConfig(descriptor="missing.xml", classpath=["nope.jar"]),
        RunContext(output_dir=tmp_path, workflow_dir=tmp_path),
    )
    assert any("missing.xml" in p for p in problems)
    assert any("nope.jar does not exist" in p for p in problems)


def test_engine_in_a_workflow_with_two_workers(annotator_jar: Path, tmp_path: Path) -> None:
    """Loaded and validated as a workflow step, run in two worker processes (each with
    its own JVM) beside another step; the XMI written holds the engine's tokens."""
    from casflow.pipeline.runner import RunOptions, run_workflow
    from casflow.pipeline.workflow import load_workflow

    texts = {f"d{i}": f"Document {i} has\nsome  words \U0001d6fc{i} here." for i in range(4)}
    (tmp_path / "in").mkdir()
    for name, text in texts.items():
        (tmp_path / "in" / f"{name}.txt").write_text(text, encoding="utf-8")
    _descriptor(tmp_path, TOKEN)
    (tmp_path / "wf.yaml").write_text(
        f"""\
reader: {{component: text.reader.v1, config: {{input: in}}}}
components:
  - component: uima.engine.v1
    view: system
    config:
      descriptor: space-tokenizer.xml
      classpath: ["{annotator_jar}"]
      produces: [{TOKEN}]
  - component: sentences.rules.v1
    view: system
writers: [{{component: xmi.writer.v1}}]
run: {{output: "{tmp_path / "out"}", jobs: 2, batch_size: 1, progress: false}}
""",
        encoding="utf-8",
    )
    workflow = load_workflow(tmp_path / "wf.yaml")
    report = run_workflow(workflow, RunOptions(show_progress=False))
    assert report.counts["ok"] == len(texts) and report.jobs == 2, report.failures
    written = sorted((tmp_path / "out").rglob("*.xmi"))
    assert len(written) == len(texts)
    ts = load_typesystem()
    for path in written:
        with open(path, "rb") as f:
            cas = cassis.load_cas_from_xmi(f, typesystem=ts)
        view = cas.get_view("system")
        text = texts[path.name.split(".")[0]]
        assert view.sofa_string == text
        assert [(t.begin, t.end) for t in view.select(TOKEN)] == _words(text)


def test_a_scratch_folder_removed_behind_the_engine_is_made_again(
    annotator_jar: Path, tmp_path: Path
) -> None:
    # The folder is made once; a temporary directory cleaned during a long run made
    # every later document fail on writing into it.
    component = _token_engine(annotator_jar, tmp_path)
    try:
        component.process(_cas()[1])
        assert component._scratch is not None
        shutil.rmtree(component._scratch)
        _, view = _cas()
        component.process(view)  # writes the document's XMI into the folder
        assert [(t.begin, t.end) for t in view.select(TOKEN)] == _words(TEXT)
        # And when the JVM is started again, the engine's type system is written there.
        assert component._scratch is not None and component._jvm is not None
        shutil.rmtree(component._scratch)
        process = component._jvm._process
        assert process is not None
        process.kill()
        process.wait()
        _, view = _cas()
        component.process(view)
        assert [(t.begin, t.end) for t in view.select(TOKEN)] == _words(TEXT)
        assert component._scratch.is_dir()
    finally:
        component.close()


def test_scratch_folders_of_processes_no_longer_running_are_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A run's workers are killed once every result is in, so their engines never
    # removed their scratch folders: the next one made removes those of dead processes,
    # but only of this host and pid namespace. A temporary directory shared with
    # containers or other hosts holds folders of processes whose pids mean nothing
    # here: removing them made their engines fail every later document.
    import sys
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(socket, "gethostname", lambda: "node-a.example")
    namespace = engine_module._pid_namespace()
    if namespace is None:
        pytest.skip("this Linux does not say which pid namespace a process is in")
    if os.path.exists("/proc/self/ns/pid"):
        assert namespace == str(os.stat("/proc/self/ns/pid").st_ino)
    here = f"casflow-uima-node-a.example+{namespace}+"
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()  # its pid names no running process now
    stale = tmp_path / f"{here}{ended.pid}-abc"
    stale.mkdir()
    (stale / "typesystem.xml").write_text("<x/>")
    kept = [
        tmp_path / f"{here}{os.getppid()}-def",  # a running process's
        tmp_path / f"casflow-uima-node-b.example+{namespace}+{ended.pid}-abc",  # another host's
        tmp_path / f"casflow-uima-node-a.example+1{namespace}+{ended.pid}-abc",  # namespace
        tmp_path / f"casflow-uima-node-a.example-x+{namespace}+{ended.pid}-abc",
        tmp_path / f"casflow-uima-{ended.pid}-abc",  # named before hosts were: whose?
        tmp_path / "casflow-uima-notapid",
    ]
    for folder in kept:
        folder.mkdir()
    made = engine_module.scratch_folder()
    assert made.parent == tmp_path and made.name.startswith(f"{here}{os.getpid()}-")
    assert not stale.exists()
    assert [folder for folder in kept if not folder.exists()] == []
