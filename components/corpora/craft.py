"""CRAFT gold corpus reader: one CAS per article, every gold layer aligned to its text.

The subject of analysis is ``articles/txt/<PMID>.txt`` as is (offsets in every CRAFT
file refer to it); ``DocumentMetaData.documentId`` is the PMID. The articles are a
split's (``articles/ids/craft-ids-<split>.txt``), ``ids`` / ``ids_file``, or the texts
``input`` names (any copy: the test articles, a subset, one's own annotations), their
layer files found in the CRAFT layout or in ``folders``. A layer whose files are absent
is a validation error naming the layers the files present give (the test articles come
without sections-and-typography files). Layers (config ``layers``, default all):

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

Every Knowtator file (concepts and structure) is checked the same way: a span
outside the text or inverted is an error (file and line); ``spannedText`` differing
from the text in a few annotations is a :class:`CraftDataWarning`, in more than
half of a file's annotations an error (the file does not fit the text); a file
whose ``textSource`` names another article is an error; an exact repeat of an
annotation is read once, with one warning per file. The text must be as
distributed (LF line ends, no byte-order mark; every offset counts that form):
a BOM or a carriage return fails the article.

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

import difflib
import re
import warnings
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import cassis
from pydantic import Field, field_validator, model_validator

from casflow.cas.metadata import set_document_metadata
from casflow.components.corpora.locations import (
    craft_ontology,
    describe_default,
    missing_corpus,
)
from casflow.components.corpora.locations import default_corpus as _default_corpus
from casflow.components.corpora.selection import (
    IdSelectionError,
    one_id_list,
    read_id_list,
    unknown_ids,
    wanted_ids,
)
from casflow.components.formats.common import FormatError
from casflow.components.formats.conllu.parse import ConlluDocument, parse_conllu
from casflow.components.formats.knowtator import (
    KnowtatorAnnotation,
    read_knowtator,
    read_knowtator_file,
)
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
from casflow.components.inputs import InputNotFoundError, iter_input_files, resolve_input
from casflow.pipeline.component import (
    ComponentConfig,
    DocumentError,
    DocumentRef,
    DocumentWarning,
    Reader,
    RunContext,
)
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


class CraftDataError(DocumentError, ValueError):
    """A CRAFT file is missing, malformed or inconsistent with the article text."""

    hint = (
        "check the CRAFT folder (config 'corpus') and the named file; do not edit offsets by hand"
    )


class CraftAlignmentError(CraftDataError):
    """Treebank or CoNLL-U tokens do not line up with the text or with each other."""


class CraftDataWarning(DocumentWarning):
    """A known kind of CRAFT inconsistency that the reader keeps (e.g. spannedText)."""


def default_corpus() -> str:
    """``$CASFLOW_CORPORA/craft``, else ``../shared/corpora/craft``."""
    return _default_corpus("craft")


class CraftReaderConfig(ComponentConfig):
    corpus: str | None = Field(
        None,
        description=f"The CRAFT folder; default {describe_default('craft')}.",
    )
    split: Literal["train", "dev", "test", "all"] = Field(
        "all",
        description="Articles of articles/ids/craft-ids-<split>.txt; all = train then dev. "
        "Not used when 'input', 'ids' or 'ids_file' is given.",
    )
    input: str | list[str] | None = Field(
        None,
        description="Article texts to read instead of a split: a <id>.txt file, a folder, a "
        "glob or @list.txt (or a list of these); the id is the file stem. Their layer files "
        "are looked for under 'corpus' when it is set, else in the CRAFT folder the texts are "
        "in (<root>/articles/txt/), else only in 'folders'.",
    )
    ids: list[str] | None = Field(
        None,
        description="Explicit PMIDs to read, in this order (instead of split); with 'input', "
        "only these of its texts.",
    )
    ids_file: str | None = Field(
        None, description="A file of PMIDs, one a line ('#' comments allowed), used as 'ids'."
    )
    folders: dict[str, str] = Field(
        default_factory=dict,
        description="A folder per kind of file, for copies not laid out as CRAFT is: keys "
        "text (<id>.txt), treebank (<id>.tree), conllu (<id>.conllu), sections "
        "(sections-and-typography <id>.txt.knowtator.xml) or an annotation set such as PR "
        "(<id>.txt.knowtator.xml); default the CRAFT layout under the corpus folder.",
    )
    so_ontology: str | None = Field(
        None,
        description="The SO ontology (.obo or .obo.zip) for gene_so_descendants; default "
        "concept-annotation/SO/SO/SO.obo.zip of the corpus folder.",
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
        description="Mention value per annotation set of 'ontologies' (e.g. {PR: GENE}); "
        "default the set name.",
    )

    @field_validator("ids")
    @classmethod
    def _unique_ids(cls, ids: list[str] | None) -> list[str] | None:
        if ids is not None:
            repeated = sorted({i for i in ids if ids.count(i) > 1})
            if repeated:
                raise ValueError(f"ids listed more than once: {', '.join(repeated)}")
        return ids

    @model_validator(mode="after")
    def _one_id_list_and_known_folders(self) -> CraftReaderConfig:
        one_id_list(self.ids, self.ids_file)
        for key in self.folders:
            if key not in FILE_KINDS and key not in self.ontologies:
                close = difflib.get_close_matches(key, [*FILE_KINDS, *self.ontologies], n=1)
                raise ValueError(
                    f"unknown folder key {key!r}"
                    + (f" (did you mean {close[0]!r}?)" if close else "")
                    + f": use {', '.join(FILE_KINDS)} or an annotation set of 'ontologies' "
                    f"({', '.join(self.ontologies) or 'none'})"
                )
        for key in self.mention_values:
            if key not in self.ontologies:
                # case first: {pr: GENE} is the likeliest slip
                close = [o for o in self.ontologies if o.lower() == key.lower()] or (
                    difflib.get_close_matches(key, self.ontologies, n=1)
                )
                raise ValueError(
                    f"unknown mention_values key {key!r}"
                    + (f" (did you mean {close[0]!r}?)" if close else "")
                    + f": use an annotation set of 'ontologies' "
                    f"({', '.join(self.ontologies) or 'none'})"
                )
        return self

    @field_validator("ontologies")
    @classmethod
    def _ontology_names(cls, names: list[str]) -> list[str]:
        for name in names:
            if not re.fullmatch(r"[A-Za-z_]+(\+extensions)?", name):
                raise ValueError(
                    f"{name!r} is not an annotation set name (e.g. PR, GO_CC, PR+extensions)"
                )
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            # each set would be read again: every mention twice
            raise ValueError(f"annotation sets listed more than once: {', '.join(repeated)}")
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


#: Kinds of per-article file besides the concept sets, and where CRAFT keeps them.
FILE_KINDS: dict[str, str] = {
    "text": "articles/txt",
    "treebank": "structural-annotation/treebank/penn",
    "conllu": "structural-annotation/dependency/conllu",
    "sections": "structural-annotation/sections-and-typography/knowtator",
}
_FILE_NAMES = {
    "text": "{}.txt",
    "treebank": "{}.tree",
    "conllu": "{}.conllu",
    "sections": "{}.txt.knowtator.xml",
}
#: What a kind of file is called in messages.
_KIND_NAMES = {
    "text": "text",
    "treebank": "treebank",
    "conllu": "CoNLL-U",
    "sections": "sections-and-typography",
}


@dataclass(frozen=True)
class CraftPaths:
    """Where the files of one CRAFT copy are: the CRAFT layout under ``root``, each kind
    of file replaced by a folder of ``folders`` (keys of :data:`FILE_KINDS` or an
    annotation set name). Without a root, only ``folders`` has files."""

    root: Path | None
    folders: dict[str, Path] = field(default_factory=dict)
    so_file: Path | None = None

    def folder(self, kind: str) -> Path | None:
        """The folder holding the files of ``kind`` (a file kind or an annotation set)."""
        if kind in self.folders:
            return self.folders[kind]
        if self.root is None:
            return None
        if kind in FILE_KINDS:
            return self.root / FILE_KINDS[kind]
        ontology = kind.split("+", 1)[0]
        return self.root / "concept-annotation" / ontology / kind / "knowtator"

    def file(self, kind: str, pmid: str) -> Path:
        folder = self.folder(kind)
        if folder is None:
            raise CraftDataError(
                f"article {pmid}: no folder for its {describe_kind(kind)} files: the texts are "
                f"not in a CRAFT folder (<root>/articles/txt/); set 'corpus' or "
                f"'folders: {{{kind}: ...}}'"
            )
        return folder / _FILE_NAMES.get(kind, "{}.txt.knowtator.xml").format(pmid)

    @property
    def ids_dir(self) -> Path:
        if self.root is None:
            raise CraftDataError("no CRAFT folder: set 'corpus', or give 'input' or 'ids_file'")
        return self.root / "articles" / "ids"

    def ids_file(self, split: str) -> Path:
        return self.ids_dir / f"craft-ids-{split}.txt"

    def text(self, pmid: str) -> Path:
        return self.file("text", pmid)

    def tree(self, pmid: str) -> Path:
        return self.file("treebank", pmid)

    def conllu(self, pmid: str) -> Path:
        return self.file("conllu", pmid)

    def sections(self, pmid: str) -> Path:
        return self.file("sections", pmid)

    def concepts(self, annotation_set: str, pmid: str) -> Path:
        return self.file(annotation_set, pmid)

    def so_ontology(self) -> Path | None:
        if self.so_file is not None:
            return self.so_file if self.so_file.is_file() else None
        if self.root is None:
            return None
        path = craft_ontology(self.root, "SO")
        return path if path.is_file() else None


def describe_kind(kind: str) -> str:
    """``treebank``, ``CoNLL-U``, ``PR concept``: a kind of file as messages name it."""
    return _KIND_NAMES.get(kind, f"{kind} concept")


def layout_root(text_path: Path) -> Path | None:
    """The CRAFT folder a text file is in (``<root>/articles/txt/<id>.txt``), if any."""
    parent = text_path.parent
    if parent.name == "txt" and parent.parent.name == "articles":
        return parent.parent.parent
    return None


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


def _knowtator(path: Path, pmid: str) -> list[KnowtatorAnnotation]:
    """The annotations of article ``pmid``'s Knowtator file, each exact repeat dropped with
    one :class:`CraftDataWarning` (a repeated gold mention would count twice in recall)."""
    try:
        text_source, annotations = read_knowtator_file(path)
    except FormatError as exc:
        raise CraftDataError(str(exc)) from exc
    # Offsets only mean something over the text they were made on: another article's
    # file (copied under this name) would read as shifted spans.
    if text_source is not None and Path(text_source).name != f"{pmid}.txt":
        raise CraftDataError(
            f"{path}: the file annotates {text_source!r} (its textSource), not article "
            f"{pmid}; put article {pmid}'s own file there"
        )
    unique: list[KnowtatorAnnotation] = []
    seen: set[tuple[Any, ...]] = set()
    repeats: list[KnowtatorAnnotation] = []
    for annotation in annotations:
        key = (
            tuple(annotation.spans),
            annotation.class_id,
            tuple(sorted(annotation.slots.items())),
        )
        if key in seen:
            repeats.append(annotation)
        else:
            seen.add(key)
            unique.append(annotation)
    if repeats:
        warnings.warn(
            CraftDataWarning(
                f"{path}: {len(repeats)} annotation(s) repeat an earlier one (same spans, class "
                f"and slots; e.g. line {repeats[0].line}: {repeats[0].class_id} "
                f"{repeats[0].spans}); each read once"
            ),
            stacklevel=2,
        )
    return unique


def _where(path: Path, annotation: KnowtatorAnnotation) -> str:
    return f"{path}:{annotation.line} ({annotation.class_id})"


def _check_spans(spans: Sequence[tuple[int, int]], text: str, where: str) -> None:
    for begin, end in spans:
        if begin > end:
            raise CraftDataError(
                f"{where}: span ({begin}, {end}) is inverted (its start is after its end)"
            )
        if not 0 <= begin <= end <= len(text):
            raise CraftDataError(
                f"{where}: span ({begin}, {end}) lies outside the article text "
                f"({len(text)} characters); the annotation file does not belong to this text"
            )
        if begin == end:
            raise CraftDataError(f"{where}: empty span ({begin}, {end})")


def _check_spanned_text(
    annotations: Sequence[KnowtatorAnnotation], path: Path, text: str, what: str
) -> int:
    """Compare each ``<spannedText>`` with the text at its offsets (fragments joined by
    " ... "); returns the number that differ. A few differences are kept with a
    :class:`CraftDataWarning`; more than half fail the article: the offsets are then
    shifted or the file belongs to another text, and every span read from it is wrong."""
    mismatches = []
    for annotation in annotations:
        covered = SPANNED_TEXT_SEPARATOR.join(text[b:e] for b, e in annotation.spans)
        if annotation.spanned_text is not None and annotation.spanned_text != covered:
            mismatches.append((annotation, covered))
    if not mismatches:
        return 0
    first, found = mismatches[0]
    example = f"e.g. line {first.line} {first.spans}: {first.spanned_text!r} vs {found!r}"
    if 2 * len(mismatches) > len(annotations):
        raise CraftDataError(
            f"{path}: {len(mismatches)} of {len(annotations)} {what} have a spannedText that "
            f"differs from the text at their offsets ({example}); the file does not belong "
            "to this text as it is (shifted offsets, another article's file, or a text "
            "that is not the distributed one)"
        )
    warnings.warn(
        CraftDataWarning(
            f"{path}: {len(mismatches)} {what} whose spannedText differs from the text "
            f"at their offsets, {example}; kept as the offsets say"
        ),
        stacklevel=3,
    )
    return len(mismatches)


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
        where = _where(path, annotation)
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
    _check_spanned_text(annotations, path, text, "annotation(s)")
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
        opened = first_blocks.get(begin)
        if opened is not None and (
            (begin, end) in heading_trees or text[begin:end].lower() == opened.name.lower()
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
    for annotation in annotations:
        _check_spans(annotation.spans, text, _where(path, annotation))
    mismatches = _check_spanned_text(annotations, path, text, "mention(s)")
    for annotation in annotations:
        spans = annotation.spans
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
    return mismatches


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


class CraftReader(Reader[CraftReaderConfig]):
    """The CRAFT corpus: article text with its gold layers (see the module docstring)."""

    name = "craft.reader.v1"
    description = (
        "CRAFT gold corpus: text, structure, sentences, tokens, POS, trees, dependencies, concepts."
    )

    _PRODUCES: ClassVar[dict[str, tuple[str, ...]]] = {
        "structure": (TITLE, ABSTRACT, SECTION, HEADING, PARAGRAPH, CAPTION, TYPOGRAPHY),
        "sentences": (SENTENCE,),
        "tokens": (TOKEN,),
        "pos": (POS, f"{POS}:PosValue", f"{POS}:coarseValue", f"{TOKEN}:pos"),
        "lemmas": (LEMMA, f"{LEMMA}:value", f"{TOKEN}:lemma"),
        "constituents": CONSTITUENT_LAYER,
        "dependencies": (DEPENDENCY, DEPENDENCY_ROOT),
    }

    def __init__(self, config: CraftReaderConfig, context: RunContext | None = None) -> None:
        super().__init__(config, context)
        self.locations = _Locations.of(config, self.context)
        #: The corpus folder's paths (where articles are found without 'input').
        self.paths = self.locations.paths_for(None)
        self.layers = expanded_layers(config.layers)
        self._gene_so_classes: dict[Path | None, frozenset[str]] = {}

    @classmethod
    def requirements(cls, config: CraftReaderConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
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
    def check_config(cls, config: CraftReaderConfig, context: RunContext) -> list[str]:
        locations = _Locations.of(config, context)
        root = locations.paths_for(None).root
        if config.input is None and root is not None:
            problem = missing_corpus("craft", root, given=config.corpus is not None)
            if problem:
                return [f"{problem}; or give 'input'"]
        try:
            articles = locations.articles()
        except (CraftDataError, InputNotFoundError) as exc:
            return [str(exc)]
        if not articles:
            return ["the configuration selects no article; check 'input', 'split' or 'ids'"]
        problems = _missing_layer_files(config, articles)
        if locations.so_file is not None and not locations.so_file.is_file():
            problems.append(
                f"so_ontology {locations.so_file} does not exist; give the SO ontology "
                "(.obo or .obo.zip) or leave so_ontology out to use the corpus's"
            )
        elif (
            "concepts" in expanded_layers(config.layers)
            and config.gene_so_descendants
            and any(s.split("+", 1)[0] == "SO" for s in config.ontologies)
        ):
            without = [a.pmid for a in articles if a.paths.so_ontology() is None]
            if without:
                problems.append(
                    f"gene_so_descendants needs the SO ontology (concept-annotation/SO/SO/"
                    f"SO.obo.zip of the CRAFT folder, or 'so_ontology'), which article "
                    f"{without[0]} has not; set so_ontology, or gene_so_descendants: false to "
                    "use gene_so_classes as listed"
                )
        return problems

    def iter_documents(self) -> Iterator[DocumentRef]:
        for article in self.locations.articles():
            path = article.text
            yield DocumentRef(
                article.pmid, str(path), size=path.stat().st_size if path.exists() else 0
            )

    def gene_so_classes(self, paths: CraftPaths | None = None) -> frozenset[str]:
        """The SO class ids whose mentions become GeneMentions (read once per process)."""
        paths = paths or self.paths
        obo = paths.so_ontology() if self.config.gene_so_descendants else None
        if obo not in self._gene_so_classes:
            roots = set(self.config.gene_so_classes)
            if self.config.gene_so_descendants:
                if obo is None:
                    raise CraftDataError(
                        f"no SO ontology (SO.obo.zip under {paths.root}/concept-annotation/SO/SO, "
                        "or 'so_ontology') for gene_so_descendants; set so_ontology, or "
                        "gene_so_descendants: false"
                    )
                try:
                    parents = is_a_parents(read_obo(obo))
                except FormatError as exc:
                    raise CraftDataError(str(exc)) from exc
                roots = descendants(parents, roots)
            self._gene_so_classes[obo] = frozenset(roots)
        return self._gene_so_classes[obo]

    def load(self, ref: DocumentRef, cas: cassis.Cas) -> None:
        pmid = ref.doc_id
        text_path = Path(ref.uri) if ref.uri else self.paths.text(pmid)
        data = ref.data if ref.data is not None else _read_bytes(text_path, pmid)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CraftDataError(f"article {pmid}: {text_path} is not UTF-8 ({exc})") from exc
        # CRAFT offsets count characters of the file as it is: nothing is normalised.
        # The texts are distributed with LF line ends and no byte-order mark, and every
        # layer's offsets refer to that form; a converted copy would shift every span.
        _check_distributed_form(text, text_path, pmid)
        cas.sofa_string = text
        cas.sofa_mime = "text/plain"
        title = next((line.strip() for line in text.split("\n") if line.strip()), None)
        set_document_metadata(cas, pmid, str(text_path), title=title, language="en")
        paths = self.locations.paths_for(text_path) if self.config.input else self.paths
        cas.add_all(self.annotations(pmid, text, cas.typesystem, paths))

    def annotations(
        self, pmid: str, text: str, typesystem: cassis.TypeSystem, paths: CraftPaths | None = None
    ) -> list[Any]:
        """All annotations of the configured layers for one article (not yet in a CAS)."""
        paths = paths or self.paths
        layers = self.layers
        types = _Types.of(typesystem)
        out: list[Any] = []
        trees: list[AlignedTree] = []
        if layers & _TREEBANK_LAYERS:
            trees = read_aligned_trees(paths.tree(pmid), text, pmid)
        tokens = build_tree_layers(trees, layers, types, out)
        if "tokens" in layers and layers & _CONLLU_LAYERS:
            conllu_path = paths.conllu(pmid)
            try:
                document = parse_conllu(_read_text(conllu_path, pmid), str(conllu_path))
            except FormatError as exc:
                # a CRAFT file of the article, like the others: the report gives the hint
                raise CraftDataError(f"article {pmid}: {exc}") from exc
            _build_conllu_layers(document, conllu_path, pmid, text, tokens, layers, types, out)
        if "structure" in layers:
            path = paths.sections(pmid)
            _build_structure(_knowtator(path, pmid), path, text, trees, types, out)
        if "concepts" in layers:
            gene_so = self.gene_so_classes(paths) if self._needs_so_classes() else frozenset()
            for annotation_set in self.config.ontologies:
                path = paths.concepts(annotation_set, pmid)
                value = self.config.mention_values.get(annotation_set, annotation_set)
                _build_concepts(
                    annotation_set, _knowtator(path, pmid), path, text, gene_so, value, types, out
                )
        return out

    def _needs_so_classes(self) -> bool:
        return any(s.split("+", 1)[0] == "SO" for s in self.config.ontologies)


def _check_distributed_form(text: str, path: Path, pmid: str) -> None:
    if text.startswith("\ufeff"):
        raise CraftDataError(
            f"article {pmid}: {path} starts with a byte-order mark; CRAFT texts have none "
            "and the offsets of every layer count from the first character without it; "
            "use the text as distributed (or remove the mark)"
        )
    cr = text.find("\r")
    if cr >= 0:
        raise CraftDataError(
            f"article {pmid}: {path} has a carriage return (CR) on line "
            f"{text.count(chr(10), 0, cr) + 1}; CRAFT texts have LF line ends and the offsets "
            "of every layer count them; use the text as distributed (or convert it to LF)"
        )


# ----------------------------------------------------------------------------- which articles


@dataclass(frozen=True)
class _Article:
    pmid: str
    text: Path
    paths: CraftPaths


@dataclass(frozen=True)
class _Locations:
    """The configuration's file options, resolved against the workflow's folder."""

    config: CraftReaderConfig
    corpus: Path | None  # 'corpus' as given (None: not given)
    standard_corpus: Path  # the default corpus folder
    folders: dict[str, Path]
    so_file: Path | None
    ids_file: Path | None
    base: Path | None

    @classmethod
    def of(cls, config: CraftReaderConfig, context: RunContext) -> _Locations:
        def resolve(path: str) -> Path:
            return Path(resolve_input(path, context.workflow_dir)).resolve()

        return cls(
            config,
            resolve(config.corpus) if config.corpus else None,
            resolve(default_corpus()),
            {kind: resolve(folder) for kind, folder in config.folders.items()},
            resolve(config.so_ontology) if config.so_ontology else None,
            resolve(config.ids_file) if config.ids_file else None,
            context.workflow_dir,
        )

    def paths_for(self, text: Path | None) -> CraftPaths:
        """Where the layer files of the article ``text`` are (``None``: a corpus article)."""
        if text is None:
            root: Path | None = self.corpus or self.standard_corpus
        else:
            root = self.corpus or layout_root(text.resolve())
        return CraftPaths(root, self.folders, self.so_file)

    def wanted_ids(self) -> list[str] | None:
        try:
            return wanted_ids(self.config.ids, self.config.ids_file, self.base)
        except IdSelectionError as exc:
            raise CraftDataError(str(exc)) from exc

    def articles(self) -> list[_Article]:
        """The selected articles in reading order, each with where its files are."""
        wanted = self.wanted_ids()
        if self.config.input is None:
            paths = self.paths_for(None)
            ids = wanted if wanted is not None else _split_ids(self.config.split, paths)
            return [_Article(pmid, paths.text(pmid), paths) for pmid in ids]
        specs = [self.config.input] if isinstance(self.config.input, str) else self.config.input
        articles: dict[str, _Article] = {}
        for spec in specs:
            for path in _text_files(resolve_input(spec, self.base)):
                if path.stem in articles:
                    raise CraftDataError(
                        f"article {path.stem} is given twice: {articles[path.stem].text} and "
                        f"{path}; 'input' must name each article once"
                    )
                articles[path.stem] = _Article(path.stem, path, self.paths_for(path))
        if wanted is None:
            return list(articles.values())
        problem = unknown_ids(wanted, set(articles), "the 'input' texts")
        if problem:
            raise CraftDataError(problem)
        return [articles[pmid] for pmid in wanted]


def _text_files(spec: str) -> Iterator[Path]:
    """The ``.txt`` files of one 'input' entry; a CRAFT folder stands for its articles/txt."""
    folder = Path(spec)
    if (folder / "articles" / "txt").is_dir():
        spec = str(folder / "articles" / "txt")
    for path, _ in iter_input_files(spec, "**/*.txt"):
        yield path


def _split_ids(split: str, paths: CraftPaths) -> list[str]:
    splits = ("train", "dev") if split == "all" else (split,)
    ids: list[str] = []
    for name in splits:
        path = paths.ids_file(name)
        if not path.is_file():
            raise CraftDataError(
                f"the {name} id list {path} does not exist; check 'corpus', or give 'ids', "
                "'ids_file' or 'input'"
            )
        ids.extend(read_id_list(path))
    return ids


def _layer_kinds(layer: str) -> tuple[str, ...]:
    """The kinds of file a layer (other than concepts) is read from."""
    if layer == "structure":
        return ("treebank", "sections")
    if layer in _CONLLU_LAYERS:
        return ("treebank", "conllu")
    return ("treebank",)


def _missing_layer_files(config: CraftReaderConfig, articles: Sequence[_Article]) -> list[str]:
    """A problem per kind of file the configured layers need and some article lacks, then
    which layers and annotation sets the files that are there can give."""
    layers = expanded_layers(config.layers)
    kinds = [*FILE_KINDS, *config.ontologies]
    missing: dict[str, list[_Article]] = {
        kind: [a for a in articles if not _has_file(a.paths, kind, a.pmid)] for kind in kinds
    }
    missing["text"] = [a for a in articles if not a.text.is_file()]
    needed = {"text"}
    for layer in layers - {"concepts"}:
        needed.update(_layer_kinds(layer))
    if "concepts" in layers:
        needed.update(config.ontologies)
    problems = []
    unplaced = []  # kinds with no folder at all: one problem for all of them
    for kind in kinds:
        if kind not in needed or not missing[kind]:
            continue
        lacking = missing[kind]
        if kind != "text" and lacking[0].paths.folder(kind) is None:
            unplaced.append(kind)
            continue
        users = sorted(
            layer
            for layer in layers
            if (kind in _layer_kinds(layer) and layer != "concepts")
            or (layer == "concepts" and kind in config.ontologies)
        )
        example = (
            lacking[0].text if kind == "text" else lacking[0].paths.file(kind, lacking[0].pmid)
        )
        problems.append(
            f"{len(lacking)} of {len(articles)} article(s) have no {describe_kind(kind)} file "
            f"(e.g. {example})" + (f", needed by the layer(s) {', '.join(users)}" if users else "")
        )
    if unplaced:
        problems.append(
            f"no folder for the {', '.join(describe_kind(k) for k in unplaced)} files: the "
            "texts are not in a CRAFT folder (<root>/articles/txt/); set 'corpus' to the "
            f"folder laid out as CRAFT, or 'folders' (keys {', '.join(unplaced)})"
        )
    if problems and not missing["text"]:
        readable: list[str] = [
            layer
            for layer in ALL_LAYERS
            if layer != "concepts" and not any(missing[k] for k in _layer_kinds(layer))
        ]
        sets = [s for s in config.ontologies if not missing[s]]
        if sets:
            readable.append("concepts")
        problems.append(
            "the files that are there give the layers "
            + (f"[{', '.join(readable)}]" if readable else "[] (the text only)")
            + (f" and the annotation sets [{', '.join(sets)}]" if sets else "")
            + "; set 'layers' (and 'ontologies') to those, or point 'corpus' or 'folders' "
            "at the missing files"
        )
    return problems


def _has_file(paths: CraftPaths, kind: str, pmid: str) -> bool:
    return paths.folder(kind) is not None and paths.file(kind, pmid).is_file()


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
