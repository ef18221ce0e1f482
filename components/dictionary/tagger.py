"""``ner.dictionary.v1``: anatomy mentions by longest-match lookup of UBERON and CL.

The part MetaMap plays in the AnEM study: every name and synonym (of the chosen
scopes) of the ontologies' terms is an entry; matching runs over casflow's
fine-grained tokens (:mod:`casflow.components.crfsuite.tokenize`, the CRF
tagger's own) and ignores case, plurals, hyphens and Greek-letter spelling
(:mod:`casflow.components.dictionary.normalise`). Each match becomes an
``AnatomyMention`` with its class in ``value``, the term id in ``identifier``
and the ontology in ``ontology``.

Classes (the default ``class_rules``): a CL term is a ``Cell``; a UBERON term
takes the AnatEM class named after the first of its CARO ancestors in this
order: developing anatomical structure, organism substance, immaterial
anatomical entity, organism subdivision, anatomical system, organ, tissue,
multi-tissue structure, anatomical cluster (-> Multi-tissue_structure); else
``Multi-tissue_structure``. AnatEM's ``Cancer``, ``Pathological_formation`` and
``Cellular_component`` have no counterpart in the two ontologies. ``one_class``
writes one label instead.

Matches stay within a sentence, as the stacking features
(:mod:`casflow.components.dictionary.features`) see them through the CRF: within
each of the view's Sentence annotations when it has any, else within each line
(a match never spans a line break or a blank line: "Skeletal\n\nMuscle tissue" is
two lines, not "skeletal muscle tissue").
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import cassis
from pydantic import Field, field_validator

from casflow.components.corpora.locations import corpus_dir, craft_ontology, describe_default
from casflow.components.crfsuite.tokenize import Span, refine, tokenize
from casflow.components.dictionary.cache import default_cache_dir, load_dictionary
from casflow.components.dictionary.entries import CompileSettings, Match, ontology_problem
from casflow.components.rules.sentences import NEWLINE
from casflow.pipeline.component import ComponentConfig, Processor, RunContext
from casflow.typesystem import (
    ANATOMY_MENTION,
    NAMED_ENTITY,
    SENTENCE,
    TOKEN,
    load_typesystem,
    resolve_type_name,
)

Scope = Literal["EXACT", "NARROW", "RELATED", "BROAD"]

#: UBERON's CARO classes -> AnatEM classes; the first ancestor in this order wins
ANATEM_CLASS_RULES: dict[str, str] = {
    "UBERON:0005423": "Developing_anatomical_structure",
    "UBERON:0000463": "Organism_substance",
    "UBERON:0000466": "Immaterial_anatomical_entity",
    "UBERON:0000475": "Organism_subdivision",
    "UBERON:0000467": "Anatomical_system",
    "UBERON:0000062": "Organ",
    "UBERON:0000479": "Tissue",
    "UBERON:0000481": "Multi-tissue_structure",
    "UBERON:0000477": "Multi-tissue_structure",
}
DEFAULT_CLASSES: dict[str, str] = {"CL": "Cell", "UBERON": "Multi-tissue_structure"}

#: entries that are anatomy in the ontologies but something else in papers: the
#: matches of at least 5 occurrences with under a quarter correct on AnatEM *train*
#: (never devel), less the true body parts that only fail inside cancer names
DEFAULT_STOP_LIST: tuple[str, ...] = (
    "role", "CSF", "adult", "life", "scale", "pylori", "plant", "extension", "MCT",
    "hyp", "segment", "all",
)  # fmt: skip


def default_ontologies() -> list[str]:
    craft = corpus_dir("craft")
    return [str(craft_ontology(craft, "UBERON")), str(craft_ontology(craft, "CL"))]


class DictionaryTaggerConfig(ComponentConfig):
    ontologies: list[str] = Field(
        default_factory=default_ontologies,
        description="OBO files (.obo or .obo.zip), in priority order where terms share a "
        "name; a relative path is taken from the working directory, else from the workflow's folder. Default: CRAFT's "
        f"UBERON and CL in {describe_default('craft')}.",
    )
    synonym_scopes: list[Scope] = Field(
        default_factory=lambda: list[Scope](["EXACT"]),
        description="Synonym scopes used beside each term's name.",
    )
    stop_list: list[str] = Field(
        default_factory=lambda: list(DEFAULT_STOP_LIST),
        description="Entries never matched (ambiguous in text), compared after "
        "normalisation (case, plurals, hyphens).",
    )
    min_length: int = Field(
        3, ge=1, description="Entries shorter than this many characters (spaces aside) are dropped."
    )
    case_sensitive_max_length: int = Field(
        3,
        ge=0,
        description="Entries of at most this many characters match only as written "
        "(a lower-case one also capitalised): 'ear' matches 'Ear', not 'EAR'.",
    )
    class_rules: dict[str, str] = Field(
        default_factory=lambda: dict(ANATEM_CLASS_RULES),
        description="Ancestor term id -> class; a term takes the class of the first rule "
        "whose id is the term or one of its is_a ancestors. Default: AnatEM classes "
        "from UBERON's CARO classes.",
    )
    default_classes: dict[str, str] = Field(
        default_factory=lambda: dict(DEFAULT_CLASSES),
        description="Id prefix -> class of the terms no rule classifies (else the prefix).",
    )
    one_class: str | None = Field(
        None, description="Write this one label for every match instead of the classes."
    )
    mention_type: str = Field(
        ANATOMY_MENTION,
        description="Annotation type written (full or short name), a NamedEntity subtype: "
        "class in value, term id in identifier (and the ontology where it has the feature).",
    )
    use_existing_tokens: bool = Field(
        False,
        description="Match over the view's Token annotations (split further at punctuation "
        "and letter/digit changes) instead of tokenizing the text.",
    )
    cache: bool = Field(
        True,
        description="Keep the compiled dictionary on disk (keyed by the fingerprint of the "
        "files and settings) so other processes and runs load it instead of compiling.",
    )
    cache_dir: str | None = Field(
        None,
        description="Folder of the compiled dictionaries; null: "
        "$XDG_CACHE_HOME/casflow/dictionary (~/.cache/casflow/dictionary).",
    )

    @field_validator("class_rules")
    @classmethod
    def _term_ids(cls, value: dict[str, str]) -> dict[str, str]:
        # OBO ids are PREFIX:LOCAL; the PURL form UBERON_0000062 matches no term, and
        # its rule would be left unused without a word
        wrong = [term for term in value if ":" not in term]
        if wrong:
            said = ", ".join(f"{t!r} (write {t.replace('_', ':', 1)!r})" for t in wrong)
            raise ValueError(f"class_rules ids are OBO ids, PREFIX:NUMBER: {said}")
        return value

    @field_validator("mention_type")
    @classmethod
    def _full_type_name(cls, value: str) -> str:
        name = resolve_type_name(value)
        typesystem = load_typesystem()
        if not typesystem.contains_type(name):
            return name  # the workflow validator reports it against the type system
        if not typesystem.subsumes(typesystem.get_type(NAMED_ENTITY), typesystem.get_type(name)):
            # value and identifier are NamedEntity features; another type fails every document
            raise ValueError(
                f"mention_type {value!r} is not a NamedEntity subtype; use AnatomyMention "
                "(the default), NamedEntity or another of its subtypes"
            )
        return name

    def settings(self) -> CompileSettings:
        return CompileSettings(
            scopes=tuple(self.synonym_scopes),
            stop_list=frozenset(self.stop_list),
            min_length=self.min_length,
            case_sensitive_max_length=self.case_sensitive_max_length,
            class_rules=tuple(self.class_rules.items()),
            default_classes=tuple(sorted(self.default_classes.items())),
            one_class=self.one_class,
        )


def resolve_ontology(path: str, workflow_dir: Path) -> Path:
    """An ontology path as given, else relative to the workflow's folder."""
    resolved = Path(path).expanduser()
    if not resolved.is_absolute() and not resolved.exists():
        resolved = workflow_dir / resolved
    return resolved


class DictionaryTagger(Processor[DictionaryTaggerConfig]):
    name = "ner.dictionary.v1"
    description = (
        "Anatomy mentions by longest-match lookup of UBERON and CL names and synonyms "
        "(case, plural, hyphen and Greek-letter variants), with AnatEM classes."
    )
    produces = (ANATOMY_MENTION,)

    @classmethod
    def requirements(
        cls, config: DictionaryTaggerConfig
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        requires = (TOKEN,) if config.use_existing_tokens else ()
        return requires, (config.mention_type,)

    @classmethod
    def check_config(cls, config: DictionaryTaggerConfig, context: RunContext) -> list[str]:
        problems = []
        if not config.ontologies:
            problems.append("ontologies is empty; name at least one OBO file")
        for path in config.ontologies:
            resolved = resolve_ontology(path, context.workflow_dir)
            if not resolved.is_file():
                where = "" if str(resolved) == path else f" (looked for {resolved})"
                what = "is a folder" if resolved.is_dir() else "not found"
                # the defaults come from the corpora folder; a path the user gave does not
                advice = (
                    "give the path of the OBO file (.obo or .obo.zip), absolute or from the "
                    "workflow's folder"
                    if "ontologies" in config.model_fields_set
                    else "set CASFLOW_CORPORA to the corpora folder (holding craft/) or give "
                    "the OBO files' paths in 'ontologies'"
                )
                problems.append(f"ontology file {path} {what}{where}; {advice}")
                continue
            problem = ontology_problem(resolved)
            if problem:
                problems.append(f"ontologies: {problem}; give an OBO file (.obo or .obo.zip)")
        return problems

    def __init__(self, config: DictionaryTaggerConfig, context: RunContext | None = None) -> None:
        super().__init__(config, context)
        paths = [resolve_ontology(p, self.context.workflow_dir) for p in config.ontologies]
        cache = None
        if config.cache:
            cache = Path(config.cache_dir).expanduser() if config.cache_dir else default_cache_dir()
        self.dictionary = load_dictionary(paths, config.settings(), cache)

    def _token_runs(self, view: cassis.Cas, text: str) -> list[list[Span]]:
        """The tokens of each sentence (of each line when the view has no sentences)."""
        existing = (
            [(t.begin, t.end) for t in view.select(TOKEN)]
            if self.config.use_existing_tokens
            else None
        )
        sentences = sorted({(s.begin, s.end) for s in view.select(SENTENCE)})
        if sentences:
            runs = []
            for begin, end in sentences:
                if existing is None:
                    runs.append(tokenize(text, begin, end))
                else:
                    covered = [(b, e) for b, e in existing if begin <= b and e <= end]
                    runs.append(refine(text, covered))
            return runs
        spans = tokenize(text) if existing is None else refine(text, existing)
        return split_at_line_breaks(text, spans)

    def process(self, view: cassis.Cas) -> None:
        text = view.sofa_string or ""
        mention_type = view.typesystem.get_type(self.config.mention_type)
        # NamedEntity has value and identifier; ConceptMention subtypes also ontology
        with_ontology = mention_type.get_feature("ontology") is not None
        # overlapping sentences could find one match twice
        matches: dict[tuple[int, int], Match] = {}
        for spans in self._token_runs(view, text):
            for match in self.dictionary.match(text, spans):
                matches.setdefault((match.begin, match.end), match)
        mentions = []
        for m in matches.values():
            extra = {"ontology": m.entry.ontology} if with_ontology else {}
            mentions.append(
                mention_type(
                    begin=m.begin,
                    end=m.end,
                    value=m.entry.label,
                    identifier=m.entry.identifier,
                    **extra,
                )
            )
        view.add_all(mentions)


def split_at_line_breaks(text: str, spans: list[Span]) -> list[list[Span]]:
    """``spans`` cut into runs wherever a line break (as ``sentences.rules.v1`` takes
    them: LF, CR, U+2028, ...) lies between two tokens."""
    runs: list[list[Span]] = [[]]
    for span in spans:
        if runs[-1] and NEWLINE.search(text, runs[-1][-1][1], span[0]):
            runs.append([])
        runs[-1].append(span)
    return [run for run in runs if run]
