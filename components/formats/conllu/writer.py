"""``conllu.writer.v1``: a CoNLL-U file per document.

One block per ``Sentence`` (the whole view when there is none) with the comments
``# sent_id`` (the Sentence ``id``, else its number from 1) and ``# text`` (the
sentence's text, tabs and line breaks, a lone carriage return included, as
spaces), then a line per ``Token``:

- ID from 1; FORM the covered text, tabs and line breaks inside it as spaces and
  whitespace at its edges left out (``conllu.import.v1`` matches such a space to
  any whitespace in the text; a token of whitespace only fails the document);
  LEMMA, UPOS (``POS.coarseValue``) and XPOS (``POS.PosValue``) where the token
  has them, else ``_``;
- HEAD and DEPREL from the basic ``Dependency`` whose Dependent is the token: 0
  for the root (a DKPro ``ROOT``, or Governor = Dependent), with DEPREL
  ``root_deprel`` when its ``DependencyType`` is "ROOT" (the casflow convention,
  see ``conllu.import.v1``), else the DependencyType; ``_`` without a dependency;
- FEATS and DEPS ``_``; MISC ``SpaceAfter=No`` when the next character of the
  text is not whitespace (and not the end), else ``_``.

Round trip with ``conllu.import.v1``: a file comes back identical except for
what the CAS does not keep: comments other than sent_id and text (``newdoc``,
``newpar``), FEATS, DEPS and MISC items other than SpaceAfter=No (which the text
decides), and multiword tokens: no range line is written, so words that spell their
token come back as plain words (``wo`` with SpaceAfter=No, then ``n't``) and a token
whose words do not (imported as one Token) as one word with its head word's analysis. The 67 CRAFT CoNLL-U files differ in exactly those (and their
``root`` comes back as ``root``, through the "ROOT" DependencyType).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cassis
from pydantic import Field

from casflow.components.formats.common import column_field, one_line, token_field
from casflow.components.formats.conllu.parse import ConlluSentence, ConlluWord, format_conllu
from casflow.components.formats.view_writer import (
    TokenFeatures,
    ViewContentError,
    ViewWriter,
    ViewWriterConfig,
    sentences_with_tokens,
)
from casflow.pipeline.files import atomic_write_text
from casflow.typesystem import DEPENDENCY, DEPENDENCY_ROOT

ROOT_TYPE_VALUE = "ROOT"
BASIC_FLAVORS = frozenset({"", "basic"})


class ConlluWriterConfig(ViewWriterConfig):
    folder: str = Field("conllu", description="Sub-folder of the run's output folder.")
    root_deprel: str = Field(
        "root", description="DEPREL written for a root relation whose DependencyType is ROOT."
    )


class ConlluWriter(ViewWriter[ConlluWriterConfig]):
    """CoNLL-U per document (see the module docstring)."""

    name = "conllu.writer.v1"
    description = "CoNLL-U files: tokens, lemmas, UPOS/XPOS, basic dependencies."
    extension = ".conllu"

    def write(self, cas: cassis.Cas, doc_id: str) -> list[Path]:
        view = self.source_view(cas, doc_id)
        sentences = view_sentences(view, doc_id, root_deprel=self.config.root_deprel)
        (path,) = self.output_paths(doc_id)
        atomic_write_text(path, format_conllu(sentences))
        return [path]


def view_sentences(
    view: cassis.Cas, doc_id: str, *, root_deprel: str = "root"
) -> list[ConlluSentence]:
    """The CoNLL-U sentences of a view, as ``conllu.writer.v1`` writes them (trainers that
    learn from CoNLL-U, such as UDPipe's, use this too)."""
    text = view.sofa_string or ""
    features = TokenFeatures(view)
    relations = _relations(view, doc_id)
    root_type = view.typesystem.get_type(DEPENDENCY_ROOT)
    sentences = []
    for number, (sentence, tokens) in enumerate(sentences_with_tokens(view, doc_id), start=1):
        if not tokens:
            continue
        index = {(t.begin, t.end): i for i, t in enumerate(tokens, start=1)}
        words = []
        for i, token in enumerate(tokens, start=1):
            pos = features.pos(token)
            head, deprel = _head(
                relations.get((token.begin, token.end)), index, root_type, view, doc_id, root_deprel
            )
            covered = token.get_covered_text()
            form = token_field(covered)
            if not form:
                raise ViewContentError(
                    f"document {doc_id}: token {covered!r} at ({token.begin}, {token.end}) is "
                    "only whitespace, which a CoNLL-U FORM cannot hold; fix the tokenizer "
                    "that made it"
                )
            # A token whose edge whitespace is left out of FORM has space after it.
            space_after = (
                token.end >= len(text) or text[token.end].isspace() or covered[-1].isspace()
            )
            words.append(
                ConlluWord(
                    str(i),
                    form,
                    column_field(features.lemma(token)),
                    column_field(pos.get("coarseValue") if pos is not None else None),
                    column_field(pos.get("PosValue") if pos is not None else None),
                    "_",
                    head,
                    deprel,
                    "_",
                    "_" if space_after else "SpaceAfter=No",
                )
            )
        begin = sentence.begin if sentence is not None else tokens[0].begin
        end = sentence.end if sentence is not None else tokens[-1].end
        sent_id = (sentence.get("id") if sentence is not None else None) or str(number)
        sentence_text = one_line(text[begin:end])
        comments = [f"# sent_id = {sent_id}", f"# text = {sentence_text}"]
        sentences.append(ConlluSentence(comments, words))
    return sentences


def _relations(view: cassis.Cas, doc_id: str) -> dict[tuple[int, int], Any]:
    relations: dict[tuple[int, int], Any] = {}
    for dependency in view.select(DEPENDENCY):
        if (dependency.get("flavor") or "") not in BASIC_FLAVORS:
            continue
        dependent = dependency.get("Dependent")
        if dependent is None:
            raise ViewContentError(
                f"document {doc_id}: Dependency at ({dependency.begin}, {dependency.end}) "
                "has no Dependent"
            )
        span = (dependent.begin, dependent.end)
        if span in relations:
            raise ViewContentError(
                f"document {doc_id}: token at {span} is the Dependent of two basic "
                "dependencies; CoNLL-U gives a word one head"
            )
        relations[span] = dependency
    return relations


def _head(
    dependency: Any,
    index: dict[tuple[int, int], int],
    root_type: Any,
    view: cassis.Cas,
    doc_id: str,
    root_deprel: str,
) -> tuple[str, str]:
    if dependency is None:
        return "_", "_"
    label = dependency.get("DependencyType") or ""
    governor = dependency.get("Governor")
    dependent = dependency.get("Dependent")
    is_root = view.typesystem.subsumes(root_type, dependency.type) or (
        governor is None or (governor.begin, governor.end) == (dependent.begin, dependent.end)
    )
    if is_root:
        return "0", root_deprel if label == ROOT_TYPE_VALUE else column_field(label)
    head = index.get((governor.begin, governor.end))
    if head is None:
        raise ViewContentError(
            f"document {doc_id}: the head of {dependent.get_covered_text()!r} at "
            f"({dependent.begin}, {dependent.end}) is not a token of its sentence"
        )
    return str(head), column_field(label)
