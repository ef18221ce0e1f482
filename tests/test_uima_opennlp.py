"""OpenNLP's own UIMA annotators (Debian ``opennlp-uima.jar``) through uima.engine.v1,
configured on our DKPro Sentence/Token types, against the direct OpenNLP component with
the same models (trained here by casflow train on hand-written trees). Marked ``slow``
and ``java``; they skip when java, uimaj-core, OpenNLP or opennlp-uima are missing."""

from __future__ import annotations

from pathlib import Path

import cassis
import pytest

from casflow.components.opennlp.model import MODEL_FILES
from casflow.components.opennlp.server import find_jar, opennlp_missing
from casflow.components.uima.engine import UimaEngine, UimaEngineConfig, uima_missing
from casflow.pipeline.component import RunContext
from casflow.pipeline.registry import registry
from casflow.typesystem import POS, SENTENCE, TOKEN, load_typesystem
from tests.test_opennlp import tiny_opennlp_model, tiny_opennlp_training  # noqa: F401

OPENNLP_UIMA_JAR = Path("/usr/share/java/opennlp-uima.jar")


def _skip_reason() -> str | None:
    if uima_missing():
        return uima_missing()
    if opennlp_missing():
        return opennlp_missing()
    if not OPENNLP_UIMA_JAR.is_file():
        return f"{OPENNLP_UIMA_JAR} missing: install the Debian package opennlp"
    return None


pytestmark = [
    pytest.mark.slow,
    pytest.mark.java,
    pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason())),
]

# OpenNLP's descriptors, as in opennlp-uima/descriptors, with the model bound in the
# descriptor itself (a primitive engine may carry its resource manager configuration).
DESCRIPTOR = """<?xml version="1.0" encoding="UTF-8"?>
<analysisEngineDescription xmlns="http://uima.apache.org/resourceSpecifier">
  <frameworkImplementation>org.apache.uima.java</frameworkImplementation>
  <primitive>true</primitive>
  <annotatorImplementationName>opennlp.uima.{package}.{annotator}</annotatorImplementationName>
  <analysisEngineMetaData>
    <name>{annotator}</name>
    <configurationParameters>
      <configurationParameter><name>opennlp.uima.SentenceType</name><type>String</type>
        <multiValued>false</multiValued><mandatory>true</mandatory></configurationParameter>
      <configurationParameter><name>opennlp.uima.TokenType</name><type>String</type>
        <multiValued>false</multiValued><mandatory>false</mandatory></configurationParameter>
      <configurationParameter><name>opennlp.uima.ContainerType</name><type>String</type>
        <multiValued>false</multiValued><mandatory>false</mandatory></configurationParameter>
      <configurationParameter><name>opennlp.uima.POSFeature</name><type>String</type>
        <multiValued>false</multiValued><mandatory>false</mandatory></configurationParameter>
    </configurationParameters>
    <configurationParameterSettings/>
    {types}
  </analysisEngineMetaData>
  <externalResourceDependencies>
    <externalResourceDependency>
      <key>opennlp.uima.ModelName</key>
      <interfaceName>opennlp.uima.{package}.{resource}</interfaceName>
    </externalResourceDependency>
  </externalResourceDependencies>
  <resourceManagerConfiguration>
    <externalResources>
      <externalResource>
        <name>Model</name>
        <fileResourceSpecifier><fileUrl>{model_url}</fileUrl></fileResourceSpecifier>
        <implementationName>opennlp.uima.{package}.{resource}Impl</implementationName>
      </externalResource>
    </externalResources>
    <externalResourceBindings>
      <externalResourceBinding>
        <key>opennlp.uima.ModelName</key><resourceName>Model</resourceName>
      </externalResourceBinding>
    </externalResourceBindings>
  </resourceManagerConfiguration>
</analysisEngineDescription>
"""

TOOLS = {
    "sentences": ("sentdetect", "SentenceDetector", "SentenceModelResource"),
    "tokens": ("tokenize", "Tokenizer", "TokenizerModelResource"),
    "pos": ("postag", "POSTagger", "POSModelResource"),
}
# The tagger writes its tag as a string feature of the token type: the engine's type
# system adds one to DKPro Token (UIMA merges it into ours in the engine's CAS).
POS_TAG_TYPES = f"""<typeSystemDescription><types><typeDescription>
      <name>{TOKEN}</name><supertypeName>uima.tcas.Annotation</supertypeName>
      <features><featureDescription>
        <name>posTag</name><rangeTypeName>uima.cas.String</rangeTypeName>
      </featureDescription></features>
    </typeDescription></types></typeSystemDescription>"""

TEXT = (
    "The Pax6 gene (Fig. 2) was cloned from mouse retina. Staining was weak in Fig. 3. "
    "Mutant mice lack eyes and have small noses; the gene is expressed early."
)


def _engine(layer: str, model_dir: Path, folder: Path, **extra: str) -> UimaEngine:
    package, annotator, resource = TOOLS[layer]
    descriptor = folder / f"{annotator}.xml"
    descriptor.write_text(
        DESCRIPTOR.format(
            package=package,
            annotator=annotator,
            resource=resource,
            model_url=(model_dir / MODEL_FILES[layer]).resolve().as_uri(),
            types=POS_TAG_TYPES if layer == "pos" else "<typeSystemDescription/>",
        ),
        encoding="utf-8",
    )
    parameters: dict[str, str] = {"opennlp.uima.SentenceType": SENTENCE}
    if layer != "sentences":
        parameters["opennlp.uima.TokenType"] = TOKEN
    tags = {}
    if layer == "pos":
        parameters["opennlp.uima.POSFeature"] = "posTag"
        tags = {f"{TOKEN}:posTag": {"type": POS, "value_feature": "PosValue", "link": "pos"}}
    parameters.update(extra)
    config = UimaEngineConfig(
        descriptor=str(descriptor),
        classpath=[str(OPENNLP_UIMA_JAR), str(find_jar())],
        parameters=parameters,
        tags=tags,
    )
    return UimaEngine(config, RunContext(output_dir=folder))


def _view(text: str) -> cassis.Cas:
    cas = cassis.Cas(typesystem=load_typesystem())
    cas.sofa_string = text
    return cas


def _tags(view: cassis.Cas) -> list[tuple[int, int, str | None]]:
    return sorted(
        (t.begin, t.end, t.pos.PosValue if t.pos is not None else None) for t in view.select(TOKEN)
    )


def _spans(view: cassis.Cas, type_name: str) -> list[tuple[int, int]]:
    return sorted((a.begin, a.end) for a in view.select(type_name))


def test_opennlp_uima_annotators_agree_with_the_direct_component(
    tiny_opennlp_model: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    layers = ("sentences", "tokens", "pos")
    engines = [_engine(layer, tiny_opennlp_model, tmp_path) for layer in layers]
    bridged = _view(TEXT)
    try:
        for engine in engines:
            engine.process(bridged)
    finally:
        for engine in engines:
            engine.close()

    direct_cls = registry().get("opennlp.pipeline.v1")
    direct_component = direct_cls(
        direct_cls.Config(model=str(tiny_opennlp_model), layers=list(layers)),
        RunContext(output_dir=tmp_path),
    )
    direct = _view(TEXT)
    try:
        direct_component.process(direct)
    finally:
        direct_component.close()

    sentences = _spans(bridged, SENTENCE)
    tokens = _spans(bridged, TOKEN)
    assert len(sentences) >= 2 and len(tokens) > 20
    assert sentences == _spans(direct, SENTENCE)
    assert tokens == _spans(direct, TOKEN)
    assert all(TEXT[b:e].strip() == TEXT[b:e] and e > b for b, e in tokens)
    # The tagger's tags, on the tokens as DKPro POS, as the direct component writes them.
    assert _tags(bridged) == _tags(direct)
    assert all(tag for _, _, tag in _tags(bridged))
    assert len(list(bridged.select(POS))) == len(tokens)


@pytest.mark.corpus
def test_opennlp_uima_annotators_on_a_craft_article(craft_dir: Path, tmp_path: Path) -> None:
    """Models trained by casflow train on two CRAFT training articles; on a development
    article the bridged OpenNLP UIMA annotators give exactly the direct component's
    sentences, tokens and POS tags. The direct component detects sentences per structure block;
    the bridged detector gets the same blocks as its containers (ContainerType)."""
    from casflow.components.corpora.craft import CraftReader, CraftReaderConfig
    from casflow.components.rules.sentences import structure_breaks, text_blocks
    from casflow.pipeline.component import DocumentRef
    from casflow.pipeline.training import load_training_workflow, run_training
    from casflow.typesystem import PARAGRAPH

    ids_dir = craft_dir / "articles" / "ids"
    train = (ids_dir / "craft-ids-train.txt").read_text().split()[:2]
    dev = (ids_dir / "craft-ids-dev.txt").read_text().split()[0]
    workflow = tmp_path / "train.yaml"
    workflow.write_text(
        f"""\
gold:
  reader:
    component: craft.reader.v1
    view: gold
    config:
      corpus: {craft_dir}
      layers: [structure, sentences, tokens, pos]
      ontologies: []
  train: {{ids: {[str(i) for i in train]!r}}}
  dev: {{ids: ['{dev}']}}
layers: [sentences, tokens, pos]
model:
  component: train.opennlp.v1
  config: {{iterations: 20, cutoff: 3}}
seed: 0
output: {tmp_path / "out"}
""",
        encoding="utf-8",
    )
    model_dir = run_training(load_training_workflow(workflow), log=lambda _: None).model_dir

    reader = CraftReader(
        CraftReaderConfig(corpus=str(craft_dir), layers=["structure"], ontologies=[]),
        RunContext(output_dir=tmp_path),
    )
    direct = cassis.Cas(typesystem=load_typesystem())
    reader.load(DocumentRef(dev, str(reader.paths.text(dev))), direct)
    text = direct.sofa_string
    direct_cls = registry().get("opennlp.pipeline.v1")
    direct_config = direct_cls.Config(model=str(model_dir), layers=["sentences", "tokens", "pos"])
    component = direct_cls(direct_config, RunContext(output_dir=tmp_path))
    blocks = [
        (b, e)
        for b, e in text_blocks(
            text,
            structure_breaks(direct, direct_config.structure_types),
            split_at_blank_lines=direct_config.split_at_blank_lines,
            split_at_newlines=direct_config.split_at_newlines,
        )
        if text[b:e].strip()
    ]
    try:
        component.process(direct)
    finally:
        component.close()

    bridged = _view(text)
    paragraph = bridged.typesystem.get_type(PARAGRAPH)
    for b, e in blocks:
        bridged.add(paragraph(begin=b, end=e))
    engines = [
        _engine("sentences", model_dir, tmp_path, **{"opennlp.uima.ContainerType": PARAGRAPH}),
        _engine("tokens", model_dir, tmp_path),
        _engine("pos", model_dir, tmp_path),
    ]
    try:
        for engine in engines:
            engine.process(bridged)
    finally:
        for engine in engines:
            engine.close()

    sentences, tokens = _spans(bridged, SENTENCE), _spans(bridged, TOKEN)
    assert len(sentences) > 100 and len(tokens) > 3000
    assert sentences == _spans(direct, SENTENCE)
    assert tokens == _spans(direct, TOKEN)
    assert _tags(bridged) == _tags(direct)
