"""Unlabelled text that models learn word representations from.

A list of items, read in order: gold sources read for their text only
(:class:`TextSource`, a reader step and how its views become sentences) and
ontology definitions (:class:`DefinitionText`). The CRF trainer's word clusters
(``resources.cluster_text``) and the Stanza NER trainer's word2vec vectors
(``vectors: {word2vec: {text: ...}}``) read the same kind of list, so one
workflow line says what both learned from. The default is the text of the
shipped anatomy tagger's clusters: all 67 CRAFT articles (its 7 development
articles too, so a CRAFT model should not learn from this default), the UBERON,
CL and SO definitions, BC2GM train and AnatEM train (no AnatEM or BC2GM
development or test text).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Literal

import cassis
from pydantic import BaseModel, ConfigDict, Field

from casflow.components.corpora.locations import corpus_dir, craft_ontologies, ontology_file
from casflow.components.formats.obo import read_obo
from casflow.components.inputs import resolve_input
from casflow.pipeline.component import RunContext
from casflow.pipeline.gold_sources import GoldSource, check_source, read_source
from casflow.typesystem import TOKEN


class TextSource(GoldSource):
    """A gold source whose text becomes sentences of unlabelled text."""

    units: Literal["lines", "text", "tokens"] = Field(
        "text",
        description="Sentences from each view: lines (the text split at line breaks), text "
        "(the whole text) or tokens (the Token texts joined by single spaces).",
    )


class DefinitionText(BaseModel):
    """The definitions of ontologies (in the configured ontology folder) as sentences."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    definitions: list[str] = Field(
        min_length=1, description="Ontologies (e.g. UBERON, CL, SO) whose definitions are read."
    )


UnlabelledText = list[TextSource | DefinitionText]


def default_text() -> UnlabelledText:
    """The shipped anatomy tagger's cluster text, in its order (what is learned depends
    on the order)."""
    return [
        TextSource(
            component="craft.reader.v1",
            config={"split": "all", "layers": []},
            order="id",
            units="lines",
        ),
        DefinitionText(definitions=["UBERON", "CL", "SO"]),
        TextSource(component="bc2gm.reader.v1", config={"split": "train"}, units="text"),
        TextSource(
            component="anatem.reader.v1", config={"split": "train"}, order="id", units="tokens"
        ),
    ]


def text_field(what: str = "Unlabelled text") -> Any:
    """A config field holding a list of unlabelled-text items, by default
    :func:`default_text`; ``what``: whose text it is."""
    return Field(
        default_factory=default_text,
        min_length=1,
        description=f"{what}, in order: gold sources (with units) and ontology definitions. "
        "Default: the text of the anatomy CRF's word clusters (all 67 CRAFT articles by "
        "lines, the UBERON, CL and SO definitions, BC2GM train, AnatEM train by tokens).",
    )


ONTOLOGIES_DESCRIPTION = (
    "Folder holding <ONT>/<ONT>/<ONT>.obo.zip (CRAFT's concept-annotation layout); "
    "default CRAFT's ($CASFLOW_CORPORA/craft/concept-annotation, else "
    "../shared/corpora/craft/...)."
)


def ontology_path(ontologies: str | None, context: RunContext, ontology: str) -> Path:
    """The OBO file of ``ontology``: in the folder ``ontologies``, else CRAFT's."""
    if ontologies is None:
        folder = craft_ontologies(corpus_dir("craft"))
    else:
        folder = Path(resolve_input(ontologies, context.workflow_dir))
    return ontology_file(folder, ontology)


def view_texts(view: cassis.Cas, units: str) -> list[str]:
    """A gold view's text as sentences: ``lines`` (split at line breaks), ``text`` (the
    whole text) or ``tokens`` (the Token texts joined by spaces)."""
    text = view.sofa_string or ""
    if units == "lines":
        return text.split("\n")
    if units == "tokens":
        tokens = sorted(view.select(TOKEN), key=lambda t: (t.begin, t.end))
        return [" ".join(text[t.begin : t.end] for t in tokens)]
    return [text]


def definition_texts(obo_file: Path) -> Iterator[str]:
    """The definitions of an OBO ontology, in file order, as written."""
    for stanza in read_obo(obo_file):
        yield from stanza.definitions


def _texts_of(view: cassis.Cas, doc_id: str, units: str) -> list[str]:
    return view_texts(view, units)


def read_texts(
    items: Sequence[TextSource | DefinitionText],
    ontologies: str | None,
    context: RunContext,
    log: Callable[[str], None],
) -> Iterator[str]:
    """The sentences of ``items``, in order."""
    for item in items:
        if isinstance(item, DefinitionText):
            for ontology in item.definitions:
                yield from definition_texts(ontology_path(ontologies, context, ontology))
        else:
            log(f"reading unlabelled text with {item.component}")
            yield from (
                text
                for texts in read_source(item, context, partial(_texts_of, units=item.units))
                for text in texts
            )


def text_problems(
    items: Sequence[TextSource | DefinitionText], ontologies: str | None, context: RunContext
) -> list[str]:
    """What is missing to read ``items``: the sources' readers, settings and corpus files,
    the ontology files of the definitions."""
    problems = [
        p for item in items if isinstance(item, TextSource) for p in check_source(item, context)
    ]
    wanted = [o for item in items if isinstance(item, DefinitionText) for o in item.definitions]
    return problems + ontology_problems(wanted, ontologies, context)


def ontology_problems(
    names: Sequence[str], ontologies: str | None, context: RunContext, setting: str = "ontologies"
) -> list[str]:
    """The ontologies of ``names`` whose OBO file is missing, each with what to set."""
    problems = []
    for ontology in dict.fromkeys(names):
        path = ontology_path(ontologies, context, ontology)
        if not path.is_file():
            problems.append(
                f"the {ontology} ontology needs {path}, which does not exist; set "
                f"{setting} to the folder holding <ONT>/<ONT>/<ONT>.obo.zip"
            )
    return problems
