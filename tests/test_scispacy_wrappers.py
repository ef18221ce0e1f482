"""scispacy.core.v1, scispacy.ner.v1 and scispacy.abbreviations.v1.

No scispaCy model can be downloaded here, so ``en_ner_bionlp13cg_md`` is a
stand-in: an entity ruler pipeline with the real model's labels, installed the
way pip installs a model package (package folder + ``.dist-info``) in a
temporary folder on ``sys.path``, so the component finds it by name.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path

import cassis
import pytest
from pydantic import ValidationError

from casflow.components.spacy.loading import ModelNotFoundError, clear_cache, is_installed_package
from casflow.components.spacy.scispacy import (
    ScispacyAbbreviations,
    ScispacyAbbreviationsConfig,
    ScispacyCore,
    ScispacyCoreConfig,
    ScispacyNer,
    ScispacyNerConfig,
)
from casflow.pipeline.component import RunContext
from casflow.pipeline.validation import WorkflowValidationError
from casflow.pipeline.workflow import load_workflow_text
from casflow.typesystem import (
    ABBREVIATION,
    ANATOMY_MENTION,
    GENE_MENTION,
    NAMED_ENTITY,
    SENTENCE,
    TOKEN,
    load_typesystem,
)

BIONLP = "en_ner_bionlp13cg_md"

# (text, label of the real en_ner_bionlp13cg_md, expected casflow type, expected value)
MENTIONS = [
    ("BRCA2", "GENE_OR_GENE_PRODUCT", GENE_MENTION, "GENE_OR_GENE_PRODUCT"),
    ("liver cells", "CELL", ANATOMY_MENTION, "Cell"),
    ("blood vessels", "MULTI_TISSUE_STRUCTURE", ANATOMY_MENTION, "Multi-tissue_structure"),
    (
        "limb bud",
        "DEVELOPING_ANATOMICAL_STRUCTURE",
        ANATOMY_MENTION,
        "Developing_anatomical_structure",
    ),
    ("heart", "ORGAN", ANATOMY_MENTION, "Organ"),
    ("carcinoma", "CANCER", ANATOMY_MENTION, "Cancer"),
    ("serum", "ORGANISM_SUBSTANCE", ANATOMY_MENTION, "Organism_substance"),
    ("glucose", "SIMPLE_CHEMICAL", NAMED_ENTITY, "SIMPLE_CHEMICAL"),
]
TEXT = (
    "BRCA2 is expressed in liver cells and blood vessels of the limb bud.\n\n"
    "The heart carcinoma took up glucose from serum."
)


def new_view(text: str) -> cassis.Cas:
    cas = cassis.Cas(typesystem=load_typesystem())
    cas.sofa_string = text
    return cas


def context(tmp_path: Path) -> RunContext:
    return RunContext(output_dir=tmp_path, workflow_dir=tmp_path)


def mentions(view: cassis.Cas) -> set[tuple[str, str, str]]:
    # GeneMention and AnatomyMention are NamedEntity subtypes: select gives all three.
    return {(a.get_covered_text(), a.type.name, a.value) for a in view.select(NAMED_ENTITY)}


def ruler_pipeline():  # type: ignore[no-untyped-def]
    import spacy

    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("entity_ruler")
    ruler.add_patterns(
        [
            {"label": label, "pattern": [{"ORTH": word} for word in text.split()]}
            for text, label, _, _ in MENTIONS
        ]
    )
    return nlp


def install_package(site: Path, name: str, nlp) -> None:  # type: ignore[no-untyped-def]
    """Lay out ``nlp`` as ``pip install`` leaves a spaCy model package."""
    lang, _, rest = name.partition("_")
    version = "0.0.1"
    package = site / name
    package.mkdir()
    nlp.meta.update(lang=lang, name=rest, version=version)
    nlp.to_disk(package / f"{name}-{version}")
    (package / "meta.json").write_text(json.dumps(nlp.meta), encoding="utf-8")
    (package / "__init__.py").write_text(
        "from spacy.util import load_model_from_init_py\n\n\n"
        "def load(**overrides):\n"
        "    return load_model_from_init_py(__file__, **overrides)\n",
        encoding="utf-8",
    )
    dist_info = site / f"{name}-{version}.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8"
    )


@pytest.fixture(scope="module")
def installed_bionlp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    if is_installed_package(BIONLP):
        pytest.skip(f"a real {BIONLP} is installed; the stand-in would be shadowed")
    site = tmp_path_factory.mktemp("site-packages")
    install_package(site, BIONLP, ruler_pipeline())
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()
    try:
        yield site
    finally:
        sys.path.remove(str(site))
        sys.modules.pop(BIONLP, None)
        importlib.invalidate_caches()
        clear_cache()


# -- scispacy.ner.v1 -------------------------------------------------------------------


def test_bionlp13cg_found_by_name_maps_to_gene_and_anatem_classes(installed_bionlp, tmp_path):
    config = ScispacyNerConfig(model=BIONLP)
    assert ScispacyNer.check_config(config, context(tmp_path)) == []
    view = new_view(TEXT)
    ScispacyNer(config, context(tmp_path)).process(view)
    assert mentions(view) == {(text, kind, value) for text, _, kind, value in MENTIONS}
    assert view.select(TOKEN) == []  # default layers: entities only


def test_unmapped_labels_can_be_dropped_and_labels_overridden(installed_bionlp, tmp_path):
    config = ScispacyNerConfig(
        model=BIONLP,
        unmapped_entities="drop",
        entity_mapping={"CANCER": {"type": "named_entity", "value": "tumour"}},
    )
    view = new_view(TEXT)
    ScispacyNer(config, context(tmp_path)).process(view)
    found = mentions(view)
    assert ("carcinoma", NAMED_ENTITY, "tumour") in found
    assert ("carcinoma", ANATOMY_MENTION, "Cancer") not in found
    assert not any(text == "glucose" for text, _, _ in found)  # SIMPLE_CHEMICAL dropped
    assert ("heart", ANATOMY_MENTION, "Organ") in found  # the rest of the preset stays
    _, produces = ScispacyNer.requirements(config)
    assert set(produces) == {GENE_MENTION, ANATOMY_MENTION, NAMED_ENTITY}


def test_folder_needs_a_preset_or_a_mapping(tmp_path):
    folder = tmp_path / "bionlp"
    ruler_pipeline().to_disk(folder)
    with pytest.raises(ValidationError, match="set preset"):
        ScispacyNerConfig(model=str(folder))
    view = new_view(TEXT)
    ScispacyNer(ScispacyNerConfig(model=str(folder), preset=BIONLP), context(tmp_path)).process(
        view
    )
    assert mentions(view) == {(text, kind, value) for text, _, kind, value in MENTIONS}
    only_genes = ScispacyNerConfig(
        model=str(folder),
        entity_mapping={"GENE_OR_GENE_PRODUCT": {"type": "gene"}},
        unmapped_entities="drop",
    )
    view = new_view(TEXT)
    ScispacyNer(only_genes, context(tmp_path)).process(view)
    assert mentions(view) == {("BRCA2", GENE_MENTION, "GENE_OR_GENE_PRODUCT")}


def test_ner_model_names_and_presets_are_checked():
    with pytest.raises(ValidationError, match="spacy.pipeline.v1"):
        ScispacyNerConfig(model="en_core_web_sm")
    with pytest.raises(ValidationError, match="picks its own label preset"):
        ScispacyNerConfig(model=BIONLP, preset="en_ner_craft_md")
    craft = ScispacyNerConfig(model="en_ner_craft_md")
    assert craft.entity_mapping["GGP"].type == "gene"
    jnlpba = ScispacyNerConfig(model="en_ner_jnlpba_md")
    assert {k for k, v in jnlpba.entity_mapping.items() if v.type == "gene"} == {
        "DNA",
        "RNA",
        "PROTEIN",
    }
    requires, _ = ScispacyNer.requirements(
        ScispacyNerConfig(model=BIONLP, use_existing_tokens=True)
    )
    assert requires == (TOKEN,)


def test_missing_ner_model_names_it_and_where_it_comes_from(tmp_path):
    if is_installed_package("en_ner_jnlpba_md"):
        pytest.skip("en_ner_jnlpba_md is installed")
    config = ScispacyNerConfig(model="en_ner_jnlpba_md")
    (message,) = ScispacyNer.check_config(config, context(tmp_path))
    assert "'en_ner_jnlpba_md' is not installed" in message and "not PyPI" in message


# -- scispacy.core.v1 ---------------------------------------------------------------------


def test_missing_core_model_gives_the_install_message(tmp_path):
    if is_installed_package("en_core_sci_md"):
        pytest.skip("en_core_sci_md is installed")
    config = ScispacyCoreConfig(model="en_core_sci_md")
    (message,) = ScispacyCore.check_config(config, context(tmp_path))
    assert "'en_core_sci_md' is not installed" in message
    assert "scispaCy project, not PyPI" in message and "https://" in message
    with pytest.raises(ModelNotFoundError, match="en_core_sci_md.*scispaCy README"):
        ScispacyCore(config, context(tmp_path))


def test_core_model_names_are_checked():
    assert ScispacyCoreConfig().model == "en_core_sci_sm"
    assert ScispacyCoreConfig(model="en_core_sci_scibert").model == "en_core_sci_scibert"
    assert ScispacyCoreConfig(model="./models/sci").model == "./models/sci"
    for wrong in ("en_core_sci_xl", "en_core_web_sm", BIONLP):
        with pytest.raises(ValidationError, match="not an en_core_sci model"):
            ScispacyCoreConfig(model=wrong)


@pytest.mark.slow
def test_core_runs_a_pipeline_folder_with_generic_entities(tiny_spacy_model, tmp_path):
    from tests.spacy_fixtures import training_text

    text = training_text(2)
    view = new_view(text)
    ScispacyCore(ScispacyCoreConfig(model=str(tiny_spacy_model)), context(tmp_path)).process(view)
    assert view.select(TOKEN) and view.select(SENTENCE)
    assert all(t.pos is not None and t.lemma is not None for t in view.select(TOKEN))
    entities = view.select(NAMED_ENTITY)
    assert entities and {e.value for e in entities} <= {"GENE", "ANATOMY"}
    assert {e.type.name for e in entities} == {NAMED_ENTITY}
    dropped = new_view(text)
    config = ScispacyCoreConfig(model=str(tiny_spacy_model), unmapped_entities="drop")
    ScispacyCore(config, context(tmp_path)).process(dropped)
    assert dropped.select(NAMED_ENTITY) == [] and dropped.select(TOKEN)


def test_workflow_validation_reports_missing_default_core_model(tmp_path):
    if is_installed_package("en_core_sci_sm"):
        pytest.skip("en_core_sci_sm is installed")
    (tmp_path / "in").mkdir()
    yaml_text = textwrap.dedent(
        f"""
        reader:
          component: text.reader.v1
          config: {{input: {tmp_path / "in"}}}
        components:
          - component: scispacy.core.v1
        """
    )
    with pytest.raises(WorkflowValidationError, match="en_core_sci_sm.*scispaCy project"):
        load_workflow_text(yaml_text, source="wf.yaml")


# -- scispacy.abbreviations.v1 ---------------------------------------------------------------

SBMA = (
    "Spinal and bulbar muscular atrophy (SBMA) is an inherited motor neuron disease "
    "caused by the expansion of a polyglutamine tract within the androgen receptor (AR). "
    "SBMA is rare."
)


def abbreviations(view: cassis.Cas) -> list[tuple[str, int, str, str]]:
    return [
        (a.get_covered_text(), a.begin, a.longForm.get_covered_text(), a.longFormText)
        for a in view.select(ABBREVIATION)
    ]


def word_tokens(view: cassis.Cas) -> None:
    token = view.typesystem.get_type(TOKEN)
    text = view.sofa_string
    view.add_all([token(begin=m.start(), end=m.end()) for m in re.finditer(r"\w+|\S", text)])


@pytest.mark.parametrize("tokenizer", ["spacy_en", "scispacy_combined", "existing"])
def test_abbreviations_on_every_short_form(tokenizer, tmp_path):
    view = new_view(SBMA)
    if tokenizer == "existing":
        word_tokens(view)
        config = ScispacyAbbreviationsConfig(use_existing_tokens=True)
    else:
        config = ScispacyAbbreviationsConfig(tokenizer=tokenizer)
    ScispacyAbbreviations(config, context(tmp_path)).process(view)
    long_sbma = "Spinal and bulbar muscular atrophy"
    assert abbreviations(view) == [
        ("SBMA", SBMA.index("SBMA"), long_sbma, long_sbma),
        ("AR", SBMA.index("AR)"), "androgen receptor", "androgen receptor"),
        ("SBMA", SBMA.rindex("SBMA"), long_sbma, long_sbma),
    ]
    first, _, last = view.select(ABBREVIATION)
    assert first.longForm is last.longForm  # one long form annotation per definition
    assert first.longForm.type.name == "uima.tcas.Annotation"
    assert (first.longForm.begin, first.longForm.end) == (0, len(long_sbma))


def test_abbreviations_survive_xmi_and_batches(tmp_path):
    views = [new_view(SBMA), new_view("No abbreviation here."), new_view("")]
    component = ScispacyAbbreviations(ScispacyAbbreviationsConfig(), context(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # scispaCy's empty-matcher warning is kept quiet
        component.process_batch(views)
    assert len(views[0].select(ABBREVIATION)) == 3
    assert views[1].select(ABBREVIATION) == [] and views[2].select(ABBREVIATION) == []
    xmi = views[0].to_xmi()
    reloaded = cassis.load_cas_from_xmi(xmi, typesystem=load_typesystem())
    assert abbreviations(reloaded) == abbreviations(views[0])
    assert ScispacyAbbreviations.requirements(ScispacyAbbreviationsConfig())[0] == ()
    requires, _ = ScispacyAbbreviations.requirements(
        ScispacyAbbreviationsConfig(use_existing_tokens=True)
    )
    assert requires == (TOKEN,)
