"""Loading XMI whose UTF-16 offsets may not fall between characters.

XMI counts offsets in UTF-16 units, where a character beyond the BMP (🧬, 𝛼) is two
units, a surrogate pair. A Java tool can put an offset between the two halves
(OpenNLP's tokenizer splits 🧬 into two tokens). cassis then cannot convert the
offset to a code point: it only warns ("Not mapping external offset") and keeps the
UTF-16 number, which counts in the wrong unit, so the annotation silently covers
other text, or ends before it begins, and is written back that way.

:func:`load_xmi` loads with cassis and, only when cassis warned, reads the offsets the
XMI holds again to name the annotations cassis could not convert.
:func:`snap_to_characters` widens those inside a pair to whole characters.
"""

from __future__ import annotations

import io
import threading
import warnings
from dataclasses import dataclass
from typing import IO, Any

import cassis
from lxml import etree

from casflow.cas import cassis_version
from casflow.cas.sofa import code_points_of_utf16

# What cassis 0.12 warns when a UTF-16 offset has no code point (Utf16CodepointOffsetConverter).
_CASSIS_OFFSET_WARNING = "Not mapping external offset"
_CONVERTER = getattr(cassis.cas, "Utf16CodepointOffsetConverter", None)
_XMI_ID = "{http://www.omg.org/XMI}id"


@dataclass(frozen=True)
class OffsetProblem:
    """An annotation whose XMI offsets are not between two characters of its view."""

    view: str
    annotation: Any
    begin: int  # UTF-16, as the XMI holds it
    end: int
    inside_pair: bool  # False: an offset lies outside the text

    def describe(self) -> str:
        where = (
            "inside a surrogate pair (between the two UTF-16 halves of one character)"
            if self.inside_pair
            else "outside the text"
        )
        return (
            f"{self.annotation.type.name} at UTF-16 offsets [{self.begin},{self.end}) in view "
            f"{self.view!r}: an offset falls {where}"
        )


class _Utf16Text:
    """UTF-16 positions of one text: which split a character, and their code points."""

    def __init__(self, text: str) -> None:
        self.code_point = code_points_of_utf16(text)  # valid offset -> code point
        self.length = len(text.encode("utf-16-le")) // 2

    def inside_pair(self, offset: int) -> bool:
        return 0 <= offset <= self.length and offset not in self.code_point


# cassis warns ("Not mapping external offset") and keeps the UTF-16 number when an
# offset is no character boundary. Catching that warning took catch_warnings, which
# swaps the warnings hook and filters of the whole process (before Python 3.14): a
# warning another thread raised meanwhile (a Dask worker runs documents side by side)
# was caught here and said again as this document's. Instead, the converter notes such
# offsets in a list of the loading thread's own; other threads and other callers of
# cassis get its warning as before.
# Only with a cassis release the fast paths were checked against (cassis_version);
# with another, the warning is caught as before.
_loading = threading.local()
_external_to_python = (
    getattr(_CONVERTER, "external_to_python", None) if cassis_version.FAST_PATHS else None
)


def _noting_external_to_python(self: Any, idx: int | None) -> int | None:
    unmapped: list[int] | None = getattr(_loading, "unmapped", None)
    table = getattr(self, "_external_to_python", None)
    if unmapped is None or idx is None or table is None or idx in table:
        assert _external_to_python is not None
        return _external_to_python(self, idx)
    unmapped.append(idx)
    return idx  # what cassis keeps after its warning


if _external_to_python is not None:
    _CONVERTER.external_to_python = _noting_external_to_python  # type: ignore[union-attr]


def load_xmi(
    source: bytes | IO[bytes], typesystem: cassis.TypeSystem, *, lenient: bool = False
) -> tuple[cassis.Cas, list[OffsetProblem]]:
    """The CAS cassis loads from ``source``, and the annotations whose offsets it could
    not convert (their begin/end are then cassis's unconverted UTF-16 numbers)."""
    data = source if isinstance(source, bytes) else source.read()
    if _external_to_python is None:
        return _load_catching_the_warning(data, typesystem, lenient)
    before = getattr(_loading, "unmapped", None)
    unmapped: list[int] = []
    _loading.unmapped = unmapped
    try:
        cas = cassis.load_cas_from_xmi(io.BytesIO(data), typesystem=typesystem, lenient=lenient)
    finally:
        _loading.unmapped = before
    if not unmapped:
        return cas, []
    return cas, _offset_problems(cas, data)


def _load_catching_the_warning(
    data: bytes, typesystem: cassis.TypeSystem, lenient: bool
) -> tuple[cassis.Cas, list[OffsetProblem]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cas = cassis.load_cas_from_xmi(io.BytesIO(data), typesystem=typesystem, lenient=lenient)
    offsets_unmapped = False
    for w in caught:
        if _CASSIS_OFFSET_WARNING in str(w.message):
            offsets_unmapped = True
        else:  # not ours to judge: pass it on as if it had not been caught
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
    return cas, _offset_problems(cas, data) if offsets_unmapped else []


def _offset_problems(cas: cassis.Cas, data: bytes) -> list[OffsetProblem]:
    # cassis kept no trace of which offsets failed: read them from the XMI again (only
    # on this rare path, so a clean file is parsed once).
    raw: dict[int, tuple[int, int]] = {}
    for _, elem in etree.iterparse(io.BytesIO(data), events=("end",), huge_tree=True):
        begin, end, xmi_id = elem.get("begin"), elem.get("end"), elem.get(_XMI_ID)
        if begin is not None and end is not None and xmi_id is not None:
            raw[int(xmi_id)] = (int(begin), int(end))
        elem.clear()
    problems = []
    for sofa in cas.sofas:
        view = cas.get_view(sofa.sofaID)
        if view.sofa_string is None:
            continue
        text = _Utf16Text(view.sofa_string)
        for annotation in view.select_all_annotations():
            offsets = raw.get(annotation.xmiID)
            if offsets is None or all(o in text.code_point for o in offsets):
                continue
            inside = all(0 <= o <= text.length for o in offsets)
            problems.append(OffsetProblem(sofa.sofaID, annotation, *offsets, inside_pair=inside))
    return problems


def snap_to_characters(cas: cassis.Cas, problems: list[OffsetProblem]) -> None:
    """Widen the annotations of ``problems`` (all ``inside_pair``) to whole characters:
    begin down to the start of its pair, end up to the end of its pair, so a token
    holding half a character holds the whole character. An empty annotation inside a
    pair stays empty, at the pair's start."""
    texts: dict[str, _Utf16Text] = {}
    for problem in problems:
        if not problem.inside_pair:
            raise ValueError(f"cannot snap {problem.describe()}")
        view = cas.get_view(problem.view)
        text = texts.get(problem.view) or texts.setdefault(
            problem.view, _Utf16Text(view.sofa_string)
        )
        begin, end = problem.begin, problem.end
        if text.inside_pair(begin):
            begin -= 1
        if text.inside_pair(end):
            end = end - 1 if end == problem.begin else end + 1
        annotation = problem.annotation
        # The view's index is sorted by offsets: take it out while they change.
        view.remove(annotation)
        annotation.begin, annotation.end = text.code_point[begin], text.code_point[end]
        view.add(annotation, keep_id=True)
