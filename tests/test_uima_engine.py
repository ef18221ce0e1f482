"""uima.engine.v1: a UIMA Java analysis engine of our own, compiled here against
uimaj-core, run through the bridge. Marked ``slow`` and ``java``; they skip when
java/javac or uimaj-core.jar is missing."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import cassis
import pytest

from casflow.components.uima import engine as engine_module
from casflow.components.uima.engine import (
    UimaEngine,
    UimaEngineConfig,
    UimaEngineError,
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
    classes = folder / "classes"
    classes.mkdir()
    subprocess.run(
        ["javac", "-cp", str(find_uima_jar()), "-d", str(classes), "SpaceTokenizer.java"],
        cwd=folder,
        check=True,
    )
    jar = folder / "space-tokenizer.jar"
    subprocess.run(["jar", "cf", str(jar), "-C", str(classes), "."], check=True)
    return jar


def _descriptor(folder: Path, type_name: str) -> Path:
    path = folder / "space-tokenizer.xml"
    path.write_text(DESCRIPTOR.replace("{type}", type_name), encoding="utf-8")
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


def test_engine_adds_dkpro_tokens_with_exact_offsets_and_keeps_the_view(
    annotator_jar: Path, tmp_path: Path
) -> None:
    config = UimaEngineConfig(
        descriptor=str(_descriptor(tmp_path, TOKEN)),
        classpath=[str(annotator_jar)],
        produces=[TOKEN],
    )
    component = registry().get("uima.engine.v1")(config, RunContext(output_dir=tmp_path))
    assert isinstance(component, UimaEngine)
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
