"""Document metadata (DKPro DocumentMetaData) of a CAS view."""

from __future__ import annotations

import contextlib

import cassis

from casflow.typesystem import DOCUMENT_ANNOTATION, DOCUMENT_METADATA


def set_document_metadata(
    cas: cassis.Cas,
    doc_id: str,
    uri: str,
    title: str | None = None,
    language: str | None = None,
) -> None:
    """Create or update the DKPro DocumentMetaData of the view ``cas``.

    A created one takes the place of the view's plain ``DocumentAnnotation`` and its
    language, as DKPro Core's ``DocumentMetaData.create`` does.
    """
    existing = next(iter(cas.select(DOCUMENT_METADATA)), None)
    text = cas.sofa_string or ""
    if existing is None:
        meta_type = cas.typesystem.get_type(DOCUMENT_METADATA)
        existing = meta_type(begin=0, end=len(text))
        # UIMA Java gives every view with a text a plain DocumentAnnotation (XMI from
        # UIMA tools other than DKPro Core holds it), and a view has one document
        # annotation: beside a second one, UIMA Java's getDocumentLanguage() read the
        # DocumentMetaData's (none) and lost the file's language.
        for plain in cas.select(DOCUMENT_ANNOTATION):
            if plain.type.name == DOCUMENT_ANNOTATION:
                # its language and any feature a type system added to DocumentAnnotation
                for feature in plain.type.all_features:
                    if feature.name not in ("sofa", "begin", "end"):
                        existing.set(feature.name, plain.get(feature.name))
                cas.remove(plain)
        cas.add(existing)
    existing.set("documentId", doc_id)
    existing.set("documentUri", uri)
    if title is not None:
        existing.set("documentTitle", title)
    if language is not None:
        existing.set("language", language)


def find_document_id(view: cassis.Cas) -> str | None:
    """The documentId of the DocumentMetaData in ``view`` or the initial view, if any."""
    candidates = [view]
    with contextlib.suppress(KeyError):
        candidates.append(view.get_view("_InitialView"))
    for candidate in candidates:
        for meta in candidate.select(DOCUMENT_METADATA):
            if meta.get("documentId"):
                return str(meta.get("documentId"))
    return None
