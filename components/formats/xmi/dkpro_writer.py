"""``xmi.dkpro.writer.v1``: XMI for DKPro Core and INCEpTION.

``xmi.writer.v1`` writes every view with casflow's whole type system. DKPro Core's
``XmiReader`` reads that given the ``TypeSystem.xml`` beside the files
(``typeSystemFile``, ``mergeTypeSystem: true``). A reader that knows only DKPro Core's
types does not: INCEpTION imports XMI leniently against DKPro's types and the project's
layers, opens only the initial view and skips subtypes of a layer's type (GeneMention
and AnatomyMention under NamedEntity); DKPro's ``XmiReader`` in lenient mode without
the type system drops every casflow type, so of a treebank tree only the ROOTs stay,
their ``children`` full of nulls, and ``Token.parent`` is lost.

This writer writes, per document, one view (``view``, default the initial view) as the
initial view of a new CAS whose type system holds DKPro Core types only (DKPro's names,
supertypes and a subset of its features; no ``casflow.`` type), and that type system as
``TypeSystem.xml`` beside the files, named as ``xmi.writer.v1`` names them
(``<doc>.xmi``, ``.xmi.gz``, one ``.tar`` per batch). The files load strictly in Apache
UIMA Java with that file alone, or with DKPro Core's own descriptors alone (those of
DKPro Core 1.9 and later: earlier ones lack ``POS_NOUN`` and features such as
``NamedEntity.identifier``; where a token has a non-zero ``order``, 1.11 and later).

Written:

- as they are: ``DocumentMetaData`` (the view's, else the initial view's in place of
  the view's plain ``DocumentAnnotation``), ``Sentence``, ``Token`` (``pos``,
  ``lemma``, ``parent``, ``id``, ``syntacticFunction``, and ``order`` where it is not
  0: DKPro Core added it in 1.11 to order tokens with the same offsets, the words of a
  contraction, and UIMA Java and INCEpTION write ``order="0"`` on every token),
  ``Lemma``, ``POS``, ``Dependency`` and its ``ROOT``, ``Chunk``, ``PennTree``, and
  every other type the written type system declares (DKPro's ``Div``, ``Paragraph``,
  ``Heading``, ``POS_NOUN``, ..., read from DKPro Core or INCEpTION XMI);
- with ``coarse_pos_types`` (default), each plain ``POS`` as DKPro's type for its
  ``coarseValue`` (``POS_NOUN``, ``POS_VERB``, ...; UD's ``CCONJ`` as ``POS_CONJ``,
  DKPro's name from UD v1), as DKPro's taggers write them: DKPro's ``PosFilter`` and
  lemmatizers choose by these types. A POS without a coarse tag that DKPro has a type
  for stays ``POS`` (a ``POS_NOUN`` read keeps its type; without ``coarse_pos_types``
  every POS is a plain ``POS``);
- every subtype of ``NamedEntity`` (``GeneMention``, ``AnatomyMention``,
  ``ConceptMention``, a plug-in's) as a ``NamedEntity``: ``value`` its class (its short
  type name where it has none, as the format writers label it), ``identifier`` its
  concept id (ontology class, term id) where it has one;
- ``TreebankConstituent`` as ``Constituent`` with ``constituentType`` (the category)
  and ``syntacticFunction`` (the function tags). The bracket label as written
  (``NP-SBJ-1``, with co-index and gap index) has no DKPro feature: it stays in the
  sentence's ``PennTree`` string, written as read (``-NONE-`` leaves included).
  ``EmptyCategory`` nodes are left out of ``children``, and so is a constituent left
  with no children (``(NP (-NONE- *T*-1))``), so the leaves of every tree are tokens;
  the ``parent`` of every token and constituent is the constituent whose
  ``children`` list it (where none does, its own parent, if written);
- document structure where DKPro Core has a type of the same meaning: ``Title`` as a
  ``Heading`` (DKPro's "document title, section heading") with ``divType`` ``title``,
  ``Heading``, ``Paragraph``; ``Section`` and ``Abstract`` as DKPro's document structure
  element ``Div`` with ``divType`` ``section`` / ``abstract``;
- a subtype of any of these (a plug-in's, or DKPro's ``Person`` or ``NC``) as the nearest
  of them.

Left out, DKPro Core having no type or feature for them: the other views; ``Caption``,
``Citation``, ``Reference``, ``Typography``, ``ArticleVersion``, ``Abbreviation``,
``SentenceAgreement``, ``Fragment`` and ``Alternative``; a mention's ``ontology``,
``fragments`` (a discontinuous mention is written as its whole span),
``alternatives`` and ``confidence``; ``coindex``, ``gapIndex`` and ``originalLabel``
of a ``TreebankConstituent``; ``depth`` and ``sectionType`` of a heading or section;
any other type.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cassis
from pydantic import Field

from casflow.cas.sofa import set_sofa_text
from casflow.cas.xmi import cas_to_xmi_bytes
from casflow.components.formats.view_writer import (
    PackedFolderWriter,
    ViewContentError,
    mention_label,
)
from casflow.components.formats.xmi.writer import TYPESYSTEM_FILE, XmiWriterConfig
from casflow.pipeline.component import INITIAL_VIEW
from casflow.pipeline.files import atomic_write_text
from casflow.typesystem import (
    ABSTRACT,
    CHUNK,
    CONSTITUENT,
    CONSTITUENT_ROOT,
    DEPENDENCY,
    DEPENDENCY_ROOT,
    DOCUMENT_ANNOTATION,
    DOCUMENT_METADATA,
    HEADING,
    LEMMA,
    NAMED_ENTITY,
    PARAGRAPH,
    PENN_TREE,
    POS,
    SECTION,
    SENTENCE,
    TITLE,
    TOKEN,
    load_typesystem,
)

_SEGMENTATION = "de.tudarmstadt.ukp.dkpro.core.api.segmentation.type."
DKPRO_DIV = _SEGMENTATION + "Div"
DKPRO_PARAGRAPH = _SEGMENTATION + "Paragraph"
DKPRO_HEADING = _SEGMENTATION + "Heading"
_POS_TYPE_PREFIX = POS + "_"

#: DKPro types written with casflow's declarations of them (casflow-typesystem.xml
#: declares them with DKPro Core's names, supertypes and a subset of its features);
#: supertypes before subtypes.
COPIED_TYPES: tuple[str, ...] = (
    DOCUMENT_METADATA,
    SENTENCE,
    TOKEN,
    LEMMA,
    POS,
    DEPENDENCY,
    DEPENDENCY_ROOT,
    CONSTITUENT,
    CONSTITUENT_ROOT,
    PENN_TREE,
    CHUNK,
    NAMED_ENTITY,
)

#: casflow structure type -> (DKPro Core type, divType written).
STRUCTURE_TYPES: dict[str, tuple[str, str | None]] = {
    TITLE: (DKPRO_HEADING, "title"),
    HEADING: (DKPRO_HEADING, None),
    PARAGRAPH: (DKPRO_PARAGRAPH, None),
    SECTION: (DKPRO_DIV, "section"),
    ABSTRACT: (DKPRO_DIV, "abstract"),
}

#: DKPro Core's POS types of the UD coarse tags, ``POS_<tag>``, described as DKPro
#: Core's lexmorph ``POS.xml`` describes them.
COARSE_POS_TYPES: dict[str, str] = {
    "ADJ": "Adjective",
    "ADP": "Adposition",
    "ADV": "Adverb",
    "AUX": "Auxiliary verb",
    "CONJ": "Conjunction",
    "DET": "Determiner",
    "INTJ": "Interjection",
    "NOUN": "Noun",
    "NUM": "Numeral",
    "PART": "Particle",
    "PRON": "Pronoun",
    "PROPN": "Proper noun",
    "PUNCT": "Punctuation",
    "SCONJ": "Subordinating conjunction",
    "SYM": "Symbol",
    "VERB": "Verb",
    "X": "Other",
}
#: UD v2 tags whose DKPro type is named after the UD v1 tag.
_COARSE_POS_ALIASES = {"CCONJ": "CONJ"}

_FS_ARRAY = "uima.cas.FSArray"
_STRING = "uima.cas.String"
_NOT_COPIED = frozenset({"sofa", "begin", "end"})
#: Types whose ``parent`` is the constituent whose ``children`` list them.
_TREE_NODES = frozenset({TOKEN, CONSTITUENT, CONSTITUENT_ROOT})


def coarse_pos_type(coarse_value: str | None) -> str | None:
    """DKPro's POS type for a coarse (UD) tag, None where DKPro has none."""
    if not coarse_value:
        return None
    tag = coarse_value.upper()
    tag = _COARSE_POS_ALIASES.get(tag, tag)
    return _POS_TYPE_PREFIX + tag if tag in COARSE_POS_TYPES else None


@functools.cache
def dkpro_typesystem(coarse_pos_types: bool = True) -> cassis.TypeSystem:
    """The type system of the written CASes: DKPro Core types only."""
    source = load_typesystem()
    ts = cassis.TypeSystem()
    for name in COPIED_TYPES:
        declared = source.get_type(name)
        ts.create_type(name, declared.supertype.name, declared.description)
    for name in COPIED_TYPES:
        for feature in source.get_type(name).features:  # its own, not inherited
            element = feature.elementType.name if feature.elementType is not None else None
            ts.create_feature(
                name, feature.name, feature.rangeType.name, element, feature.description
            )
    div = ts.create_type(
        DKPRO_DIV, "uima.tcas.Annotation", "A document structure element (DKPro Core)."
    )
    ts.create_feature(div, "divType", _STRING, description="What kind of element it is.")
    ts.create_feature(div, "id", _STRING, description="Its id in the source, if any.")
    ts.create_type(DKPRO_PARAGRAPH, DKPRO_DIV, "A paragraph (DKPro Core).")
    ts.create_type(DKPRO_HEADING, DKPRO_DIV, "Document title, section heading, etc. (DKPro Core).")
    if coarse_pos_types:
        for tag, description in COARSE_POS_TYPES.items():
            ts.create_type(_POS_TYPE_PREFIX + tag, POS, description)
    return ts


def dkpro_typesystem_xml(coarse_pos_types: bool = True) -> str:
    """:func:`dkpro_typesystem` as XML (written as ``TypeSystem.xml``)."""
    return str(dkpro_typesystem(coarse_pos_types).to_xml())


class DkproXmiWriterConfig(XmiWriterConfig):
    folder: str = Field("xmi-dkpro", description="Sub-folder of the run's output folder.")
    view: str = Field(
        INITIAL_VIEW,
        description="The view to write, as the initial view (the one INCEpTION opens); the "
        "other views are left out.",
    )
    coarse_pos_types: bool = Field(
        True,
        description="Write each POS as DKPro's type for its coarseValue (POS_NOUN, POS_VERB, "
        "...; CCONJ as POS_CONJ), as DKPro's taggers do: DKPro's PosFilter and lemmatizers "
        "choose by these types. false: every POS is a plain POS.",
    )


@dataclass(frozen=True)
class _Plan:
    """How annotations of one source type are written."""

    target: Any  # the DKPro type (for POS, the plain POS type)
    primitives: tuple[str, ...]  # features copied as they are
    references: tuple[tuple[str, bool], ...]  # (feature, is an FSArray) re-pointed to copies
    div_type: str | None = None
    named_entity: bool = False
    pos: bool = False
    tree_node: bool = False
    constituent: bool = False


_NO_CHILD_LEFT = object()


@dataclass
class _KeptFrame:
    """A constituent whose children :meth:`kept` is asking about."""

    constituent: Any
    pending: Iterator[Any]
    keep: bool = False
    child: Any = None


class _Conversion:
    """One view turned into a CAS of DKPro types (see the module docstring)."""

    def __init__(self, view: cassis.Cas, typesystem: cassis.TypeSystem, pos_types: bool) -> None:
        self.view = view
        self.ts = typesystem
        # The types a source type may be written as: those declared for the output (not
        # the UIMA built-ins such as Annotation, which every type is a subtype of).
        self.targets = frozenset(t.name for t in typesystem.get_types())
        self.pos_types = pos_types
        self.plans: dict[str, _Plan | None] = {}
        self.copies: dict[int, Any] = {}  # id(source) -> copy
        self.pending: list[tuple[Any, Any, _Plan]] = []  # (source, copy, plan) to link
        self.kept_constituents: dict[int, bool] = {}
        self.parents: dict[int, Any] = {}  # id(token or constituent) -> source constituent
        self.fs_array = typesystem.get_type(_FS_ARRAY)

    # ------------------------------------------------------------------ plans

    def plan(self, type_: Any) -> _Plan | None:
        name = type_.name
        if name not in self.plans:
            self.plans[name] = self._make_plan(type_)
        return self.plans[name]

    def _make_plan(self, type_: Any) -> _Plan | None:
        # The nearest type (itself or a supertype) that is written: a casflow structure
        # type as its DKPro counterpart, any type the output declares as itself (DKPro
        # types read from DKPro Core or INCEpTION XMI: Div, Heading, POS_NOUN, ...).
        found = type_
        while found is not None and not (
            found.name in STRUCTURE_TYPES or found.name in self.targets
        ):
            found = found.supertype
        if found is None:
            return None
        target_name, div_type = STRUCTURE_TYPES.get(found.name, (found.name, None))
        target = self.ts.get_type(target_name)
        primitives, references = [], []
        for feature in target.all_features:
            if feature.name in _NOT_COPIED or type_.get_feature(feature.name) is None:
                continue
            if self.ts.is_primitive(feature.rangeType):
                primitives.append(feature.name)
            else:
                references.append((feature.name, feature.rangeType.name == _FS_ARRAY))
        return _Plan(
            target=target,
            primitives=tuple(primitives),
            references=tuple(references),
            div_type=div_type,
            named_entity=target_name == NAMED_ENTITY,
            pos=target_name == POS,
            tree_node=target_name in _TREE_NODES,
            constituent=target_name in (CONSTITUENT, CONSTITUENT_ROOT),
        )

    # ------------------------------------------------------------------ trees

    def kept(self, fs: Any) -> bool:
        """Whether ``fs`` is written: it has a DKPro type, and a constituent some child
        that is written (empty categories are not; a constituent without a children array
        is kept as it is)."""
        answer = self._kept_without_walk(fs)
        if answer is not None:
            return answer
        # Depth first with a stack of its own: a parse of a long sentence may be
        # thousands of levels deep.
        frames: list[_KeptFrame] = []
        answer = self._open(fs, frames)
        while frames:
            frame = frames[-1]
            if answer is not None:  # for the child last asked about
                if answer:
                    frame.keep = True
                    self.parents[id(frame.child)] = frame.constituent
                answer = None
            child = next(frame.pending, _NO_CHILD_LEFT)
            if child is _NO_CHILD_LEFT:
                frames.pop()
                answer = self.kept_constituents[id(frame.constituent)] = frame.keep
                continue
            frame.child = child
            answer = self._kept_without_walk(child)
            if answer is None:
                answer = self._open(child, frames)
        assert answer is not None
        return answer

    def _kept_without_walk(self, fs: Any) -> bool | None:
        """Whether ``fs`` is written, when that needs no walk of its children."""
        plan = self.plan(fs.type)
        if plan is None:
            return False
        if not plan.constituent:
            return True
        return self.kept_constituents.get(id(fs))

    def _open(self, constituent: Any, frames: list[_KeptFrame]) -> bool | None:
        """Start on a constituent: kept when it has no children array; else None, its
        children to walk in a new frame."""
        self.kept_constituents[id(constituent)] = False  # a malformed tree with a cycle ends here
        children = getattr(constituent, "children", None)
        if children is None:
            self.kept_constituents[id(constituent)] = True
            return True
        elements = [child for child in children.elements or () if child is not None]
        frames.append(_KeptFrame(constituent, iter(elements)))
        return None

    # ------------------------------------------------------------------ copies

    def copy(self, fs: Any) -> Any | None:
        """The copy of ``fs`` (made on first use), None when it is not written."""
        found = self.copies.get(id(fs))
        if found is not None or id(fs) in self.copies:
            return found
        if not self.kept(fs):
            self.copies[id(fs)] = None
            return None
        plan = self.plan(fs.type)
        assert plan is not None  # kept
        values = {name: getattr(fs, name) for name in plan.primitives}
        target = plan.target
        if plan.pos and self.pos_types:
            subtype = coarse_pos_type(values.get("coarseValue"))
            if subtype is not None:
                target = self.ts.get_type(subtype)
        if plan.named_entity:
            values["value"] = mention_label(fs)
        if plan.div_type is not None:
            values["divType"] = plan.div_type
        values = {name: value for name, value in values.items() if value is not None}
        if values.get("order") == 0:
            # Token.order came with DKPro Core 1.11 (the words of a contraction share
            # its offsets) and UIMA Java writes order="0" on every token: without it, the
            # files load with the descriptors of DKPro Core 1.9 and 1.10 as well.
            del values["order"]
        if self.ts.subsumes("uima.tcas.Annotation", target):
            values["begin"], values["end"] = fs.begin, fs.end
        copy = target(**values)
        self.copies[id(fs)] = copy
        self.pending.append((fs, copy, plan))
        return copy

    def link(self, fs: Any, copy: Any, plan: _Plan) -> None:
        """Point the copy's references at copies (made on first use)."""
        for name, is_array in plan.references:
            if plan.tree_node and name == "parent":
                parent = self.parents.get(id(fs), getattr(fs, "parent", None))
                value = self.copy(parent) if parent is not None else None
            elif is_array:
                array = getattr(fs, name)
                if array is None:
                    continue
                elements = [self.copy(e) for e in array.elements or () if e is not None]
                value = self.fs_array(elements=[e for e in elements if e is not None])
            else:
                target = getattr(fs, name)
                value = self.copy(target) if target is not None else None
            if value is not None:
                copy.set(name, value)

    def run(self, cas: cassis.Cas, metadata: Iterable[Any]) -> None:
        indexed = [self.copy(fs) for fs in self.view.select_all_fs()]
        written = [c for c in indexed if c is not None]
        if not any(self.ts.subsumes(DOCUMENT_METADATA, c.type) for c in written):
            # The view has no metadata of its own (a view a component made; UIMA Java
            # gives every view a plain DocumentAnnotation): the document's, stretched
            # over this view's text, in place of a plain one, so there is one document
            # annotation.
            length = len(self.view.sofa_string or "")
            documents = []
            for fs in metadata:
                copy = self.copy(fs)
                if copy is not None:
                    copy.begin, copy.end = 0, length
                    documents.append(copy)
            if documents:
                written = [c for c in written if not self.ts.subsumes(DOCUMENT_ANNOTATION, c.type)]
                written.extend(documents)
        while self.pending:
            self.link(*self.pending.pop())
        cas.add_all(written)


def dkpro_cas(
    cas: cassis.Cas, view_name: str, doc_id: str, *, coarse_pos_types: bool = True
) -> cassis.Cas:
    """View ``view_name`` of ``cas`` as the initial view of a new CAS of DKPro types."""
    try:
        view = cas.get_view(view_name)
    except KeyError:
        views = ", ".join(sorted(s.sofaID for s in cas.sofas))
        raise ViewContentError(
            f"document {doc_id}: no view {view_name!r} to write (views: {views})"
        ) from None
    typesystem = dkpro_typesystem(coarse_pos_types)
    out = cassis.Cas(typesystem=typesystem)
    if view.sofa_string is not None:
        set_sofa_text(out, view.sofa_string)
    out.sofa_mime = view.sofa_mime
    metadata: list[Any] = []
    if view_name != INITIAL_VIEW:
        metadata = list(cas.get_view(INITIAL_VIEW).select(DOCUMENT_METADATA))
    _Conversion(view, typesystem, coarse_pos_types).run(out, metadata)
    return out


class DkproXmiWriter(PackedFolderWriter[DkproXmiWriterConfig]):
    name = "xmi.dkpro.writer.v1"
    description = (
        "XMI for DKPro Core and INCEpTION: one view as the initial view, DKPro Core types "
        "only (casflow's mentions as NamedEntity, treebank constituents as Constituent)."
    )
    extension = ".xmi"

    @classmethod
    def views_read(cls, config: DkproXmiWriterConfig) -> dict[str, tuple[str, ...]]:
        # Any content is written; the view must only be one that a step writes.
        return {config.view: ()}

    def serialize(self, cas: cassis.Cas, doc_id: str) -> bytes:
        out = dkpro_cas(
            cas, self.config.view, doc_id, coarse_pos_types=self.config.coarse_pos_types
        )
        if self.config.pretty_print:
            return out.to_xmi(pretty_print=True).encode("utf-8")
        return cas_to_xmi_bytes(out)

    def finish(self) -> list[Path]:
        super().finish()
        path = self.folder / TYPESYSTEM_FILE
        atomic_write_text(path, dkpro_typesystem_xml(self.config.coarse_pos_types))
        return [path]
