"""Copy annotations of chosen types from one view into another.

The typical use is document structure: a gold reader puts titles, headings and
paragraphs into view ``gold``, and a system chain in view ``system`` should see
the same structure (as it would from NXML markup) without seeing the gold
linguistic layers.
"""

from __future__ import annotations

from typing import Any, ClassVar

import cassis
from pydantic import Field, field_validator

from casflow.pipeline.component import ComponentConfig, Processor
from casflow.typesystem import BLOCK_STRUCTURE_TYPES, SECTION, resolve_type_name


class CopyAnnotationsConfig(ComponentConfig):
    from_view: str = Field(description="View to copy from.")
    types: list[str] = Field(
        default_factory=lambda: [*BLOCK_STRUCTURE_TYPES, SECTION],
        description="Type names to copy, full or short such as Token (default: title, "
        "heading, caption, paragraph, section). "
        "A feature that references another annotation (Token.pos, Token.lemma, "
        "Constituent.parent) is copied when that annotation is copied too, pointing at "
        "its copy, and an array of annotations (Constituent.children) when all of them "
        "are; references to annotations not copied are left empty. A subtype is copied "
        "only when its own name is listed (or with 'subtypes').",
    )
    subtypes: bool = Field(
        False,
        description="Also copy the annotations of the listed types' subtypes, each as its "
        "own type: e.g. DKPro Core's POS_NOUN under POS, in XMI read with the type system "
        "it came with (whose subtypes cannot be listed by name before the run).",
    )

    @field_validator("types")
    @classmethod
    def _full_names(cls, types: list[str]) -> list[str]:
        # Short names as other components take them; an unknown one is left as written
        # for the workflow validator to name.
        return [resolve_type_name(t) for t in types]


class CopyAnnotations(Processor[CopyAnnotationsConfig]):
    name = "view.copy.v1"
    description = (
        "Copies annotations of chosen types (default: document structure) from another view."
    )
    _PRIMITIVES: ClassVar[set[str]] = {
        "uima.cas.String",
        "uima.cas.Integer",
        "uima.cas.Boolean",
        "uima.cas.Double",
        "uima.cas.Float",
        "uima.cas.Long",
        "uima.cas.Short",
        "uima.cas.Byte",
    }

    @classmethod
    def requirements(cls, config: CopyAnnotationsConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
        return (), tuple(config.types)

    @classmethod
    def views_read(cls, config: CopyAnnotationsConfig) -> dict[str, tuple[str, ...]]:
        # Types missing from the source view are simply not copied: nothing is required.
        return {config.from_view: ()}

    def process(self, view: cassis.Cas) -> None:
        source = view.get_view(self.config.from_view)
        if source.sofa_string != view.sofa_string:
            raise ValueError(
                f"views {self.config.from_view!r} and the target view have different texts; "
                "annotations can only be copied between views of the same text"
            )
        ts = view.typesystem
        copies: dict[int, tuple[Any, Any]] = {}  # id(source) -> (source, copy)
        primitive_features: dict[str, list[str]] = {}
        for type_name in self.config.types:
            for fs in source.select(type_name):
                if id(fs) in copies or (fs.type.name != type_name and not self.config.subtypes):
                    continue  # a subtype is copied when its own name is listed
                type_ = ts.get_type(fs.type.name)
                names = primitive_features.get(type_.name)
                if names is None:
                    names = primitive_features[type_.name] = [
                        f.name
                        for f in type_.all_features
                        if f.rangeType.name in self._PRIMITIVES
                        and f.name not in {"sofa", "begin", "end"}
                    ]
                values = {n: fs.get(n) for n in names if fs.get(n) is not None}
                copies[id(fs)] = (fs, type_(begin=fs.begin, end=fs.end, **values))
        # References are re-pointed only within what is copied, so the copy never points
        # into the source view (XMI cannot hold a reference across views, and a chain on
        # the target view must not see the source's other layers through it). Token.pos
        # is what a parser given the gold tags needs, and what a combiner votes on.
        fs_array = ts.get_type("uima.cas.FSArray")
        for fs, copy in copies.values():
            for feature in fs.type.all_features:
                if feature.rangeType.name in self._PRIMITIVES or feature.name == "sofa":
                    continue
                target = fs.get(feature.name)
                if target is None:
                    continue
                if id(target) in copies:
                    copy.set(feature.name, copies[id(target)][1])
                elif feature.rangeType.name == "uima.cas.FSArray":
                    # e.g. Constituent.children: a new array of the copies, when every
                    # element was copied (a tree without some of its nodes is no tree)
                    elements = list(target.elements or [])
                    if all(id(e) in copies for e in elements):
                        copy.set(
                            feature.name,
                            fs_array(elements=[copies[id(e)][1] for e in elements]),
                        )
        view.add_all([copy for _, copy in copies.values()])
