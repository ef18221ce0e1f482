"""Fast XMI serialization: the bytes of ``cas.to_xmi().encode("utf-8")``, many times sooner.

cassis's ``CasXmiSerializer`` asks the type system, for every feature of every
feature structure, which kind of feature it is (``is_instance_of``,
``is_primitive``, ...) and builds an lxml tree: some 50-175 us per feature
structure.
Here those answers are worked out once per type into a :class:`TypePlan`
(cached for as long as the type lives), compiled into two small Python
functions per type, and the document is written with string operations.

The output reproduces cassis 0.12 with pretty_print=False exactly:

- which feature structures are written, and the xmi:ids given to those without
  one, follow ``Cas._find_all_fs``: breadth-first from the indexed feature
  structures of each view, in the same order, so the CAS is left as cassis
  leaves it and a second call writes the same bytes;
- elements are sorted by xmi:id; namespace prefixes are the package's last
  part, numbered per part (``type``, ``type0``, ...) in order of first use,
  declared on the root in that order (cassis's nsmap after lxml's
  ``cleanup_namespaces``); uima.cas types are written with ``cas:``;
- attribute values are escaped as libxml2 escapes them (``& < > "`` and tab,
  newline, carriage return as character references);
- begin/end of annotations become UTF-16 offsets through the sofa's offset
  converter, warnings for out-of-range offsets included.

Anything the plans do not cover (lists, arrays other than FSArray, a sofa with
sofaURI or sofaArray, characters XML 1.0 forbids, a type that is not the CAS
type system's own, ...) makes :func:`cas_to_xmi_bytes` write that CAS with
cassis instead, so the file, or the error, is cassis's own.
"""

from __future__ import annotations

import keyword
import logging
import operator
import re
import weakref
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import cassis
from cassis.typesystem import (
    TYPE_NAME_ANNOTATION,
    TYPE_NAME_ARRAY_BASE,
    TYPE_NAME_BOOLEAN,
    TYPE_NAME_DOUBLE,
    TYPE_NAME_FLOAT,
    TYPE_NAME_FS_ARRAY,
    TYPE_NAME_FS_LIST,
    TYPE_NAME_LIST_BASE,
    TYPE_NAME_SOFA,
    TYPE_NAME_STRING_ARRAY,
    TYPE_NAME_STRING_LIST,
    Feature,
    FeatureStructure,
    Type,
    TypeSystem,
    is_fs_array,
)
from cassis.xmi import CasXmiSerializer

from casflow.cas import cassis_version
from casflow.cas.sofa import _Utf16Offsets  # compact offset maps: a faster path for them

logger = logging.getLogger(__name__)

XMI_NS = "http://www.omg.org/XMI"
CAS_NS = "http:///uima/cas.ecore"
_HEAD = (
    "<?xml version='1.0' encoding='UTF-8'?>\n"
    + f'<xmi:XMI xmlns:xmi="{XMI_NS}" xmlns:cas="{CAS_NS}"'
)
_ROOT_END = ' xmi:version="2.0"><cas:NULL xmi:id="0"/>'
_TAIL = "</xmi:XMI>"

# Characters lxml refuses in a value (ValueError, or UnicodeEncodeError for surrogates).
XML_INCOMPATIBLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# What libxml2 escapes in an attribute value (a single quote it leaves alone).
_ATTR_SPECIAL = re.compile('[&<>"\t\n\r]')
_ATTR_ESCAPES = {
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    '"': "&quot;",
    "\t": "&#9;",
    "\n": "&#10;",
    "\r": "&#13;",
}
# Names written without checks: plain ASCII (lxml would reject or rewrite others).
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

# cassis's own float formatting (Java style: 1.0E-5, NaN, Infinity); stateless.
_format_float: Callable[[Any], str] | None = getattr(
    CasXmiSerializer(), "_serialize_float_value", None
)

#: Whether :func:`cas_to_xmi_bytes` takes the fast path: only with a cassis release
#: whose bytes it was checked against (see :mod:`casflow.cas.cassis_version`) and
#: that has the internals it reads; otherwise cassis writes every file.
FAST_PATH: bool = (
    cassis_version.FAST_PATHS
    and _format_float is not None
    and hasattr(cassis.Cas, "_get_next_xmi_id")
    and hasattr(TypeSystem(), "_types")
    and hasattr(Feature, "_has_reserved_name")
)


class XmiFastPathUnsupported(Exception):
    """The CAS uses something the fast path does not reproduce; cassis must write it."""


# --------------------------------------------------------------------------- plans

# How cassis writes a feature (CasXmiSerializer._serialize_feature_structure):
_STRING = "string"  # str(value), escaped
_OFFSET = "offset"  # annotation begin/end: UTF-16 offset, then as _STRING
_REF = "ref"  # the referenced feature structure's xmi:id
_FS_ARRAY = "fs_array"  # inline FSArray: its elements' xmi:ids
_BOOLEAN = "boolean"
_FLOAT = "float"
_UNSUPPORTED = "unsupported"  # inline lists and non-FS arrays: only while unset


@dataclass(frozen=True)
class TypePlan:
    """How to follow references from, and write, feature structures of one type."""

    # The type when the plan was made, held weakly so that the cache does not keep
    # type systems alive, and what of its features the plan depends on.
    type_ref: weakref.ref[Type]
    feature_keys: tuple[FeatureKey, ...]
    namespace: str  # XML namespace URI
    raw_prefix: str  # namespace prefix before cassis numbers it
    local_name: str
    unsupported: str | None  # why feature structures of this type cannot be written
    # (attribute name, XML name, how to write it), in cassis's order
    attributes: tuple[tuple[str, str, str], ...]
    # makes the follower of references for one document (None: the type has none)
    references: Callable[..., Callable[[Any], None]] | None
    # makes the writer of one feature structure, given the per-document context
    writer_factory: Callable[..., Callable[[Any], str]]

    def made_from(self, features: list[Feature]) -> bool:
        return self.feature_keys == feature_keys(features)


# What a plan depends on in one feature. Features are mutable: cassis's own tests flip
# multipleReferencesAllowed on a feature between writes, and rangeType can be
# replaced, so the same Feature object does not mean the same plan.
FeatureKey = tuple[str, str | None, str | None, bool | None]


def _type_name(type_: Type | str | None) -> str | None:
    if type_ is None or isinstance(type_, str):
        return type_
    return type_.name


def feature_keys(features: list[Feature]) -> tuple[FeatureKey, ...]:
    """Name, range, element type and multipleReferencesAllowed of each feature."""
    return tuple(
        (
            feature.name,
            _type_name(feature.rangeType),
            _type_name(feature.elementType),
            feature.multipleReferencesAllowed,
        )
        for feature in features
    )


_plans: dict[int, TypePlan] = {}  # id(type) -> plan; entries leave with their type


def type_plan(ts: TypeSystem, type_: Type) -> TypePlan:
    """The cached plan of ``type_`` (a type of ``ts``); remade when its features change."""
    key = id(type_)
    plan = _plans.get(key)
    if plan is not None and plan.made_from(type_.all_features) and plan.type_ref() is type_:
        return plan
    plan = _make_plan(ts, type_)
    if key not in _plans:
        weakref.finalize(type_, _plans.pop, key, None)
    _plans[key] = plan
    return plan


def _make_plan(ts: TypeSystem, type_: Type) -> TypePlan:
    name = type_.name if "." in type_.name else f"uima.noNamespace.{type_.name}"
    parts = name.split(".")
    namespace = "http:///" + "/".join(parts[:-1]) + ".ecore"
    raw_prefix, local_name = parts[-2], parts[-1]
    features = type_.all_features
    is_array = type_.supertype is not None and type_.supertype.name == TYPE_NAME_ARRAY_BASE
    is_fs_array_type = type_.name == TYPE_NAME_FS_ARRAY

    unsupported = None
    if not all(_PLAIN_NAME.match(part) for part in parts):
        unsupported = f"type name {type_.name!r} is not made of plain XML names"
    elif raw_prefix.lower().startswith("xml"):
        unsupported = f"namespace prefix {raw_prefix!r} is reserved by XML"
    elif is_array and not is_fs_array_type:
        unsupported = f"arrays of type {type_.name}"
    elif type_.name == TYPE_NAME_SOFA:
        unsupported = "a Sofa as a feature value"
    elif ts.is_instance_of(type_, TYPE_NAME_LIST_BASE):
        unsupported = f"lists ({type_.name})"

    attributes: list[tuple[str, str, str]] = []
    follow: list[tuple[str, str]] = []
    if not is_array:
        is_annotation = ts.is_instance_of(type_.name, TYPE_NAME_ANNOTATION)
        for feature in features:
            kind = _follow_kind(ts, feature)
            if kind is not None:
                follow.append((feature.name, kind))
            if feature.name in ("xmiID", "type"):
                continue
            xml_name = feature.name[:-1] if feature._has_reserved_name else feature.name
            if not _PLAIN_NAME.match(xml_name) or xml_name.lower().startswith("xml"):
                unsupported = f"feature name {xml_name!r} is not a plain XML name"
            kind = _write_kind(ts, feature, xml_name)
            if is_annotation and xml_name in ("begin", "end"):
                kind = _OFFSET if kind == _STRING else _UNSUPPORTED
            attributes.append((feature.name, xml_name, kind))

    references: Callable[..., Callable[[Any], None]] | None
    if is_fs_array_type:
        references = _fs_array_references
        writer_factory = _fs_array_writer
    else:
        references = _compile_references(type_.name, follow)
        writer_factory = _compile_writer(type_.name, attributes)
    return TypePlan(
        type_ref=weakref.ref(type_),
        feature_keys=feature_keys(features),
        namespace=namespace,
        raw_prefix=raw_prefix,
        local_name=local_name,
        unsupported=unsupported,
        attributes=tuple(attributes),
        references=references,
        writer_factory=writer_factory,
    )


def _follow_kind(ts: TypeSystem, feature: Feature) -> str | None:
    """How ``Cas._find_all_fs`` follows the feature (None: not at all)."""
    range_type = feature.rangeType
    if feature.name == "sofa" or ts.is_primitive(range_type):
        return None
    if not feature.multipleReferencesAllowed and (
        ts.is_array(range_type) or ts.is_list(range_type)
    ):
        return _FS_ARRAY if range_type.name == TYPE_NAME_FS_ARRAY else _UNSUPPORTED
    return _REF


def _write_kind(ts: TypeSystem, feature: Feature, xml_name: str) -> str:
    """How ``CasXmiSerializer._serialize_feature_structure`` writes the feature."""
    range_type = feature.rangeType
    inline = not feature.multipleReferencesAllowed
    if inline and (
        ts.is_instance_of(range_type, TYPE_NAME_STRING_ARRAY)
        or ts.is_instance_of(range_type, TYPE_NAME_STRING_LIST)
        or ts.is_primitive_array(range_type)
        or ts.is_primitive_list(range_type)
    ):
        return _UNSUPPORTED
    if inline and range_type.name == TYPE_NAME_FS_ARRAY:
        return _FS_ARRAY
    if inline and range_type.name == TYPE_NAME_FS_LIST:
        return _UNSUPPORTED
    if xml_name == "sofa":
        return _REF
    if range_type.name == TYPE_NAME_BOOLEAN:
        return _BOOLEAN
    if range_type.name in (TYPE_NAME_DOUBLE, TYPE_NAME_FLOAT):
        return _FLOAT
    if ts.is_primitive(range_type):
        return _STRING
    return _REF


# --------------------------------------------------------------------------- compiled code

# How begin/end are converted on one sofa: (mode, data, cassis's converter method).
_KEEP, _LOOKUP, _WITHIN_BMP, _CALL = 0, 1, 2, 3


def _get(attribute: str) -> str:
    """Python expression reading a feature as cassis does (``fs[name]``: None if absent)."""
    if attribute.isidentifier() and not keyword.iskeyword(attribute):
        # A missing slot raises AttributeError here: the caller then falls back to cassis.
        return f"fs.{attribute}"
    return f"getattr(fs, {attribute!r}, None)"


def _compile(source: str, name: str) -> Callable[..., Any]:
    namespace: dict[str, Any] = {
        "Unsupported": XmiFastPathUnsupported,
        "_format_float": _format_float,
    }
    exec(compile(source, f"<xmi plan {name}>", "exec"), namespace)  # noqa: S102 - generated above
    return namespace["generated"]


def _compile_references(
    type_name: str, follow: list[tuple[str, str]]
) -> Callable[..., Callable[[Any], None]] | None:
    """A factory of ``fs -> None`` that calls ``visit`` on each reference not yet
    ``queued``, in the order ``_find_all_fs`` queues them (None: no references)."""
    if not follow:
        return None
    lines = ["def generated(queued, visit):", "    def follow(fs):"]
    for attribute, kind in follow:
        lines.append(f"        value = {_get(attribute)}")
        if kind == _REF:
            lines += [
                "        if value is not None and id(value) not in queued:",
                "            visit(value)",
            ]
        elif kind == _FS_ARRAY:
            lines += [
                "        if value is not None and value.elements:",
                "            for ref in value.elements:",
                "                if ref and id(ref) not in queued:",
                "                    visit(ref)",
            ]
        else:
            lines += [
                "        if value is not None:",
                f"            raise Unsupported('{type_name}:{attribute} holds a list or primitive array')",
            ]
    lines.append("    return follow")
    return _compile("\n".join(lines), type_name)


def _fs_array_references(queued: set[int], visit: Callable[[Any], None]) -> Callable[[Any], None]:
    def follow(fs: Any) -> None:
        if is_fs_array(fs) and fs.elements:
            for ref in fs.elements:
                if ref and id(ref) not in queued:
                    visit(ref)

    return follow


def _compile_writer(type_name: str, attributes: list[tuple[str, str, str]]) -> Callable[..., Any]:
    """A factory of ``fs -> element`` for one document (it binds the tag, caches, sofas)."""
    body: list[str] = []
    parts: list[str] = []
    if any(kind == _OFFSET for _, _, kind in attributes):
        body += [
            '        sofa = getattr(fs, "sofa", None)',
            "        if sofa is not last_sofa:",
            "            last_sofa, (convert, offsets, external) = sofa, converter_of(sofa)",
        ]
    for i, (attribute, xml_name, kind) in enumerate(attributes):
        var = f"a{i}"
        start = f' {xml_name}="'
        parts.append(f"{{{var}}}")
        body += [
            f"        value = {_get(attribute)}",
            "        if value is None:",
            f"            {var} = ''",
        ]
        if kind in (_STRING, _OFFSET):
            if kind == _OFFSET:
                body += [
                    # the usual case first: text within the BMP, offset within the text
                    f"        elif convert == {_WITHIN_BMP} and type(value) is int and 0 <= value <= offsets:",
                    f"            {var} = f'{start}{{value}}\"'",
                    "        elif convert:",
                    f"            if convert == {_LOOKUP}:",
                    "                try:",
                    "                    value = offsets[value]",
                    "                except KeyError:",
                    "                    value = external(value)",
                    "            else:",
                    "                value = external(value)",
                    f"            {var} = f'{start}{{value}}\"' if type(value) is int else f'{start}{{escape(str(value))}}\"'",
                ]
            body += [
                "        elif type(value) is str:",
                "            text = cached(value)",
                "            if text is None:",
                "                text = escape(value)",
                f"            {var} = f'{start}{{text}}\"'",
                "        elif type(value) is int:",
                f"            {var} = f'{start}{{value}}\"'",
                "        else:",
                f"            {var} = f'{start}{{escape(str(value))}}\"'",
            ]
        elif kind == _REF:
            body += ["        else:", f"            {var} = f'{start}{{value.xmiID}}\"'"]
        elif kind == _FS_ARRAY:
            body += [
                "        elif value.elements is None:",
                f"            {var} = ''",
                "        else:",
                f'            {var} = f\'{start}{{" ".join([str(e.xmiID) for e in value.elements])}}"\'',
            ]
        elif kind == _BOOLEAN:
            body += [
                "        else:",
                f"            {var} = '{start}true\"' if value else '{start}false\"'",
            ]
        elif kind == _FLOAT:
            body += [
                "        else:",
                f"            {var} = f'{start}{{escape(_format_float(value))}}\"'",
            ]
        else:
            body += [
                "        else:",
                f"            raise Unsupported('{type_name}:{attribute} holds a list or an array')",
            ]
    lines = [
        "def generated(open_tag, escape, cached, converter_of):",
        f"    last_sofa, convert, offsets, external = generated, {_KEEP}, None, None",  # not a sofa
        "    def write(fs):",
        "        nonlocal last_sofa, convert, offsets, external",
        *body,
        f"        return f'{{open_tag}}{{fs.xmiID}}\"{''.join(parts)}/>'",
        "    return write",
    ]
    return _compile("\n".join(lines), type_name)


def _fs_array_writer(open_tag: str, *_context: Any) -> Callable[[Any], str]:
    def write(fs: Any) -> str:
        elements = fs.elements
        if elements is None:
            return f'{open_tag}{fs.xmiID}"/>'
        return f'{open_tag}{fs.xmiID}" elements="{" ".join([str(e.xmiID) for e in elements])}"/>'

    return write


# --------------------------------------------------------------------------- writing


def xml_forbidden_string(cas: cassis.Cas) -> str | None:
    """Where the CAS holds a string XML 1.0 cannot carry (a control character, a lone
    surrogate), for the error that cassis gives without a place: the view, the
    annotation's type and offsets, the feature and the character; None when none."""
    for sofa in cas.sofas:
        name = sofa.sofaID
        view = cas.get_view(name)
        found = XML_INCOMPATIBLE.search(view.sofa_string or "")
        if found:
            return f"view {name}: the text has {found.group()!r} at offset {found.start()}"
        for fs in view.select_all_fs():
            for feature in fs.type.all_features:
                value = getattr(fs, feature.name, None)
                if isinstance(value, str) and (found := XML_INCOMPATIBLE.search(value)):
                    where = f" at {fs.begin}-{fs.end}" if hasattr(fs, "begin") else ""
                    return (
                        f"view {name}: {fs.type.name}{where}, feature "
                        f"{feature.name} = {value!r} holds {found.group()!r}"
                    )
    return None


def cas_to_xmi_bytes(cas: cassis.Cas) -> bytes:
    """``cas.to_xmi().encode("utf-8")``, byte for byte, written much faster.

    A CAS the fast path does not cover is written by cassis, and so is every
    CAS when the installed cassis is not one the fast path was checked against.
    """
    if not FAST_PATH:
        return cas.to_xmi().encode("utf-8")
    try:
        return fast_xmi_text(cas).encode("utf-8")
    except XmiFastPathUnsupported as reason:
        logger.debug("XMI written by cassis: %s", reason)
        return cas.to_xmi().encode("utf-8")
    except Exception as error:  # noqa: BLE001 - cassis decides: it writes the file or fails
        fast_path_error = error
    data = cas.to_xmi().encode("utf-8")  # raises cassis's own error for a broken CAS
    # A feature structure made before its type gained a feature lacks the slot:
    # cassis reads None there. Anything else is a fast-path bug worth reporting.
    log = logger.debug if isinstance(fast_path_error, AttributeError) else logger.warning
    log(
        "fast XMI writer failed where cassis did not (%s: %s); the file was written by cassis",
        type(fast_path_error).__name__,
        fast_path_error,
    )
    return data


def fast_xmi_text(cas: cassis.Cas) -> str:
    """The XMI text cassis writes (``cas.to_xmi()``).

    Raises :class:`XmiFastPathUnsupported` where the fast path does not
    reproduce cassis; :func:`cas_to_xmi_bytes` then uses cassis.
    """
    return _XmiWriter(cas).write()


class _XmiWriter:
    """One document's serialization."""

    def __init__(self, cas: cassis.Cas) -> None:
        self.cas = cas
        self.ts = cas.typesystem
        self.plans: dict[int, TypePlan] = {}  # id(type) -> plan, checked once per document
        self.escaped: dict[str, str] = {}
        self.converters: dict[int, tuple[int, Any, Any]] = {}  # id(sofa) -> _offset_converter
        self.sofas: list[Any] = []  # keeps the sofas of self.converters alive

    def plan_of(self, type_: Type) -> TypePlan:
        plan = self.plans.get(id(type_))
        if plan is None:
            # cassis follows references with the features of the type system's type of
            # that name, and writes those of the feature structure's own type.
            if self.ts._types.get(type_.name) is not type_:
                raise XmiFastPathUnsupported(f"type {type_.name} is not the CAS type system's")
            plan = type_plan(self.ts, type_)
            if plan.unsupported:
                raise XmiFastPathUnsupported(plan.unsupported)
            self.plans[id(type_)] = plan
        return plan

    def escape(self, value: str) -> str:
        escaped = self.escaped.get(value)
        if escaped is None:
            if XML_INCOMPATIBLE.search(value):
                raise XmiFastPathUnsupported("a string holds a character XML 1.0 forbids")
            escaped = value
            if _ATTR_SPECIAL.search(value):
                escaped = _ATTR_SPECIAL.sub(lambda m: _ATTR_ESCAPES[m.group()], value)
            self.escaped[value] = escaped
        return escaped

    def converter_of(self, sofa: Any) -> tuple[int, Any, Any]:
        key = id(sofa)
        if key not in self.converters:
            self.converters[key] = _offset_converter(sofa)
            self.sofas.append(sofa)
        return self.converters[key]

    def find_all_fs(self) -> list[FeatureStructure]:
        """What ``Cas._find_all_fs`` yields, sorted by xmi:id; gives ids as it does."""
        cas = self.cas
        queue: deque[Any] = deque()
        for sofa in cas.sofas:
            queue.extend(cas.get_view(sofa.sofaID).select_all_fs())
        # cassis queues a feature structure again when it meets it again before
        # processing it; only its first processing gives an id or queues anything
        # new, so queueing each once keeps the order.
        queued = {id(fs) for fs in queue}
        by_id: dict[int, Any] = {}
        followers: dict[int, Any] = {}  # id(type) -> reference follower (None: none)
        plan_of = self.plan_of
        new_id = cas._get_next_xmi_id
        popleft, append, mark = queue.popleft, queue.append, queued.add

        def visit(ref: Any) -> None:
            if not hasattr(ref, "xmiID"):  # cassis fails on it
                raise XmiFastPathUnsupported(f"a feature value is not a feature structure: {ref!r}")
            mark(id(ref))
            append(ref)

        while queue:
            fs = popleft()
            xmi_id = fs.xmiID
            if xmi_id == 0:
                continue
            if xmi_id is None:
                xmi_id = fs.xmiID = new_id()
            elif type(xmi_id) is not int:
                raise XmiFastPathUnsupported(f"xmi:id {xmi_id!r} is not an int")
            seen = by_id.get(xmi_id)
            if seen is not None:
                if seen is not fs:
                    raise XmiFastPathUnsupported(f"xmi:id {xmi_id} is used twice")
                continue
            by_id[xmi_id] = fs
            follow = followers.get(id(fs.type), plan_of)
            if follow is plan_of:
                factory = plan_of(fs.type).references
                follow = followers[id(fs.type)] = factory and factory(queued, visit)
            if follow is not None:
                follow(fs)
        return [by_id[key] for key in sorted(by_id)]

    def write(self) -> str:
        all_fs = self.find_all_fs()
        prefix_urls: dict[str, str] = {"xmi": XMI_NS, "cas": CAS_NS}  # cassis's nsmap
        url_prefixes: dict[str, str] = {}
        numbered: dict[str, int] = {}
        writers: dict[int, Callable[[Any], str]] = {}  # id(type) -> element writer
        context = (self.escape, self.escaped.get, self.converter_of)
        out: list[str] = []
        emit = out.append
        for fs in all_fs:
            write = writers.get(id(fs.type))
            if write is None:
                plan = self.plans[id(fs.type)]
                url = plan.namespace
                if url not in url_prefixes:
                    prefix = plan.raw_prefix
                    if prefix in prefix_urls:  # cassis numbers repeats per bare prefix
                        count = numbered.get(prefix, 0)
                        numbered[prefix] = count + 1
                        prefix = f"{prefix}{count}"
                        if prefix in prefix_urls:  # cassis would remap it: not reproduced
                            raise XmiFastPathUnsupported(f"namespace prefix {prefix} repeats")
                    prefix_urls[prefix] = url
                    url_prefixes[url] = prefix
                # lxml writes an element with the first prefix declared for its URL:
                # uima.cas types get "cas", not the "cas0" cassis gives them.
                shown = next(p for p, u in prefix_urls.items() if u == url)
                open_tag = f'<{shown}:{plan.local_name} xmi:id="'
                write = writers[id(fs.type)] = plan.writer_factory(open_tag, *context)
            emit(write(fs))

        for sofa in self.cas.sofas:
            emit(self.sofa_element(sofa))
        for view in self.cas.views:
            members = [fs.xmiID for fs in view.get_all_fs()]
            if all(type(m) is int for m in members):
                joined = " ".join(map(str, sorted(members)))
            else:
                joined = " ".join(sorted((str(m) for m in members), key=int))
            emit(f'<cas:View sofa="{view.sofa.xmiID}" members="{joined}"/>')
        emit(_TAIL)

        declared = {XMI_NS, CAS_NS}
        declarations = []
        for prefix, url in prefix_urls.items():
            if url not in declared:
                declared.add(url)
                declarations.append(f' xmlns:{prefix}="{url}"')
        return "".join([_HEAD, *declarations, _ROOT_END, *out])

    def sofa_element(self, sofa: Any) -> str:
        if (
            getattr(sofa, "sofaURI", None) is not None
            or getattr(sofa, "sofaArray", None) is not None
        ):
            raise XmiFastPathUnsupported("a sofa with sofaURI or sofaArray")
        escape = self.escape
        parts = [
            f'<cas:Sofa xmi:id="{escape(str(sofa.xmiID))}" sofaNum="{escape(str(sofa.sofaNum))}"',
            f' sofaID="{escape(str(sofa.sofaID))}"',
        ]
        if sofa.mimeType is not None:
            parts.append(f' mimeType="{escape(str(sofa.mimeType))}"')
        if sofa.sofaString is not None:
            parts.append(f' sofaString="{escape(str(sofa.sofaString))}"')
        parts.append("/>")
        return "".join(parts)


def _is_identity(mapping: dict[Any, Any]) -> bool:
    """cassis's map of a text without astral characters: {0: 0, 1: 1, ..., n: n}.

    One sequential pass (C speed) is cheaper than a lookup per begin and end.
    """
    numbers = range(len(mapping))
    return all(map(operator.eq, mapping, numbers)) and all(
        map(operator.eq, mapping.values(), numbers)
    )


def _offset_converter(sofa: Any) -> tuple[int, Any, Callable[[Any], Any] | None]:
    """Code point -> UTF-16 offsets for annotations on ``sofa``, as cassis converts them.

    _LOOKUP: data is the mapping; _WITHIN_BMP: offsets up to data (the text length)
    are unchanged; anything else goes through cassis's ``python_to_external``,
    which warns about, and keeps, offsets outside the text.
    """
    converter = getattr(sofa, "_offset_converter", None) if sofa is not None else None
    if converter is None:
        return _KEEP, None, None
    external = converter.python_to_external
    if not hasattr(converter, "_python_to_external"):
        return _CALL, None, external
    mapping = converter._python_to_external
    if mapping is None:
        return _KEEP, None, None  # no text: cassis keeps the offsets
    if isinstance(mapping, _Utf16Offsets) and not mapping._astral:
        return _WITHIN_BMP, mapping._length, external
    if type(mapping) is dict and _is_identity(mapping):
        return _WITHIN_BMP, len(mapping) - 1, external
    if isinstance(mapping, Mapping):
        return _LOOKUP, mapping, external
    return _CALL, None, external
