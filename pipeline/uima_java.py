"""Check that casflow XMI loads in Apache UIMA Java (2.10) and holds what cassis holds.

``java/XmiTypeCounts.java`` (beside this module) is compiled against ``uimaj-core.jar`` and run
once for many XMI files; it deserializes each strictly (unknown types or features fail)
and reports per view the sofa text, the number of indexed feature structures per type,
and optionally every annotation span. The ``cassis_*`` functions compute the same report
from the same XMI with dkpro-cassis, so the two compare with ``==``.

What is counted: every feature structure in a view's index (Java: ``getAllIndexedFS`` per
exact type; cassis: ``select_all_fs()``), and separately the annotation index (Java:
``getAnnotationIndex()``; cassis: ``select_all_annotations()``). Unindexed feature
structures that are only referenced (FSArrays of children or fragments) are in neither.

Offsets: Java counts UTF-16 units, Python and cassis count code points. cassis converts
on write and read, so a character outside the BMP (e.g. U+1D6FC) occupies two units in
the XMI. The Java side reports both units and code points for the sofa and for every span,
and flags an offset that falls inside a surrogate pair.

DocumentAnnotation: after loading, UIMA Java calls ``updateDocumentAnnotation()`` on each
view with sofa text. If the view indexes no ``uima.tcas.DocumentAnnotation`` (or subtype
such as DKPro ``DocumentMetaData``), Java creates one covering the whole text; otherwise it
sets the ``end`` of the first one (annotation index order) to the text length, keeping its
``begin``. cassis never creates one on load. With ``predict_java_document_annotation=True``
(the default) the cassis report applies the same rule, so equal reports mean the XMI
loads identically; pass ``False`` to see what the XMI itself holds.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import cassis

UIMA_JAR_ENV = "CASFLOW_UIMA_JAR"
DEFAULT_UIMA_JAR = Path("/usr/share/java/uimaj-core.jar")
CHECKER_CLASS = "XmiTypeCounts"
DOCUMENT_ANNOTATION = "uima.tcas.DocumentAnnotation"

#: view name -> type name -> number of feature structures
TypeCounts = dict[str, dict[str, int]]
#: view name -> sorted (type name, begin, end) in code points, one entry per annotation
ViewSpans = dict[str, list[tuple[str, int, int]]]


class UimaJavaError(RuntimeError):
    """UIMA Java could not load one or more XMI files (or could not run at all).

    ``failures`` maps each failed XMI to the Java exception; ``reports`` holds the
    documents that did load. ``typesystem_reason`` is UIMA's reason when it refused
    the type system itself (then no XMI was loaded).
    """

    def __init__(
        self,
        message: str,
        failures: dict[Path, str] | None = None,
        reports: dict[Path, CasReport] | None = None,
        typesystem_reason: str | None = None,
    ):
        super().__init__(message)
        self.failures = failures or {}
        self.reports = reports or {}
        self.typesystem_reason = typesystem_reason


@dataclass(frozen=True)
class SofaInfo:
    """A view's text as seen by one side; all None when the view has no text."""

    utf16_length: int | None
    code_points: int | None
    sha256: str | None

    @classmethod
    def of(cls, text: str | None) -> SofaInfo:
        if text is None:
            return cls(None, None, None)
        return cls(
            utf16_length=len(text.encode("utf-16-le")) // 2,
            code_points=len(text),
            sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        )


@dataclass
class CasReport:
    """What one side holds after loading one XMI. Spans are filled only when asked for."""

    sofas: dict[str, SofaInfo] = field(default_factory=dict)
    indexed_counts: TypeCounts = field(default_factory=dict)
    annotation_counts: TypeCounts = field(default_factory=dict)
    spans: ViewSpans | None = None
    #: Java only: annotations whose offsets lie outside the text or split a surrogate pair
    offset_problems: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- environment


def find_uima_jar() -> Path | None:
    """``$CASFLOW_UIMA_JAR`` or the Debian ``uimaj-core.jar``; None if the file is absent."""
    configured = os.environ.get(UIMA_JAR_ENV)
    jar = Path(configured) if configured else DEFAULT_UIMA_JAR
    return jar if jar.is_file() else None


def java_available() -> bool:
    """Whether both ``java`` and ``javac`` are on PATH."""
    return shutil.which("java") is not None and shutil.which("javac") is not None


def checker_problem() -> str | None:
    """What stops the checker from running, as one line saying what to do; None when
    ``java``, ``javac`` and the jar are all there."""
    missing = [tool for tool in ("java", "javac") if shutil.which(tool) is None]
    if missing:
        return (
            f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not on PATH: "
            "install a JDK (a JRE has no javac), e.g. apt-get install default-jdk-headless, "
            "or put its bin folder on PATH"
        )
    if find_uima_jar() is not None:
        return None
    configured = os.environ.get(UIMA_JAR_ENV)
    if configured:
        return (
            f"${UIMA_JAR_ENV} is {configured}, which is not a file: set it to Apache UIMA's "
            "uimaj-core 2.x jar, or unset it to use the Debian package's "
            f"{DEFAULT_UIMA_JAR}"
        )
    return (
        f"Apache UIMA's jar is not at {DEFAULT_UIMA_JAR}: apt-get install libuima-core-java, "
        f"or set ${UIMA_JAR_ENV} to a uimaj-core 2.x jar"
    )


def checker_source() -> Path:
    """Path of ``XmiTypeCounts.java`` shipped as package data."""
    return Path(str(resources.files(__package__).joinpath("java", f"{CHECKER_CLASS}.java")))


def default_build_dir() -> Path:
    """``$XDG_CACHE_HOME/casflow/interop`` (``~/.cache/casflow/interop`` by default)."""
    cache_root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache_root) / "casflow" / "interop"


def _require_jar(jar: Path | None) -> Path:
    jar = jar or find_uima_jar()
    if jar is None or not jar.is_file():
        raise FileNotFoundError(
            f"Apache UIMA core jar not found (looked at ${UIMA_JAR_ENV} and {DEFAULT_UIMA_JAR}); "
            "install the Debian package libuima-core-java or set "
            f"{UIMA_JAR_ENV} to a uimaj-core 2.x jar"
        )
    return jar


def _require_java() -> None:
    if not java_available():
        raise FileNotFoundError(f"the UIMA Java checker cannot run: {checker_problem()}")


def compile_checker(build_dir: Path | None = None, jar: Path | None = None) -> Path:
    """Compile the checker once per source version; return the folder holding its classes.

    Classes go to ``build_dir/<hash of source and jar path>/``, so an edited .java is
    recompiled and concurrent callers never see a half-written folder.
    """
    _require_java()
    jar = _require_jar(jar)
    source = checker_source()
    build_dir = Path(build_dir) if build_dir is not None else default_build_dir()
    digest = hashlib.sha256(source.read_bytes() + str(jar.resolve()).encode()).hexdigest()
    class_dir = build_dir / digest[:16]
    if (class_dir / f"{CHECKER_CLASS}.class").is_file():
        return class_dir

    build_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="compiling-", dir=build_dir))
    try:
        result = subprocess.run(
            ["javac", "-encoding", "UTF-8", "-cp", str(jar), "-d", str(staging), str(source)],
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            raise UimaJavaError(f"javac failed on {source} against {jar}:\n{result.stderr}")
        try:
            staging.rename(class_dir)
        except OSError:
            # Another process finished the same compilation first; its classes are identical.
            if not (class_dir / f"{CHECKER_CLASS}.class").is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return class_dir


# --------------------------------------------------------------------------- Java side


def java_cas_reports(
    typesystem_xml: Path,
    xmi_paths: Iterable[Path],
    *,
    spans: bool = False,
    jar: Path | None = None,
    build_dir: Path | None = None,
    timeout: float | None = None,
) -> dict[Path, CasReport]:
    """Load every XMI in one JVM; one report per XMI, keyed by the path as given.

    Raises UimaJavaError naming each XMI that failed (strict loading: unknown types or
    features fail) or when the type system cannot be built.
    """
    xmi_paths = [Path(p) for p in xmi_paths]
    if not xmi_paths:
        return {}
    for path in [typesystem_xml, *xmi_paths]:
        if any(c in str(path) for c in "\t\r\n"):
            raise ValueError(f"{path!r}: paths with tabs or newlines cannot be passed to Java")
    jar = _require_jar(jar)
    class_dir = compile_checker(build_dir, jar)
    command = [
        "java",
        "-XX:+UseSerialGC",  # one GC thread: the machine is shared and documents are small
        "-cp",
        os.pathsep.join([str(class_dir), str(jar)]),
        CHECKER_CLASS,
        *(["--spans"] if spans else []),
        str(typesystem_xml),
        "--files-from",
        "-",
    ]
    by_name = {str(p): p for p in xmi_paths}
    result = subprocess.run(
        command,
        input="".join(f"{p}\n" for p in by_name).encode("utf-8"),
        capture_output=True,
        timeout=timeout,
        # The JVM encodes file names with the locale's charset; under LANG=C it cannot
        # open a non-ASCII path such as "µ-opioid.xmi".
        env={**os.environ, "LC_ALL": "C.UTF-8"},
    )
    stdout = result.stdout.decode("utf-8")
    stderr = result.stderr.decode("utf-8", errors="replace")
    if result.returncode == 2:
        raise UimaJavaError(
            f"UIMA Java cannot use type system {typesystem_xml}:\n{stderr}",
            typesystem_reason=_typesystem_reason(stderr, typesystem_xml),
        )

    reports, failures = _parse_checker_output(stdout, by_name, spans)
    for path in by_name.values():
        if path not in reports and path not in failures:
            failures[path] = f"no result (java exited with status {result.returncode})"
    if failures or result.returncode != 0:
        listing = "\n".join(f"  {path}: {error}" for path, error in failures.items())
        raise UimaJavaError(
            f"UIMA Java failed to load {len(failures)} of {len(by_name)} XMI file(s) "
            f"with type system {typesystem_xml}:\n{listing}\n"
            "Check that the type system declares every type and feature the XMI uses.\n"
            f"java stderr (tail):\n{stderr[-4000:]}",
            failures=failures,
            reports=reports,
        )
    return reports


def _typesystem_reason(stderr: str, typesystem_xml: Path) -> str:
    """UIMA's one-line reason from the checker's stderr (the stack trace left out)."""
    prefix = f"cannot build a CAS from type system {typesystem_xml}: "
    for line in stderr.splitlines():
        if line.startswith(prefix):
            return line[len(prefix) :]
    lines = [line for line in stderr.splitlines() if line.strip()]
    return lines[0] if lines else "no reason given (java printed nothing)"


def _parse_checker_output(
    stdout: str, by_name: dict[str, Path], spans: bool
) -> tuple[dict[Path, CasReport], dict[Path, str]]:
    reports: dict[Path, CasReport] = {}
    failures: dict[Path, str] = {}
    current: dict[str, CasReport] = {}
    for line in stdout.splitlines():
        kind, name, *rest = line.split("\t")
        if kind == "doc":
            current[name] = CasReport(spans={} if spans else None)
            continue
        report = current[name]
        if kind == "sofa":
            view, utf16, code_points, sha = rest
            report.sofas[view] = (
                SofaInfo(None, None, None)
                if utf16 == "-"
                else SofaInfo(int(utf16), int(code_points), sha)
            )
            report.indexed_counts.setdefault(view, {})
            report.annotation_counts.setdefault(view, {})
            if report.spans is not None:
                report.spans.setdefault(view, [])
        elif kind in ("indexed", "annotation"):
            view, type_name, count = rest
            counts = report.indexed_counts if kind == "indexed" else report.annotation_counts
            counts.setdefault(view, {})[type_name] = int(count)
        elif kind == "span":
            view, type_name, _begin16, _end16, begin, end = rest
            if report.spans is not None:
                report.spans.setdefault(view, []).append((type_name, int(begin), int(end)))
        elif kind == "problem":
            view, type_name, begin, end, what = rest
            report.offset_problems.append(f"{view}: {type_name} [{begin},{end}): {what}")
        elif kind == "ok":
            if report.spans is not None:
                report.spans = {view: sorted(spans) for view, spans in report.spans.items()}
            reports[by_name[name]] = current.pop(name)
        elif kind == "error":
            failures[by_name[name]] = rest[0]
            current.pop(name)
        else:
            raise UimaJavaError(f"unexpected line from {CHECKER_CLASS}: {line!r}")
    return reports, failures


def java_type_counts(
    typesystem_xml: Path,
    xmi_paths: Iterable[Path],
    *,
    jar: Path | None = None,
    build_dir: Path | None = None,
) -> dict[Path, TypeCounts]:
    """Indexed feature structures per view and type as UIMA Java loads each XMI."""
    reports = java_cas_reports(typesystem_xml, xmi_paths, jar=jar, build_dir=build_dir)
    return {path: report.indexed_counts for path, report in reports.items()}


# --------------------------------------------------------------------------- cassis side


def _load_typesystem(typesystem: cassis.TypeSystem | Path | None) -> cassis.TypeSystem:
    if typesystem is None:
        from casflow.typesystem import load_typesystem

        return load_typesystem()
    if isinstance(typesystem, cassis.TypeSystem):
        return typesystem
    with open(typesystem, "rb") as f:
        return cassis.load_typesystem(f)


def cassis_cas_report(
    xmi_path: Path,
    typesystem: cassis.TypeSystem | Path | None = None,
    *,
    spans: bool = False,
    predict_java_document_annotation: bool = True,
) -> CasReport:
    """The report ``java_cas_reports`` gives, computed from the XMI with cassis (strict).

    ``typesystem`` is a cassis TypeSystem, a type system XML path, or None for casflow's.
    """
    ts = _load_typesystem(typesystem)
    with open(xmi_path, "rb") as f:
        cas = cassis.load_cas_from_xmi(f, typesystem=ts)
    report = CasReport(spans={} if spans else None)
    for sofa in cas.sofas:
        view = cas.get_view(sofa.sofaID)
        text = view.sofa_string
        report.sofas[sofa.sofaID] = SofaInfo.of(text)
        indexed = Counter(fs.type.name for fs in view.select_all_fs())
        annotations = list(view.select_all_annotations())
        view_spans = [(a.type.name, a.begin, a.end) for a in annotations]
        if predict_java_document_annotation and text is not None:
            _apply_java_document_annotation_rule(ts, annotations, view_spans, indexed, len(text))
        annotation_counts = Counter(type_name for type_name, _, _ in view_spans)
        report.indexed_counts[sofa.sofaID] = dict(sorted(indexed.items()))
        report.annotation_counts[sofa.sofaID] = dict(sorted(annotation_counts.items()))
        if report.spans is not None:
            report.spans[sofa.sofaID] = sorted(view_spans)
    return report


def _apply_java_document_annotation_rule(
    ts: cassis.TypeSystem,
    annotations: list,
    view_spans: list[tuple[str, int, int]],
    indexed: Counter,
    text_length: int,
) -> None:
    """Mirror CASImpl.updateDocumentAnnotation(): create one, or stretch the first to the end."""
    positions = [
        i for i, a in enumerate(annotations) if ts.is_instance_of(a.type.name, DOCUMENT_ANNOTATION)
    ]
    if not positions:
        view_spans.append((DOCUMENT_ANNOTATION, 0, text_length))
        indexed[DOCUMENT_ANNOTATION] += 1
        return
    # Java takes the first in annotation index order (begin ascending, end descending); a
    # tie between two document annotations with equal offsets is resolved by UIMA's type
    # order, which this does not model.
    first = min(positions, key=lambda i: (annotations[i].begin, -annotations[i].end))
    type_name, begin, _ = view_spans[first]
    view_spans[first] = (type_name, begin, text_length)


def cassis_type_counts(
    xmi_path: Path,
    typesystem: cassis.TypeSystem | Path | None = None,
    *,
    predict_java_document_annotation: bool = True,
) -> TypeCounts:
    """Indexed feature structures per view and type as cassis loads the XMI."""
    report = cassis_cas_report(
        xmi_path,
        typesystem,
        predict_java_document_annotation=predict_java_document_annotation,
    )
    return report.indexed_counts


# --------------------------------------------------------------------------- comparison


def compare_reports(java: CasReport, cassis_report: CasReport) -> list[str]:
    """Human-readable differences between the Java and cassis reports (empty when equal)."""
    differences = [f"java offset problem: {problem}" for problem in java.offset_problems]
    views = sorted(set(java.sofas) | set(cassis_report.sofas))
    for view in views:
        if view not in java.sofas or view not in cassis_report.sofas:
            side = "java" if view not in java.sofas else "cassis"
            differences.append(f"view {view!r} missing on the {side} side")
            continue
        if java.sofas[view] != cassis_report.sofas[view]:
            differences.append(
                f"view {view!r}: sofa java={java.sofas[view]} cassis={cassis_report.sofas[view]}"
            )
        for label, java_counts, cassis_counts in (
            ("indexed", java.indexed_counts, cassis_report.indexed_counts),
            ("annotation index", java.annotation_counts, cassis_report.annotation_counts),
        ):
            j, c = java_counts.get(view, {}), cassis_counts.get(view, {})
            for type_name in sorted(set(j) | set(c)):
                if j.get(type_name, 0) != c.get(type_name, 0):
                    differences.append(
                        f"view {view!r}, {label}, {type_name}: "
                        f"java={j.get(type_name, 0)} cassis={c.get(type_name, 0)}"
                    )
        if java.spans is not None and cassis_report.spans is not None:
            java_spans = Counter(java.spans.get(view, []))
            cassis_spans = Counter(cassis_report.spans.get(view, []))
            for span in sorted((java_spans - cassis_spans).elements()):
                differences.append(f"view {view!r}: span {span} only in java")
            for span in sorted((cassis_spans - java_spans).elements()):
                differences.append(f"view {view!r}: span {span} only in cassis")
    return differences
