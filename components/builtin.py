"""The one place built-in components are registered.

Names map to "module:Class" strings so nothing is imported until a workflow
asks for it (spaCy is heavy; a workflow that only converts XMI never loads it).
Plug-in packages register theirs through the ``casflow.components`` entry point
group instead. tests/test_registry.py checks that every entry here loads and
declares the name it is registered under.
"""

from __future__ import annotations

_R = "casflow.components.readers."
_W = "casflow.components.writers."

BUILTIN_COMPONENTS: dict[str, str] = {
    # readers
    "text.reader.v1": _R + "text:TextReader",
    "xmi.reader.v1": _R + "xmi:XmiReader",
    "nxml.reader.v1": _R + "nxml:NxmlReader",
    # writers
    "xmi.writer.v1": _W + "xmi:XmiWriter",
    "json.writer.v1": _W + "json:JsonWriter",
}
