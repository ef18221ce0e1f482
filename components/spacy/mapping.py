"""Exact, fast conversion of spaCy ``Doc`` objects into a CAS view.

Layers (each optional): Sentence; Token; POS (``tag_`` -> PosValue, ``pos_``
-> coarseValue, or the XPOS -> UPOS map when ``pos_`` is empty) linked from Token.pos; Lemma linked from Token.lemma; DKPro
Dependency (flavor ``basic``) and ROOT; NamedEntity or casflow GeneMention /
AnatomyMention through a label mapping.

Conventions:

- Whitespace is never a token: spaCy's whitespace tokens (``is_space``, e.g.
  ``"\\n\\n"``) are skipped, and no span keeps leading or trailing whitespace
  (sentences and entities are trimmed to the non-space tokens they hold).
- Offsets: ``token.idx`` counts Python ``str`` characters (code points), as
  cassis offsets do, so a token starts at ``offset + token.idx`` whatever the
  script (non-ASCII and non-BMP characters included); ``offset`` is where the
  Doc's text starts in the view (non-zero for chunks of a long document).
- Roots follow DKPro: a ROOT annotation whose Governor and Dependent are both the
  root token and whose DependencyType is ``"ROOT"``, whatever spaCy called the
  root relation (English pipelines say ``"ROOT"``, UD-trained ones ``"root"``).
  A root is a token that is its own head, not a token with a given label.
- A dependent whose head is a whitespace token is attached to the nearest
  non-whitespace ancestor and keeps its own label. When the whitespace token is
  itself a root, its first non-whitespace dependent becomes the sentence's ROOT
  and the others are attached to that token, so each tree keeps one root.
- Dependencies (and Dependency annotations) span their dependent token, as in
  DKPro Core.

The loop works on ``Doc.to_array`` columns and a per-vocabulary string cache
rather than on ``Token`` objects, and adds everything at once
(``add_annotations``: one sorted bulk insert per type).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import cassis
import numpy as np

from casflow.components.formats.cas_builders import dependency_annotation
from casflow.components.layers import (
    ALL_LAYERS,
    ENTITY_TYPE_NAMES,
    EntityTarget,
    UnmappedEntities,
    add_annotations,
)
from casflow.components.spacy.upos import UNKNOWN_UPOS
from casflow.typesystem import (
    DEPENDENCY,
    DEPENDENCY_ROOT,
    LEMMA,
    POS,
    SENTENCE,
    TOKEN,
)

if TYPE_CHECKING:
    from spacy.tokens import Doc


@dataclass
class _Columns:
    """Per-token columns of one Doc, with spans already shifted and trimmed."""

    begins: list[int]
    ends: list[int]
    is_space: list[bool]  # whitespace, or no CAS token to attach to
    heads: list[int]  # absolute Doc index of the head
    sent_starts: list[int]  # 1 starts a sentence, -1 does not, 0 unknown
    tags: list[int]  # string hashes
    poses: list[int]
    lemmas: list[int]
    deps: list[int]


def _columns(doc: Doc, text: str, offset: int) -> _Columns:
    from spacy.attrs import DEP, HEAD, IDX, IS_SPACE, LEMMA, LENGTH, POS, SENT_START, TAG

    # HEAD and SENT_START are signed (relative head offset, -1/0/1); the hashes are not.
    signed = doc.to_array([IDX, LENGTH, IS_SPACE, HEAD, SENT_START]).astype(np.int64)
    hashes = doc.to_array([TAG, POS, LEMMA, DEP])
    idxs, lengths, spaces, rel_heads, sent_starts = (signed[:, k].tolist() for k in range(5))
    n = len(idxs)
    if n and idxs[-1] + lengths[-1] + offset > len(text):
        raise ValueError(
            f"the Doc ({idxs[-1] + lengths[-1]} characters) does not fit the view's text "
            f"({len(text)} characters) at offset {offset}"
        )
    begins = [0] * n
    ends = [0] * n
    is_space = [bool(s) for s in spaces]
    for i in range(n):
        if is_space[i]:
            continue
        b = idxs[i] + offset
        e = b + lengths[i]
        if e == b or text[b].isspace() or text[e - 1].isspace():
            while b < e and text[b].isspace():
                b += 1
            while e > b and text[e - 1].isspace():
                e -= 1
            if b == e:
                is_space[i] = True
                continue
        begins[i] = b
        ends[i] = e
    return _Columns(
        begins,
        ends,
        is_space,
        [i + h for i, h in enumerate(rel_heads)],
        sent_starts,
        *(hashes[:, k].tolist() for k in range(4)),
    )


class DocMapper:
    """Writes the chosen layers of spaCy Docs into CAS views (one instance per component)."""

    def __init__(
        self,
        typesystem: cassis.TypeSystem,
        layers: Iterable[str],
        entity_mapping: Mapping[str, EntityTarget] | None = None,
        unmapped_entities: UnmappedEntities = "named_entity",
        upos_map: Mapping[str, str] | None = None,
    ) -> None:
        self.layers = frozenset(layers)
        # XPOS -> UPOS for tokens the pipeline gives no pos_ (see casflow...spacy.upos).
        self.upos_map = dict(upos_map) if upos_map is not None else None
        unknown = self.layers - set(ALL_LAYERS)
        if unknown:
            raise ValueError(f"unknown layers {sorted(unknown)}; known: {', '.join(ALL_LAYERS)}")
        self.entity_mapping = dict(entity_mapping or {})
        self.unmapped_entities = unmapped_entities
        self._bind(typesystem)
        # Hash -> string, valid for one StringStore (reset when the vocabulary changes).
        self._strings: dict[int, str] = {}
        self._store: Any = None

    def _bind(self, typesystem: cassis.TypeSystem) -> None:
        """Look the types up once per type system (a view's may differ from the default)."""
        self._typesystem = typesystem
        self._sentence = typesystem.get_type(SENTENCE)
        self._token = typesystem.get_type(TOKEN)
        self._pos = typesystem.get_type(POS)
        self._lemma = typesystem.get_type(LEMMA)
        self._dependency = typesystem.get_type(DEPENDENCY)
        self._root = typesystem.get_type(DEPENDENCY_ROOT)
        self._entity_types = {k: typesystem.get_type(v) for k, v in ENTITY_TYPE_NAMES.items()}

    def _string(self, key: int) -> str:
        value = self._strings.get(key)
        if value is None:
            value = self._strings[key] = self._store[key]
        return value

    def add_doc(
        self,
        view: cassis.Cas,
        doc: Doc,
        offset: int = 0,
        existing_tokens: Sequence[Any | None] | None = None,
    ) -> int:
        """Add the layers of ``doc`` to ``view``; return the number of annotations added.

        ``doc.text`` must equal ``view.sofa_string[offset:offset + len(doc.text)]``
        (up to characters outside every token). With ``existing_tokens`` (one CAS
        Token or None per Doc token, None for whitespace) no Token is created: POS,
        Lemma and dependencies attach to those tokens.
        """
        if len(doc) == 0:
            return 0
        if view.typesystem is not self._typesystem:
            self._bind(view.typesystem)
        if self._store is not doc.vocab.strings:
            self._strings = {}
            self._store = doc.vocab.strings
        # The view's text, not doc.text: spaCy rebuilds that from every token.
        text = view.sofa_string or ""
        cols = _columns(doc, text, offset)
        if existing_tokens is not None:
            if len(existing_tokens) != len(doc):
                raise ValueError(
                    f"existing_tokens has {len(existing_tokens)} entries for a Doc of "
                    f"{len(doc)} tokens"
                )
            token_fs = list(existing_tokens)
            cols.is_space = [s or t is None for s, t in zip(cols.is_space, token_fs, strict=True)]
        else:
            token_fs = [None] * len(doc)

        layers = self.layers
        # Doc.has_annotation walks Token objects; the columns answer the same faster.
        want_pos = "pos" in layers and (any(cols.tags) or any(cols.poses))
        want_lemma = "lemma" in layers and any(cols.lemmas)
        want_deps = "dependencies" in layers and any(cols.deps)
        new: list[Any] = []
        if want_pos or want_lemma or want_deps or "tokens" in layers:
            self._tokens(cols, token_fs, want_pos, want_lemma, "tokens" in layers, new)
        if want_deps:
            self._dependencies(cols, token_fs, new)
        if "sentences" in layers and (want_deps or any(cols.sent_starts[1:])):
            self._sentences(cols, new)
        if "entities" in layers:
            self._entities(doc, text, offset, new)
        add_annotations(view, new)
        return len(new)

    def _tokens(
        self,
        cols: _Columns,
        token_fs: list[Any | None],
        want_pos: bool,
        want_lemma: bool,
        write_tokens: bool,
        new: list[Any],
    ) -> None:
        """Create (or complete) the tokens with their POS and Lemma."""
        make_token, make_pos, make_lemma = self._token, self._pos, self._lemma
        string = self._string
        begins, ends, is_space = cols.begins, cols.ends, cols.is_space
        tags, poses, lemmas = cols.tags, cols.poses, cols.lemmas
        for i in range(len(token_fs)):
            if is_space[i]:
                continue
            b = begins[i]
            e = ends[i]
            pos_fs = lemma_fs = None
            if want_pos:
                tag = string(tags[i])
                coarse = string(poses[i])
                if not coarse and tag and self.upos_map is not None:
                    coarse = self.upos_map.get(tag, UNKNOWN_UPOS)
                if tag or coarse:
                    pos_fs = make_pos(
                        begin=b, end=e, PosValue=tag or None, coarseValue=coarse or None
                    )
                    new.append(pos_fs)
            if want_lemma:
                lemma = string(lemmas[i])
                if lemma:
                    lemma_fs = make_lemma(begin=b, end=e, value=lemma)
                    new.append(lemma_fs)
            existing = token_fs[i]
            if existing is None:
                token = make_token(begin=b, end=e, pos=pos_fs, lemma=lemma_fs)
                token_fs[i] = token
                if write_tokens:
                    new.append(token)
            else:
                if pos_fs is not None:
                    existing.pos = pos_fs
                if lemma_fs is not None:
                    existing.lemma = lemma_fs

    def _dependencies(self, cols: _Columns, token_fs: Sequence[Any], new: list[Any]) -> None:
        heads, is_space, deps = cols.heads, cols.is_space, cols.deps
        n = len(token_fs)
        replacement_root: dict[int, int] = {}
        make_dep, make_root, string = self._dependency, self._root, self._string
        for i in range(n):
            if is_space[i]:
                continue
            h = heads[i]
            steps = 0
            # Climb out of whitespace heads (bounded: a malformed Doc must not hang us).
            while h != i and is_space[h] and heads[h] != h and steps < n:
                h = heads[h]
                steps += 1
            if h != i and is_space[h]:
                # The whitespace token is a root: its first real dependent takes its place.
                h = replacement_root.setdefault(h, i)
            dependent = token_fs[i]
            new.append(
                dependency_annotation(
                    make_dep, make_root, dependent, None if h == i else token_fs[h], string(deps[i])
                )
            )

    def _sentences(self, cols: _Columns, out: list[Any]) -> None:
        begins, ends, is_space, sent_starts = (
            cols.begins,
            cols.ends,
            cols.is_space,
            cols.sent_starts,
        )
        make = self._sentence
        first = last = -1
        for i in range(len(begins)):
            if i > 0 and sent_starts[i] == 1 and first >= 0:
                out.append(make(begin=begins[first], end=ends[last]))
                first = -1
            if not is_space[i]:
                if first < 0:
                    first = i
                last = i
        if first >= 0:
            out.append(make(begin=begins[first], end=ends[last]))

    def _entities(self, doc: Doc, text: str, offset: int, out: list[Any]) -> None:
        for ent in doc.ents:
            label = ent.label_
            target = self.entity_mapping.get(label)
            if target is None:
                if self.unmapped_entities == "drop":
                    continue
                kind, value = "named_entity", label
            else:
                kind, value = target.type, target.value or label
            b, e = ent.start_char + offset, ent.end_char + offset
            while b < e and text[b].isspace():
                b += 1
            while e > b and text[e - 1].isspace():
                e -= 1
            if b < e:
                out.append(self._entity_types[kind](begin=b, end=e, value=value))
