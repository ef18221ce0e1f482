"""Knowtator XML annotation files (CRAFT's concept and structure annotations): the one reader.

A file holds ``<annotation>`` elements (one or more ``<span start end>`` over the
document text, which may be discontinuous, the ``<spannedText>``, and a
``<mention id>``) and ``<classMention>`` elements giving each mention's class
(``<mentionClass id>`` and label) and its slots; string slots are
``<stringSlotMention>`` elements the class mention points to with
``<hasSlotMention>``. Parsed with lxml, entities not resolved and no network.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lxml import etree

from casflow.components.formats.common import FormatError


@dataclass
class KnowtatorAnnotation:
    """One annotation: its spans (sorted), spanned text, class and string slots."""

    spans: list[tuple[int, int]]
    spanned_text: str | None
    class_id: str
    class_label: str
    slots: dict[str, str] = field(default_factory=dict)
    #: Line of the ``<annotation>`` element in its file (for messages).
    line: int | None = field(default=None, compare=False)

    @property
    def contiguous(self) -> bool:
        return len(self.spans) == 1


_XML_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True)


def read_knowtator(path: str | Path) -> list[KnowtatorAnnotation]:
    """Annotations of a Knowtator XML file with their class and string slots, in file order.

    Raises :class:`FormatError` (file and line) for unreadable XML, an annotation
    whose mention has no class, or a span without integer offsets.
    """
    return read_knowtator_file(path)[1]


def read_knowtator_file(path: str | Path) -> tuple[str | None, list[KnowtatorAnnotation]]:
    """The ``textSource`` of a Knowtator XML file (the text file it annotates, e.g.
    ``11532192.txt``; None when not given) and its annotations (:func:`read_knowtator`)."""
    source = str(path)
    try:
        root = etree.parse(source, _XML_PARSER).getroot()
    except (OSError, etree.XMLSyntaxError) as exc:
        raise FormatError(f"cannot read Knowtator XML: {exc}", source=source) from exc
    string_slots = {
        slot.get("id"): (
            slot.find("mentionSlot").get("id") if slot.find("mentionSlot") is not None else "",
            slot.find("stringSlotMentionValue").get("value")
            if slot.find("stringSlotMentionValue") is not None
            else "",
        )
        for slot in root.iter("stringSlotMention")
    }
    classes: dict[str, tuple[str, str, dict[str, str]]] = {}
    for mention in root.iter("classMention"):
        mention_class = mention.find("mentionClass")
        if mention_class is None:
            raise FormatError(
                f"classMention {mention.get('id')} has no mentionClass",
                source=source,
                line=mention.sourceline,
            )
        slots = {}
        for has_slot in mention.iter("hasSlotMention"):
            if has_slot.get("id") in string_slots:
                name, value = string_slots[has_slot.get("id")]
                slots[name] = value
        classes[mention.get("id")] = (
            mention_class.get("id") or "",
            (mention_class.text or "").strip(),
            slots,
        )
    annotations = []
    for annotation in root.iter("annotation"):
        mention = annotation.find("mention")
        mention_id = mention.get("id") if mention is not None else None
        if mention_id not in classes:
            raise FormatError(
                f"annotation refers to mention {mention_id!r}, which has no classMention",
                source=source,
                line=annotation.sourceline,
            )
        try:
            spans = sorted(
                (int(span.get("start")), int(span.get("end")))
                for span in annotation.findall("span")
            )
        except (TypeError, ValueError) as exc:
            raise FormatError(
                "span without integer start/end", source=source, line=annotation.sourceline
            ) from exc
        if not spans:
            raise FormatError("annotation has no span", source=source, line=annotation.sourceline)
        class_id, class_label, slots = classes[mention_id]
        annotations.append(
            KnowtatorAnnotation(
                spans,
                annotation.findtext("spannedText"),
                class_id,
                class_label,
                slots,
                annotation.sourceline,
            )
        )
    return root.get("textSource"), annotations
