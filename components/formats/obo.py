"""OBO flat-file ontologies (``.obo``, or a ``.zip`` holding one): the one parser.

A file is a header and stanzas (``[Term]``, ``[Typedef]``, ...), each a list of
``tag: value`` lines. :func:`read_obo` keeps every stanza with its lines in file
order; the properties casflow uses (id, name, EXACT synonyms, is_a parents, the
genus of an ``intersection_of`` definition, obsolescence, the definition text)
are read from those lines, so the CRAFT reader (SO classes), the CRF lexicons
(UBERON and CL names) and the word-cluster text (definitions) see the same file
the same way.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from casflow.components.formats.common import FormatError

_QUOTED = re.compile(r'^"((?:[^"\\]|\\.)*)"\s*(.*)$')


@dataclass
class OboStanza:
    """One stanza: its kind (``Term``, ``Typedef``...) and its ``(tag, value)`` lines."""

    kind: str
    tags: list[tuple[str, str]] = field(default_factory=list)
    line: int = 0

    def values(self, tag: str) -> list[str]:
        return [value for t, value in self.tags if t == tag]

    @property
    def id(self) -> str | None:
        ids = self.values("id")
        return ids[-1] if ids else None

    @property
    def name(self) -> str | None:
        names = self.values("name")
        return names[0] if names else None

    @property
    def obsolete(self) -> bool:
        return any(value.startswith("true") for value in self.values("is_obsolete"))

    @property
    def is_a(self) -> list[str]:
        """Parent ids of the ``is_a`` lines (trailing ``! comment`` dropped)."""
        return [value.split(" ", 1)[0] for value in self.values("is_a")]

    @property
    def genus(self) -> list[str]:
        """The genus of an equivalence definition: ``intersection_of`` lines naming one
        class (not a relation and a class)."""
        return [
            value.split(" ", 1)[0]
            for value in self.values("intersection_of")
            if " " not in value.split(" !")[0]
        ]

    @property
    def parents(self) -> list[str]:
        """is_a parents and intersection genera, in line order."""
        found = []
        for tag, value in self.tags:
            genus = tag == "intersection_of" and " " not in value.split(" !")[0]
            if tag == "is_a" or genus:
                found.append(value.split(" ", 1)[0])
        return found

    @property
    def definitions(self) -> list[str]:
        """The quoted text of every ``def`` line, as written (escapes kept)."""
        return [m.group(1) for v in self.values("def") if (m := _QUOTED.match(v))]

    def synonyms(self, scope: str | None = None) -> list[str]:
        """Synonym texts (``\\"`` unescaped), only those of ``scope`` (EXACT...) when given."""
        found = []
        for value in self.values("synonym"):
            match = _QUOTED.match(value)
            if match and (scope is None or match.group(2).startswith(scope)):
                found.append(match.group(1).replace('\\"', '"'))
        return found

    @property
    def exact_names(self) -> list[str]:
        """The name and EXACT synonyms, in line order."""
        found = []
        for tag, value in self.tags:
            if tag == "name":
                found.append(value)
            elif tag == "synonym":
                match = _QUOTED.match(value)
                if match and match.group(2).startswith("EXACT"):
                    found.append(match.group(1).replace('\\"', '"'))
        return found


def obo_lines(path: str | Path) -> Iterator[str]:
    """The lines of an OBO file, or of the ``.obo`` inside a ``.zip``."""
    path = Path(path)
    if path.suffix == ".zip":
        with zipfile.ZipFile(path) as archive:
            member = next((n for n in archive.namelist() if n.endswith(".obo")), None)
            if member is None:
                raise FormatError("the archive holds no .obo file", source=str(path))
            with archive.open(member) as raw:
                yield from io.TextIOWrapper(raw, encoding="utf-8")
    else:
        with path.open(encoding="utf-8") as handle:
            yield from handle


def parse_obo(lines: Iterable[str]) -> list[OboStanza]:
    """Stanzas of OBO ``lines`` (the header is not a stanza)."""
    stanzas: list[OboStanza] = []
    current: OboStanza | None = None
    for number, line in enumerate(lines, 1):
        line = line.rstrip("\r\n")
        if line.startswith("["):
            current = OboStanza(line.strip()[1:-1], [], number)
            stanzas.append(current)
            continue
        if current is None or not line.strip() or line.startswith("!"):
            continue
        tag, colon, value = line.partition(":")
        if colon:
            current.tags.append((tag.strip(), value[1:] if value.startswith(" ") else value))
    return stanzas


def read_obo(path: str | Path) -> list[OboStanza]:
    """Every stanza of the OBO file at ``path`` (``.obo`` or ``.obo.zip``)."""
    try:
        return parse_obo(obo_lines(path))
    except (OSError, zipfile.BadZipFile, UnicodeDecodeError) as exc:
        raise FormatError(f"cannot read the OBO file: {exc}", source=str(path)) from exc


def terms(stanzas: Iterable[OboStanza], id_prefix: str = "") -> Iterator[OboStanza]:
    """Non-obsolete ``[Term]`` stanzas whose id starts with ``id_prefix``."""
    for stanza in stanzas:
        term_id = stanza.id
        if (
            stanza.kind == "Term"
            and term_id
            and term_id.startswith(id_prefix)
            and not stanza.obsolete
        ):
            yield stanza


def is_a_parents(stanzas: Iterable[OboStanza]) -> dict[str, set[str]]:
    """``child id -> is_a parent ids`` of the non-obsolete terms."""
    return {t.id: set(t.is_a) for t in terms(stanzas) if t.id}
