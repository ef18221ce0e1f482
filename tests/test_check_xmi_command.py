"""``casflow check-xmi``: what it says and its exit status when it cannot check, or when
UIMA Java refuses what it is given (0 all agree, 1 a file or the type system fails, 2
nothing checked)."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

from casflow.pipeline import uima_java
from casflow.pipeline.cli import main
from casflow.pipeline.component import RunContext
from casflow.pipeline.testing import build, cas_from_text


def _xmi_folder(tmp_path: Path, *, typesystem: bool = True) -> Path:
    """An xmi.writer.v1 folder of one document (TypeSystem.xml only when the run ended)."""
    writer = build("xmi.writer.v1", RunContext(output_dir=tmp_path))
    writer.write(cas_from_text("IL-2 binds.", spans={"Token": [(0, 4), (5, 10)]}), "d1")
    if typesystem:
        writer.finish()
    return tmp_path / "xmi"


def _java_present(monkeypatch: pytest.MonkeyPatch) -> None:
    """Checks before Java runs, whether or not this machine has it."""
    monkeypatch.setattr(uima_java, "checker_problem", lambda: None)


def _java_or_skip() -> None:
    if uima_java.checker_problem() is not None:
        pytest.skip(uima_java.checker_problem())


def test_a_folder_that_does_not_exist_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check-xmi", str(tmp_path / "nowhere")]) == 2
    assert f"{tmp_path / 'nowhere'} does not exist" in capsys.readouterr().err


def test_a_folder_without_xmi_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _java_present(monkeypatch)
    (tmp_path / "a.txt").write_text("x")
    assert main(["check-xmi", str(tmp_path)]) == 2
    assert f"no XMI files in {tmp_path}" in capsys.readouterr().err


def test_xmi_without_its_type_system_asks_for_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _java_present(monkeypatch)
    folder = _xmi_folder(tmp_path, typesystem=False)
    assert main(["check-xmi", str(folder)]) == 2
    err = capsys.readouterr().err
    assert f"no type system at {folder / 'TypeSystem.xml'}" in err
    assert "--typesystem" in err
    assert main(["check-xmi", str(folder), "--typesystem", str(tmp_path / "no.xml")]) == 2
    assert f"--typesystem {tmp_path / 'no.xml'}: no such file" in capsys.readouterr().err


def test_missing_javac_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = shutil.which
    monkeypatch.setattr(
        uima_java.shutil, "which", lambda tool: None if tool == "javac" else real(tool) or tool
    )
    assert main(["check-xmi", str(_xmi_folder(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert "javac is not on PATH" in err
    assert "JDK" in err


def test_a_configured_jar_that_is_not_there_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(uima_java, "java_available", lambda: True)
    monkeypatch.setattr(uima_java.shutil, "which", lambda tool: f"/usr/bin/{tool}")
    monkeypatch.setenv(uima_java.UIMA_JAR_ENV, str(tmp_path / "uimaj-core.jar"))
    assert main(["check-xmi", str(_xmi_folder(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert f"${uima_java.UIMA_JAR_ENV} is {tmp_path / 'uimaj-core.jar'}, which is not a file" in err


@pytest.mark.java
def test_a_type_system_uima_refuses_fails_with_its_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _java_or_skip()
    folder = _xmi_folder(tmp_path)
    (folder / "TypeSystem.xml").write_text(
        '<typeSystemDescription xmlns="http://uima.apache.org/resourceSpecifier"><types>'
        "<typeDescription><name>x.Y</name><supertypeName>no.Such</supertypeName>"
        "</typeDescription></types></typeSystemDescription>"
    )
    assert main(["check-xmi", str(folder)]) == 1
    out = capsys.readouterr().out
    assert f"FAIL {folder / 'TypeSystem.xml'}: UIMA Java cannot use the type system" in out
    assert '"no.Such"' in out


@pytest.mark.java
def test_a_jar_that_is_not_uima_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _java_or_skip()
    jar = tmp_path / "other.jar"
    with zipfile.ZipFile(jar, "w") as archive:
        archive.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    monkeypatch.setenv(uima_java.UIMA_JAR_ENV, str(jar))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert main(["check-xmi", str(_xmi_folder(tmp_path / "run"))]) == 2
    err = capsys.readouterr().err
    assert f"is {jar} Apache UIMA's uimaj-core 2.x jar?" in err
