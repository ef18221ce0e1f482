"""XMI reader: CAS documents written by casflow or any UIMA tool."""

from __future__ import annotations

from collections.abc import Iterator

import cassis
from lxml import etree
from pydantic import Field

from casflow.cas.xmi_offsets import load_xmi
from casflow.components.inputs import (
    IdStyle,
    document_id,
    input_problems,
    iter_input_items,
    read_document_bytes,
    resolve_input,
)
from casflow.pipeline.component import (
    ComponentConfig,
    DocumentError,
    DocumentRef,
    Reader,
    RunContext,
)
from casflow.pipeline.files import doc_id_of_file_stem
from casflow.pipeline.packed import GZIP_SUFFIX, PackedFileError, gunzip_if_needed
from casflow.typesystem import load_typesystem, resolve_type_name


class XmiReaderConfig(ComponentConfig):
    input: str | None = Field(
        None,
        description="An .xmi (.xmi.gz) file, folder, glob or @list file; .tar archives of them "
        "(as xmi.writer.v1 writes with archive: tar) are opened.",
    )
    pattern: str = Field(
        "**/*.{xmi,xmi.gz}",
        description="Files to take from a folder or archive (recursive glob; {a,b} for either).",
    )
    id_style: IdStyle = Field(
        "stem",
        description="Document id: file stem, or path relative to the input folder; "
        "%XX escapes that casflow's writers put in file names are decoded.",
    )
    lenient: bool = Field(
        False, description="Drop types the casflow type system does not know instead of failing."
    )
    views: dict[str, list[str]] = Field(
        default_factory=dict,
        description="What the files hold, for validation: view name -> type names in it "
        "(full names, or short ones such as Token). Every view is loaded either way.",
    )


def xmi_document_id(name: str) -> str:
    """The document id of an XMI file's name (less ``.xmi``), folder by folder.

    casflow's writers name files by ``safe_file_stem(id)``: decoding gives the id
    back, so a document read back keeps the id it was written with (in the journal,
    the run report and its file name when written again) and agrees with its
    DocumentMetaData. The id is needed before the file is parsed (the journal skips
    finished documents by it), so it comes from the name, not from the CAS. A name
    that is not such an encoding (``50%.xmi`` from another tool) or a shortened one
    (``%~`` and a hash) is kept as it is.
    """
    parts = []
    for part in name.split("/"):
        # "%" (the empty id) stays "%": an empty id would name no document.
        parts.append(doc_id_of_file_stem(part) or part)
    return "/".join(parts)


class XmiDocumentError(DocumentError, ValueError):
    hint = "check that the file is complete XMI written against the casflow type system (or set lenient: true)"


class XmiReader(Reader[XmiReaderConfig]):
    """Loads every view of the XMI into the CAS being built.

    The annotations keep their views: a document written by casflow with gold
    and system views comes back with the same views. A file with an annotation whose
    UTF-16 offset splits a character beyond the BMP (or lies outside the text) fails
    its document, naming the annotation: cassis would keep the offset unconverted.
    """

    name = "xmi.reader.v1"
    description = "XMI files (all views), e.g. casflow's own output or another UIMA tool's."

    @classmethod
    def views_written(cls, config: XmiReaderConfig, view: str) -> dict[str, tuple[str, ...]]:
        written: dict[str, tuple[str, ...]] = {view: ()}
        for name, types in config.views.items():
            written[name] = tuple(resolve_type_name(t) for t in types)
        return written

    def __init__(self, config: XmiReaderConfig, context: RunContext | None = None) -> None:
        super().__init__(config, context)
        self.input = resolve_input(config.input or "", self.context.workflow_dir)

    @classmethod
    def check_config(cls, config: XmiReaderConfig, context: RunContext) -> list[str]:
        return input_problems(
            resolve_input(config.input, context.workflow_dir) if config.input else None,
            config.pattern,
            context.output_dir,
        )

    def iter_documents(self) -> Iterator[DocumentRef]:
        for item in iter_input_items(self.input, self.config.pattern):
            # PMC1.xmi.gz is document PMC1, as PMC1.xmi is.
            path = item.path.with_suffix("") if item.path.suffix == GZIP_SUFFIX else item.path
            doc_id = xmi_document_id(document_id(path, item.root, self.config.id_style))
            yield DocumentRef(doc_id, item.uri, item.data, item.size, item.error)

    def load(self, ref: DocumentRef, cas: cassis.Cas) -> cassis.Cas:
        data = ref.data if ref.data is not None else read_document_bytes(ref.uri)
        try:
            data = gunzip_if_needed(data, ref.uri)
        except PackedFileError as exc:
            raise XmiDocumentError(str(exc)) from exc
        try:
            loaded, problems = load_xmi(
                data, typesystem=load_typesystem(), lenient=self.config.lenient
            )
        except (etree.XMLSyntaxError, ValueError, TypeError) as exc:
            raise XmiDocumentError(f"{ref.uri}: cannot load XMI: {exc}") from exc
        if problems:
            # An input file is not ours to repair: which character a half was meant to
            # cover is the writer's knowledge, and guessing would change the gold.
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            error = XmiDocumentError(
                f"{ref.uri}: {problems[0].describe()}{more}; cassis cannot convert such an "
                "offset to a character offset"
            )
            error.hint = (
                "fix the tool that wrote the file so its offsets fall between characters "
                "(UTF-16 offsets must not split a character beyond the BMP)"
            )
            raise error
        # The loaded CAS replaces the empty one the chain made: all its views come along.
        return loaded
