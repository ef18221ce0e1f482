"""XMI writer: one ``<doc>.xmi`` per document (or ``.xmi.gz``, or a ``.tar`` per batch)
and ``TypeSystem.xml`` beside them.

The type system written is casflow's, or, when documents came with more
(xmi.reader.v1 merges the DKPro Core or INCEpTION type system beside its input:
``POS_NOUN``, ``Token.morph``), casflow's merged with every type system the
documents written into the folder had, so that each file loads strictly with the
``TypeSystem.xml`` beside it. Workers note each such type system once under the
run's ``.casflow/`` folder; the parent merges them when the run ends (type systems
that contradict each other cannot be merged: a warning names them and the file
holds the first).
"""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

import cassis
from pydantic import Field

from casflow.cas.xmi import cas_to_xmi_bytes, xml_forbidden_string
from casflow.components.formats.view_writer import PackedFolderWriter, PackedWriterConfig
from casflow.components.formats.xmi.reader import (
    TYPESYSTEM_FILE,
    TypeSystemError,
    merge_typesystems,
)
from casflow.pipeline.component import DocumentError
from casflow.pipeline.files import atomic_write_text, safe_file_stem
from casflow.pipeline.journal import STATE_DIR
from casflow.typesystem import load_typesystem, typesystem_xml


class XmlForbiddenCharacter(DocumentError, ValueError):
    hint = (
        "remove or replace the character where the component that made it ran (e.g. "
        "text.reader.v1's control_characters: space for the text, or clean the value a "
        "tool wrote into that feature)"
    )


class XmiWriterConfig(PackedWriterConfig):
    folder: str = Field("xmi", description="Sub-folder of the run's output folder.")
    pretty_print: bool = Field(False, description="Indent the XML (larger files, easier to read).")


class XmiWriter(PackedFolderWriter[XmiWriterConfig]):
    name = "xmi.writer.v1"
    description = (
        "UIMA XMI (all views) with the TypeSystem.xml beside it, loadable by Apache UIMA Java "
        "and DKPro Core (for INCEpTION, xmi.dkpro.writer.v1)."
    )
    extension = ".xmi"

    _casflow_features: frozenset[tuple[str, str]] | None = None
    _noted: set[str] | None = None

    def serialize(self, cas: cassis.Cas, doc_id: str) -> bytes:
        self._note_typesystem(cas.typesystem)
        try:
            if self.config.pretty_print:
                return cas.to_xmi(pretty_print=True).encode("utf-8")
            return cas_to_xmi_bytes(cas)  # the same bytes as cassis, much sooner
        except ValueError as error:
            # cassis says only "All strings must be XML compatible": name the place
            place = xml_forbidden_string(cas)
            if place is None:
                raise
            raise XmlForbiddenCharacter(
                f"document {doc_id}: {place}, a character XML 1.0 cannot hold, so the CAS "
                "cannot be written as XMI"
            ) from error

    def _noted_folder(self) -> Path:
        """Where workers note the type systems that add to casflow's, for ``finish``."""
        name = safe_file_stem(str(self.config.folder))
        return Path(self.context.output_dir) / STATE_DIR / "typesystems" / name

    def _note_typesystem(self, typesystem: cassis.TypeSystem) -> None:
        if self._casflow_features is None:
            self._casflow_features = _declared(load_typesystem())
        if _declared(typesystem) <= self._casflow_features:
            return
        xml = typesystem.to_xml()
        digest = hashlib.sha256(xml.encode("utf-8")).hexdigest()[:16]
        if self._noted is None:
            self._noted = set()
        if digest in self._noted:
            return
        folder = self._noted_folder()
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_text(folder / f"{digest}.xml", xml)
        self._noted.add(digest)

    def finish(self) -> list[Path]:
        super().finish()
        path = self.folder / TYPESYSTEM_FILE
        atomic_write_text(path, self._merged_typesystem_xml())
        return [path]

    def _merged_typesystem_xml(self) -> str:
        """casflow's type system merged with every one the workers noted."""
        noted = sorted(self._noted_folder().glob("*.xml"))
        if not noted:
            return typesystem_xml()
        merged = load_typesystem()
        for source in noted:
            try:
                with source.open("rb") as xml:
                    merged = merge_typesystems(
                        merged,
                        cassis.load_typesystem(xml),
                        str(source),
                        "the type system of the documents written before",
                        "the other",
                    )
            except (TypeSystemError, OSError, ValueError) as exc:
                warnings.warn(
                    f"{self.folder / TYPESYSTEM_FILE}: documents came with type systems that "
                    f"contradict each other, so the files read with {source} may not load "
                    f"with it: {exc}",
                    stacklevel=2,
                )
        return merged.to_xml()


def _declared(typesystem: cassis.TypeSystem) -> frozenset[tuple[str, str]]:
    """Every type, as (type, ""), and every feature it declares, as (type, feature)."""
    types = list(typesystem.get_types())
    return frozenset((t.name, "") for t in types) | frozenset(
        (t.name, f.name) for t in types for f in t.features
    )
