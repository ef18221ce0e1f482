from __future__ import annotations

import cassis
import pytest
from pydantic import BaseModel, ConfigDict, Field

from casflow.components.builtin import BUILTIN_COMPONENTS
from casflow.pipeline.component import ComponentConfig, Processor
from casflow.pipeline.registry import (
    ComponentLoadError,
    Registry,
    UnknownComponentError,
    registry,
)
from casflow.typesystem import TOKEN, load_typesystem


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


# A plug-in's mistakes, each found when its name is first asked for: one message naming
# the component, where it comes from and what to do (not a traceback in a worker, nor
# an option silently ignored). The classes live in this module, registered by path as
# an entry point registers them.
class _Config(ComponentConfig):
    x: int = Field(1, description="An option.")


class _Tagger(Processor[_Config]):
    name = "audit.tagger.v1"

    def process(self, view: cassis.Cas) -> None:
        pass


class Unversioned(_Tagger):
    name = "audit.tagger"


class Abstract(Processor[_Config]):
    name = "audit.abstract.v1"


class OwnRole(_Tagger):
    name = "audit.role.v1"
    role = "tagger"  # type: ignore[assignment]


class _LaxConfig(ComponentConfig):
    model_config = ConfigDict(extra="allow")
    x: int = Field(1, description="An option.")


class Lax(Processor[_LaxConfig]):
    name = "audit.lax.v1"

    def process(self, view: cassis.Cas) -> None:
        pass


class RequiresAString(_Tagger):
    name = "audit.string.v1"
    requires = TOKEN  # type: ignore[assignment]


class Cased(_Tagger):
    name = "Audit.gene-list.v1"


class NotAComponent:
    name = "audit.plain.v1"


@pytest.mark.parametrize(
    ("name", "attribute", "expected"),
    [
        ("audit.tagger", "Unversioned", "has no version suffix: a component name is "
         "'<tool>.<what>.v<N>' in lower case, letters, digits and '_' (e.g. "
         "'audit.tagger.v1')"),
        ("Audit.gene-list.v1", "Cased", "has characters or parts a component name does not "
         "take (upper case, '-', spaces, an empty part): a component name is '<tool>.<what>.v<N>' in lower "
         "case, letters, digits and '_' (e.g. 'audit.gene_list.v1')"),
        ("audit.abstract.v1", "Abstract", "does not implement process, which a processor must"),
        ("audit.role.v1", "OwnRole", "declares role 'tagger', not one of reader, processor"),
        ("audit.lax.v1", "Lax", "has a config class _LaxConfig that accepts keys it does not "
         "define"),
        ("audit.string.v1", "RequiresAString", "declares requires = 'de.tudarmstadt.ukp.dkpro."
         "core.api.segmentation.type.Token', which is not a tuple of type names"),
        ("audit.plain.v1", "NotAComponent", "is not a casflow component: derive the class"),
    ],
)  # fmt: skip
def test_a_plugin_breaking_the_contract_is_refused_naming_it(
    name: str, attribute: str, expected: str
) -> None:
    reg = Registry()
    reg.register(name, f"{__name__}:{attribute}", origin="entry point from casflow-audit")
    with pytest.raises(ComponentLoadError) as info:
        reg.get(name)
    message = str(info.value)
    assert message.startswith(
        f"component {name!r} (entry point from casflow-audit, '{__name__}:{attribute}') "
    ), message
    assert expected in message, message


def test_an_entry_point_naming_no_class_says_so() -> None:
    reg = Registry()
    reg.register("audit.tagger.v1", __name__, origin="entry point from casflow-audit")
    with pytest.raises(ComponentLoadError, match="names no class: an entry point's value is "):
        reg.get("audit.tagger.v1")


def test_a_config_class_that_is_not_a_component_config_is_refused_at_once() -> None:
    class Plain(BaseModel):
        x: int = 1

    # Passed over, the component would have no options, and each one a user gave
    # would be "unknown key 'x'. Known keys: ." (nothing).
    with pytest.raises(TypeError, match="names Plain in its base, which is not a ComponentConfig"):

        class Tagger(Processor[Plain]):  # type: ignore[type-var]
            name = "audit.plain_config.v1"

            def process(self, view: cassis.Cas) -> None:
                pass
