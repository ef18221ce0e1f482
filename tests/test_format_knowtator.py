"""The one Knowtator XML reader (formats/knowtator.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from casflow.components.formats.common import FormatError
from casflow.components.formats.knowtator import read_knowtator

XML = """<?xml version="1.0" encoding="UTF-8"?>
<annotations textSource="1.txt">
  <annotation>
    <mention id="m1" />
    <span start="10" end="15" />
    <spannedText>liver &amp; gut</spannedText>
  </annotation>
  <annotation>
    <mention id="m2" />
    <span start="30" end="34" />
    <span start="20" end="25" />
    <spannedText>left ... lobe</spannedText>
  </annotation>
  <annotation>
    <mention id="m3" />
    <span start="0" end="5" />
    <spannedText>Title</spannedText>
  </annotation>
  <classMention id="m1">
    <mentionClass id="UBERON:0002107">liver</mentionClass>
  </classMention>
  <classMention id="m2">
    <mentionClass id="UBERON:0001113">lobe of liver</mentionClass>
  </classMention>
  <classMention id="m3">
    <mentionClass id="section">section</mentionClass>
    <hasSlotMention id="s1" />
  </classMention>
  <stringSlotMention id="s1">
    <mentionSlot id="section name" />
    <stringSlotMentionValue value="title" />
  </stringSlotMention>
</annotations>
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "1.txt.knowtator.xml"
    path.write_text(text, encoding="utf-8")
    return path


def test_annotations_in_file_order_with_classes_slots_and_sorted_spans(tmp_path: Path) -> None:
    first, second, third = read_knowtator(write(tmp_path, XML))
    assert (first.spans, first.spanned_text, first.class_id, first.class_label) == (
        [(10, 15)],
        "liver & gut",  # entities decoded
        "UBERON:0002107",
        "liver",
    )
    assert first.contiguous and not second.contiguous
    assert second.spans == [(20, 25), (30, 34)]
    assert third.slots == {"section name": "title"} and first.slots == {}


def test_annotation_without_class_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, XML.replace('<classMention id="m2">', '<classMention id="other">'))
    with pytest.raises(FormatError, match=r"knowtator\.xml:8: annotation refers to mention 'm2'"):
        read_knowtator(path)


def test_bad_span_and_bad_xml(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="span without integer start/end"):
        read_knowtator(write(tmp_path, XML.replace('end="15"', 'end="x"')))
    with pytest.raises(FormatError, match="cannot read Knowtator XML"):
        read_knowtator(write(tmp_path, "<annotations><annotation>"))


def test_entities_are_not_resolved(tmp_path: Path) -> None:
    evil = XML.replace(
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<?xml version="1.0"?><!DOCTYPE a [<!ENTITY x SYSTEM "file:///etc/passwd">]>',
    ).replace("liver &amp; gut", "&x;")
    annotations = read_knowtator(write(tmp_path, evil))
    assert "root:" not in (annotations[0].spanned_text or "")
