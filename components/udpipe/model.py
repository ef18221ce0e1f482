"""The UDPipe side of the wrapper: loading a model file, tokenizing with exact character
ranges, tagging and parsing words given as strings. Knows nothing of the CAS.

UDPipe's tokenizer, with its ``ranges`` option, puts ``TokenRange=BEGIN:END`` (Unicode
characters, as Python counts them, from the start of the document: the tokenizer is
reset before each text) in each token's MISC, so tokens map back to the text exactly;
each range is checked against the token's form. A multiword token (``4-6 dunno`` over
the words ``do``, ``n't``, ``know``) is one surface token: its words share its range and
keep their own forms, which the tagger and parser get (how the words become CAS Tokens
is :mod:`casflow.components.formats.multiword_tokens`' convention, applied by
``udpipe.v1``). UDPipe does not take U+2028, U+2029 and U+0085 for whitespace, so each
range is trimmed of whitespace (as Python counts it) at both ends, and a token of
whitespace only is dropped (a sentence left without tokens too).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from casflow.components.metrics.segmentation import trim_span
from casflow.components.models import model_path, where_looked
from casflow.components.segmenters import import_library, missing_library
from casflow.pipeline.component import DocumentError

LIBRARY = ("ufal.udpipe", "ufal.udpipe")
MODEL_FILE = "model.udpipe"


class UdpipeError(DocumentError, RuntimeError):
    """UDPipe refused to tokenize, tag or parse a text (its own message)."""

    hint = (
        "check that the model has the parts the layers need (casflow train writes only "
        "the parts of the layers it learned) and that it is a UDPipe 1 model"
    )


def udpipe_missing() -> str | None:
    return missing_library(*LIBRARY)


def udpipe_module() -> Any:
    return import_library(*LIBRARY)


def model_file(model: str, base_dir: Path | None = None) -> Path:
    """The model file ``model`` names: the file, or a folder holding ``model.udpipe``; a
    relative path from the working directory, else from the workflow's folder."""
    path = model_path(model, base_dir)
    if path.is_dir():
        path = path / MODEL_FILE
    return path


def missing_model(model: str, base_dir: Path | None = None) -> str | None:
    """What to say when ``model`` names no model file (every place looked); None when
    it does."""
    if model_file(model, base_dir).is_file():
        return None
    member = MODEL_FILE if model_path(model, base_dir).is_dir() else None
    return (
        f"no UDPipe model at {where_looked(model, base_dir, member)}; give a .udpipe file "
        "or the model folder of casflow train (train.udpipe.v1)"
    )


@functools.lru_cache(maxsize=4)
def load_model(path: str) -> Any:
    """A UDPipe model, loaded once per process and path."""
    udpipe = udpipe_module()
    if not Path(path).is_file():
        raise FileNotFoundError(
            f"no UDPipe model at {path}; give a .udpipe file, or the model folder written by "
            "casflow train (train.udpipe.v1)"
        )
    model = udpipe.Model.load(path)
    if model is None:
        raise ValueError(f"{path} is not a UDPipe 1 model file (ufal.udpipe could not load it)")
    return model


def c_string(text: str) -> str:
    """``text`` as UDPipe may be given it: its binding passes C strings, which end at the
    first NUL, so the rest of a document after one was never tokenized (and a word was cut
    there). A space in its place keeps every offset."""
    return text.replace("\x00", " ")


class Word(NamedTuple):
    """A word to tag and parse: the span of its surface token and its own form. The
    words of a multiword token share their token's span, each with its form, which is
    then not the text there."""

    begin: int
    end: int
    form: str

    def moved(self, offset: int) -> Word:
        """The word with its offsets ``offset`` further on (from a block's into the text)."""
        return Word(self.begin + offset, self.end + offset, self.form)


def words_at(text: str, spans: Sequence[tuple[int, int]]) -> list[Word]:
    """Each span of ``text`` (another tool's tokens) as one word, its text the form."""
    return [Word(begin, end, text[begin:end]) for begin, end in spans]


@dataclass
class Analysed:
    """One word of a tagged/parsed sentence: its token's span (a multiword token's words
    share one), its own form; ``head`` is a word index (0-based) or None."""

    begin: int
    end: int
    form: str
    lemma: str
    upos: str
    xpos: str
    head: int | None
    deprel: str


def _token_range(misc: str) -> tuple[int, int] | None:
    for item in misc.split("|"):
        key, _, value = item.partition("=")
        if key == "TokenRange":
            begin, _, end = value.partition(":")
            return int(begin), int(end)
    return None


class UdpipeModel:
    """Tokenize, tag and parse with one model file."""

    def __init__(self, path: Path) -> None:
        self.udpipe = udpipe_module()
        self.path = path
        self.model = load_model(str(path))
        self._tokenizer = self.model.newTokenizer("ranges")

    @property
    def has_tokenizer(self) -> bool:
        return self._tokenizer is not None

    def parts(self) -> set[str]:
        """The parts the model has, of tokenizer, tagger and parser: a model trained
        for some layers lacks the others' (UDPipe keeps no list; a tagger and a parser
        are tried on a one-word sentence)."""
        udpipe = self.udpipe
        found = {"tokenizer"} if self.has_tokenizer else set()
        sentence = udpipe.Sentence()
        sentence.addWord("word")
        if self.model.tag(sentence, udpipe.Model.DEFAULT, udpipe.ProcessingError()):
            found.add("tagger")
        if self.model.parse(sentence, udpipe.Model.DEFAULT, udpipe.ProcessingError()):
            found.add("parser")
        return found

    def tokenize(self, text: str) -> list[list[Word]]:
        """Sentences of ``text``, each a list of words (offsets into ``text``)."""
        if self._tokenizer is None:
            raise ValueError(
                f"the UDPipe model {self.path} has no tokenizer; set use_existing_tokens and "
                "use_existing_sentences to tag and parse the view's tokens"
            )
        udpipe = self.udpipe
        # TokenRange counts from the start of the document: without a reset, offsets
        # would go on from the previous text.
        self._tokenizer.resetDocument()
        text = c_string(text)
        self._tokenizer.setText(text)
        error = udpipe.ProcessingError()
        sentences: list[list[Word]] = []
        sentence = udpipe.Sentence()
        while self._tokenizer.nextSentence(sentence, error):
            words = self._sentence_words(sentence, text)
            if words:
                sentences.append(words)
            sentence = udpipe.Sentence()
        if error.occurred():
            raise UdpipeError(f"UDPipe tokenizer of {self.path}: {error.message}")
        return sentences

    @staticmethod
    def _sentence_words(sentence: Any, text: str) -> list[Word]:
        words = list(sentence.words)[1:]  # word 0 is UDPipe's technical root
        ranges: list[tuple[int, int] | None] = [_token_range(w.misc) for w in words]
        in_multiword = set()
        for token in sentence.multiwordTokens:
            span = _token_range(token.misc)
            for word_id in range(token.idFirst, token.idLast + 1):
                ranges[word_id - 1] = span
                in_multiword.add(word_id - 1)
        spans = []
        for i, (word, span) in enumerate(zip(words, ranges, strict=True)):
            if span is None:
                raise RuntimeError(
                    f"UDPipe gave the word {word.form!r} no TokenRange; the tokenizer must run "
                    "with the 'ranges' option"
                )
            if i not in in_multiword and text[span[0] : span[1]] != word.form:
                raise RuntimeError(
                    f"UDPipe's TokenRange {span[0]}:{span[1]} holds "
                    f"{text[span[0] : span[1]]!r}, not the token {word.form!r}"
                )
            spans.append(span)
        # Trimmed after the check against the form: UDPipe's tokens may begin or end with
        # (or be) a line or paragraph separator or a NEL, which it does not take for space.
        # The words of a multiword token share one span, so they stay or go together.
        trimmed = [trim_span(text, begin, end) for begin, end in spans]
        # A word of its own is its trimmed text; a multiword token's words keep the forms
        # UDPipe split it into, for the tagger and parser.
        return [
            Word(begin, end, word.form if i in in_multiword else text[begin:end])
            for i, (word, (begin, end)) in enumerate(zip(words, trimmed, strict=True))
            if end > begin
        ]

    def analyse(self, words: Sequence[Word], *, tag: bool, parse: bool) -> list[Analysed]:
        """Tag (and parse) one sentence of words, each by its own form (the words of a
        multiword token too, which share a span)."""
        udpipe = self.udpipe
        sentence = udpipe.Sentence()
        for word in words:
            sentence.addWord(c_string(word.form))
        # UDPipe reports a failure (a model without a tagger or parser) in its error and
        # leaves the words as they were: untagged, every head the root.
        error = udpipe.ProcessingError()
        if (tag or parse) and not self.model.tag(sentence, udpipe.Model.DEFAULT, error):
            raise UdpipeError(f"UDPipe could not tag with {self.path}: {error.message}")
        if parse and not self.model.parse(sentence, udpipe.Model.DEFAULT, error):
            raise UdpipeError(f"UDPipe could not parse with {self.path}: {error.message}")
        result = []
        for given, word in zip(words, list(sentence.words)[1:], strict=True):
            result.append(
                Analysed(
                    given.begin,
                    given.end,
                    word.form,
                    word.lemma if tag else "",
                    word.upostag if tag else "",
                    word.xpostag if tag else "",
                    (word.head - 1 if word.head > 0 else None) if parse else None,
                    word.deprel if parse else "",
                )
            )
        return result
