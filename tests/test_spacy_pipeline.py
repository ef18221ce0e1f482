"""The spacy.pipeline.v1 component, run on the tiny pipeline trained by tests/spacy_fixtures.py."""

from __future__ import annotations

import textwrap
from pathlib import Path

import cassis
import pytest
from pydantic import ValidationError

from casflow.components.spacy.loading import ModelNotFoundError, load_pipeline, model_problem
from casflow.components.spacy.pipeline import (
    SpacyPipeline,
    SpacyPipelineConfig,
    plan_chunks,
)
from casflow.pipeline.component import RunContext
from casflow.pipeline.runner import RunOptions, run_workflow
from casflow.pipeline.validation import WorkflowValidationError
from casflow.pipeline.workflow import load_workflow_text
from casflow.typesystem import (
    ANATOMY_MENTION,
    DEPENDENCY,
    DEPENDENCY_ROOT,
    GENE_MENTION,
    LEMMA,
    NAMED_ENTITY,
    PARAGRAPH,
    POS,
    SENTENCE,
    TOKEN,
    load_typesystem,
)
from tests.spacy_fixtures import SENTENCES, sentence_text, training_text

ALL = ["sentences", "tokens", "pos", "lemma", "dependencies", "entities"]


def new_view(text: str) -> cassis.Cas:
    cas = cassis.Cas(typesystem=load_typesystem())
    cas.sofa_string = text
    return cas


def component(model: Path, tmp_path: Path, **options) -> SpacyPipeline:
    config = SpacyPipelineConfig(model=str(model), **options)
    return SpacyPipeline(config, RunContext(output_dir=tmp_path))


def spans(annotations) -> list[tuple[int, int]]:
    return [(a.begin, a.end) for a in annotations]


def assert_one_root_per_sentence(view: cassis.Cas) -> None:
    sentences = view.select(SENTENCE)
    assert sentences
    for sentence in sentences:
        roots = view.select_covered(DEPENDENCY_ROOT, sentence)
        assert len(roots) == 1, sentence.get_covered_text()
    for dep in view.select(DEPENDENCY):
        governing = [s for s in sentences if s.begin <= dep.Governor.begin < s.end]
        dependent = [s for s in sentences if s.begin <= dep.Dependent.begin < s.end]
        assert governing == dependent, "a dependency crosses a sentence boundary"


def test_all_layers_on_text_with_whitespace_and_non_bmp(tiny_spacy_model, tmp_path) -> None:
    text = "  " + training_text(3) + "\n\n\n" + sentence_text(SENTENCES[1][0]) + "  😀 é  \n"
    view = new_view(text)
    component(tiny_spacy_model, tmp_path, layers=ALL).process(view)
    tokens = view.select(TOKEN)
    nlp = load_pipeline(str(tiny_spacy_model))
    expected = [t.text for t in nlp.make_doc(text) if not t.is_space]
    assert [t.get_covered_text() for t in tokens] == expected
    for token in tokens:
        covered = text[token.begin : token.end]
        assert covered == covered.strip() != ""
        assert token.pos is not None and token.pos.PosValue
        assert token.lemma is not None and token.lemma.value
    assert len(view.select(POS)) == len(view.select(LEMMA)) == len(tokens)
    for sentence in view.select(SENTENCE):
        covered = sentence.get_covered_text()
        assert covered == covered.strip() != ""
    assert_one_root_per_sentence(view)
    for root in view.select(DEPENDENCY_ROOT):
        assert root.Governor is root.Dependent and root.DependencyType == "ROOT"
    assert len(view.select(DEPENDENCY)) == len(tokens)  # ROOT is a Dependency too


def test_entities_map_to_gene_and_anatomy_mentions(tiny_spacy_model, tmp_path) -> None:
    text = training_text(2)
    view = new_view(text)
    mapping = {"GENE": {"type": "gene", "value": "gene"}, "ANATOMY": {"type": "anatomy"}}
    component(
        tiny_spacy_model, tmp_path, layers=["tokens", "entities"], entity_mapping=mapping
    ).process(view)
    genes = {(g.get_covered_text(), g.value) for g in view.select(GENE_MENTION)}
    anatomy = {(a.get_covered_text(), a.value) for a in view.select(ANATOMY_MENTION)}
    # The tiny model has memorised its training sentences.
    assert ("BRCA2", "gene") in genes and ("p53", "gene") in genes
    assert ("liver cells", "ANATOMY") in anatomy
    assert all(e.type.name in {GENE_MENTION, ANATOMY_MENTION} for e in view.select(NAMED_ENTITY))


def test_unmapped_entities_dropped_or_kept(tiny_spacy_model, tmp_path) -> None:
    text = training_text(2)
    mapping = {"GENE": {"type": "gene"}}
    dropped, kept = new_view(text), new_view(text)
    component(
        tiny_spacy_model,
        tmp_path,
        layers=["entities"],
        entity_mapping=mapping,
        unmapped_entities="drop",
    ).process(dropped)
    component(tiny_spacy_model, tmp_path, layers=["entities"], entity_mapping=mapping).process(kept)
    assert {e.type.name for e in dropped.select(NAMED_ENTITY)} == {GENE_MENTION}
    assert {e.type.name for e in kept.select(NAMED_ENTITY)} == {GENE_MENTION, NAMED_ENTITY}
    assert dropped.select(TOKEN) == []


def test_use_existing_tokens_keeps_the_cas_tokens(tiny_spacy_model, tmp_path) -> None:
    text = "BRCA2 binds RAD51 in the nucleus.\n\nThe p53 protein is  expressed in liver cells."
    view = new_view(text)
    # A tokenization spaCy would not make: "RAD51 in" is one token, "p53" two, and
    # "the" is left out (its characters are in no token).
    pieces = ["BRCA2", "binds", "RAD51 in", "nucleus", ".", "The", "p", "53", "protein"]
    pieces += ["is", "expressed", "in", "liver", "cells", "."]
    token_type = view.typesystem.get_type(TOKEN)
    cursor = 0
    existing = []
    for piece in pieces:
        begin = text.index(piece, cursor)
        existing.append(token_type(begin=begin, end=begin + len(piece)))
        cursor = begin + len(piece)
    view.add_all(existing)
    before = spans(existing)
    component(tiny_spacy_model, tmp_path, layers=ALL, use_existing_tokens=True).process(view)
    tokens = view.select(TOKEN)
    assert spans(tokens) == before
    assert [t.xmiID for t in tokens] == [t.xmiID for t in existing]
    assert all(t.pos is not None and t.lemma is not None for t in tokens)
    assert {d.Dependent.xmiID for d in view.select(DEPENDENCY)} == {t.xmiID for t in existing}
    assert_one_root_per_sentence(view)


def test_use_existing_tokens_rejects_overlapping_tokens(tiny_spacy_model, tmp_path) -> None:
    view = new_view("BRCA2 binds RAD51.")
    token_type = view.typesystem.get_type(TOKEN)
    view.add_all([token_type(begin=0, end=5), token_type(begin=3, end=11)])
    with pytest.raises(ValueError, match="overlap"):
        component(tiny_spacy_model, tmp_path, use_existing_tokens=True).process(view)


@pytest.mark.parametrize("existing_tokens", [False, True])
def test_use_existing_sentences_keeps_them(tiny_spacy_model, tmp_path, existing_tokens) -> None:
    text = training_text(3)
    view = new_view(text)
    # Boundaries the parser would not choose: inside the first sentence, and one
    # sentence spanning the last two training sentences.
    cut = text.index(" in the nucleus")
    second = text.index("The p53")
    given = [(0, cut), (cut + 1, second - 1), (second, len(text))]
    sentence_type = view.typesystem.get_type(SENTENCE)
    view.add_all([sentence_type(begin=b, end=e) for b, e in given])
    if existing_tokens:
        nlp = load_pipeline(str(tiny_spacy_model))
        token_type = view.typesystem.get_type(TOKEN)
        view.add_all([token_type(begin=t.idx, end=t.idx + len(t)) for t in nlp.make_doc(text)])
    component(
        tiny_spacy_model,
        tmp_path,
        layers=ALL,
        use_existing_sentences=True,
        use_existing_tokens=existing_tokens,
    ).process(view)
    assert spans(view.select(SENTENCE)) == given
    assert_one_root_per_sentence(view)


def test_text_outside_the_existing_sentences_is_left_to_the_parser(
    tiny_spacy_model, tmp_path
) -> None:
    text = training_text(4)
    view = new_view(text)
    second = text.index("The p53")
    third = text.index("Mutations")
    given = [(second, third - 1)]  # only the second training sentence is given
    view.add(view.typesystem.get_type(SENTENCE)(begin=given[0][0], end=given[0][1]))
    component(tiny_spacy_model, tmp_path, layers=ALL, use_existing_sentences=True).process(view)
    assert spans(view.select(SENTENCE)) == given
    assert_one_root_per_sentence(view)
    # The parser still found sentences of its own before and after the given one.
    roots = view.select(DEPENDENCY_ROOT)
    assert any(r.begin < second for r in roots) and any(r.begin >= third for r in roots)


def test_batch_gives_the_same_annotations_as_one_by_one(tiny_spacy_model, tmp_path) -> None:
    texts = [training_text(2), "  " + training_text(4), sentence_text(SENTENCES[5][0])]
    proc = component(tiny_spacy_model, tmp_path, layers=ALL, batch_size=2)
    batch = [new_view(t) for t in texts]
    proc.process_batch(batch)
    for text, batched in zip(texts, batch, strict=True):
        single = new_view(text)
        proc.process(single)
        for type_name in (TOKEN, SENTENCE, DEPENDENCY, NAMED_ENTITY):
            assert spans(batched.select(type_name)) == spans(single.select(type_name))


def long_text() -> str:
    paragraphs = [training_text(len(SENTENCES))[k * 40 :] for k in range(6)]
    return "\n\n".join(paragraphs * 4)


def test_chunked_text_gives_the_same_tokens_and_tags(tiny_spacy_model, tmp_path) -> None:
    text = long_text()
    assert len(text) > 3000
    whole, chunked = new_view(text), new_view(text)
    component(tiny_spacy_model, tmp_path, layers=["tokens", "pos"]).process(whole)
    component(tiny_spacy_model, tmp_path, layers=["tokens", "pos"], max_chunk_chars=400).process(
        chunked
    )
    cuts = [begin for begin, _ in plan_chunks(text, 400)[1:]]
    assert len(cuts) >= 7
    chunked_tokens = chunked.select(TOKEN)
    for token in chunked_tokens:
        assert not any(token.begin < cut < token.end for cut in cuts)
    # spaCy tokenizes without context across whitespace, so every token is the same.
    assert spans(chunked_tokens) == spans(whole.select(TOKEN))

    # The tagger sees a few tokens either side; away from the cuts the tags agree.
    def far_from_cuts(token) -> bool:
        return all(abs(token.begin - cut) > 40 for cut in cuts)

    whole_tags = {(t.begin, t.end): t.pos.PosValue for t in whole.select(TOKEN)}
    compared = [t for t in chunked_tokens if far_from_cuts(t)]
    assert len(compared) > len(chunked_tokens) // 2
    assert all(whole_tags[(t.begin, t.end)] == t.pos.PosValue for t in compared)


def test_chunks_prefer_structure_then_blank_lines_and_never_split_tokens() -> None:
    text = "aaaa bbbb. cccc dddd\n\neeee ffff. gggg hhhh iiii jjjj kkkk"
    # No structure: the blank line (after "dddd\n\n") wins over the sentence end and
    # spaces; then only spaces are in the second half of the window.
    assert plan_chunks(text, 30) == [(0, 22), (22, 48), (48, len(text))]
    # A Paragraph boundary in the window wins over the blank line, unless it is
    # inside a word (the tokenizer might see one token there).
    assert plan_chunks(text, 30, structure_breaks=[16])[0] == (0, 16)
    assert plan_chunks(text, 30, structure_breaks=[18])[0] == (0, 22)
    # With tokens, a cut inside a token moves to its begin.
    chunks = plan_chunks("x" * 10 + " " + "y" * 30, 20, token_spans=[(0, 10), (11, 41)])
    assert chunks[0] == (0, 11)
    # A text without whitespace is cut hard at the limit.
    assert plan_chunks("z" * 50, 20) == [(0, 20), (20, 40), (40, 50)]
    for chunks in (plan_chunks(text, 12), plan_chunks(long_text(), 333)):
        assert chunks[0][0] == 0 and all(
            a[1] == b[0] for a, b in zip(chunks, chunks[1:], strict=False)
        )
        assert all(0 < e - b <= 333 for b, e in chunks)


def test_chunks_never_cut_inside_a_given_sentence() -> None:
    text = "aaaa bbbb. cccc dddd\n\neeee ffff. gggg hhhh iiii jjjj kkkk"
    given = [(0, 10), (11, 32), (33, len(text))]
    # Without given sentences the blank line inside the second one is the cut.
    assert plan_chunks(text, 30)[0] == (0, 22)
    # With them, the cut moves back to where the second one begins, even in the
    # first half of the window.
    assert plan_chunks(text, 30, given_sentences=given) == [(0, 11), (11, 33), (33, 57)]
    # A structure break inside a given sentence is no cut either.
    assert plan_chunks(text, 30, structure_breaks=[16], given_sentences=given)[0] == (0, 11)
    # Only a sentence longer than the window is cut, at whitespace.
    longer = [(0, 10), (11, 57)]
    assert plan_chunks(text, 30, given_sentences=longer) == [(0, 11), (11, 38), (38, 57)]


@pytest.mark.parametrize("existing_tokens", [False, True])
def test_chunks_keep_each_given_sentence_one_tree(
    tiny_spacy_model, tmp_path, existing_tokens
) -> None:
    text = training_text(4)
    view = new_view(text)
    # One given sentence spans the second and third training sentences: a chunk cut
    # after its inner "cells. " would split it into two trees.
    second = text.index("The p53")
    fourth = text.index("We detected")
    given = [(0, second - 1), (second, fourth - 1), (fourth, len(text))]
    sentence_type = view.typesystem.get_type(SENTENCE)
    view.add_all([sentence_type(begin=b, end=e) for b, e in given])
    if existing_tokens:
        nlp = load_pipeline(str(tiny_spacy_model))
        token_type = view.typesystem.get_type(TOKEN)
        view.add_all([token_type(begin=t.idx, end=t.idx + len(t)) for t in nlp.make_doc(text)])
    component(
        tiny_spacy_model,
        tmp_path,
        layers=["tokens", "pos", "dependencies"],
        use_existing_sentences=True,
        use_existing_tokens=existing_tokens,
        max_chunk_chars=100,
    ).process(view)
    assert spans(view.select(SENTENCE)) == given
    assert_one_root_per_sentence(view)


def test_chunking_uses_paragraph_annotations(tiny_spacy_model, tmp_path) -> None:
    text = long_text()
    view = new_view(text)
    paragraph = view.typesystem.get_type(PARAGRAPH)
    begin = 0
    for block in text.split("\n\n"):
        view.add(paragraph(begin=begin, end=begin + len(block)))
        begin += len(block) + 2
    component(tiny_spacy_model, tmp_path, layers=["tokens"], max_chunk_chars=700).process(view)
    unchunked = new_view(text)
    component(tiny_spacy_model, tmp_path, layers=["tokens"]).process(unchunked)
    assert spans(view.select(TOKEN)) == spans(unchunked.select(TOKEN))


def test_scispacy_tokenizer_replaces_the_pipeline_tokenizer(tiny_spacy_model, tmp_path) -> None:
    text = "The p53-dependent protein (BRCA2) binds RAD51."
    view = new_view(text)
    component(tiny_spacy_model, tmp_path, layers=["tokens"], tokenizer="scispacy_combined").process(
        view
    )
    from scispacy.custom_tokenizer import combined_rule_tokenizer

    nlp = load_pipeline(str(tiny_spacy_model))
    expected = [t.text for t in combined_rule_tokenizer(nlp)(text) if not t.is_space]
    assert [t.get_covered_text() for t in view.select(TOKEN)] == expected


def test_requirements_follow_the_config() -> None:
    requires, produces = SpacyPipeline.requirements(SpacyPipelineConfig(model="m"))
    assert requires == ()
    assert {SENTENCE, TOKEN, POS, f"{TOKEN}:pos", LEMMA, f"{TOKEN}:lemma"} <= set(produces)
    assert DEPENDENCY_ROOT in produces and NAMED_ENTITY not in produces
    config = SpacyPipelineConfig(
        model="m",
        layers=ALL,
        use_existing_tokens=True,
        use_existing_sentences=True,
        entity_mapping={"GENE": {"type": "gene"}},
        unmapped_entities="drop",
    )
    requires, produces = SpacyPipeline.requirements(config)
    assert requires == (TOKEN, SENTENCE)
    assert TOKEN not in produces and SENTENCE not in produces
    assert f"{TOKEN}:pos" in produces and GENE_MENTION in produces
    assert NAMED_ENTITY not in produces


def test_inconsistent_configs_are_rejected() -> None:
    with pytest.raises(ValidationError, match="attach to tokens"):
        SpacyPipelineConfig(model="m", layers=["pos"])
    with pytest.raises(ValidationError, match="tokenizer is not used"):
        SpacyPipelineConfig(model="m", use_existing_tokens=True, tokenizer="scispacy_combined")
    with pytest.raises(ValidationError):
        SpacyPipelineConfig(model="m", layers=["chunks"])


def test_missing_scispacy_model_says_where_it_comes_from(tmp_path) -> None:
    context = RunContext(output_dir=tmp_path, workflow_dir=tmp_path)
    (message,) = SpacyPipeline.check_config(SpacyPipelineConfig(model="en_core_sci_md"), context)
    assert "'en_core_sci_md' is not installed" in message
    assert "not PyPI" in message and "name-squatting" in message
    assert "scispacy" in message.lower() and "https://" in message
    with pytest.raises(ModelNotFoundError, match="scispaCy README") as raised:
        load_pipeline("en_ner_bionlp13cg_md")
    assert "not PyPI" in raised.value.hint


def test_missing_model_paths_and_packages_are_explained(tmp_path) -> None:
    assert "does not exist" in model_problem("./no/such/model", tmp_path)
    assert "python -m spacy download en_core_web_sm" in model_problem("en_core_web_sm")
    (tmp_path / "empty").mkdir()
    assert "no config.cfg" in model_problem(str(tmp_path / "empty"))
    nested = tmp_path / "package" / "my_model-1.0"
    nested.mkdir(parents=True)
    (nested / "config.cfg").write_text("[nlp]\n")
    assert str(nested) in model_problem(str(tmp_path / "package"))


def test_model_path_relative_to_the_workflow_folder(tiny_spacy_model, tmp_path) -> None:
    context = RunContext(output_dir=tmp_path, workflow_dir=tiny_spacy_model.parent)
    config = SpacyPipelineConfig(model=f"./{tiny_spacy_model.name}")
    assert SpacyPipeline.check_config(config, context) == []


def test_layers_the_pipeline_cannot_write_are_reported(tiny_spacy_model, tmp_path) -> None:
    config = SpacyPipelineConfig(model=str(tiny_spacy_model), layers=ALL, disable=["ner"])
    (message,) = SpacyPipeline.check_config(config, RunContext(output_dir=tmp_path))
    assert "no pipe that writes entities" in message and "remove it from layers" in message
    kept = ", ".join(layer for layer in ALL if layer != "entities")
    assert f"(layers: [{kept}])" in message  # the list that works, ready to paste
    with pytest.raises(ValueError, match="no pipe that writes entities"):
        SpacyPipeline(config, RunContext(output_dir=tmp_path))
    with pytest.raises(ValueError, match="does not have: nerr"):
        component(tiny_spacy_model, tmp_path, disable=["nerr"])


def test_workflow_rules_sentences_then_spacy_to_xmi(tiny_spacy_model, tmp_path) -> None:
    (tmp_path / "in").mkdir()
    text = "Results\n\n" + training_text(4) + "\n\nMethods\n\n" + training_text(2)
    (tmp_path / "in" / "doc1.txt").write_text(text, encoding="utf-8")
    yaml_text = textwrap.dedent(
        f"""
        reader:
          component: text.reader.v1
          config: {{input: {tmp_path / "in"}}}
        components:
          - component: sentences.rules.v1
            view: system
          - component: spacy.pipeline.v1
            view: system
            config:
              model: {tiny_spacy_model}
              use_existing_sentences: true
              layers: [tokens, pos, lemma, dependencies, entities]
              entity_mapping: {{GENE: {{type: gene}}}}
              unmapped_entities: drop
        writers:
          - component: xmi.writer.v1
        run: {{jobs: 1, backend: sequential, output: {tmp_path / "out"}, progress: false}}
        """
    )
    workflow = load_workflow_text(yaml_text, source=str(tmp_path / "wf.yaml"))
    report = run_workflow(workflow, RunOptions(show_progress=False))
    assert report.counts["ok"] == 1, report.failures
    xmi = tmp_path / "out" / "xmi" / "doc1.xmi"
    typesystem_file = tmp_path / "out" / "xmi" / "TypeSystem.xml"
    with open(typesystem_file, "rb") as f:
        typesystem = cassis.load_typesystem(f)
    with open(xmi, "rb") as f:
        cas = cassis.load_cas_from_xmi(f, typesystem=typesystem)
    system = cas.get_view("system")
    sentences = [s.get_covered_text() for s in system.select(SENTENCE)]
    assert sentences[:2] == ["Results", sentence_text(SENTENCES[0][0])]
    assert "Methods" in sentences and len(sentences) == 1 + 4 + 1 + 2
    tokens = system.select(TOKEN)
    assert tokens and all(t.pos is not None and t.pos.PosValue for t in tokens)
    assert all(text[t.begin : t.end] == t.get_covered_text() != "" for t in tokens)
    assert_one_root_per_sentence(system)
    assert "BRCA2" in {g.get_covered_text() for g in system.select(GENE_MENTION)}
    assert cas.select(TOKEN) == []  # the initial view is left alone


def test_workflow_validation_reports_a_missing_model(tmp_path) -> None:
    (tmp_path / "in").mkdir()
    yaml_text = textwrap.dedent(
        f"""
        reader:
          component: text.reader.v1
          config: {{input: {tmp_path / "in"}}}
        components:
          - component: spacy.pipeline.v1
            config: {{model: en_core_sci_sm}}
        """
    )
    with pytest.raises(WorkflowValidationError, match="scispaCy project, not PyPI"):
        load_workflow_text(yaml_text, source="wf.yaml")


def test_shipped_model_prefix_names_missing_model() -> None:
    from casflow.components.spacy.loading import model_problem

    problem = model_problem("casflow:no_such_model")
    assert problem is not None and "no shipped model 'no_such_model'" in problem


def test_shipped_group_or_other_tool_model_is_named_as_such() -> None:
    from casflow.components.spacy.loading import model_problem

    group = model_problem("casflow:craft_syntax_members")
    assert group is not None and "is a group of spaCy pipelines" in group
    assert "casflow:craft_syntax_members/rtl1" in group
    other = model_problem("casflow:gene")
    assert other is not None and "is not a spaCy pipeline (no config.cfg" in other
    assert model_problem("casflow:craft_syntax_members/fold1") is None
