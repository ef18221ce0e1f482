"""Gold sources: reader steps whose views a trainer learns from besides its training documents.

A trainer may need more than the training documents: word clusters and word
vectors from unlabelled text, a POS tagger for features, a lexicon of mention
texts from another corpus. Each such input is a :class:`GoldSource` in the
trainer's config (a reader, the view it fills, its settings, the document order),
read the way ``casflow train`` reads the training documents, so the training
workflow states everything a model is made from.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeVar

import cassis
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from casflow.pipeline.chain import read_document
from casflow.pipeline.component import Reader, RunContext

T = TypeVar("T")


class GoldSource(BaseModel):
    """A reader step whose views a trainer reads (every document the reader lists)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    component: str = Field(description="A reader component (e.g. craft.reader.v1).")
    view: str = Field("gold", description="The view the reader fills and the trainer reads.")
    config: dict[str, Any] = Field(default_factory=dict, description="The reader's settings.")
    order: Literal["reader", "id"] = Field(
        "reader",
        description="Document order: as the reader lists them, or sorted by document id "
        "(character order, as file names sort). What is learned can depend on it.",
    )


class GoldSourceError(Exception):
    """A gold source could not be read; the message names the source and document."""


def _reader_class(source: GoldSource) -> type[Reader]:
    from casflow.pipeline.registry import registry

    cls = registry().get(source.component)
    if not (isinstance(cls, type) and issubclass(cls, Reader)):
        raise GoldSourceError(f"{source.component} is not a reader")
    return cls


def check_source(source: GoldSource, context: RunContext) -> list[str]:
    """Problems of a source: unknown reader, bad settings, missing corpus files."""
    try:
        cls = _reader_class(source)
    except Exception as exc:  # the registry says which names exist
        return [f"{source.component}: {exc}"]
    try:
        config = cls.Config.model_validate(source.config)
    except ValidationError as exc:
        return [
            f"{source.component} config: {'.'.join(map(str, e['loc']))}: {e['msg']}"
            for e in exc.errors()
        ]
    return [f"{source.component}: {p}" for p in cls.check_config(config, context)]


def read_source(
    source: GoldSource,
    context: RunContext,
    convert: Callable[[cassis.Cas, str], T],
    log: Callable[[str], None] | None = None,
) -> list[T]:
    """``convert(view, doc_id)`` of every document of ``source``, in its order."""
    from casflow.typesystem import load_typesystem

    cls = _reader_class(source)
    reader = cls(cls.Config.model_validate(source.config), context)
    typesystem = load_typesystem()
    results: list[T] = []
    try:
        refs = list(reader.iter_documents())
        if source.order == "id":
            refs.sort(key=lambda ref: ref.doc_id)
        for ref in refs:
            try:
                cas = read_document(reader, ref, source.view, typesystem)
                results.append(convert(cas.get_view(source.view), ref.doc_id))
            except Exception as exc:
                raise GoldSourceError(
                    f"{source.component}: document {ref.doc_id} ({ref.uri}): "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
    finally:
        reader.close()
    if log is not None:
        log(f"read {len(results)} documents with {source.component}")
    return results
