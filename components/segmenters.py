"""What every wrapped sentence splitter and tokenizer shares (pySBD, syntok, BlingFire,
NLTK, spaCy's rule-based ones): document structure, offsets, optional libraries.

- **Structure.** A tool sees one block of text at a time: the text between two
  structure boundaries of the view (Title, Heading, Caption, Paragraph by
  default), blank lines (or every line break), as ``sentences.rules.v1`` cuts
  it (:func:`~casflow.components.rules.sentences.text_blocks`). So no sentence
  or token crosses a heading or paragraph, whatever the tool would do. A
  tokenizer may instead take the view's Sentence annotations as its blocks
  (``use_existing_sentences``), as the Treebank tokenizer expects.
- **Offsets.** Tools report tokens as strings, sometimes with an offset, and
  some change what they return (Treebank's ``````/``''`` for ``"``, syntok
  leaves the hyphen of ``K-12`` out of every token). :func:`align_tokens`
  places each token on the original text (the tool's offset when the text
  there is the token, else the next match, with the known normalisations), so
  a Token's covered text is always the text the tool tokenized; whitespace is
  never a token and no span starts or ends with whitespace; a combining mark
  stays with the letter before it (:func:`with_combining_marks`). Non-whitespace
  characters the tool put in no token become tokens of their own
  (``keep_dropped_characters``), so a tagger downstream sees all the text.
- **Libraries.** Each tool is an optional dependency (the ``tools`` extra);
  a missing one is reported by ``casflow validate`` and when the component is
  built, with the command that installs it.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from abc import abstractmethod
from collections.abc import Iterable, Sequence
from types import ModuleType
from typing import Any, TypeVar

import cassis
from pydantic import Field

from casflow.components.crfsuite.tokenize import is_combining_mark
from casflow.components.rules.sentences import structure_breaks, text_blocks
from casflow.pipeline.component import ComponentConfig, Processor, RunContext
from casflow.typesystem import BLOCK_STRUCTURE_TYPES, SENTENCE, TOKEN, load_typesystem

Span = tuple[int, int]
#: A token as a tool reports it: its text, and where it starts when the tool says.
Piece = tuple[str, int | None]

TOOLS_EXTRA = "tools"


# -- optional libraries -----------------------------------------------------------------


def missing_library(module: str, package: str, extra: str = TOOLS_EXTRA) -> str | None:
    """The message for a library that is not installed, else None (nothing is imported)."""
    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        found = False
    if found:
        return None
    return (
        f"the Python package {package!r} is not installed; install casflow's {extra!r} extra: "
        f"pip install 'casflow[{extra}]' (or pip install {package})"
    )


def import_library(module: str, package: str, extra: str = TOOLS_EXTRA) -> ModuleType:
    """``importlib.import_module(module)``, failing with what to install."""
    problem = missing_library(module, package, extra)
    if problem:
        raise ImportError(problem)
    return importlib.import_module(module)


# -- offsets -------------------------------------------------------------------------------

#: Forms tools write in place of the text they read (Penn Treebank conventions).
NORMALISED_FORMS: dict[str, tuple[str, ...]] = {
    "``": ('"', "\u201c", "\u201d", "''", "``"),
    "''": ('"', "\u201d", "\u201c", "''", "``"),
    "`": ("'", "\u2018"),
    "-LRB-": ("(",),
    "-RRB-": (")",),
    "-LSB-": ("[",),
    "-RSB-": ("]",),
    "-LCB-": ("{",),
    "-RCB-": ("}",),
    "...": ("\u2026",),
    "--": ("\u2013", "\u2014"),
}


_NON_SPACE = re.compile(r"\S+")


def _skip_space(text: str, pos: int, end: int) -> int:
    while pos < end and text[pos].isspace():
        pos += 1
    return pos


def _match_at(text: str, pos: int, form: str, end: int) -> int | None:
    """End of ``form`` (or the original of a normalised form) read at ``pos``, else None."""
    if text.startswith(form, pos) and pos + len(form) <= end:
        return pos + len(form)
    for original in NORMALISED_FORMS.get(form, ()):
        if text.startswith(original, pos) and pos + len(original) <= end:
            return pos + len(original)
    return None


def _trimmed(text: str, begin: int, end: int) -> Span:
    while begin < end and text[begin].isspace():
        begin += 1
    while end > begin and text[end - 1].isspace():
        end -= 1
    return begin, end


def align_tokens(
    text: str, pieces: Iterable[Piece], start: int = 0, end: int | None = None
) -> list[Span]:
    """Spans in ``text[start:end]`` of the tokens a tool returned for that text, in order.

    A token goes where the tool says when the text there is the token (or its
    normalised form); else at the next non-whitespace character when the token
    reads there; else it is placed once the next token is found: the text
    between the two (split at whitespace) is the unreadable token's. A token the text does
    not hold at all gets no span (the text it stood for stays in the gap before
    the next token, which ``keep_dropped_characters`` then covers).
    """
    end = len(text) if end is None else end
    spans: list[Span] = []
    pos = start
    pending = False  # a token could not be read; the next found one closes its gap
    for form, hint in pieces:
        form = form.strip()
        if not form:
            continue  # a tool's whitespace token
        found: Span | None = None
        if hint is not None and hint >= pos:
            stop = _match_at(text, hint, form, end)
            if stop is not None:
                found = (hint, stop)
        if found is None:
            at = _skip_space(text, pos, end)
            stop = _match_at(text, at, form, end)
            if stop is not None:
                found = (at, stop)
            elif not pending:
                pending = True
                continue
            else:
                begin = text.find(form, at, end)
                if begin < 0:
                    continue
                found = (begin, begin + len(form))
        if pending:
            spans.extend(_words(text, pos, found[0]))
            pending = False
        spans.append(found)
        pos = found[1]
    if pending:
        spans.extend(_words(text, pos, end))
    return spans


def _words(text: str, begin: int, end: int) -> list[Span]:
    # The text an unreadable token stood for: one token, unless whitespace divides it
    # (a token never holds whitespace the tool did not show).
    return [(m.start(), m.end()) for m in _NON_SPACE.finditer(text, begin, end)]


def align_sentences(text: str, sentences: Iterable[str]) -> list[Span]:
    """Spans of the sentence strings a tool returned for ``text``, in order.

    Sentences are placed by their non-whitespace characters, so a tool that
    changes whitespace (collapses runs, drops line breaks) still lands exactly;
    a sentence whose characters differ from the text is searched for instead.
    """
    spans: list[Span] = []
    pos = 0
    n = len(text)
    for sentence in sentences:
        chars = [c for c in sentence if not c.isspace()]
        if not chars:
            continue
        begin = _skip_space(text, pos, n)
        i, k = begin, 0
        while k < len(chars) and i < n:
            if text[i].isspace():
                i += 1
            elif text[i] == chars[k]:
                i += 1
                k += 1
            else:
                break
        if k == len(chars):
            spans.append((begin, i))
            pos = i
            continue
        found = text.find(sentence.strip(), pos)
        if found >= 0:
            spans.append((found, found + len(sentence.strip())))
            pos = found + len(sentence.strip())
    return spans


def with_dropped_characters(text: str, spans: Sequence[Span], start: int, end: int) -> list[Span]:
    """``spans`` plus a token for each run of non-whitespace characters none of them covers."""
    result: list[Span] = []
    pos = start
    for begin, stop in [*spans, (end, end)]:
        gap_begin = pos
        i = pos
        while i < begin:
            if text[i].isspace():
                if i > gap_begin:
                    result.append((gap_begin, i))
                gap_begin = i + 1
            i += 1
        if begin > gap_begin:
            result.append((gap_begin, begin))
        if stop > begin:
            result.append((begin, stop))
        pos = max(pos, stop)
    return result


def with_combining_marks(text: str, spans: Sequence[Span], end: int) -> list[Span]:
    """``spans`` (sorted, disjoint) with every combining mark kept on the letter before it.

    A tool that does not know a combining mark (syntok drops U+0301 after ``Cafe``)
    leaves it out of the word or makes it a token of its own; a Token would then end
    between a letter and its accent. A span that starts with a mark right where the
    previous one ends joins it, and marks right after a span that no span covers
    extend it (up to ``end``).
    """
    result: list[Span] = []
    for begin, stop in spans:
        if result and begin == result[-1][1] and is_combining_mark(text[begin]):
            result[-1] = (result[-1][0], stop)
        else:
            result.append((begin, stop))
    for i, (begin, stop) in enumerate(result):
        limit = result[i + 1][0] if i + 1 < len(result) else end
        while stop < limit and is_combining_mark(text[stop]):
            stop += 1
        result[i] = (begin, stop)
    return result


def clean_spans(text: str, spans: Iterable[Span], start: int, end: int) -> list[Span]:
    """Spans clipped to ``[start, end)``, trimmed of whitespace, non-empty, sorted, and
    never overlapping (a span overlapping the previous one starts where that one ends)."""
    result: list[Span] = []
    for begin, stop in sorted(spans):
        begin, stop = _trimmed(text, max(begin, start), min(stop, end))
        if result and begin < result[-1][1]:
            begin, stop = _trimmed(text, result[-1][1], stop)
        if stop > begin:
            result.append((begin, stop))
    return result


# -- the components -----------------------------------------------------------------------


class SegmenterConfig(ComponentConfig):
    structure_types: list[str] = Field(
        default_factory=lambda: list(BLOCK_STRUCTURE_TYPES),
        description="Structure annotations whose begin and end the tool never crosses "
        "(the text is given to the tool one block at a time).",
    )
    structure_view: str | None = Field(
        None,
        description="View to take the structure annotations from (default: the view processed).",
    )
    split_at_blank_lines: bool = Field(True, description="A blank line is always a boundary.")
    split_at_newlines: bool = Field(
        False, description="Every line break is a boundary (one sentence or heading per line)."
    )


class TokenizerConfig(SegmenterConfig):
    use_existing_sentences: bool = Field(
        False,
        description="Tokenize each Sentence of the view on its own (tokens never cross them; "
        "text outside every sentence is tokenized on its own too); else each structure block.",
    )
    keep_dropped_characters: bool = Field(
        True,
        description="Non-whitespace characters the tool leaves out of every token become "
        "tokens of their own.",
    )


def structure_type_problems(config: SegmenterConfig) -> list[str]:
    typesystem = load_typesystem()
    return [
        f"structure_types: the type system has no type {name!r}"
        for name in config.structure_types
        if not typesystem.contains_type(name)
    ]


def with_gaps(regions: Sequence[Span], text: str) -> list[Span]:
    """``regions`` (sorted, e.g. sentences) plus the stretches between them that hold
    more than whitespace, so text outside every sentence is still tokenized."""
    result: list[Span] = []
    pos = 0
    for begin, end in [*regions, (len(text), len(text))]:
        if begin > pos and text[pos:begin].strip():
            result.append((pos, begin))
        if end > begin:
            result.append((max(begin, pos), end))
        pos = max(pos, end)
    return [(b, e) for b, e in result if e > b]


SegmenterConfigT = TypeVar("SegmenterConfigT", bound=SegmenterConfig)
TokenizerConfigT = TypeVar("TokenizerConfigT", bound=TokenizerConfig)


class _Segmenter(Processor[SegmenterConfigT]):
    #: (module, PyPI package) the tool needs; checked before any document is read.
    library: tuple[str, str] | None = None

    @classmethod
    def views_read(cls, config: SegmenterConfigT) -> dict[str, tuple[str, ...]]:
        # Structure types are optional there: a view without headings has no breaks.
        return {config.structure_view: ()} if config.structure_view else {}

    @classmethod
    def check_config(cls, config: SegmenterConfigT, context: RunContext) -> list[str]:
        problems = []
        if cls.library is not None:
            problem = missing_library(*cls.library)
            if problem:
                problems.append(f"{cls.name}: {problem}")
        return problems + structure_type_problems(config)

    def blocks(self, view: cassis.Cas) -> list[Span]:
        text = view.sofa_string or ""
        config = self.config
        source = view.get_view(config.structure_view) if config.structure_view else view
        return text_blocks(
            text,
            structure_breaks(source, config.structure_types),
            split_at_blank_lines=config.split_at_blank_lines,
            split_at_newlines=config.split_at_newlines,
        )


class SentenceSplitter(_Segmenter[SegmenterConfigT]):
    """A tool that splits a block of text into sentences; writes Sentence annotations."""

    produces = (SENTENCE,)

    @abstractmethod
    def split(self, text: str) -> Iterable[Span]:
        """Sentence spans of one block's text (offsets into ``text``; whitespace is trimmed)."""

    def process(self, view: cassis.Cas) -> None:
        text = view.sofa_string or ""
        spans: list[Span] = []
        for start, end in self.blocks(view):
            block = text[start:end]
            if block.isspace() or not block:
                continue
            found = [(start + b, start + e) for b, e in self.split(block)]
            spans.extend(clean_spans(text, found, start, end))
        make = view.typesystem.get_type(SENTENCE)
        view.add_all([make(begin=b, end=e) for b, e in spans])


class Tokenizer(_Segmenter[TokenizerConfigT]):
    """A tool that tokenizes a block of text; writes Token annotations."""

    @classmethod
    def requirements(cls, config: TokenizerConfigT) -> tuple[tuple[str, ...], tuple[str, ...]]:
        return ((SENTENCE,) if config.use_existing_sentences else ()), (TOKEN,)

    @abstractmethod
    def tokenize(self, text: str) -> Iterable[Piece]:
        """The tokens of one block's text: (form, offset into ``text`` or None)."""

    def token_spans(self, text: str, start: int, end: int) -> list[Span]:
        """Token spans of ``text[start:end]`` in view offsets."""
        block = text[start:end]
        if not block or block.isspace():
            return []
        spans = [(start + b, start + e) for b, e in align_tokens(block, self.tokenize(block))]
        spans = clean_spans(text, spans, start, end)
        if self.config.keep_dropped_characters:
            spans = with_dropped_characters(text, spans, start, end)
        return with_combining_marks(text, spans, end)

    def process(self, view: cassis.Cas) -> None:
        text = view.sofa_string or ""
        if self.config.use_existing_sentences:
            sentences = sorted((s.begin, s.end) for s in view.select(SENTENCE))
            regions: list[Span] = with_gaps(sentences, text)
        else:
            regions = self.blocks(view)
        make = view.typesystem.get_type(TOKEN)
        tokens: list[Any] = []
        previous_end = 0
        for start, end in regions:
            start = max(start, previous_end)  # overlapping sentences: tokens stay disjoint
            for b, e in self.token_spans(text, start, end):
                tokens.append(make(begin=b, end=e))
            previous_end = max(previous_end, end)
        view.add_all(tokens)
