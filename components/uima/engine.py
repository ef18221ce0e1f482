"""``uima.engine.v1``: any Apache UIMA Java analysis engine over a CAS view.

The bridge, per document: the view (its text and every feature structure it indexes,
with what they reference) is copied into a one-view CAS and written as XMI with
casflow's writer; the worker's one JVM (``java/UimaEngineServer.java``, compiled
against Debian's ``uimaj-core.jar`` and started on the first document) reads it
leniently into a CAS whose type system is casflow's merged with the engine's, runs the
engine's descriptor on it, and writes the CAS back as XMI with the same serialization
data, so what went in keeps its xmi:ids. cassis reads that XMI with the merged type
system the JVM reported.

What comes back into the view: only the engine's NEW feature structures (those the
engine indexed whose xmi:id did not go out, and what they reference), mapped onto our
types by ``types``. The view is never replaced: its annotations stay the objects they
were, and changes the engine makes to them are not carried back, with one declared
exception: a string feature named under ``tags`` (OpenNLP's POS tagger writes its tag
as a string on the Token) becomes one of our annotations (a DKPro POS) linked from the
structure, new or the view's own. A new structure that points at one that went out points at the view's
own original. UIMA's DocumentAnnotation, which Java adds to every view, is not copied.

Offsets: XMI counts UTF-16 units; casflow's writer and cassis convert, so the view's
code-point offsets come back exact for any text. An offset the engine puts between the
two UTF-16 halves of a character beyond the BMP (OpenNLP's tokenizer cuts 🧬 in two)
has no code point: the annotation is widened to whole characters (begin down, end up;
the two halves' tokens then both cover the character) with a warning per document,
and an offset outside the text fails the document.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import sys
import tempfile
import warnings
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import cassis
from cassis.typesystem import FeatureStructure
from pydantic import Field, field_validator, model_validator

from casflow.cas.metadata import find_document_id
from casflow.cas.xmi import cas_to_xmi_bytes
from casflow.cas.xmi_offsets import OffsetProblem, load_xmi, snap_to_characters
from casflow.pipeline.component import ComponentConfig, DocumentWarning, Processor, RunContext
from casflow.pipeline.jvm import JsonLinesJvm, SharedJvm, cache_dir, compile_java
from casflow.pipeline.uima_java import find_uima_jar, java_available
from casflow.typesystem import load_typesystem, resolve_type_name

SERVER_CLASS = "UimaEngineServer"
DOCUMENT_ANNOTATION = "uima.tcas.DocumentAnnotation"
# Features every copy skips: cassis sets the sofa when a structure is added to a view.
SKIPPED_FEATURES = {"sofa"}


class UimaEngineError(RuntimeError):
    """The UIMA engine or its JVM failed."""


class UimaOffsetWarning(DocumentWarning):
    """The engine's offsets split characters and were widened to whole ones."""


def uima_missing() -> str | None:
    """Why a UIMA engine cannot run here, or None."""
    if not java_available():
        return "java and javac must be on PATH to run Apache UIMA Java engines"
    if find_uima_jar() is None:
        return (
            "Apache UIMA core jar not found (looked at $CASFLOW_UIMA_JAR and "
            "/usr/share/java/uimaj-core.jar); install the Debian package libuima-core-java "
            "or set CASFLOW_UIMA_JAR to a uimaj-core 2.x jar"
        )
    return None


def _our_type(name: str) -> str:
    """The full name of one of our types (short names such as Token accepted)."""
    full = resolve_type_name(name)
    if not load_typesystem().contains_type(full):
        raise ValueError(
            f"{name} is not in casflow's type system (typesystem/casflow-typesystem.xml and "
            "plug-ins); name one of our types, e.g. "
            "de.tudarmstadt.ukp.dkpro.core.api.ner.type.NamedEntity"
        )
    return full


def _check_features(type_name: str, features: list[str], what: str) -> None:
    known = {f.name for f in load_typesystem().get_type(type_name).all_features}
    for feature in features:
        if feature not in known:
            raise ValueError(
                f"{what} {feature!r} is not a feature of {type_name} (its features: "
                f"{', '.join(sorted(known))})"
            )


class TypeMapping(ComponentConfig):
    """Where one of the engine's types goes in our type system."""

    type: str = Field(description="Our type name the engine's type becomes.")
    features: dict[str, str | None] = Field(
        default_factory=dict,
        description="Engine feature -> our feature; null drops the feature. Features not "
        "named keep their name and must exist on our type.",
    )

    # Checked before the run: at run time a missing target would be reported as the
    # engine's type being unmapped.
    _type_is_ours = field_validator("type")(_our_type)

    @model_validator(mode="after")
    def _features_are_ours(self) -> TypeMapping:
        targets = [name for name in self.features.values() if name is not None]
        _check_features(self.type, targets, "features: target")
        return self


class TagMapping(ComponentConfig):
    """A string feature the engine sets, made into one of our annotations (the way
    DKPro Core maps a tool's tag onto its POS types)."""

    type: str = Field(description="Our annotation type made per value, e.g. DKPro POS.")
    value_feature: str = Field(description="Its feature that receives the value (PosValue).")
    link: str | None = Field(
        None, description="Feature of the tagged structure that points at it (Token: pos)."
    )

    _type_is_ours = field_validator("type")(_our_type)

    @model_validator(mode="after")
    def _value_feature_is_ours(self) -> TagMapping:
        _check_features(self.type, [self.value_feature], "value_feature")
        return self


ParameterValue = str | int | float | bool | list[str] | list[int] | list[bool]


class UimaEngineConfig(ComponentConfig):
    descriptor: str = Field(
        description="AnalysisEngineDescription XML of the engine (relative to the workflow)."
    )
    classpath: list[str] = Field(
        default_factory=list,
        description="Jars (or class folders) holding the engine's classes, relative to the "
        "workflow; uimaj-core itself is always there.",
    )
    parameters: dict[str, ParameterValue] = Field(
        default_factory=dict,
        description="Configuration parameter values overriding the descriptor's settings.",
    )
    types: dict[str, TypeMapping] = Field(
        default_factory=dict,
        description="Engine type -> our type and feature renames, for the engine's types "
        "that are not ours. A type not listed must be in our type system.",
    )
    ignore_types: list[str] = Field(
        default_factory=list,
        description="Engine types whose new structures are not copied into the view.",
    )
    tags: dict[str, TagMapping] = Field(
        default_factory=dict,
        description="'EngineType:feature' -> annotation made from the string the engine "
        "sets there, on new structures and on the view's own (the one change to them "
        "that comes back), e.g. OpenNLP's POS tagger's tag on Token.",
    )
    requires: list[str] = Field(
        default_factory=list,
        description="Our type names the engine reads from the view (checked in the chain).",
    )
    produces: list[str] = Field(
        default_factory=list,
        description="Our type names the engine's output becomes (checked in the chain).",
    )

    @field_validator("tags")
    @classmethod
    def _tag_keys(cls, tags: dict[str, TagMapping]) -> dict[str, TagMapping]:
        for key in tags:
            if ":" not in key:
                raise ValueError(f"tags: {key!r} must be 'EngineType:feature'")
        return tags

    def paths(self, base: Path | None) -> tuple[Path, list[Path]]:
        root = base or Path.cwd()
        return root / self.descriptor, [root / entry for entry in self.classpath]


class UimaEngineJvm(JsonLinesJvm):
    """The worker's one JVM running ``UimaEngineServer`` (any number of engines)."""

    error = UimaEngineError
    label = "UIMA"

    def __init__(self, build_dir: Path | None = None) -> None:
        super().__init__()
        self.build_dir = build_dir or cache_dir("uima")

    def command(self) -> list[str]:
        problem = uima_missing()
        if problem:
            raise UimaEngineError(problem)
        jar = find_uima_jar()
        assert jar is not None
        source = Path(__file__).with_name("java") / f"{SERVER_CLASS}.java"
        class_dir = compile_java([source], [jar], self.build_dir, SERVER_CLASS, UimaEngineError)
        classpath = os.pathsep.join([str(class_dir), str(jar)])
        return ["java", "-XX:+UseSerialGC", "-cp", classpath, SERVER_CLASS]


_SHARED: SharedJvm[UimaEngineJvm] = SharedJvm(UimaEngineJvm)


def shared_jvm() -> UimaEngineJvm:
    """The process's one JVM of this kind (not started until its first request)."""
    return _SHARED.acquire()


def release(jvm: UimaEngineJvm) -> None:
    """A user of :func:`shared_jvm` is done; the last one stops the JVM."""
    _SHARED.release(jvm)


class UimaEngine(Processor[UimaEngineConfig]):
    name = "uima.engine.v1"
    description = (
        "Any Apache UIMA Java analysis engine (descriptor + jars) over the view, through "
        "XMI and one JVM per worker; its new annotations are added to the view."
    )

    def __init__(self, config: UimaEngineConfig, context: RunContext | None = None) -> None:
        super().__init__(config, context)
        self.descriptor, self.classpath = config.paths(self.context.workflow_dir)
        self._jvm: UimaEngineJvm | None = None
        self._engine: str | None = None
        self._generation = 0  # the JVM start that holds self._engine
        self._engine_ts: cassis.TypeSystem | None = None
        self._ts_file: Path | None = None
        self._scratch: Path | None = None

    @classmethod
    def requirements(cls, config: UimaEngineConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
        return tuple(config.requires), tuple(config.produces)

    @classmethod
    def check_config(cls, config: UimaEngineConfig, context: RunContext) -> list[str]:
        problem = uima_missing()
        if problem:
            return [f"{cls.name}: {problem}"]
        descriptor, classpath = config.paths(context.workflow_dir)
        problems = []
        if not descriptor.is_file():
            problems.append(f"descriptor: no analysis engine descriptor at {descriptor}")
        problems += [
            f"classpath: {entry} does not exist" for entry in classpath if not entry.exists()
        ]
        return problems

    # -- the JVM --------------------------------------------------------------------------

    def _load(self, ts: cassis.TypeSystem) -> tuple[UimaEngineJvm, str, cassis.TypeSystem]:
        if self._jvm is None:
            self._jvm = shared_jvm()
        if (
            self._engine is None
            or not self._jvm.running
            or self._generation != self._jvm.generation
        ):
            self._ts_file = self._scratch_dir() / "typesystem.xml"
            self._ts_file.write_text(ts.to_xml(), encoding="utf-8")
            try:
                answer = self._jvm.request(
                    "load",
                    descriptor=str(self.descriptor.resolve()),
                    typesystem=str(self._ts_file),
                    classpath=os.pathsep.join(str(p.resolve()) for p in self.classpath),
                    parameters=self.config.parameters,
                )
            except UimaEngineError as exc:
                raise UimaEngineError(
                    f"{self.descriptor}: UIMA could not build the engine ({exc}); check the "
                    "descriptor, its parameters and that classpath holds the engine's jars"
                ) from exc
            self._engine = answer["engine"]
            self._generation = self._jvm.generation
            self._engine_ts = cassis.load_typesystem(answer["typesystem"])
        assert self._engine is not None and self._engine_ts is not None
        return self._jvm, self._engine, self._engine_ts

    def close(self) -> None:
        if self._jvm is not None:
            release(self._jvm)
            self._jvm = None
            self._engine = None
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def _scratch_dir(self) -> Path:
        # The folder is made once, but a long run's temporary directory may be cleaned
        # behind its back (systemd-tmpfiles, another casflow sharing the directory):
        # made again, rather than every later document failing on a missing folder.
        if self._scratch is None or not self._scratch.is_dir():
            self._scratch = scratch_folder()
        return self._scratch

    # -- processing -----------------------------------------------------------------------

    def process(self, view: cassis.Cas) -> None:
        ts = view.typesystem
        jvm, engine, engine_ts = self._load(ts)
        # The view alone, as the initial view of a CAS of its own: the engine sees the
        # text and annotations of this view whatever its name in our CAS.
        outgoing = cassis.Cas(typesystem=ts)
        outgoing.sofa_string = view.sofa_string or ""
        if view.sofa_mime:
            outgoing.sofa_mime = view.sofa_mime
        copies: dict[int, tuple[Any, Any]] = {}
        for fs in view.select_all_fs():
            outgoing.add(_copy(fs, copies, _same_type(ts), {}))
        scratch = self._scratch_dir()
        source, target = scratch / "in.xmi", scratch / "out.xmi"
        source.write_bytes(cas_to_xmi_bytes(outgoing))
        # Writing gave every copy an xmi:id; the engine's CAS keeps them.
        by_id = {copy.xmiID: original for original, copy in copies.values()}
        try:
            jvm.request("process", engine=engine, input=str(source), output=str(target))
        except UimaEngineError as exc:
            raise UimaEngineError(f"{self.descriptor}: the engine failed ({exc})") from exc
        returned, problems = load_xmi(target.read_bytes(), engine_ts)
        if problems:
            self._snap(returned, problems, view)
        mapper = self._mapper(ts)
        memo: dict[int, tuple[Any, Any]] = {}
        new = [
            fs
            for fs in returned.select_all_fs()
            if fs.xmiID not in by_id and not _ignored(fs, engine_ts, self.config.ignore_types)
        ]
        added = [_copy(fs, memo, mapper, by_id) for fs in new]
        added += self._tags(returned, ts, by_id, memo)
        for fs in added:
            view.add(fs)

    def _snap(self, returned: cassis.Cas, problems: list[OffsetProblem], view: cassis.Cas) -> None:
        """Whole characters for the engine's offsets that split one (Java's tokenizers
        count UTF-16 units and may cut 🧬 in two), said once per document."""
        outside = [p for p in problems if not p.inside_pair]
        if outside:
            raise UimaEngineError(
                f"{self.descriptor}: the engine made {outside[0].describe()}; check the "
                "engine's parameters (or report it to its authors)"
            )
        snap_to_characters(returned, problems)
        first = problems[0]
        document = find_document_id(view) or "this document"
        # Two halves become two annotations over the same character; both are kept,
        # since which one (if any) is redundant is the engine's to say.
        warnings.warn(
            UimaOffsetWarning(
                f"{document}: {self.descriptor}: the engine put {len(problems)} "
                f"annotation(s) between the two UTF-16 halves of a character beyond the BMP "
                f"(first: {first.annotation.type.name} at UTF-16 [{first.begin},{first.end})); "
                "widened them to whole characters"
            ),
            stacklevel=2,
        )

    def _tags(
        self,
        returned: cassis.Cas,
        ts: cassis.TypeSystem,
        by_id: dict[int, Any],
        memo: dict[int, tuple[Any, Any]],
    ) -> list[Any]:
        made = []
        for key, rule in self.config.tags.items():
            type_name, feature = key.rsplit(":", 1)
            tag_type = ts.get_type(rule.type)
            for fs in returned.select(type_name):
                value = fs.get(feature)
                if value is None:
                    continue
                target = (
                    by_id.get(fs.xmiID) if fs.xmiID in by_id else memo.get(id(fs), (0, None))[1]
                )
                if target is None:
                    continue  # an ignored type
                tag = tag_type(begin=target.begin, end=target.end)
                tag.set(rule.value_feature, value)
                if rule.link:
                    target.set(rule.link, tag)
                made.append(tag)
        return made

    def _mapper(self, ts: cassis.TypeSystem) -> Callable[[str], tuple[Any, dict[str, str | None]]]:
        def mapped(type_name: str) -> tuple[Any, dict[str, str | None]]:
            rule = self.config.types.get(type_name)
            target = rule.type if rule else type_name
            if rule and not ts.contains_type(target):
                raise UimaEngineError(
                    f"{self.descriptor}: types: {type_name} maps to {target}, which is not in "
                    "our type system; map it to one of our types"
                )
            if not ts.contains_type(target):
                raise UimaEngineError(
                    f"{self.descriptor}: the engine made {type_name}, which is not in our type "
                    f"system; map it under types: ({type_name}: {{type: OurType}}) or list it "
                    "in ignore_types"
                )
            renames: dict[str, str | None] = dict(rule.features) if rule else {}
            for key in self.config.tags:
                tagged_type, feature = key.rsplit(":", 1)
                if tagged_type == type_name:
                    renames.setdefault(feature, None)  # it becomes a tag annotation
            return ts.get_type(target), renames

        return mapped


def _same_type(ts: cassis.TypeSystem) -> Callable[[str], tuple[Any, dict[str, str | None]]]:
    return lambda type_name: (ts.get_type(type_name), {})


def _ignored(fs: Any, ts: cassis.TypeSystem, ignore: list[str]) -> bool:
    name = fs.type.name
    return ts.is_instance_of(name, DOCUMENT_ANNOTATION) or name in ignore


def _copy(
    fs: Any,
    memo: dict[int, tuple[Any, Any]],
    mapped: Callable[[str], tuple[Any, dict[str, str | None]]],
    existing: dict[int, Any],
) -> Any:
    """A copy of ``fs`` and what it references, through the type mapping; structures
    with an xmi:id in ``existing`` are not copied but replaced by what it holds.
    ``memo`` maps id(structure) -> (structure, copy); holding the structure keeps its id
    from being reused while the copy runs."""

    def begin(source: Any) -> tuple[Any, Generator[Any, Any, None] | None]:
        # the copy, and what fills its features unless it was made before
        if source.xmiID is not None and source.xmiID in existing:
            return existing[source.xmiID], None
        if id(source) in memo:
            return memo[id(source)][1], None
        target_type, renames = mapped(source.type.name)
        made = target_type()
        memo[id(source)] = (source, made)
        return made, _fill(source, made, target_type, renames)

    # Depth first as a recursive copy would go, with a stack of its own: references
    # reach as deep as a tree is (constituents' children and parent), thousands of
    # levels for a parse of a long sentence. Each filler yields the structures it
    # needs copied and is sent their copies.
    result, filler = begin(fs)
    stack = [] if filler is None else [(filler, result)]
    reply: Any = None
    while stack:
        filler, made = stack[-1]
        try:
            wanted = filler.send(reply)
        except StopIteration:
            stack.pop()
            reply = made
            continue
        reply, child_filler = begin(wanted)
        if child_filler is not None:
            stack.append((child_filler, reply))
            reply = None
    return result


def _fill(
    fs: Any, copy: Any, target_type: Any, renames: dict[str, str | None]
) -> Generator[Any, Any, None]:
    """Set the features of ``copy`` from ``fs``; yields each referenced structure and is
    sent its copy."""
    target_features = {f.name for f in target_type.all_features}
    for feature in fs.type.all_features:
        if feature.name in SKIPPED_FEATURES:
            continue
        name = renames.get(feature.name, feature.name)
        if name is None:
            continue
        value = fs.get(feature.name)
        if value is None:
            continue
        if name not in target_features:
            raise UimaEngineError(
                f"{fs.type.name}.{feature.name} has no place on {target_type.name}: rename it "
                f"under types: {fs.type.name}: features: ({feature.name}: ourFeature) or drop "
                "it with null"
            )
        if isinstance(value, FeatureStructure):
            value = yield value
        elif isinstance(value, list):
            copied = []
            for v in value:
                copied.append((yield v) if isinstance(v, FeatureStructure) else v)
            value = copied
        copy.set(name, value)


_SCRATCH_PREFIX = "casflow-uima-"


def scratch_folder() -> Path:
    """A new folder for the XMI this process exchanges with the JVM, named
    ``casflow-uima-<host>+<pid namespace>+<pid>-<random>``. The engine removes it when
    closed, but a run's worker processes are killed once every result is in, so folders
    of processes no longer running are removed here first (they were left in the
    temporary directory, one per worker of every run). A pid names a process only on
    its own host and in its own pid namespace, and a temporary directory may be shared
    beyond both (a container's /tmp mounted from the host, TMPDIR on a cluster's shared
    disk): only folders of this host and namespace are removed, never a folder whose
    process merely looks dead from here."""
    namespace = _pid_namespace()
    here = f"{_SCRATCH_PREFIX}{_host()}+{namespace or 'unknown'}+"
    if namespace is not None:
        for folder in Path(tempfile.gettempdir()).glob(f"{here}*-*"):
            pid = folder.name[len(here) :].split("-", 1)[0]
            if pid.isdigit() and int(pid) != os.getpid() and not _running(int(pid)):
                shutil.rmtree(folder, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f"{here}{os.getpid()}-"))


def _host() -> str:
    # Host names hold letters, digits, dots and hyphens; anything else (and "+", which
    # ends the host in a folder's name) becomes "_" so a name splits one way only.
    return re.sub(r"[^A-Za-z0-9.-]", "_", socket.gethostname()) or "_"


def _pid_namespace() -> str | None:
    """The inode of this process's pid namespace on Linux, "0" where the system has no
    pid namespaces, None where Linux does not say (no /proc): then which folders are of
    this namespace is not known and none is removed."""
    if not sys.platform.startswith("linux"):
        return "0"
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return None


def _running(pid: int) -> bool:
    if os.name == "nt":  # os.kill(pid, 0) would end the process there: keep the folder
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process (PermissionError): running
        return True
    return True
