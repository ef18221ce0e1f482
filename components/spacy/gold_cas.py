"""A gold CAS view -> :class:`GoldSyntaxDocument` (what ``casflow train`` feeds spaCy).

Reads DKPro ``Sentence``, ``Token`` (with its ``pos`` and ``lemma``) and
``Dependency`` annotations of one view. A dependency ``ROOT`` becomes a token that
heads itself with the label ``root`` (the CoNLL-U / CLEAR name CRAFT uses).
"""

from __future__ import annotations

from typing import Any

import cassis

from casflow.components.spacy.gold import GoldSyntaxDocument
from casflow.typesystem import DEPENDENCY, DEPENDENCY_ROOT, SENTENCE, TOKEN

ROOT_LABEL = "root"


class GoldViewError(ValueError):
    """The gold view lacks an annotation a layer needs."""


def _spans(view: cassis.Cas, type_name: str) -> list[Any]:
    return sorted(view.select(type_name), key=lambda a: (a.begin, a.end))


def gold_syntax_from_view(
    view: cassis.Cas,
    doc_id: str,
    *,
    pos: bool = True,
    dependencies: bool = True,
) -> GoldSyntaxDocument:
    """The sentences, tokens, tags (and dependencies) of ``view`` as a gold document.

    Without ``dependencies`` every token heads itself (no tree is learned).
    """
    text = view.sofa_string or ""
    tokens = _spans(view, TOKEN)
    if not tokens:
        raise GoldViewError(f"document {doc_id}: the gold view has no {TOKEN.rsplit('.', 1)[1]}s")
    sentences = [(s.begin, s.end) for s in _spans(view, SENTENCE)]
    if not sentences:
        raise GoldViewError(f"document {doc_id}: the gold view has no Sentences")
    index = {id(token): i for i, token in enumerate(tokens)}

    def where(token: Any) -> str:
        return f"document {doc_id}: token {text[token.begin : token.end]!r} at {token.begin}"

    tags, coarse, lemmas = [], [], []
    for token in tokens:
        tag = token.pos.PosValue if token.pos is not None else None
        if pos and not tag:
            raise GoldViewError(f"{where(token)} has no POS; the pos layer needs one per token")
        tags.append(tag or "")
        coarse.append((token.pos.coarseValue if token.pos is not None else None) or "")
        lemmas.append((token.lemma.value if token.lemma is not None else None) or "")
    heads = list(range(len(tokens)))
    deprels = [ROOT_LABEL] * len(tokens)
    if dependencies:
        seen = [False] * len(tokens)
        for dep in view.select(DEPENDENCY):
            i = index.get(id(dep.Dependent))
            if i is None:
                raise GoldViewError(
                    f"document {doc_id}: a Dependency at {dep.begin} has a dependent that "
                    "is not a Token of the view"
                )
            seen[i] = True
            if dep.type.name == DEPENDENCY_ROOT or dep.Governor is dep.Dependent:
                continue
            head = index.get(id(dep.Governor))
            if head is None:
                raise GoldViewError(f"{where(dep.Dependent)}: its governor is not a Token")
            heads[i] = head
            deprels[i] = dep.DependencyType or "dep"
        missing = [t for t, s in zip(tokens, seen, strict=True) if not s]
        if missing:
            raise GoldViewError(
                f"{where(missing[0])} has no Dependency ({len(missing)} tokens without one); "
                "the dependencies layer needs one per token"
            )
    gold = GoldSyntaxDocument(
        doc_id,
        text,
        sentences,
        [(t.begin, t.end) for t in tokens],
        tags,
        heads,
        deprels,
        pos=coarse if any(coarse) else [],
        lemmas=lemmas if any(lemmas) else [],
    )
    gold.validate()
    return gold
