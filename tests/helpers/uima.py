"""Checking a CAS in Apache UIMA Java from a test (skips without Java or the UIMA jar)."""

from __future__ import annotations

from pathlib import Path

import cassis
import pytest


def uima_java_counts(cas: cassis.Cas, folder: Path) -> dict[str, dict[str, int]]:
    """Write ``cas`` as XMI with its type system, load it in Apache UIMA Java, assert Java
    counts every type of every view as cassis does, and return those counts."""
    from casflow.pipeline import uima_java

    if not uima_java.java_available() or uima_java.find_uima_jar() is None:
        pytest.skip("java/javac or the Apache UIMA jar (libuima-core-java) is not installed")
    typesystem = folder / "TypeSystem.xml"
    typesystem.write_text(cas.typesystem.to_xml(), encoding="utf-8")
    xmi = folder / "document.xmi"
    xmi.write_text(cas.to_xmi(), encoding="utf-8")
    build = folder / "build"
    uima_java.compile_checker(build)
    java = uima_java.java_type_counts(typesystem, [xmi], build_dir=build)
    expected = uima_java.cassis_type_counts(xmi, typesystem)
    assert java == {xmi: expected}
    return expected
