"""``spacy.pipeline.v1``: run a spaCy (or scispaCy) pipeline over a CAS view.

The pipeline loads once per worker process (see ``loading``); ``process_batch``
sends every text of a batch through one ``nlp.pipe`` call and writes the Docs
into the views with ``mapping.DocMapper``.

- ``use_existing_tokens``: the view's Token annotations are the tokenization.
  A Doc is built from their words (``Doc(vocab, words, spaces)``; the text
  between tokens becomes whitespace tokens, with any non-space character there
  blanked so offsets stay aligned) and the remaining pipes run on it; POS,
  Lemma and dependencies attach to the existing tokens and no Token is written.
- ``use_existing_sentences``: the view's Sentence annotations are the sentence
  boundaries. Every token gets ``is_sent_start`` True or False before the
  parser runs; spaCy's parser (and senter/sentencizer) keep preset values, so
  its trees never cross them. No Sentence is written.
- Long texts (over ``max_chunk_chars``, never more than ``nlp.max_length``) are
  processed in chunks cut, by preference, at document structure boundaries in
  the view (Section, Paragraph, Heading, Title, Caption), then blank lines,
  then sentence ends, then any whitespace (between existing tokens when
  ``use_existing_tokens``), each in the second half of the chunk window; a
  chunk's offsets are shifted back by where it starts. With
  ``use_existing_sentences`` no cut falls inside a given sentence (the parser
  would see two sentences there, and give it two roots), except in one longer
  than the chunk window itself (or a run of sentences with no whitespace between
  them): that one is cut at whitespace, and each part is parsed as a sentence of
  its own.
- A model that learned from given sentences (``meta.json``: ``casflow_direction:
  right_to_left`` or ``casflow_given_segmentation: true``, see ``right_to_left``)
  needs both, and runs one sentence at a time, as it learned; a right-to-left one
  reads every sentence with its tokens reversed, and its analysis comes back in
  reading order.
"""

from __future__ import annotations

import bisect
import importlib.util
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import cassis
from pydantic import Field, model_validator

from casflow.components.layers import (
    ALL_LAYERS,
    EntityTarget,
    Layer,
    UnmappedEntities,
    produced_types,
)
from casflow.components.spacy.cli_stand_in import cli_stand_in
from casflow.components.spacy.loading import (
    TORCH,
    TokenizerChoice,
    load_pipeline,
    model_needs_torch,
    model_problem,
    pipeline_config_path,
    pipeline_factories,
)
from casflow.components.spacy.mapping import DocMapper
from casflow.components.spacy.right_to_left import (
    RIGHT_TO_LEFT,
    forward_doc,
    model_direction,
    read_parse,
    reads_given_sentences,
    saved_model_meta,
    sentence_doc,
)
from casflow.components.spacy.upos import model_upos_map, read_upos_map
from casflow.pipeline.component import ComponentConfig, Processor, RunContext
from casflow.typesystem import (
    CAPTION,
    HEADING,
    PARAGRAPH,
    SECTION,
    SENTENCE,
    TITLE,
    TOKEN,
    load_typesystem,
)

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc

DEFAULT_LAYERS: tuple[Layer, ...] = ("sentences", "tokens", "pos", "lemma", "dependencies")
CHUNK_STRUCTURE_TYPES = (SECTION, PARAGRAPH, HEADING, TITLE, CAPTION)

# What the common spaCy factories write, by layer. A pipeline with any other
# factory is not judged: it may write anything.
FACTORY_LAYERS: dict[str, frozenset[str]] = {
    "tok2vec": frozenset(),
    "transformer": frozenset(),
    "curated_transformer": frozenset(),
    "tagger": frozenset({"pos"}),
    "morphologizer": frozenset({"pos"}),
    "attribute_ruler": frozenset({"pos"}),
    "lemmatizer": frozenset({"lemma"}),
    "trainable_lemmatizer": frozenset({"lemma"}),
    "parser": frozenset({"dependencies", "sentences"}),
    "beam_parser": frozenset({"dependencies", "sentences"}),
    "senter": frozenset({"sentences"}),
    "sentencizer": frozenset({"sentences"}),
    "ner": frozenset({"entities"}),
    "beam_ner": frozenset({"entities"}),
    "entity_ruler": frozenset({"entities"}),
    "merge_noun_chunks": frozenset(),
    "merge_entities": frozenset(),
}


class SpacyPipelineConfig(ComponentConfig):
    model: str = Field(
        description=(
            "Installed pipeline package (en_core_sci_md) or folder of a saved pipeline "
            "(the one holding config.cfg; relative paths also from the workflow's folder)."
        )
    )
    layers: list[Layer] = Field(
        default_factory=lambda: list(DEFAULT_LAYERS),
        description=f"Layers to write, from: {', '.join(ALL_LAYERS)}.",
    )
    use_existing_tokens: bool = Field(
        False,
        description="Take the view's Token annotations as the tokenization (no Token is written).",
    )
    use_existing_sentences: bool = Field(
        False,
        description="Take the view's Sentence annotations as fixed sentence boundaries "
        "(the parser keeps them; no Sentence is written).",
    )
    tokenizer: TokenizerChoice = Field(
        "pipeline",
        description="pipeline: the pipeline's own tokenizer; scispacy_combined: scispaCy's "
        "combined_rule_tokenizer.",
    )
    entity_mapping: dict[str, EntityTarget] = Field(
        default_factory=dict,
        description="spaCy entity label -> {type: gene|anatomy|named_entity, value: class label}.",
    )
    unmapped_entities: UnmappedEntities = Field(
        "named_entity",
        description="Entities whose label is not in entity_mapping: keep as NamedEntity, or drop.",
    )
    batch_size: int = Field(64, ge=1, description="Texts per batch in nlp.pipe.")
    max_chunk_chars: int = Field(
        100_000,
        ge=100,
        description="Longer texts are processed in structure-aware chunks of at most this "
        "many characters (also capped at the pipeline's nlp.max_length).",
    )
    disable: list[str] = Field(default_factory=list, description="Pipes to disable.")
    upos_map: str | None = Field(
        None,
        description="TSV of 'XPOS<TAB>UPOS' lines giving the UPOS (POS.coarseValue) of tokens "
        "the pipeline leaves without one; none: the model folder's upos.tsv when it has one "
        "(casflow:craft_syntax does: learned from CRAFT's training treebank).",
    )

    @model_validator(mode="after")
    def _consistent(self) -> SpacyPipelineConfig:
        needs_tokens = {"pos", "lemma", "dependencies"} & set(self.layers)
        if needs_tokens and "tokens" not in self.layers and not self.use_existing_tokens:
            raise ValueError(
                f"layers {sorted(needs_tokens)} attach to tokens: add 'tokens' to layers "
                "or set use_existing_tokens: true"
            )
        if self.use_existing_tokens and self.tokenizer != "pipeline":
            raise ValueError(
                "tokenizer is not used when use_existing_tokens is true; remove one of them"
            )
        return self

    def written_layers(self) -> list[str]:
        """The layers actually written (existing tokens and sentences are not rewritten)."""
        skip = set()
        if self.use_existing_tokens:
            skip.add("tokens")
        if self.use_existing_sentences:
            skip.add("sentences")
        return [layer for layer in self.layers if layer not in skip]


def missing_layers(factories: Sequence[str], layers: Sequence[str]) -> list[str]:
    """Layers no pipe of ``factories`` writes (none when a factory is not a known one)."""
    if any(f not in FACTORY_LAYERS for f in factories):
        return []
    produced = {"tokens"}.union(*(FACTORY_LAYERS[f] for f in factories))
    return [layer for layer in layers if layer not in produced]


# -- chunking -----------------------------------------------------------------

_BLANK_LINE = re.compile(r"\n[^\S\n]*\n\s*")
_SENTENCE_END = re.compile(r"[.!?][\"'\u2019\u201d)\]]*\s+|\n\s*")
_WHITESPACE = re.compile(r"\s+")


def plan_chunks(
    text: str,
    max_chars: int,
    structure_breaks: Sequence[int] = (),
    sentence_breaks: Sequence[int] = (),
    token_spans: Sequence[tuple[int, int]] | None = None,
    given_sentences: Sequence[tuple[int, int]] | None = None,
) -> list[tuple[int, int]]:
    """``(begin, end)`` chunks covering ``text``, each at most ``max_chars`` long.

    Cuts are taken, by preference, from ``structure_breaks``, blank lines,
    ``sentence_breaks`` and sentence-final punctuation, then any whitespace, as
    late as possible but in the second half of the window. With ``token_spans``
    a cut never falls inside one of them. With ``given_sentences`` (fixed
    sentence boundaries) a cut never falls inside one of them either, unless a
    window holds no place outside them (a sentence longer than ``max_chars``,
    or, without ``token_spans``, sentences with no whitespace between them):
    only then is a sentence cut, at whitespace.
    Only a text without whitespace for ``max_chars`` characters is cut hard.
    """
    n = len(text)
    if n <= max_chars:
        return [(0, n)]

    def usable(offsets: Sequence[int]) -> list[int]:
        # Without tokens to check against, only a cut beside whitespace is sure not to
        # split a token ("end.Next" may be one token to the tokenizer).
        if token_spans is not None:
            return sorted(set(offsets))
        return sorted(
            {p for p in offsets if 0 < p < n and (text[p - 1].isspace() or text[p].isspace())}
        )

    whitespace = [m.end() for m in _WHITESPACE.finditer(text)]
    levels = [
        usable(structure_breaks),
        [m.end() for m in _BLANK_LINE.finditer(text)],
        usable([*sentence_breaks, *(m.end() for m in _SENTENCE_END.finditer(text))]),
        whitespace,
    ]
    inside = _inside_spans(given_sentences) if given_sentences is not None else None
    # Each tier is tried in the second half of the window, then anywhere in it,
    # before the next: a cut inside a given sentence comes only after every cut
    # outside them.
    tiers = [levels]
    if inside is not None:
        tiers = [[[p for p in level if not inside(p)] for level in levels], [whitespace]]
    token_begins = [b for b, _ in token_spans] if token_spans is not None else None
    chunks = []
    start = 0
    while n - start > max_chars:
        limit = start + max_chars
        cut = None
        for tier_index, tier in enumerate(tiers):
            for low in (start + max_chars // 2, start + 1):
                for level in tier:
                    candidate = _last_at_most(level, limit)
                    if candidate is not None and candidate >= low:
                        cut = _outside_tokens(candidate, start, token_spans, token_begins)
                        # Moved back to a token's begin, it may have gone into a sentence.
                        if cut is not None and tier_index == 0 and inside and inside(cut):
                            cut = None
                        if cut is not None:
                            break
                if cut is not None:
                    break
            if cut is not None:
                break
        if cut is None:
            cut = _outside_tokens(limit, start, token_spans, token_begins) or limit
        chunks.append((start, cut))
        start = cut
    chunks.append((start, n))
    return chunks


def _inside_spans(spans: Sequence[tuple[int, int]]) -> Any:
    """A function telling whether an offset falls strictly inside one of ``spans``."""
    ordered = sorted(spans)
    begins = [b for b, _ in ordered]
    # the furthest end among the spans begun so far, so nested or overlapping
    # spans are covered too
    reach: list[int] = []
    for _, end in ordered:
        reach.append(max(end, reach[-1]) if reach else end)

    def inside(offset: int) -> bool:
        i = bisect.bisect_left(begins, offset) - 1
        return i >= 0 and offset < reach[i]

    return inside


def _last_at_most(sorted_values: Sequence[int], limit: int) -> int | None:
    i = bisect.bisect_right(sorted_values, limit)
    return sorted_values[i - 1] if i else None


def _outside_tokens(
    cut: int,
    start: int,
    token_spans: Sequence[tuple[int, int]] | None,
    token_begins: Sequence[int] | None,
) -> int | None:
    """``cut``, or the begin of the token it falls inside (None if that is not after ``start``)."""
    if token_spans is None or token_begins is None:
        return cut
    i = bisect.bisect_left(token_begins, cut) - 1
    if i >= 0 and token_spans[i][0] < cut < token_spans[i][1]:
        cut = token_spans[i][0]
    return cut if cut > start else None


# -- preparing the inputs -------------------------------------------------------


@dataclass
class _Job:
    """One text (or prebuilt Doc) for nlp.pipe and where its output goes."""

    view: cassis.Cas
    offset: int
    source: str | Doc
    tokens: list[Any | None] | None = None
    # one sentence at a time: its Doc in reading order, which the parse annotates
    forward: Doc | None = None


def _sentence_regions(sentences: Sequence[tuple[int, int]]) -> Any:
    """A function giving each character offset a region id: inside sentence j, or a gap."""
    begins = [b for b, _ in sentences]
    ends = [e for _, e in sentences]

    def region(offset: int) -> int:
        j = bisect.bisect_right(begins, offset) - 1
        if j >= 0 and offset < ends[j]:
            return 2 * j + 1
        return 2 * (j + 1)

    return region


def _sent_starts(begins: Sequence[int | None], region: Any) -> list[bool | None]:
    """is_sent_start per Doc token (a None begin marks whitespace, which never starts one).

    Inside a given sentence every token is fixed (True for its first, False
    after); text outside every sentence starts a new one and is left to the
    parser (None) after that. A Doc's first token always starts a sentence, so
    a given sentence longer than a chunk (the only one ``plan_chunks`` cuts)
    is parsed as one tree per chunk.
    """
    starts: list[bool | None] = []
    previous = None
    for i, begin in enumerate(begins):
        if begin is None:
            starts.append(i == 0)
            continue
        current = region(begin)
        if i == 0 or current != previous:
            starts.append(i == 0 or previous is not None)
        else:
            starts.append(False if current % 2 else None)
        previous = current
    return starts


def _blanked(gap: str) -> str:
    # Text between tokens that is not whitespace is no token either: blank it so
    # the Doc keeps the view's offsets.
    return gap if gap.isspace() else "".join(c if c.isspace() else " " for c in gap)


def _doc_from_tokens(
    nlp: Language,
    text: str,
    start: int,
    tokens: Sequence[Any],
    region: Any | None,
) -> tuple[Doc, list[Any | None]]:
    from spacy.tokens import Doc

    words: list[str] = []
    spaces: list[bool] = []
    aligned: list[Any | None] = []
    begins: list[int | None] = []
    pos = start
    for token in tokens:
        if token.begin >= token.end:
            continue  # an empty token has no text to tag
        if token.begin < pos:
            raise ValueError(
                f"Token annotations overlap at {token.begin}-{token.end} "
                f"({text[token.begin : token.end]!r}); use_existing_tokens needs "
                "non-overlapping tokens"
            )
        gap = text[pos : token.begin]
        if gap:
            if words and gap[0] == " ":
                spaces[-1] = True
                gap = gap[1:]
            if gap:
                words.append(_blanked(gap))
                spaces.append(False)
                aligned.append(None)
                begins.append(None)
        words.append(text[token.begin : token.end])
        spaces.append(False)
        aligned.append(token)
        begins.append(token.begin)
        pos = token.end
    # spaCy's annotation takes ints too (a list is invariant)
    sent_starts: list[bool | int | None] | None = (
        list(_sent_starts(begins, region)) if region is not None else None
    )
    return Doc(nlp.vocab, words=words, spaces=spaces, sent_starts=sent_starts), aligned


def _preset_sentences(doc: Doc, offset: int, region: Any) -> Doc:
    begins = [None if t.is_space else offset + t.idx for t in doc]
    for token, start in zip(doc, _sent_starts(begins, region), strict=True):
        token.is_sent_start = start
    return doc


# -- the component --------------------------------------------------------------


def _upos_path(path: str, context: RunContext) -> Path:
    candidate = Path(path).expanduser()
    if candidate.is_absolute() or candidate.exists():
        return candidate
    return context.workflow_dir / candidate


class SpacyPipeline(Processor[SpacyPipelineConfig]):
    name = "spacy.pipeline.v1"
    description = (
        "Runs a spaCy or scispaCy pipeline: sentences, tokens, POS, lemmas, DKPro "
        "dependencies, entities (GeneMention/AnatomyMention through a label mapping)."
    )

    def __init__(self, config: SpacyPipelineConfig, context: RunContext | None = None) -> None:
        super().__init__(config, context)
        self.nlp = load_pipeline(
            config.model,
            disable=config.disable,
            tokenizer=config.tokenizer,
            base_dir=self.context.workflow_dir,
        )
        factories = [self.nlp.get_pipe_meta(name).factory for name in self.nlp.pipe_names]
        missing = missing_layers(factories, config.written_layers())
        if missing:
            raise ValueError(_missing_message(config, missing, self.nlp.pipe_names))
        self.right_to_left = model_direction(self.nlp.meta) == RIGHT_TO_LEFT
        self.per_sentence = reads_given_sentences(self.nlp.meta)
        if self.per_sentence:
            problem = _given_sentences_problem(config, self.nlp.meta)
            if problem:
                raise ValueError(problem)
        self.max_chars = min(config.max_chunk_chars, self.nlp.max_length)
        self.mapper = DocMapper(
            load_typesystem(),
            config.written_layers(),
            config.entity_mapping,
            config.unmapped_entities,
            upos_map=(
                read_upos_map(_upos_path(config.upos_map, self.context))
                if config.upos_map is not None
                else model_upos_map(getattr(self.nlp, "path", None))
            ),
        )

    @classmethod
    def requirements(cls, config: SpacyPipelineConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
        requires: list[str] = []
        if config.use_existing_tokens:
            requires.append(TOKEN)
        if config.use_existing_sentences:
            requires.append(SENTENCE)
        produces = produced_types(
            config.written_layers(), config.entity_mapping, config.unmapped_entities
        )
        return tuple(requires), produces

    @classmethod
    def modules_used(cls, config: SpacyPipelineConfig, context: RunContext) -> frozenset[str]:
        # A torch layer reaches torch through thinc, which checks for it once per process.
        return (
            frozenset({TORCH})
            if model_needs_torch(config.model, context.workflow_dir)
            else frozenset()
        )

    @classmethod
    def modules_not_used(cls, config: SpacyPipelineConfig, context: RunContext) -> frozenset[str]:
        return (
            frozenset()
            if model_needs_torch(config.model, context.workflow_dir)
            else frozenset({TORCH})
        )

    @classmethod
    def stand_in_modules(
        cls, config: SpacyPipelineConfig, context: RunContext
    ) -> Mapping[str, ModuleType]:
        return cli_stand_in()

    @classmethod
    def check_config(cls, config: SpacyPipelineConfig, context: RunContext) -> list[str]:
        if config.tokenizer == "scispacy_combined" and importlib.util.find_spec("scispacy") is None:
            return ["tokenizer scispacy_combined needs scispaCy: pip install scispacy"]
        problem = model_problem(config.model, context.workflow_dir)
        if problem:
            return [problem]
        if config.upos_map is not None:
            try:
                read_upos_map(_upos_path(config.upos_map, context))
            except (OSError, ValueError) as exc:
                return [f"upos_map: {exc}"]
        config_path = pipeline_config_path(config.model, context.workflow_dir)
        if config_path is None:
            return []
        meta = saved_model_meta(config_path.parent)
        if reads_given_sentences(meta):
            problem = _given_sentences_problem(config, meta)
            if problem:
                return [problem]
        try:
            factories = pipeline_factories(config_path, config.disable)
        except Exception as exc:
            return [f"cannot read {config_path}: {exc}; is it a spaCy pipeline config?"]
        if factories is None:
            return []
        missing = missing_layers(factories, config.written_layers())
        return [_missing_message(config, missing, factories)] if missing else []

    def process(self, view: cassis.Cas) -> None:
        self.process_batch([view])

    def process_batch(self, views: Sequence[cassis.Cas]) -> None:
        jobs = [job for view in views for job in self._jobs(view)]
        # Every Doc is made before any view is written: when the batch fails, the
        # runner retries its documents one by one, and they must still be untouched.
        docs = list(self.nlp.pipe((job.source for job in jobs), batch_size=self.config.batch_size))
        for job, doc in zip(jobs, docs, strict=True):
            if job.forward is not None:
                assert job.tokens is not None
                real = [token is not None for token in job.tokens]
                parse = read_parse(doc, right_to_left=self.right_to_left)
                doc = forward_doc(job.forward, real, parse)
            self.mapper.add_doc(job.view, doc, job.offset, job.tokens)

    def _jobs(self, view: cassis.Cas) -> Iterator[_Job]:
        text = view.sofa_string or ""
        if not text:
            return
        config = self.config
        tokens = list(view.select(TOKEN)) if config.use_existing_tokens else None
        sentences = (
            [(s.begin, s.end) for s in view.select(SENTENCE)]
            if config.use_existing_sentences or len(text) > self.max_chars
            else []
        )
        if self.per_sentence:
            assert tokens is not None
            yield from self._sentence_jobs(view, text, tokens, sentences)
            return
        region = _sentence_regions(sentences) if config.use_existing_sentences else None
        chunks = [(0, len(text))]
        if len(text) > self.max_chars:
            structure = [
                offset
                for type_name in CHUNK_STRUCTURE_TYPES
                for a in view.select(type_name)
                for offset in (a.begin, a.end)
            ]
            chunks = plan_chunks(
                text,
                self.max_chars,
                structure,
                [e for _, e in sentences],
                [(t.begin, t.end) for t in tokens] if tokens is not None else None,
                sentences if config.use_existing_sentences else None,
            )
        token_begins = [t.begin for t in tokens] if tokens is not None else []
        for start, end in chunks:
            if tokens is not None:
                lo = bisect.bisect_left(token_begins, start)
                hi = bisect.bisect_left(token_begins, end)
                if lo == hi:
                    continue
                doc, aligned = _doc_from_tokens(self.nlp, text, start, tokens[lo:hi], region)
                yield _Job(view, start, doc, aligned)
            elif region is not None:
                yield _Job(
                    view,
                    start,
                    _preset_sentences(self.nlp.make_doc(text[start:end]), start, region),
                )
            else:
                yield _Job(view, start, text[start:end])

    def _sentence_jobs(
        self,
        view: cassis.Cas,
        text: str,
        tokens: Sequence[Any],
        sentences: Sequence[tuple[int, int]],
    ) -> Iterator[_Job]:
        """One job per sentence for a model that learned from given sentences: its words
        (reversed for a right-to-left model), and the reading-order Doc, with the
        whitespace between tokens, that the analysis goes back onto. Tokens outside
        every sentence are not analysed."""
        token_begins = [t.begin for t in tokens]
        for begin, end in sentences:
            lo = bisect.bisect_left(token_begins, begin)
            hi = bisect.bisect_left(token_begins, end)
            inside = [t for t in tokens[lo:hi] if t.begin < t.end]
            if not inside:
                continue
            forward, aligned = _doc_from_tokens(self.nlp, text, inside[0].begin, inside, None)
            words = []
            space_after = []
            for i, token in enumerate(forward):
                if aligned[i] is None:
                    continue
                words.append(token.text)
                space_after.append(
                    bool(token.whitespace_) or (i + 1 < len(forward) and aligned[i + 1] is None)
                )
            source = sentence_doc(
                self.nlp.vocab, words, space_after, right_to_left=self.right_to_left
            )
            yield _Job(view, inside[0].begin, source, aligned, forward)


def _given_sentences_problem(config: SpacyPipelineConfig, meta: Mapping[str, Any]) -> str | None:
    if config.use_existing_tokens and config.use_existing_sentences:
        return None
    how = (
        "reads sentences right to left (its meta.json: casflow_direction: right_to_left)"
        if model_direction(meta) == RIGHT_TO_LEFT
        else "learned from given sentences one at a time (its meta.json: "
        "casflow_given_segmentation: true)"
    )
    return (
        f"spaCy pipeline {config.model!r} {how}, so it cannot segment raw text: set "
        "use_existing_tokens: true and use_existing_sentences: true over a view that has "
        "Token and Sentence annotations"
    )


def _missing_message(
    config: SpacyPipelineConfig, missing: Sequence[str], pipes: Sequence[str]
) -> str:
    pronoun = "it" if len(missing) == 1 else "them"
    # The default layers name every layer, so a pipeline without a lemmatizer (the
    # shipped craft_syntax) fails on them: say the list that works, ready to paste.
    kept = [layer for layer in config.layers if layer not in missing]
    return (
        f"spaCy pipeline {config.model!r} has no pipe that writes {', '.join(missing)} "
        f"(its pipes: {', '.join(pipes) or 'none'}); remove {pronoun} from layers "
        f"(layers: [{', '.join(kept)}]), or use a pipeline that has them"
    )
