"""Copy annotations of chosen types from one view into another.

The typical use is document structure: a gold reader puts titles, headings and
paragraphs into view ``gold``, and a system chain in view ``system`` should see
the same structure (as it would from NXML markup) without seeing the gold
linguistic layers.
"""

from __future__ import annotations

from typing import ClassVar

import cassis
from pydantic import Field

from casflow.pipeline.component import ComponentConfig, Processor
from casflow.typesystem import BLOCK_STRUCTURE_TYPES, SECTION


class CopyAnnotationsConfig(ComponentConfig):
    from_view: str = Field(description="View to copy from.")
    types: list[str] = Field(
        default_factory=lambda: [*BLOCK_STRUCTURE_TYPES, SECTION],
        description="Full type names to copy (default: title, heading, caption, paragraph, section). "
        "Features that reference other feature structures are not copied.",
    )


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
        copies = []
        for type_name in self.config.types:
            type_ = ts.get_type(type_name)
            names = [
                f.name
                for f in type_.all_features
                if f.rangeType.name in self._PRIMITIVES and f.name not in {"sofa", "begin", "end"}
            ]
            for fs in source.select(type_name):
                if fs.type.name != type_name:
                    continue  # subtypes are copied when their own name is listed
                values = {n: fs.get(n) for n in names if fs.get(n) is not None}
                copies.append(type_(begin=fs.begin, end=fs.end, **values))
        view.add_all(copies)
