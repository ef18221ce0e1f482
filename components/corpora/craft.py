"""CRAFT gold corpus reader: one CAS per article, every gold layer aligned to its text.

The subject of analysis is ``articles/txt/<PMID>.txt`` as is (offsets in every CRAFT
file refer to it); ``DocumentMetaData.documentId`` is the PMID. Layers (config
``layers``, default all):

- ``sentences``, ``tokens``, ``pos``, ``constituents``: from the Penn treebank
  (``structural-annotation/treebank/penn/<PMID>.tree``, one tree per line). Leaves
  are aligned to the text in order, allowing only whitespace between tokens;
  PTB escapes (``-LRB-`` ``-RRB-`` ``-LSB-`` ``-RSB-`` ``-LCB-`` ``-RCB-``, `````
  and ``''`` for a straight ``"``) are undone; a word's outer Unicode spaces are
  not part of the token (CRAFT has ``XpdTTD\\u200a``). A leaf that is not found
  raises :class:`CraftAlignmentError` naming the article, tree and token; text left
  after the last tree is an error too. ``Token.pos`` is a ``POS`` whose
  ``PosValue`` is the Penn tag. ``-NONE-`` leaves are not tokens: each is a
  zero-width ``EmptyCategory`` (``value`` = the element, e.g. ``*T*-1``) at the
  start of the next token (the sentence end if none follows).
- Constituents: the outermost unlabeled bracket ``( ... )`` is a DKPro
  ``constituent.ROOT`` (``constituentType`` "ROOT", covering the sentence); every
  labeled bracket below it is a ``casflow.syntax.TreebankConstituent`` with
  ``constituentType`` the category, ``syntacticFunction`` the function tags joined
  by "-", ``coindex``/``gapIndex`` and ``originalLabel`` (``NP-SBJ-1``).
  Preterminals are not constituents (DKPro style: the tag is on the token).
  ``children`` lists, in order, constituents, tokens and empty categories;
  ``parent`` links back (``Token.parent``, ``EmptyCategory.parent``). A
  constituent spans its tokens; one holding only empty elements is zero-width.
  Each sentence also gets a DKPro ``PennTree`` holding the tree line as written.
- ``lemmas`` and ``dependencies``: from ``structural-annotation/dependency/conllu/
  <PMID>.conllu`` attached to the SAME tokens (sentence by sentence, word by word;
  any disagreement in sentence count, word count or word form raises
  :class:`CraftAlignmentError`). ``Lemma.value`` from the LEMMA column, UPOS as
  ``POS.coarseValue`` (with ``pos``). Dependencies are DKPro ``Dependency``
  (``flavor`` "basic", begin/end of the dependent) with CRAFT's CLEAR labels; the
  root is a DKPro ``dependency.ROOT`` with Governor = Dependent and
  ``DependencyType`` "ROOT" (CRAFT writes ``root``; every CRAFT sentence has one
  root labelled ``root``, so nothing is lost).
- ``structure``: from ``structural-annotation/sections-and-typography/knowtator``,
  whose annotations are ``section`` spans named by a ``section name`` slot and
  typography. Name ``title`` -> ``Title``; ``abstract`` -> ``Abstract``; ``Figure N``
  / ``Table N`` -> ``Caption`` (``captionOf`` figure/table, ``label`` the name, the
  label line included); any other name -> ``Section`` (``sectionType`` = the
  name as written, e.g. "Materials and Methods"; ``depth`` 1 + enclosing sections).
  CRAFT does not annotate headings or paragraphs; they are derived from the text
  blocks (lines between blank lines): a section's or the abstract's first block
  is a ``Heading`` (depth 1) when it is a whole ``HEADING`` tree in the treebank
  or equals the section name; any other block outside title and captions that is
  exactly one ``HEADING`` tree is a ``Heading`` of depth 2 (subsection headings;
  CRAFT does not give their nesting). Every other block is a ``Paragraph``, except
  the title and a caption's label line. Typography classes (italic, bold, sub,
  sup, underline) -> ``Typography(style=...)``, trimmed of outer whitespace.
- ``concepts``: ``concept-annotation/<ONT>/<SET>/knowtator/<PMID>.txt.knowtator.xml``
  for each annotation set in ``ontologies`` (``PR`` reads ``PR/PR``,
  ``PR+extensions`` reads ``PR/PR+extensions``). ``GeneMention`` for PR and for SO
  classes in ``gene_so_classes`` (default: SO:0000704 gene, SO:0000673
  transcript, SO:0000104 polypeptide and, with ``gene_so_descendants``, all their
  is_a descendants in the corpus's ``SO.obo.zip``); ``AnatomyMention`` for UBERON,
  CL and GO_CC; ``ConceptMention`` otherwise. ``identifier`` is the class id
  (``PR:000000101``), ``ontology`` the annotation set name, ``value`` the set name
  unless ``mention_values`` maps it to another label (e.g. ``{PR: GENE}``).
  ``<spannedText>`` is checked against the text (fragments joined by " ... ", as
  CRAFT writes them): a difference is a :class:`CraftDataWarning`, an offset
  outside the text an error.

Discontinuous mentions (CRAFT has about 770 in the 67 articles, 2 or 3 pieces):
``begin``/``end`` cover the first to the last piece and ``fragments`` lists the
pieces (``casflow.ner.Fragment``, also indexed) in text order; a contiguous
mention has no ``fragments``. Evaluators should compare the fragment lists when
both sides have them and score a discontinuous gold mention against a contiguous
system mention by its covering span, counting only fragment characters for
overlap (``casflow.components.metrics.matching`` does exactly this); never
treat the text between the pieces as part of the mention.
"""

from __future__ import annotations

import re
import warnings
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import cassis
from pydantic import Field, field_validator

from casflow.cas.metadata import set_document_metadata
from casflow.components.corpora.locations import craft_ontology, describe_default
from casflow.components.corpora.locations import default_corpus as _default_corpus
from casflow.components.formats.common import FormatError
from casflow.components.formats.conllu.parse import ConlluDocument, parse_conllu
from casflow.components.formats.knowtator import KnowtatorAnnotation, read_knowtator
from casflow.components.formats.obo import is_a_parents, read_obo
from casflow.components.formats.penn.alignment import (
    CONSTITUENT_LAYER,
    AlignedTree,
    TreeAlignmentError,
    TreebankError,
    TreeTypes,
    align_trees,
    build_tree_layers,
)
from casflow.components.inputs import resolve_input
from casflow.pipeline.component import ComponentConfig, DocumentRef, Reader, RunContext
from casflow.typesystem import (
    ABSTRACT,
    ANATOMY_MENTION,
    CAPTION,
    CONCEPT_MENTION,
    DEPENDENCY,
    DEPENDENCY_ROOT,
    FRAGMENT,
    GENE_MENTION,
    HEADING,
    LEMMA,
    PARAGRAPH,
    POS,
    SECTION,
    SENTENCE,
    TITLE,
    TOKEN,
    TYPOGRAPHY,
)

Layer = Literal[
    "structure",
    "sentences",
    "tokens",
    "pos",
    "lemmas",
    "constituents",
    "dependencies",
    "concepts",
]
ALL_LAYERS: tuple[Layer, ...] = (
    "structure",
    "sentences",
    "tokens",
    "pos",
    "lemmas",
    "constituents",
    "dependencies",
    "concepts",
)
#: Layers built on the treebank tokens: asking for one of them brings the tokens too.
_TOKEN_LAYERS = frozenset({"pos", "lemmas", "constituents", "dependencies"})
_TREEBANK_LAYERS = frozenset({"structure", "sentences", "tokens"}) | _TOKEN_LAYERS
_CONLLU_LAYERS = frozenset({"pos", "lemmas", "dependencies"})

DEFAULT_ONTOLOGIES = ("PR", "SO", "UBERON", "CL", "GO_CC")
GENE_ONTOLOGIES = frozenset({"PR"})
ANATOMY_ONTOLOGIES = frozenset({"UBERON", "CL", "GO_CC"})
#: gene, transcript, polypeptide: the gene and its products (see the module docstring).
DEFAULT_GENE_SO_CLASSES = ("SO:0000704", "SO:0000673", "SO:0000104")

SPANNED_TEXT_SEPARATOR = " ... "
TYPOGRAPHY_CLASSES = frozenset({"italic", "bold", "sub", "sup", "underline"})
SECTION_CLASS = "section"
SECTION_NAME_SLOT = "section name"
_FLOAT_NAME = re.compile(r"(Figure|Table) \d+")
_BLOCK = re.compile(r"[^\n]+")


class CraftDataError(ValueError):
    """A CRAFT file is missing, malformed or inconsistent with the article text."""

    hint = (
        "check the CRAFT folder (config 'corpus') and the named file; do not edit offsets by hand"
    )


class CraftAlignmentError(CraftDataError):
    """Treebank or CoNLL-U tokens do not line up with the text or with each other."""


class CraftDataWarning(UserWarning):
    """A known kind of CRAFT inconsistency that the reader keeps (e.g. spannedText)."""


def default_corpus() -> str:
    """``$CASFLOW_CORPORA/craft``, else ``../shared/corpora/craft``."""
    return _default_corpus("craft")


class CraftReaderConfig(ComponentConfig):
    corpus: str | None = Field(
        None,
        description=f"The CRAFT folder; default {describe_default('craft')}.",
    )
    split: Literal["train", "dev", "all"] = Field(
        "all",
        description="Articles of articles/ids/craft-ids-{train,dev}.txt; all = train then dev.",
    )
    ids: list[str] | None = Field(
        None, description="Explicit PMIDs to read, in this order (overrides split)."
    )
    layers: list[Layer] = Field(
        default_factory=lambda: list(ALL_LAYERS),
        description="Layers to read besides the text; pos, lemmas, constituents and "
        "dependencies bring the tokens with them.",
    )
    ontologies: list[str] = Field(
        default_factory=lambda: list(DEFAULT_ONTOLOGIES),
        description="Concept annotation sets (PR, SO, UBERON, CL, GO_CC, NCBITaxon, "
        "CHEBI, or e.g. PR+extensions where the corpus has them).",
    )
    gene_so_classes: list[str] = Field(
        default_factory=lambda: list(DEFAULT_GENE_SO_CLASSES),
        description="SO classes whose mentions are GeneMentions (default gene, transcript, polypeptide).",
    )
    gene_so_descendants: bool = Field(
        True,
        description="Also count the is_a descendants of gene_so_classes (read from the "
        "corpus's concept-annotation/SO/SO/SO.obo.zip).",
    )
    mention_values: dict[str, str] = Field(
        default_factory=dict,
        description="Mention value per annotation set (e.g. {PR: GENE}); default the set name.",
    )

    @field_validator("ids")
    @classmethod
    def _unique_ids(cls, ids: list[str] | None) -> list[str] | None:
        if ids is not None:
            repeated = sorted({i for i in ids if ids.count(i) > 1})
            if repeated:
                raise ValueError(f"ids listed more than once: {', '.join(repeated)}")
        return ids

    @field_validator("ontologies")
    @classmethod
    def _ontology_names(cls, names: list[str]) -> list[str]:
        for name in names:
            if not re.fullmatch(r"[A-Za-z_]+(\+extensions)?", name):
                raise ValueError(
                    f"{name!r} is not an annotation set name (e.g. PR, GO_CC, PR+extensions)"
                )
        return names

    @field_validator("gene_so_classes")
    @classmethod
    def _so_ids(cls, ids: list[str]) -> list[str]:
        for class_id in ids:
            if not re.fullmatch(r"SO:\d{7}", class_id):
                raise ValueError(f"{class_id!r} is not an SO class id like SO:0000704")
        return ids


def expanded_layers(layers: Iterable[str]) -> frozenset[str]:
    """The requested layers plus the tokens that token-level layers need."""
    chosen = frozenset(layers)
    return chosen | {"tokens"} if chosen & _TOKEN_LAYERS else chosen


# ----------------------------------------------------------------------------- corpus paths


@dataclass(frozen=True)
class CraftPaths:
    """Where the files of one CRAFT folder are."""

    root: Path

    @property
    def ids_dir(self) -> Path:
        return self.root / "articles" / "ids"

    def ids_file(self, split: str) -> Path:
        return self.ids_dir / f"craft-ids-{split}.txt"

    def text(self, pmid: str) -> Path:
        return self.root / "articles" / "txt" / f"{pmid}.txt"

    def tree(self, pmid: str) -> Path:
        return self.root / "structural-annotation" / "treebank" / "penn" / f"{pmid}.tree"

    def conllu(self, pmid: str) -> Path:
        return self.root / "structural-annotation" / "dependency" / "conllu" / f"{pmid}.conllu"

    def sections(self, pmid: str) -> Path:
        return (
            self.root
            / "structural-annotation"
            / "sections-and-typography"
            / "knowtator"
            / f"{pmid}.txt.knowtator.xml"
        )

    def concept_dir(self, annotation_set: str) -> Path:
        ontology = annotation_set.split("+", 1)[0]
        return self.root / "concept-annotation" / ontology / annotation_set / "knowtator"

    def concepts(self, annotation_set: str, pmid: str) -> Path:
        return self.concept_dir(annotation_set) / f"{pmid}.txt.knowtator.xml"

    def so_ontology(self) -> Path | None:
        path = craft_ontology(self.root, "SO")
        return path if path.is_file() else None


def read_id_list(path: Path) -> list[str]:
    """PMIDs of an ids file, one per line (blank lines and ``#`` comments skipped)."""
    ids = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            ids.append(line)
    return ids


# ----------------------------------------------------------------------------- SO classes


def descendants(parents: dict[str, set[str]], roots: Iterable[str]) -> set[str]:
    """The roots and every term below them by is_a."""
    children: dict[str, set[str]] = defaultdict(set)
    for child, its_parents in parents.items():
        for parent in its_parents:
            children[parent].add(child)
    found = set(roots)
    stack = list(found)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


# ----------------------------------------------------------------------------- Knowtator


def _knowtator(path: Path) -> list[KnowtatorAnnotation]:
    try:
        return read_knowtator(path)
    except FormatError as exc:
        raise CraftDataError(str(exc)) from exc


def _check_spans(spans: Sequence[tuple[int, int]], text: str, where: str) -> None:
    for begin, end in spans:
        if not 0 <= begin <= end <= len(text):
            raise CraftDataError(
                f"{where}: span ({begin}, {end}) lies outside the article text "
                f"({len(text)} characters); the annotation file does not belong to this text"
            )
        if begin == end:
            raise CraftDataError(f"{where}: empty span ({begin}, {end})")


# ----------------------------------------------------------------------------- treebank


def read_aligned_trees(tree_path: Path, text: str, pmid: str) -> list[AlignedTree]:
    """Parse every tree of ``tree_path`` and align its leaves to the article ``text``."""
    try:
        return align_trees(tree_path, text, f"{pmid}.txt", f"article {pmid}")
    except TreeAlignmentError as exc:
        raise CraftAlignmentError(str(exc)) from exc
    except TreebankError as exc:
        raise CraftDataError(str(exc)) from exc


# ----------------------------------------------------------------------------- CAS building


@dataclass
class _Types(TreeTypes):
    """Type constructors looked up once per document: the tree layers' and the rest."""

    lemma: Any
    dependency: Any
    dependency_root: Any
    fragment: Any
    title: Any
    abstract: Any
    section: Any
    heading: Any
    paragraph: Any
    caption: Any
    typography: Any
    mention: dict[str, Any]

    @classmethod
    def of(cls, typesystem: cassis.TypeSystem) -> _Types:
        get = typesystem.get_type
        return cls(
            **vars(TreeTypes.of(typesystem)),
            lemma=get(LEMMA),
            dependency=get(DEPENDENCY),
            dependency_root=get(DEPENDENCY_ROOT),
            fragment=get(FRAGMENT),
            title=get(TITLE),
            abstract=get(ABSTRACT),
            section=get(SECTION),
            heading=get(HEADING),
            paragraph=get(PARAGRAPH),
            caption=get(CAPTION),
            typography=get(TYPOGRAPHY),
            mention={name: get(name) for name in (GENE_MENTION, ANATOMY_MENTION, CONCEPT_MENTION)},
        )


def _build_conllu_layers(
    document: ConlluDocument,
    conllu_path: Path,
    pmid: str,
    text: str,
    tokens: Sequence[Sequence[Any]],
    layers: frozenset[str],
    types: _Types,
    out: list[Any],
) -> None:
    """Lemmas, UPOS and dependencies of the CoNLL-U file on the treebank tokens."""
    if len(document.sentences) != len(tokens):
        raise CraftAlignmentError(
            f"article {pmid}: {conllu_path.name} has {len(document.sentences)} sentences, "
            f"the treebank {len(tokens)}"
        )
    for number, (sentence, sentence_tokens) in enumerate(
        zip(document.sentences, tokens, strict=True), start=1
    ):
        words = sentence.words
        if any(word.is_range or word.is_empty_node for word in words):
            raise CraftAlignmentError(
                f"article {pmid}: {conllu_path.name} line {sentence.line}: multiword tokens and "
                "empty nodes are not supported (CRAFT has none)"
            )
        if len(words) != len(sentence_tokens):
            raise CraftAlignmentError(
                f"article {pmid}: sentence {number} has {len(words)} words in "
                f"{conllu_path.name} (line {sentence.line}) but {len(sentence_tokens)} tokens "
                "in the treebank"
            )
        for word, token in zip(words, sentence_tokens, strict=True):
            if word.form != text[token.begin : token.end]:
                raise CraftAlignmentError(
                    f"article {pmid}: sentence {number}, word {word.id} {word.form!r} "
                    f"({conllu_path.name} line {word.line}) does not match treebank token "
                    f"{text[token.begin : token.end]!r} at offset {token.begin}"
                )
            if "pos" in layers and word.upos != "_":
                token.pos.coarseValue = word.upos
            if "lemmas" in layers and word.lemma != "_":
                token.lemma = types.lemma(begin=token.begin, end=token.end, value=word.lemma)
                out.append(token.lemma)
            if "dependencies" in layers:
                out.append(
                    _dependency(
                        word.head,
                        word.deprel,
                        token,
                        sentence_tokens,
                        types,
                        where=f"article {pmid}: {conllu_path.name} line {word.line}",
                    )
                )


def _dependency(
    head: str, deprel: str, token: Any, sentence_tokens: Sequence[Any], types: _Types, where: str
) -> Any:
    if not head.isdigit() or int(head) > len(sentence_tokens):
        raise CraftDataError(f"{where}: HEAD {head!r} is not a word of the sentence")
    if head == "0":
        return types.dependency_root(
            begin=token.begin,
            end=token.end,
            Governor=token,
            Dependent=token,
            DependencyType="ROOT",
            flavor="basic",
        )
    return types.dependency(
        begin=token.begin,
        end=token.end,
        Governor=sentence_tokens[int(head) - 1],
        Dependent=token,
        DependencyType=deprel,
        flavor="basic",
    )


@dataclass
class _SectionSpan:
    begin: int
    end: int
    name: str


def _build_structure(
    annotations: Sequence[KnowtatorAnnotation],
    path: Path,
    text: str,
    trees: Sequence[AlignedTree],
    types: _Types,
    out: list[Any],
) -> None:
    """Title, abstract, sections, captions, headings, paragraphs and typography."""
    sections: list[_SectionSpan] = []
    for annotation in annotations:
        where = f"{path.name} ({annotation.class_id})"
        _check_spans(annotation.spans, text, where)
        begin, end = annotation.spans[0][0], annotation.spans[-1][1]
        if annotation.class_id in TYPOGRAPHY_CLASSES:
            begin, end = _trim(text, begin, end)
            if begin < end:
                out.append(types.typography(begin=begin, end=end, style=annotation.class_id))
        elif annotation.class_id == SECTION_CLASS:
            if SECTION_NAME_SLOT not in annotation.slots:
                raise CraftDataError(
                    f"{where}: section at {begin} has no '{SECTION_NAME_SLOT}' slot"
                )
            sections.append(_SectionSpan(begin, end, annotation.slots[SECTION_NAME_SLOT]))
        else:
            raise CraftDataError(
                f"{where}: unknown class {annotation.class_id!r}; known: section, "
                f"{', '.join(sorted(TYPOGRAPHY_CLASSES))}"
            )
    sections.sort(key=lambda s: (s.begin, -s.end))
    titles = [s for s in sections if s.name == "title"]
    floats = [s for s in sections if _FLOAT_NAME.fullmatch(s.name)]
    headed = [s for s in sections if s.name != "title" and s not in floats]
    plain_sections = [s for s in headed if s.name != "abstract"]
    for section in titles:
        out.append(types.title(begin=section.begin, end=section.end))
    for section in floats:
        out.append(
            types.caption(
                begin=section.begin,
                end=section.end,
                captionOf=section.name.split()[0].lower(),
                label=section.name,
            )
        )
    for section in headed:
        if section.name == "abstract":
            out.append(types.abstract(begin=section.begin, end=section.end))
            continue
        depth = 1 + sum(
            1
            for other in plain_sections
            if other is not section and other.begin <= section.begin and section.end <= other.end
        )
        out.append(
            types.section(
                begin=section.begin, end=section.end, sectionType=section.name, depth=depth
            )
        )

    heading_trees = {t.span for t in trees if t.top_category == "HEADING"}
    first_blocks = {s.begin: s for s in headed}
    label_lines = {s.begin for s in floats}

    def inside(spans: Sequence[_SectionSpan], begin: int, end: int) -> bool:
        return any(s.begin <= begin and end <= s.end for s in spans)

    for match in _BLOCK.finditer(text):
        begin, end = _trim(text, match.start(), match.end())
        if begin >= end or inside(titles, begin, end) or begin in label_lines:
            continue
        section = first_blocks.get(begin)
        if section is not None and (
            (begin, end) in heading_trees or text[begin:end].lower() == section.name.lower()
        ):
            out.append(types.heading(begin=begin, end=end, depth=1))
        elif (begin, end) in heading_trees and not inside(floats, begin, end):
            out.append(types.heading(begin=begin, end=end, depth=2))
        else:
            out.append(types.paragraph(begin=begin, end=end))


def _trim(text: str, begin: int, end: int) -> tuple[int, int]:
    while begin < end and text[begin].isspace():
        begin += 1
    while end > begin and text[end - 1].isspace():
        end -= 1
    return begin, end


def _build_concepts(
    annotation_set: str,
    annotations: Sequence[KnowtatorAnnotation],
    path: Path,
    text: str,
    gene_so_classes: frozenset[str],
    value: str,
    types: _Types,
    out: list[Any],
) -> int:
    """Mentions of one annotation set; returns the number of spannedText mismatches."""
    ontology = annotation_set.split("+", 1)[0]
    mismatches = []
    for annotation in annotations:
        spans = annotation.spans
        _check_spans(spans, text, f"{path} ({annotation.class_id})")
        covered = SPANNED_TEXT_SEPARATOR.join(text[b:e] for b, e in spans)
        if annotation.spanned_text is not None and annotation.spanned_text != covered:
            mismatches.append((spans, annotation.spanned_text, covered))
        mention_type = types.mention[_mention_type(ontology, annotation.class_id, gene_so_classes)]
        fragments = None
        if len(spans) > 1:
            pieces = [types.fragment(begin=b, end=e) for b, e in spans]
            out.extend(pieces)
            fragments = types.fs_array(elements=pieces)
        out.append(
            mention_type(
                begin=spans[0][0],
                end=spans[-1][1],
                value=value,
                identifier=annotation.class_id,
                ontology=annotation_set,
                fragments=fragments,
            )
        )
    if mismatches:
        spans, expected, found = mismatches[0]
        warnings.warn(
            CraftDataWarning(
                f"{path}: {len(mismatches)} mention(s) whose spannedText differs from the text "
                f"at their offsets, e.g. {spans}: {expected!r} vs {found!r}; kept as the offsets say"
            ),
            stacklevel=2,
        )
    return len(mismatches)


def _mention_type(ontology: str, class_id: str, gene_so_classes: frozenset[str]) -> str:
    if ontology in GENE_ONTOLOGIES:
        return GENE_MENTION
    if ontology == "SO":
        # SO+extensions writes SO_EXT:0000704 for the extension of SO:0000704.
        if "SO:" + class_id.partition(":")[2] in gene_so_classes:
            return GENE_MENTION
        return CONCEPT_MENTION
    if ontology in ANATOMY_ONTOLOGIES:
        return ANATOMY_MENTION
    return CONCEPT_MENTION


# ----------------------------------------------------------------------------- the reader


class CraftReader(Reader):
    """The CRAFT corpus: article text with its gold layers (see the module docstring)."""

    name = "craft.reader.v1"
    description = (
        "CRAFT gold corpus: text, structure, sentences, tokens, POS, trees, dependencies, concepts."
    )
    Config = CraftReaderConfig

    config: CraftReaderConfig

    _PRODUCES: ClassVar[dict[str, tuple[str, ...]]] = {
        "structure": (TITLE, ABSTRACT, SECTION, HEADING, PARAGRAPH, CAPTION, TYPOGRAPHY),
        "sentences": (SENTENCE,),
        "tokens": (TOKEN,),
        "pos": (POS, f"{POS}:PosValue", f"{POS}:coarseValue", f"{TOKEN}:pos"),
        "lemmas": (LEMMA, f"{LEMMA}:value", f"{TOKEN}:lemma"),
        "constituents": CONSTITUENT_LAYER,
        "dependencies": (DEPENDENCY, DEPENDENCY_ROOT),
    }

    def __init__(self, config: CraftReaderConfig, context: RunContext) -> None:
        super().__init__(config, context)
        self.paths = CraftPaths(_corpus_root(config, context))
        self.layers = expanded_layers(config.layers)
        self._gene_so_classes: frozenset[str] | None = None

    @classmethod
    def requirements(cls, config: CraftReaderConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:  # type: ignore[override]
        layers = expanded_layers(config.layers)
        produces: list[str] = []
        for layer in ALL_LAYERS:
            if layer in layers:
                produces.extend(cls._PRODUCES.get(layer, ()))
        if "concepts" in layers and config.ontologies:
            produces.extend((CONCEPT_MENTION, FRAGMENT))
            bases = {name.split("+", 1)[0] for name in config.ontologies}
            if bases & (GENE_ONTOLOGIES | {"SO"}):
                produces.append(GENE_MENTION)
            if bases & ANATOMY_ONTOLOGIES:
                produces.append(ANATOMY_MENTION)
        return (), tuple(produces)

    @classmethod
    def check_config(cls, config: CraftReaderConfig, context: RunContext) -> list[str]:  # type: ignore[override]
        paths = CraftPaths(_corpus_root(config, context))
        if not paths.root.is_dir():
            return [
                f"CRAFT folder {paths.root} does not exist; set 'corpus' or CASFLOW_CORPORA "
                "(the folder holding craft/)"
            ]
        problems = []
        try:
            ids = _document_ids(config, paths)
        except CraftDataError as exc:
            return [str(exc)]
        layers = expanded_layers(config.layers)
        needed = [("text", paths.text)]
        if layers & _TREEBANK_LAYERS:
            needed.append(("treebank", paths.tree))
        if layers & _CONLLU_LAYERS:
            needed.append(("CoNLL-U", paths.conllu))
        if "structure" in layers:
            needed.append(("sections-and-typography", paths.sections))
        if "concepts" in layers:
            for annotation_set in config.ontologies:
                needed.append(
                    (
                        f"{annotation_set} concept",
                        lambda pmid, s=annotation_set: paths.concepts(s, pmid),
                    )
                )
        for what, path_of in needed:
            missing = [pmid for pmid in ids if not path_of(pmid).is_file()]
            if missing:
                problems.append(
                    f"{len(missing)} article(s) have no {what} file, e.g. {path_of(missing[0])}; "
                    "check 'corpus', 'ids', 'layers' and 'ontologies'"
                )
        if (
            "concepts" in layers
            and config.gene_so_descendants
            and any(s.split("+", 1)[0] == "SO" for s in config.ontologies)
            and paths.so_ontology() is None
        ):
            problems.append(
                f"gene_so_descendants needs {paths.root}/concept-annotation/SO/SO/SO.obo.zip, "
                "which does not exist; set gene_so_descendants: false to use gene_so_classes as listed"
            )
        return problems

    def iter_documents(self) -> Iterator[DocumentRef]:
        for pmid in _document_ids(self.config, self.paths):
            path = self.paths.text(pmid)
            yield DocumentRef(pmid, str(path), size=path.stat().st_size if path.exists() else 0)

    def gene_so_classes(self) -> frozenset[str]:
        """The SO class ids whose mentions become GeneMentions (read once per process)."""
        if self._gene_so_classes is None:
            roots = set(self.config.gene_so_classes)
            if self.config.gene_so_descendants:
                obo = self.paths.so_ontology()
                if obo is None:
                    raise CraftDataError(
                        f"no SO.obo.zip under {self.paths.root}/concept-annotation/SO/SO for "
                        "gene_so_descendants; set gene_so_descendants: false"
                    )
                try:
                    parents = is_a_parents(read_obo(obo))
                except FormatError as exc:
                    raise CraftDataError(str(exc)) from exc
                roots = descendants(parents, roots)
            self._gene_so_classes = frozenset(roots)
        return self._gene_so_classes

    def load(self, ref: DocumentRef, cas: cassis.Cas) -> None:
        pmid = ref.doc_id
        text_path = Path(ref.uri) if ref.uri else self.paths.text(pmid)
        data = ref.data if ref.data is not None else _read_bytes(text_path, pmid)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CraftDataError(f"article {pmid}: {text_path} is not UTF-8 ({exc})") from exc
        # CRAFT offsets count characters of the file as it is: nothing is normalised.
        cas.sofa_string = text
        cas.sofa_mime = "text/plain"
        title = next((line.strip() for line in text.split("\n") if line.strip()), None)
        set_document_metadata(cas, pmid, str(text_path), title=title, language="en")
        cas.add_all(self.annotations(pmid, text, cas.typesystem))

    def annotations(self, pmid: str, text: str, typesystem: cassis.TypeSystem) -> list[Any]:
        """All annotations of the configured layers for one article (not yet in a CAS)."""
        layers = self.layers
        types = _Types.of(typesystem)
        out: list[Any] = []
        trees: list[AlignedTree] = []
        if layers & _TREEBANK_LAYERS:
            trees = read_aligned_trees(self.paths.tree(pmid), text, pmid)
        tokens = build_tree_layers(trees, layers, types, out)
        if "tokens" in layers and layers & _CONLLU_LAYERS:
            conllu_path = self.paths.conllu(pmid)
            document = parse_conllu(_read_text(conllu_path, pmid), str(conllu_path))
            _build_conllu_layers(document, conllu_path, pmid, text, tokens, layers, types, out)
        if "structure" in layers:
            path = self.paths.sections(pmid)
            _build_structure(_knowtator(path), path, text, trees, types, out)
        if "concepts" in layers:
            gene_so = self.gene_so_classes() if self._needs_so_classes() else frozenset()
            for annotation_set in self.config.ontologies:
                path = self.paths.concepts(annotation_set, pmid)
                value = self.config.mention_values.get(annotation_set, annotation_set)
                _build_concepts(
                    annotation_set, _knowtator(path), path, text, gene_so, value, types, out
                )
        return out

    def _needs_so_classes(self) -> bool:
        return any(s.split("+", 1)[0] == "SO" for s in self.config.ontologies)


def _corpus_root(config: CraftReaderConfig, context: RunContext) -> Path:
    return Path(resolve_input(config.corpus or default_corpus(), context.workflow_dir)).resolve()


def _document_ids(config: CraftReaderConfig, paths: CraftPaths) -> list[str]:
    if config.ids is not None:
        return list(config.ids)
    splits = ("train", "dev") if config.split == "all" else (config.split,)
    ids: list[str] = []
    for split in splits:
        path = paths.ids_file(split)
        if not path.is_file():
            raise CraftDataError(
                f"the {split} id list {path} does not exist; check 'corpus' or give 'ids'"
            )
        ids.extend(read_id_list(path))
    return ids


def _read_bytes(path: Path, pmid: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise CraftDataError(f"article {pmid}: cannot read {path}: {exc}") from exc


def _read_text(path: Path, pmid: str) -> str:
    try:
        return _read_bytes(path, pmid).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CraftDataError(f"article {pmid}: {path} is not UTF-8 ({exc})") from exc


__all__ = [
    "ALL_LAYERS",
    "DEFAULT_GENE_SO_CLASSES",
    "DEFAULT_ONTOLOGIES",
    "AlignedTree",
    "CraftAlignmentError",
    "CraftDataError",
    "CraftDataWarning",
    "CraftPaths",
    "CraftReader",
    "CraftReaderConfig",
    "KnowtatorAnnotation",
    "default_corpus",
    "descendants",
    "expanded_layers",
    "read_aligned_trees",
    "read_knowtator",
]
