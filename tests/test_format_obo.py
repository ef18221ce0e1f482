"""The one OBO parser (formats/obo.py)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from casflow.components.formats.common import FormatError
from casflow.components.formats.obo import is_a_parents, parse_obo, read_obo, terms

MINI = (
    "format-version: 1.2\n"
    "! a comment\n"
    "\n"
    "[Term]\n"
    "id: U:1\n"
    "name: organ\n"
    'def: "A \\"part\\" of a body." [CARO:1]\n'
    "\n"
    "[Term]\n"
    "id: U:3\n"
    "name: liver\n"
    'synonym: "hepar" EXACT []\n'
    'synonym: "jecur" RELATED []\n'
    'synonym: "the \\"liver\\"" EXACT []\n'
    "is_a: U:1 ! organ\n"
    "\n"
    "[Term]\n"
    "id: U:4\n"
    "name: liver lobe\n"
    "intersection_of: U:9 ! lobe\n"
    "intersection_of: part_of U:3 ! liver\n"
    "\n"
    "[Term]\n"
    "id: U:5\n"
    "name: old organ\n"
    "is_a: U:1\n"
    "is_obsolete: true\n"
    "\n"
    "[Term]\n"
    "id: GO:1\n"
    "name: not anatomy\n"
    "\n"
    "[Typedef]\n"
    "id: part_of\n"
    "name: part of\n"
    'def: "A relation." []\n'
)


def test_stanzas_keep_their_lines_and_kinds() -> None:
    stanzas = parse_obo(MINI.splitlines(keepends=True))
    assert [s.kind for s in stanzas] == ["Term"] * 5 + ["Typedef"]
    assert [s.id for s in stanzas] == ["U:1", "U:3", "U:4", "U:5", "GO:1", "part_of"]
    assert stanzas[0].line == 4


def test_names_synonyms_parents_and_definitions() -> None:
    liver, lobe = parse_obo(MINI.splitlines())[1:3]
    assert liver.name == "liver"
    assert liver.exact_names == ["liver", "hepar", 'the "liver"']
    assert liver.synonyms() == ["hepar", "jecur", 'the "liver"']
    assert liver.synonyms("RELATED") == ["jecur"]
    assert liver.is_a == ["U:1"]
    # the genus of the equivalence, not the part_of differentia
    assert lobe.genus == ["U:9"] and lobe.parents == ["U:9"] and lobe.is_a == []
    organ = parse_obo(MINI.splitlines())[0]
    assert organ.definitions == ['A \\"part\\" of a body.']  # escapes kept as written


def test_terms_skip_obsolete_typedefs_and_other_prefixes() -> None:
    stanzas = parse_obo(MINI.splitlines())
    assert [t.id for t in terms(stanzas, "U:")] == ["U:1", "U:3", "U:4"]
    assert [t.id for t in terms(stanzas)] == ["U:1", "U:3", "U:4", "GO:1"]
    assert is_a_parents(stanzas) == {"U:1": set(), "U:3": {"U:1"}, "U:4": set(), "GO:1": set()}


def test_reads_plain_and_zipped_files(tmp_path: Path) -> None:
    plain = tmp_path / "mini.obo"
    plain.write_text(MINI, encoding="utf-8")
    zipped = tmp_path / "mini.obo.zip"
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr("inner/mini.obo", MINI)
    assert [s.tags for s in read_obo(plain)] == [s.tags for s in read_obo(zipped)]


def test_errors_name_the_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.zip"
    with zipfile.ZipFile(empty, "w") as archive:
        archive.writestr("readme.txt", "no ontology")
    with pytest.raises(FormatError, match=r"empty\.zip: the archive holds no \.obo file"):
        read_obo(empty)
    with pytest.raises(FormatError, match=r"missing\.obo: cannot read the OBO file"):
        read_obo(tmp_path / "missing.obo")
