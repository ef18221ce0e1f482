"""The casflow type system: DKPro Core linguistic types plus casflow's own.

`load_typesystem()` returns one cassis `TypeSystem` per process (cached), merged
with the type system XML that plug-in packages contribute through the entry
point group ``casflow.typesystems`` (each entry point names a callable returning
a path or XML string). The constants below are the full type names, so code and
component declarations never spell them by hand.
"""

from __future__ import annotations

import functools
from importlib import resources
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

import cassis

TYPESYSTEM_ENTRY_POINT_GROUP = "casflow.typesystems"

_DKPRO = "de.tudarmstadt.ukp.dkpro.core.api."

DOCUMENT_ANNOTATION = "uima.tcas.DocumentAnnotation"
DOCUMENT_METADATA = _DKPRO + "metadata.type.DocumentMetaData"
SENTENCE = _DKPRO + "segmentation.type.Sentence"
TOKEN = _DKPRO + "segmentation.type.Token"
LEMMA = _DKPRO + "segmentation.type.Lemma"
POS = _DKPRO + "lexmorph.type.pos.POS"
DEPENDENCY = _DKPRO + "syntax.type.dependency.Dependency"
DEPENDENCY_ROOT = _DKPRO + "syntax.type.dependency.ROOT"
CONSTITUENT = _DKPRO + "syntax.type.constituent.Constituent"
CONSTITUENT_ROOT = _DKPRO + "syntax.type.constituent.ROOT"
PENN_TREE = _DKPRO + "syntax.type.PennTree"
CHUNK = _DKPRO + "syntax.type.chunk.Chunk"
NAMED_ENTITY = _DKPRO + "ner.type.NamedEntity"

ARTICLE_VERSION = "casflow.metadata.ArticleVersion"

TITLE = "casflow.structure.Title"
ABSTRACT = "casflow.structure.Abstract"
SECTION = "casflow.structure.Section"
HEADING = "casflow.structure.Heading"
PARAGRAPH = "casflow.structure.Paragraph"
CAPTION = "casflow.structure.Caption"
CITATION = "casflow.structure.Citation"
REFERENCE = "casflow.structure.Reference"
TYPOGRAPHY = "casflow.structure.Typography"

FRAGMENT = "casflow.ner.Fragment"
ALTERNATIVE = "casflow.ner.Alternative"
CONCEPT_MENTION = "casflow.ner.ConceptMention"
GENE_MENTION = "casflow.ner.GeneMention"
ANATOMY_MENTION = "casflow.ner.AnatomyMention"
ABBREVIATION = "casflow.ner.Abbreviation"

TREEBANK_CONSTITUENT = "casflow.syntax.TreebankConstituent"
EMPTY_CATEGORY = "casflow.syntax.EmptyCategory"

SENTENCE_AGREEMENT = "casflow.combine.SentenceAgreement"

#: Document-structure types that a sentence must never cross.
BLOCK_STRUCTURE_TYPES = (TITLE, HEADING, CAPTION, PARAGRAPH)


def typesystem_xml_path() -> Path:
    """Path of the built-in type system XML."""
    return Path(str(resources.files(__package__).joinpath("casflow-typesystem.xml")))


def short_name(type_name: str) -> str:
    """``de.tud...segmentation.type.Token`` -> ``Token`` (for messages)."""
    base, _, feature = type_name.partition(":")
    short = base.rsplit(".", 1)[-1]
    return f"{short}:{feature}" if feature else short


def resolve_type_name(name: str) -> str:
    """A full type name from a full or unambiguous short one (``Token``, ``Token:pos``).

    Unknown or ambiguous names are returned unchanged, so the workflow validator
    reports them against the type system with the user's spelling.
    """
    base, sep, feature = name.partition(":")
    names = [t.name for t in load_typesystem().get_types(built_in=True)]
    if base in names:
        return name
    matches = [n for n in names if n.rsplit(".", 1)[-1] == base]
    return f"{matches[0]}{sep}{feature}" if len(matches) == 1 else name


class TypeSystemPluginError(RuntimeError):
    """A plug-in's type system cannot be used (casflow stops before any work, exit 2)."""


def _entry_point_label(ep: EntryPoint) -> str:
    dist = ep.dist.name if ep.dist is not None else "unknown distribution"
    return (
        f"type system contributed by entry point {ep.name!r} = {ep.value!r} of {dist} "
        f"(group {TYPESYSTEM_ENTRY_POINT_GROUP})"
    )


def _plugin_typesystem_sources() -> list[tuple[str, str | Path]]:
    sources = []
    for ep in sorted(entry_points(group=TYPESYSTEM_ENTRY_POINT_GROUP), key=lambda e: e.name):
        # Whatever a plug-in's import or provider raises, the message must name it:
        # every command needs the type system, so a bare traceback hides the culprit.
        try:
            provider = ep.load()
            source = provider() if callable(provider) else provider
        except Exception as exc:
            raise TypeSystemPluginError(
                f"{_entry_point_label(ep)} cannot be loaded: {type(exc).__name__}: {exc}; "
                "fix or uninstall that distribution"
            ) from exc
        sources.append((_entry_point_label(ep), source))
    return sources


def _xml_bytes(source: str | Path) -> bytes:
    if isinstance(source, Path) or (
        isinstance(source, str) and not source.lstrip().startswith("<")
    ):
        return Path(source).read_bytes()
    return source.encode("utf-8")


def _merge_type_descriptions(base: bytes, extra: bytes) -> bytes:
    # Plug-in types usually extend DKPro or casflow types, which their own XML
    # does not define, so the descriptions are merged as XML and loaded once.
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
    base_root = etree.fromstring(base, parser)
    extra_root = etree.fromstring(extra, parser)
    ns = "{http://uima.apache.org/resourceSpecifier}"
    base_types = base_root.find(f"{ns}types")
    known = {t.findtext(f"{ns}name") for t in base_types.findall(f"{ns}typeDescription")}
    for description in extra_root.iter(f"{ns}typeDescription"):
        name = description.findtext(f"{ns}name")
        if name in known:
            raise ValueError(f"type {name} is already defined")
        base_types.append(description)
    return etree.tostring(base_root, xml_declaration=True, encoding="UTF-8")


@functools.cache
def load_typesystem() -> cassis.TypeSystem:
    """The merged casflow type system (built-in XML plus plug-in contributions)."""
    xml = typesystem_xml_path().read_bytes()
    for label, source in _plugin_typesystem_sources():
        try:
            merged = _merge_type_descriptions(xml, _xml_bytes(source))
            cassis.load_typesystem(merged.decode("utf-8"))
        except Exception as exc:
            raise TypeSystemPluginError(f"{label} cannot be merged: {exc}") from exc
        xml = merged
    return cassis.load_typesystem(xml.decode("utf-8"))


def typesystem_xml() -> str:
    """The merged type system serialised as XML (written beside XMI outputs)."""
    return load_typesystem().to_xml()
