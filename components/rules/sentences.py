"""Rule-based sentence splitting for biomedical full text (``sentences.rules.v1``).

Sentences never cross a Title, Heading, Caption or Paragraph boundary from the
document structure in the view, nor a blank line (any line breaks: LF, CR LF, a
lone CR, U+2028, U+2029, U+0085): on full text, headings run into the next
sentence otherwise and are the main source of splitting errors.
Within a block, a sentence ends at ``.``, ``?`` or ``!`` (with any closing
quotes or brackets) followed by whitespace, unless the period belongs to
something else:

- an abbreviation that is (almost) never sentence-final: e.g., i.e., et al.,
  Fig., Figs., Ref., vs., approx., no., sp., spp., Dr., ... plus configurable
  extras; only the first letter is case-folded, so the acronyms "NO." and "CA."
  still end sentences;
- initials and abbreviated genus names ("J. Smith", "E. coli"), unless a
  number follows;
- a lower-case next word continues the sentence, unless it looks like a gene or
  molecule symbol ("p53 is ...", "mRNA levels ...", "β-catenin ..."), a figure
  panel label ("b: ...", "(a) ...") or a legend key ("pe, pigmented epithelium");
- a numeric citation after the period ("... minutes. [13].") stays with the
  sentence before it.

Decimal numbers ("3.5") and citations before the period ("[12]." and
"(Smith et al., 2001).") need no rule: a period is a candidate only when
whitespace follows it, and what precedes it belongs to the sentence.

On the 7 CRAFT dev articles (gold from the CoNLL-U trees, text only, no
structure annotations) sentence-end F is 0.999 and exact sentence-span F 0.997;
the rules were written on the 60 train articles.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import cassis
from pydantic import Field

from casflow.pipeline.component import ComponentConfig, Processor, RunContext
from casflow.typesystem import BLOCK_STRUCTURE_TYPES, SENTENCE

Span = tuple[int, int]

_ABBREVIATIONS_TEXT = """
e.g. i.e. cf. vs. viz. approx. ca. resp. incl. esp. al.
fig. figs. tab. tabs. ref. refs. eq. eqs. no. nos. nr. vol. vols. p. pp. ch. sect. suppl.
dr. drs. mr. mrs. prof. ph. st. mt. inc. ltd. co. corp.
sp. spp. subsp. var. cv. str. chr.
temp. conc.
jan. feb. mar. apr. jun. jul. aug. sep. sept. oct. nov. dec.
"""
#: Abbreviations after which a sentence (almost) never ends, lower-case, with their period.
DEFAULT_ABBREVIATIONS: frozenset[str] = frozenset(_ABBREVIATIONS_TEXT.split())

# Sentence-final punctuation, then closing quotes/brackets, then whitespace or the block end.
_CANDIDATE = re.compile(r"[.!?]+[\"'\u2019\u201d)\]]*(?=\s|$)")
# A line break: CR LF, or a lone LF or CR, or a Unicode line or paragraph separator or
# NEL (a lone CR only, so that CR LF is one break, never a blank line).
_LINE_BREAK = r"(?:\r\n|\r(?!\n)|[\n\x85\u2028\u2029])"
NEWLINE = re.compile(_LINE_BREAK)
# Two line breaks with nothing but other whitespace between them.
_BLANK_LINE = re.compile(_LINE_BREAK + r"[^\S\r\n\x85\u2028\u2029]*" + _LINE_BREAK)
_OPENERS = "\"'\u2018\u201c([{"
_CLOSERS = "\"'\u2019\u201d)]}"
_INITIALS = re.compile(r"(?:[A-Z]\.)+")
_GREEK = re.compile(r"[\u0370-\u03ff\u1f00-\u1fff]")
# Figure panel labels that start a caption sentence: "a:", "b-f:", "c.".
_PANEL_LABEL = re.compile(r"[a-z](?:[-\u2013,][a-z])*[:.]")
# A key of a figure legend: "pe, pigmented epithelium. os, outer segments."
_LEGEND_KEY = re.compile(r"[a-z][\w-]{0,5},")
# A numeric citation placed after the period still belongs to the sentence before it.
_CITATION = re.compile(r"\[\d[\d,\u2013\u2014-]*\][.,;]?")


def _next_word(text: str, pos: int, end: int) -> str:
    while pos < end and text[pos].isspace():
        pos += 1
    stop = pos
    while stop < end and not text[stop].isspace():
        stop += 1
    return text[pos:stop]


def _previous_word(text: str, pos: int, start: int) -> str:
    begin = pos
    while begin > start and not text[begin - 1].isspace():
        begin -= 1
    return text[begin:pos]


def _fold_first(word: str) -> str:
    # Only the first letter is case-folded: "Fig." is "fig.", but the acronyms
    # "CA." and "NO." are not "ca." and "no.".
    return word[:1].lower() + word[1:]


def _starts_sentence(text: str, pos: int, block_start: int) -> bool:
    """Whether only whitespace after a period (or the block start) precedes ``pos``."""
    while pos > block_start and text[pos - 1].isspace():
        pos -= 1
    return pos == block_start or text[pos - 1] == "."


def _looks_like_symbol(word: str) -> bool:
    """A lower-case-initial word that can start a sentence: p53, mRNA, cDNA, iNOS, β-catenin."""
    core = word.lstrip(_OPENERS)
    if not core:
        return False
    if _GREEK.match(core):
        return True
    return any(c.isdigit() or c.isupper() for c in core[1:])


class SentenceRules:
    """Decides sentence ends inside one block of text (no hard breaks inside)."""

    def __init__(self, abbreviations: Iterable[str] = DEFAULT_ABBREVIATIONS) -> None:
        self.abbreviations = frozenset(_fold_first(a) for a in abbreviations)

    def is_boundary(
        self, text: str, match: re.Match[str], block_start: int, block_end: int
    ) -> bool:
        next_word = _next_word(text, match.end(), block_end)
        if not next_word:
            return True
        first = next_word.lstrip(_OPENERS)[:1] or next_word[:1]
        if match.group().rstrip(_CLOSERS)[-1] != ".":
            # "?" and "!" end a sentence unless the text goes on in lower case.
            return not (first.islower() and not _looks_like_symbol(next_word))
        word = _previous_word(text, match.end(), block_start)
        word_start = match.end() - len(word)
        core = word.lstrip(_OPENERS).rstrip(_CLOSERS)
        if _fold_first(core) in self.abbreviations:
            return False
        if _CITATION.fullmatch(next_word):
            return False
        if next_word[0] in _OPENERS:
            # "(A) Physical map ...", "(a) image taken ..." start caption sentences.
            return True
        if _INITIALS.fullmatch(core) and not first.isdigit():
            # "J. Smith", "E. coli", "U.S. Army"; a sentence ending in a lone
            # capital ("protein A.") followed by a word is too rare to split.
            return False
        if len(core) == 2 and core[0].islower() and _starts_sentence(text, word_start, block_start):
            return False  # a panel label "b." at the start of a caption sentence
        if first.islower():
            return (
                _looks_like_symbol(next_word)
                or bool(_PANEL_LABEL.fullmatch(next_word))
                or bool(_LEGEND_KEY.fullmatch(next_word))
            )
        return True

    def split_block(self, text: str, start: int, end: int) -> list[Span]:
        """Sentence spans of ``text[start:end]``, trimmed of whitespace, non-empty."""
        spans: list[Span] = []
        begin = start
        for match in _CANDIDATE.finditer(text, start, end):
            if self.is_boundary(text, match, start, end):
                spans.append((begin, match.end()))
                begin = match.end()
        spans.append((begin, end))
        return [s for s in (_trim(text, b, e) for b, e in spans) if s[1] > s[0]]


def _trim(text: str, begin: int, end: int) -> Span:
    while begin < end and text[begin].isspace():
        begin += 1
    while end > begin and text[end - 1].isspace():
        end -= 1
    return begin, end


def blank_line_breaks(text: str) -> list[int]:
    """Offsets of blank lines (a line break, optional spaces, a line break); a line
    break is LF, CR LF, a lone CR, U+2028, U+2029 or U+0085."""
    return [m.start() for m in _BLANK_LINE.finditer(text)]


def split_sentences(
    text: str,
    hard_breaks: Iterable[int] = (),
    rules: SentenceRules | None = None,
    split_at_blank_lines: bool = True,
    split_at_newlines: bool = False,
) -> list[Span]:
    """Sentence spans of ``text``; no sentence crosses an offset in ``hard_breaks``."""
    rules = rules or SentenceRules()
    spans: list[Span] = []
    for start, end in text_blocks(text, hard_breaks, split_at_blank_lines, split_at_newlines):
        spans.extend(rules.split_block(text, start, end))
    return spans


def text_blocks(
    text: str,
    hard_breaks: Iterable[int] = (),
    split_at_blank_lines: bool = True,
    split_at_newlines: bool = False,
) -> list[Span]:
    """The pieces of ``text`` between consecutive breaks: ``hard_breaks`` (structure
    boundaries), blank lines or every line break (LF, CR LF, a lone CR, U+2028, U+2029
    or U+0085). Every segmenter splits and tokenizes one block at a time, so nothing
    it writes crosses a break."""
    breaks = {0, len(text)}
    breaks.update(b for b in hard_breaks if 0 < b < len(text))
    if split_at_newlines:
        breaks.update(m.start() for m in NEWLINE.finditer(text))
    elif split_at_blank_lines:
        breaks.update(blank_line_breaks(text))
    ordered = sorted(breaks)
    return list(zip(ordered, ordered[1:], strict=False))


def structure_breaks(view: cassis.Cas, type_names: Sequence[str]) -> list[int]:
    """Begin and end offsets of the structure annotations of ``type_names`` in ``view``."""
    breaks: list[int] = []
    for type_name in type_names:
        for annotation in view.select(type_name):
            breaks.append(annotation.begin)
            breaks.append(annotation.end)
    return breaks


class SentenceRulesConfig(ComponentConfig):
    extra_abbreviations: list[str] = Field(
        default_factory=list,
        description='More abbreviations that never end a sentence, with their period ("Tab.").',
    )
    structure_types: list[str] = Field(
        default_factory=lambda: list(BLOCK_STRUCTURE_TYPES),
        description="Structure annotations whose begin and end always end a sentence.",
    )
    structure_view: str | None = Field(
        None,
        description="View to take the structure annotations from (default: the view processed).",
    )
    split_at_blank_lines: bool = Field(True, description="A blank line always ends a sentence.")
    split_at_newlines: bool = Field(
        False, description="Every line break ends a sentence (one sentence or heading per line)."
    )


class SentenceRulesSplitter(Processor[SentenceRulesConfig]):
    name = "sentences.rules.v1"
    description = (
        "Rule-based sentence splitter for biomedical full text; never crosses headings, "
        "titles, captions, paragraphs or blank lines."
    )
    produces = (SENTENCE,)

    def __init__(self, config: SentenceRulesConfig, context: RunContext | None = None) -> None:
        super().__init__(config, context)
        self.rules = SentenceRules(DEFAULT_ABBREVIATIONS | set(config.extra_abbreviations))

    @classmethod
    def views_read(cls, config: SentenceRulesConfig) -> dict[str, tuple[str, ...]]:
        # Structure types are optional there: a view without headings has no breaks.
        return {config.structure_view: ()} if config.structure_view else {}

    @classmethod
    def check_config(cls, config: SentenceRulesConfig, context: RunContext) -> list[str]:
        from casflow.typesystem import load_typesystem

        typesystem = load_typesystem()
        return [
            f"structure_types: the type system has no type {name!r}"
            for name in config.structure_types
            if not typesystem.contains_type(name)
        ]

    def process(self, view: cassis.Cas) -> None:
        text = view.sofa_string or ""
        source = view.get_view(self.config.structure_view) if self.config.structure_view else view
        spans = split_sentences(
            text,
            structure_breaks(source, self.config.structure_types),
            self.rules,
            split_at_blank_lines=self.config.split_at_blank_lines,
            split_at_newlines=self.config.split_at_newlines,
        )
        sentence_type = view.typesystem.get_type(SENTENCE)
        view.add_all([sentence_type(begin=b, end=e) for b, e in spans])
