"""XMI reader: CAS documents written by casflow or any UIMA tool.

A UIMA tool writes XMI against its own type system and puts that type system beside
the files: DKPro Core's XmiWriter writes ``TypeSystem.xml`` (``typesystem.xml`` before
1.9, ``.gz`` when it compresses) in its output folder, INCEpTION's UIMA XMI export
zips that writer's folder, and xmi.writer.v1 writes ``TypeSystem.xml`` too. Such a
type system holds what casflow's lacks: the POS subtypes every DKPro tagger writes
(``POS_NOUN``), features such as ``Token.morph``, INCEpTION's ``TagsetDescription``
and layer definitions. The reader merges it with casflow's (as UIMA merges the type
systems of a pipeline's parts), so the file loads whole; cassis's ``select(POS)``
includes subtypes, so the evaluators and the components that select ``POS`` take a
DKPro ``POS_NOUN`` as one. A type system that defines one of casflow's types or
features differently fails the documents read with it, naming both files.

Those tools may write XML 1.1 (INCEpTION's "UIMA CAS XMI (XML 1.1)" export), where a
control character of the text is a character reference (``&#1;``) that XML 1.0, and so
libxml2 under cassis, refuses: such a document fails naming where it holds one, or with
``control_characters: space`` each is read as a space.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import cassis
from cassis.typesystem import TOP_TYPE_NAME, Feature, Type, TypeNotFoundError
from lxml import etree
from pydantic import Field

from casflow.cas.xmi_offsets import load_xmi
from casflow.components.inputs import (
    IdStyle,
    count_input_items,
    document_id,
    input_problems,
    is_archive,
    iter_input_items,
    read_document_bytes,
    resolve_input,
)
from casflow.pipeline.component import (
    ComponentConfig,
    DocumentError,
    DocumentRef,
    Reader,
    RunContext,
)
from casflow.pipeline.files import doc_id_of_file_stem
from casflow.pipeline.packed import GZIP_SUFFIX, PackedFileError, gunzip_if_needed
from casflow.typesystem import load_typesystem, resolve_type_name, typesystem_xml_path

#: The names a type system is written under beside XMI files, looked for in this order.
#: What xmi.writer.v1 (and DKPro Core's XmiWriter since 1.9) names it.
TYPESYSTEM_FILE = "TypeSystem.xml"
TYPESYSTEM_FILE_NAMES = (
    TYPESYSTEM_FILE,
    "typesystem.xml",
    "TypeSystem.xml.gz",
    "typesystem.xml.gz",
)

_XMI_ID = "{http://www.omg.org/XMI}id"

#: A character reference to a control character that XML 1.1 allows and XML 1.0 does not
#: (C0 controls but tab, line feed and carriage return): what UIMA Java writes for one in
#: XML 1.1 XMI (INCEpTION's "UIMA CAS XMI (XML 1.1)" export, DKPro Core's XmiWriter with
#: version 1.1). libxml2, under lxml and cassis, parses XML 1.0 only and refuses them.
_XML11_CONTROL_REFERENCE = re.compile(
    rb"&#(?:[xX]0*(?:[1-8bBcCeEfF]|1[0-9a-fA-F])|0*(?:[1-8]|1[124-9]|2[0-9]|3[01]));"
)
_ATTRIBUTE_START = re.compile(rb'([\w:.-]+)="[^"]*\Z')
_TAG_NAME = re.compile(rb"<([\w:.-]+)")


class XmiReaderConfig(ComponentConfig):
    input: str | None = Field(
        None,
        description="An .xmi (.xmi.gz) file, folder, glob or @list file; .tar archives of them "
        "(as xmi.writer.v1 writes with archive: tar) are opened.",
    )
    pattern: str = Field(
        "**/*.{xmi,xmi.gz}",
        description="Files to take from a folder or archive (recursive glob; {a,b} for either).",
    )
    id_style: IdStyle = Field(
        "stem",
        description="Document id: file stem, or path relative to the input folder; "
        "%XX escapes that casflow's writers put in file names are decoded.",
    )
    typesystem: str | None = Field(
        None,
        description="The type system XML the files were written with, merged with casflow's "
        "for reading. Default: the TypeSystem.xml (or typesystem.xml) beside each file (or "
        "its .tar archive), or in the nearest folder above it within the input folder, as "
        "DKPro Core, INCEpTION and xmi.writer.v1 write it; none found: casflow's alone.",
    )
    lenient: bool = Field(
        False,
        description="Drop annotations of types that neither casflow's type system nor the "
        "files' one declares, instead of failing.",
    )
    views: dict[str, list[str]] = Field(
        default_factory=dict,
        description="What the files hold, for validation: view name -> type names in it "
        "(full names, or short ones such as Token). Every view is loaded either way.",
    )
    control_characters: Literal["fail", "space"] = Field(
        "fail",
        description="Control characters (other than tab and line breaks) in XML 1.1 XMI, as "
        "INCEpTION's 'UIMA CAS XMI (XML 1.1)' export and DKPro Core's XmiWriter with version "
        "1.1 write them (&#1;): XML 1.0, which casflow reads and writes, cannot hold them. "
        "fail: the document fails naming the first; space: each is read as a space (offsets "
        "keep).",
    )


def xmi_document_id(name: str) -> str:
    """The document id of an XMI file's name (less ``.xmi``), folder by folder.

    casflow's writers name files by ``safe_file_stem(id)``: decoding gives the id
    back, so a document read back keeps the id it was written with (in the journal,
    the run report and its file name when written again) and agrees with its
    DocumentMetaData. The id is needed before the file is parsed (the journal skips
    finished documents by it), so it comes from the name, not from the CAS. A name
    that is not such an encoding (``50%.xmi`` from another tool) or a shortened one
    (``%~`` and a hash) is kept as it is.
    """
    parts = []
    for part in name.split("/"):
        # "%" (the empty id) stays "%": an empty id would name no document.
        parts.append(doc_id_of_file_stem(part) or part)
    return "/".join(parts)


class XmiDocumentError(DocumentError, ValueError):
    hint = "check that the file is complete UIMA XMI (a damaged or cut-off file fails this way)"


class TypeSystemError(DocumentError, ValueError):
    """A type system that came with XMI files cannot be loaded or merged with casflow's
    (the documents read with it fail, with ``hint``)."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.hint = self.what_to_do = hint


def _casflow_label() -> str:
    return f"casflow's type system ({typesystem_xml_path()})"


def _range(feature: Feature) -> str:
    element = feature.elementType.name if feature.elementType else TOP_TYPE_NAME
    multiple = bool(feature.multipleReferencesAllowed)
    if feature.rangeType.name in ("uima.cas.FSArray", "uima.cas.FSList") or multiple:
        return f"{feature.rangeType.name} of {element}, multipleReferencesAllowed {multiple}"
    return feature.rangeType.name


def _ancestors(t: Type) -> set[str]:
    names = set()
    while t.supertype is not None:
        t = t.supertype
        names.add(t.name)
    return names


def merge_with_casflow(extra: cassis.TypeSystem, label: str) -> cassis.TypeSystem:
    """casflow's type system with the types and features ``extra`` adds.

    A type both define must have compatible supertypes and each feature both define
    the same range, element type and multipleReferencesAllowed (UIMA's merge rules),
    else TypeSystemError names ``label`` and casflow's file. Descriptions may
    differ (DKPro's change between releases). When ``extra`` adds nothing, casflow's
    own type system is returned, so casflow's output reads as without it.
    """
    return merge_typesystems(load_typesystem(), extra, label, _casflow_label(), "casflow's")


def merge_typesystems(
    base: cassis.TypeSystem,
    extra: cassis.TypeSystem,
    label: str,
    base_label: str,
    base_short: str,
) -> cassis.TypeSystem:
    """``base`` with what ``extra`` adds, by the rules of :func:`merge_with_casflow`
    (``base`` itself when ``extra`` adds nothing)."""
    conflicts: list[str] = []
    adds = False
    for t in extra.get_types():
        if not base.contains_type(t.name):
            adds = True
            continue
        ours = base.get_type(t.name)
        # A supertype more general than casflow's says nothing new; a more specific
        # one is refused too: cassis's merge would not give the type its new
        # parent's features.
        if t.supertype.name != ours.supertype.name and t.supertype.name not in _ancestors(ours):
            conflicts.append(
                f"{t.name} is a {t.supertype.name} there but a {ours.supertype.name} in "
                f"{base_short}"
            )
            continue
        for feature in t.features:
            mine = ours.get_feature(feature.name)
            if mine is None:
                adds = True
            elif _range(feature) != _range(mine):
                conflicts.append(
                    f"{t.name}:{feature.name} is {_range(feature)} there but {_range(mine)} "
                    f"in {base_short}"
                )
            else:
                # cassis's merge compares descriptions too; UIMA's does not, nor do we.
                feature.description = mine.description
    if conflicts:
        more = f" (and {len(conflicts) - 1} more)" if len(conflicts) > 1 else ""
        raise TypeSystemError(
            f"the type system {label} conflicts with {base_label}: {conflicts[0]}{more}",
            _CONFLICT_HINT,
        )
    if not adds:
        return base
    try:
        return cassis.merge_typesystems(base, extra)
    except ValueError as exc:  # what the checks above do not foresee (a feature moved up)
        raise TypeSystemError(
            f"the type system {label} cannot be merged with {base_label}: {exc}",
            _CONFLICT_HINT,
        ) from exc


def load_merged_typesystem(path: Path) -> cassis.TypeSystem:
    """The type system XML at ``path`` (gzipped or not) merged with casflow's."""
    try:
        xml = gunzip_if_needed(path.read_bytes(), str(path))
        extra = cassis.load_typesystem(io.BytesIO(xml))
    except (OSError, PackedFileError, etree.XMLSyntaxError, ValueError, KeyError) as exc:
        detail = f"{type(exc).__name__}: {exc}" if isinstance(exc, KeyError) else str(exc)
        raise TypeSystemError(
            f"cannot load the type system {path}: {detail}",
            "give a complete UIMA type system description there (a TypeSystem.xml as UIMA "
            "tools write it), or set typesystem: PATH in the reader config to one",
        ) from exc
    return merge_with_casflow(extra, str(path))


def _typesystem_in(folder: Path) -> Path | None:
    return next((folder / n for n in TYPESYSTEM_FILE_NAMES if (folder / n).is_file()), None)


def _archive_of(uri: str) -> Path | None:
    """The archive of an ``archive.tar!member`` uri (None for a plain file)."""
    at = uri.find("!")
    while at >= 0:
        if is_archive(Path(uri[:at])):
            return Path(uri[:at])
        at = uri.find("!", at + 1)
    return None


class XmiReader(Reader[XmiReaderConfig]):
    """Loads every view of the XMI into the CAS being built.

    The annotations keep their views: a document written by casflow with gold
    and system views comes back with the same views. Each file is read with
    casflow's type system merged with the one it came with (``typesystem:``, or the
    TypeSystem.xml beside it, see the module docstring). A file with an annotation
    whose UTF-16 offset splits a character beyond the BMP (or lies outside the text)
    fails its document, naming the annotation: cassis would keep the offset
    unconverted.
    """

    name = "xmi.reader.v1"
    description = "XMI files (all views), e.g. casflow's own output or another UIMA tool's."

    @classmethod
    def views_written(cls, config: XmiReaderConfig, view: str) -> dict[str, tuple[str, ...]]:
        written: dict[str, tuple[str, ...]] = {view: ()}
        for name, types in config.views.items():
            written[name] = tuple(resolve_type_name(t) for t in types)
        return written

    def __init__(self, config: XmiReaderConfig, context: RunContext | None = None) -> None:
        super().__init__(config, context)
        self.input = resolve_input(config.input or "", self.context.workflow_dir)
        self.typesystem_path = (
            Path(resolve_input(config.typesystem, self.context.workflow_dir))
            if config.typesystem
            else None
        )
        # A type system is searched for no higher than the input folder.
        top = Path(self.input)
        self._top = Path(os.path.abspath(top)) if top.is_dir() else None
        self._found: dict[Path, Path | None] = {}  # folder -> its nearest type system file
        self._merged: dict[Path, cassis.TypeSystem | TypeSystemError] = {}

    @classmethod
    def check_config(cls, config: XmiReaderConfig, context: RunContext) -> list[str]:
        input_spec = resolve_input(config.input, context.workflow_dir) if config.input else None
        problems = input_problems(input_spec, config.pattern, context.output_dir)
        path: Path | None = None
        if config.typesystem:
            given = Path(resolve_input(config.typesystem, context.workflow_dir))
            if not given.is_file():
                return [*problems, f"typesystem: {given} is not a file"]
            path = given
        elif input_spec and Path(input_spec).is_dir():
            # The input folder's own type system: one that cannot be used would fail
            # every document, so it is said before the run.
            path = _typesystem_in(Path(input_spec))
        if path is not None:
            try:
                load_merged_typesystem(path)
            except TypeSystemError as exc:
                problems.append(f"{exc}; {exc.hint}")
        return problems

    def count_documents(self) -> int | None:
        return count_input_items(self.input, self.config.pattern)

    def iter_documents(self) -> Iterator[DocumentRef]:
        for item in iter_input_items(self.input, self.config.pattern):
            # PMC1.xmi.gz is document PMC1, as PMC1.xmi is.
            path = item.path.with_suffix("") if item.path.suffix == GZIP_SUFFIX else item.path
            doc_id = xmi_document_id(document_id(path, item.root, self.config.id_style))
            yield DocumentRef(doc_id, item.uri, item.data, item.size, item.error)

    def typesystem_file(self, uri: str) -> Path | None:
        """The type system file that came with the document at ``uri``, if any."""
        if self.typesystem_path is not None:
            return self.typesystem_path
        return self._nearest(Path(os.path.abspath((_archive_of(uri) or Path(uri)).parent)))

    def _nearest(self, folder: Path) -> Path | None:
        if folder in self._found:
            return self._found[folder]
        found = _typesystem_in(folder)
        if found is None and self._top is not None and self._top in folder.parents:
            found = self._nearest(folder.parent)
        self._found[folder] = found
        return found

    def _typesystem(self, source: Path | None) -> cassis.TypeSystem:
        if source is None:
            return load_typesystem()
        merged = self._merged.get(source)
        if merged is None:
            try:
                merged = load_merged_typesystem(source)
            except TypeSystemError as exc:
                merged = exc  # every document read with it fails the same way
            self._merged[source] = merged
        if isinstance(merged, TypeSystemError):
            raise TypeSystemError(str(merged), merged.what_to_do)
        return merged

    def load(self, ref: DocumentRef, cas: cassis.Cas) -> cassis.Cas:
        data = ref.data if ref.data is not None else read_document_bytes(ref.uri)
        try:
            data = gunzip_if_needed(data, ref.uri)
        except PackedFileError as exc:
            raise XmiDocumentError(str(exc)) from exc
        data = self._xml11_control_characters(ref, data)
        source = self.typesystem_file(ref.uri)
        try:
            typesystem = self._typesystem(source)
        except TypeSystemError as exc:
            error = XmiDocumentError(f"{ref.uri}: {exc}")
            error.hint = exc.what_to_do
            raise error from exc
        try:
            loaded, problems = load_xmi(data, typesystem=typesystem, lenient=self.config.lenient)
        except TypeNotFoundError as exc:
            raise self._unknown_type_error(ref, source, exc) from exc
        except KeyError as exc:
            raise self._dangling_reference_error(ref, source, data, exc) from exc
        except TypeError as exc:
            raise self._unknown_feature_error(ref, source, typesystem, exc) from exc
        except (etree.XMLSyntaxError, ValueError, RuntimeError, AttributeError) as exc:
            raise XmiDocumentError(f"{ref.uri}: cannot load XMI: {exc}") from exc
        if problems:
            # An input file is not ours to repair: which character a half was meant to
            # cover is the writer's knowledge, and guessing would change the gold.
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            error = XmiDocumentError(
                f"{ref.uri}: {problems[0].describe()}{more}; cassis cannot convert such an "
                "offset to a character offset"
            )
            error.hint = (
                "fix the tool that wrote the file so its offsets fall between characters "
                "(UTF-16 offsets must not split a character beyond the BMP)"
            )
            raise error
        # The loaded CAS replaces the empty one the chain made: all its views come along.
        return loaded

    def _xml11_control_characters(self, ref: DocumentRef, data: bytes) -> bytes:
        found = _XML11_CONTROL_REFERENCE.search(data)
        if found is None:
            return data
        if self.config.control_characters == "space":
            # One character for one: every UTF-16 offset stays where it was.
            return _XML11_CONTROL_REFERENCE.sub(b"&#32;", data)
        error = XmiDocumentError(
            f"{ref.uri}: {_place_of(data, found.start())} holds "
            f"{found.group().decode('ascii')}, a control character that XML 1.1 XMI may hold "
            "(INCEpTION's 'UIMA CAS XMI (XML 1.1)' export, DKPro Core's XmiWriter with "
            "version 1.1) but XML 1.0 cannot: casflow reads and writes XML 1.0 only"
        )
        error.hint = (
            "set control_characters: space in the reader config to read each such "
            "character as a space (offsets keep), or remove the characters from the "
            "documents in the tool that exported them"
        )
        raise error

    # -- what a file the type systems do not describe fails with ----------------------

    def _read_with(self, source: Path | None) -> str:
        if source is None:
            return f"{_casflow_label()}; no type system came with the file"
        return f"{_casflow_label()} merged with {source}"

    def _give_typesystem(self, source: Path | None) -> str:
        if source is None:
            return (
                "give the type system the file was written with: put its TypeSystem.xml "
                "beside the XMI or in a folder above it within the input (DKPro Core's "
                "XmiWriter and INCEpTION's UIMA XMI export write one), or set typesystem: "
                "PATH in the reader config"
            )
        return (
            f"{source} is not the type system the file was written with: set typesystem: "
            "PATH in the reader config to the one that is"
        )

    def _unknown_type_error(
        self, ref: DocumentRef, source: Path | None, exc: TypeNotFoundError
    ) -> XmiDocumentError:
        found = re.search(r"\[(.*)\]", str(exc))
        name = found.group(1) if found else str(exc)
        error = XmiDocumentError(
            f"{ref.uri}: type {name} is not declared by {self._read_with(source)}"
        )
        error.hint = (
            f"{self._give_typesystem(source)}; or set lenient: true to drop the annotations "
            "of types no type system declares"
        )
        return error

    def _unknown_feature_error(
        self,
        ref: DocumentRef,
        source: Path | None,
        typesystem: cassis.TypeSystem,
        exc: TypeError,
    ) -> XmiDocumentError:
        # cassis builds each type's class named after the type, dots as underscores,
        # and an attribute of the element no feature declares is an unexpected argument.
        found = re.match(
            r"(\w+)\.__init__\(\) got an unexpected keyword argument '(\w+)'", str(exc)
        )
        if found is None:
            return XmiDocumentError(f"{ref.uri}: cannot load XMI: {exc}")
        class_name, feature = found.groups()
        name = next(
            (
                t.name
                for t in typesystem.get_types(built_in=True)
                if t.name.replace(".", "_") == class_name
            ),
            class_name,
        )
        error = XmiDocumentError(
            f"{ref.uri}: feature {feature!r} of type {name} is not declared by "
            f"{self._read_with(source)}"
        )
        error.hint = (
            f"{self._give_typesystem(source)} (lenient: true drops annotations of unknown "
            "types, not unknown features)"
        )
        return error

    def _dangling_reference_error(
        self, ref: DocumentRef, source: Path | None, data: bytes, exc: KeyError
    ) -> XmiDocumentError:
        xmi_id = exc.args[0] if exc.args else None
        if not isinstance(xmi_id, int):
            return XmiDocumentError(f"{ref.uri}: cannot load XMI: KeyError: {exc}")
        target = _element_type(data, xmi_id) if self.config.lenient else None
        if target is None:
            return XmiDocumentError(
                f"{ref.uri}: a feature refers to xmi:id {xmi_id}, which the file does not hold"
            )
        error = XmiDocumentError(
            f"{ref.uri}: an annotation refers to xmi:id {xmi_id}, a {target}, which "
            f"lenient: true dropped: that type is not declared by {self._read_with(source)}"
        )
        error.hint = f"{self._give_typesystem(source)}, so that nothing needs to be dropped"
        return error


_CONFLICT_HINT = (
    "the files were written with a type system that defines a type or feature casflow "
    "also defines, differently: map that type onto casflow's definition (or rename it) in "
    "the tool that wrote them, or set typesystem: PATH in the reader config to a type "
    "system that agrees with casflow's"
)


def _place_of(data: bytes, at: int) -> str:
    """Where byte ``at`` of an XMI file is: the feature (attribute) and the type of the
    element holding it (UIMA Java writes a whole document on one line, so a line number
    says little)."""
    tag_start = data.rfind(b"<", 0, at)
    tag = _TAG_NAME.match(data, tag_start) if tag_start >= 0 else None
    line = data.count(b"\n", 0, at) + 1
    if tag is None:
        return f"line {line}, byte {at}"
    element = _type_of_tag(data, tag.group(1).decode("utf-8", errors="replace"))
    attribute = _ATTRIBUTE_START.search(data, tag_start, at)
    where = f"(line {line}, byte {at})"
    if attribute is None:
        return f"the content of a {element} element {where}"
    name = attribute.group(1).decode("utf-8", errors="replace")
    if element == "uima.cas.Sofa" and name == "sofaString":
        view = re.search(rb'sofaID="([^"]*)"', data[tag_start:at])
        named = f" {view.group(1).decode('utf-8', errors='replace')!r}" if view else ""
        return f"the text of view{named} {where}"
    return f"feature {name!r} of a {element} {where}"


def _type_of_tag(data: bytes, tag: str) -> str:
    """The type name of an XMI element's tag (``type3:Lemma`` -> its full name), from the
    namespace its prefix is declared with; the tag itself where none is found."""
    prefix, _, local = tag.rpartition(":")
    declared = re.search(rb"xmlns:" + re.escape(prefix.encode()) + rb'="([^"]*)"', data)
    if not prefix or declared is None:
        return tag
    namespace = declared.group(1).decode("utf-8", errors="replace")
    package = namespace.removeprefix("http:///").removesuffix(".ecore").replace("/", ".")
    return f"{package}.{local}".removeprefix("uima.noNamespace.")


def _element_type(data: bytes, xmi_id: int) -> str | None:
    """The type name of the element with ``xmi_id`` in an XMI file (None if none has it)."""
    wanted = str(xmi_id)
    for _, elem in etree.iterparse(io.BytesIO(data), events=("end",), huge_tree=True):
        if elem.get(_XMI_ID) == wanted:
            # {http:///de/tudarmstadt/.../pos.ecore}POS_NOUN -> de.tudarmstadt....pos.POS_NOUN
            namespace, _, local = elem.tag[1:].partition("}")
            package = namespace.removeprefix("http:///").removesuffix(".ecore").replace("/", ".")
            return f"{package}.{local}".removeprefix("uima.noNamespace.")
        elem.clear()
    return None
