from __future__ import annotations

import pytest

from casflow.components.builtin import BUILTIN_COMPONENTS
from casflow.pipeline.component import ComponentConfig
from casflow.pipeline.registry import Registry, UnknownComponentError, registry
from casflow.typesystem import load_typesystem


@pytest.mark.parametrize("name", sorted(BUILTIN_COMPONENTS))
def test_every_builtin_loads_and_declares_known_types(name: str) -> None:
    cls = registry().get(name)
    assert cls.name == name
    assert cls.role in {"reader", "processor", "writer", "evaluator", "trainer"}
    typesystem = load_typesystem()
    requires, produces = cls.requirements(cls.Config.model_construct())
    layer_types = [t for types in getattr(cls, "layers", {}).values() for t in types]
    assert cls.role != "trainer" or layer_types, f"{name}: a trainer declares its layers"
    for type_name in (*requires, *produces, *layer_types):
        base, _, feature = type_name.partition(":")
        assert typesystem.contains_type(base), type_name
        if feature:
            assert typesystem.get_type(base).get_feature(feature) is not None, type_name
    # Its config class is declared (Processor[FooConfig]), not the contract's empty base.
    assert cls.Config is not ComponentConfig, f"{name}: declare its config class in the base"
    # Every config field documents itself (casflow components prints it).
    for field_name, info in cls.Config.model_fields.items():
        assert info.description, f"{name}: config field {field_name!r} has no description"


def test_builtin_names_are_versioned() -> None:
    for name in BUILTIN_COMPONENTS:
        assert name.rsplit(".", 1)[-1].startswith("v") and name.rsplit(".", 1)[-1][1:].isdigit(), (
            name
        )


def test_unknown_name_suggests_closest() -> None:
    with pytest.raises(UnknownComponentError) as info:
        registry().get("xmi.writr.v1")
    assert "Did you mean 'xmi.writer.v1'" in str(info.value)


def test_duplicate_registration_is_refused() -> None:
    reg = Registry()
    reg.register("a.v1", "casflow.components.formats.xmi.writer:XmiWriter")
    with pytest.raises(ValueError, match="registered twice"):
        reg.register("a.v1", "casflow.components.formats.json.writer:JsonWriter")


def test_name_mismatch_is_a_load_error() -> None:
    reg = Registry()
    reg.register("other.v1", "casflow.components.formats.xmi.writer:XmiWriter")
    with pytest.raises(ImportError, match="declares name 'xmi.writer.v1'"):
        reg.get("other.v1")
