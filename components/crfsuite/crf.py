"""A CRF mention tagger (python-crfsuite): training, saving, loading, tagging.

A model is a folder: ``model.crfsuite`` (the weights) and ``meta.json`` (label
scheme, feature settings, training parameters, lexicon file name), so tagging
always extracts the features the model was trained with.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pycrfsuite

from casflow.components.crfsuite.abbreviations import abbreviation_features, find_abbreviations
from casflow.components.crfsuite.clusters import cluster_features, load_clusters, save_clusters
from casflow.components.crfsuite.features import FeatureSettings, sentence_features
from casflow.components.crfsuite.labels import decode, encode, token_range
from casflow.components.crfsuite.lexicon import Lexicon
from casflow.components.crfsuite.pos_features import PosTagger, pos_features
from casflow.components.crfsuite.postprocess import POSTPROCESSORS
from casflow.components.crfsuite.tokenize import Span, tokenize
from casflow.components.dictionary.features import CandidateFeatures

MODEL_FILE = "model.crfsuite"
META_FILE = "meta.json"
#: meta.json's record of the mention type a model learned (models of casflow train;
#: the shipped ones and older folders have none)
MENTION_TYPE_KEY = "mention_type"
LEXICON_FILE = "lexicon.tsv"
CLUSTERS_FILE = "clusters.tsv"
EMBEDDING_CLUSTERS_FILE = "embedding_clusters.tsv"
POS_FILE = "pos.crfsuite"


@dataclass
class TrainingParams:
    c1: float = 0.1
    c2: float = 0.01
    max_iterations: int = 200
    scheme: str = "BIO"
    min_freq: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


class DocumentContext:
    """What features need from the whole text: its abbreviation definitions.

    Computed once per text (a document, or a BC2GM sentence) and reused for every
    sentence of it.
    """

    def __init__(
        self,
        settings: FeatureSettings,
        lexicon: Lexicon | None,
        clusters: dict[str, tuple[int, ...]] | None = None,
        pos_tagger: PosTagger | None = None,
        embedding_clusters: dict[str, tuple[int, ...]] | None = None,
        candidates: CandidateFeatures | None = None,
    ) -> None:
        self.settings = settings
        self.lexicon = lexicon
        self.candidates = candidates
        self.clusters = clusters
        self.pos_tagger = pos_tagger
        self.embedding_clusters = embedding_clusters
        self._text: str | None = None
        self._abbreviations: dict[str, str] = {}
        self._long_classes: dict[str, list[str]] = {}

    def _prepare(self, text: str) -> None:
        if self._text is not None and self._text is text:
            return
        self._text = text
        self._abbreviations = find_abbreviations(text) if self.settings.abbreviations else {}
        self._long_classes = {}
        if self.lexicon is not None:
            for short, long in self._abbreviations.items():
                spans = tokenize(long)
                words = [long[b:e] for b, e in spans]
                self._long_classes[short] = sorted(
                    {
                        c
                        for _, last, classes in self.lexicon.matches(words)
                        if last == len(words)
                        for c in classes
                    }
                )

    def features(self, text: str, spans: Sequence[Span]) -> list[list[str]]:
        self._prepare(text)
        dictionary: Sequence[Sequence[str]] | None = (
            self.lexicon.token_tags(text, spans) if self.lexicon is not None else None
        )
        extra: list[list[str]] = [[] for _ in spans]
        if self.settings.abbreviations:
            for mine, more in zip(
                extra,
                abbreviation_features(text, spans, self._abbreviations, self._long_classes),
                strict=True,
            ):
                mine.extend(more)
        if self.settings.pos and self.pos_tagger is not None:
            pos_tags = self.pos_tagger.tag(text, spans)
            for mine, more in zip(extra, pos_features(pos_tags), strict=True):
                mine.extend(more)
            # As every model with POS features was trained (the shipped anatomy member 2):
            # the dictionary features then come from the POS tags, one per character of
            # each tag, not from the lexicon. Changing this changes those models' features,
            # so they would neither tag as trained nor retrain byte for byte.
            dictionary = pos_tags
        if self.settings.clusters and self.clusters is not None:
            for mine, more in zip(extra, cluster_features(text, spans, self.clusters), strict=True):
                mine.extend(more)
        if self.settings.embedding_clusters and self.embedding_clusters is not None:
            embedded = cluster_features(text, spans, self.embedding_clusters, prefix="e")
            for mine, more in zip(extra, embedded, strict=True):
                mine.extend(more)
        if self.candidates is not None:
            for mine, more in zip(extra, self.candidates(text, spans), strict=True):
                mine.extend(more)
        return sentence_features(text, spans, self.settings, dictionary, extra)


class _ProgressTrainer(pycrfsuite.Trainer):
    """Prints a line every ``every`` L-BFGS iterations (training takes minutes)."""

    every = 25

    def message(self, message: str) -> None:
        if self.logparser.feed(message) != "iteration":
            return
        info = self.logparser.last_iteration
        if info.get("num", 0) % self.every == 0:
            print(
                f"  iteration {info['num']}: loss {info.get('loss', 0):.1f}, "
                f"active features {info.get('active_features')}",
                flush=True,
            )


def labels_for(
    spans: Sequence[Span], mentions: Sequence[tuple[int, int, str]], scheme: str
) -> list[str]:
    """Token labels for character-span mentions (a mention covers every token it overlaps)."""
    ranges = []
    for begin, end, label in mentions:
        r = token_range(spans, begin, end)
        if r is not None:
            ranges.append((r[0], r[1], label))
    return encode(len(spans), ranges, scheme)


class CrfTagger:
    """Tags token spans of a text with mention spans."""

    def __init__(
        self,
        model_dir: Path,
        settings: FeatureSettings,
        scheme: str,
        lexicon: Lexicon | None = None,
        clusters: dict[str, tuple[int, ...]] | None = None,
        postprocess: Sequence[str] = (),
        pos_tagger: PosTagger | None = None,
        embedding_clusters: dict[str, tuple[int, ...]] | None = None,
        candidates: CandidateFeatures | None = None,
    ) -> None:
        self.model_dir = Path(model_dir)
        self.postprocess = [POSTPROCESSORS[name] for name in postprocess]
        self.settings = settings
        self.scheme = scheme
        self.lexicon = lexicon
        self._context = DocumentContext(
            settings, lexicon, clusters, pos_tagger, embedding_clusters, candidates
        )
        self._tagger = pycrfsuite.Tagger()
        self._tagger.open(str(self.model_dir / MODEL_FILE))

    @classmethod
    def load(cls, model_dir: str | Path) -> CrfTagger:
        model_dir = Path(model_dir)
        meta = json.loads((model_dir / META_FILE).read_text(encoding="utf-8"))
        stored: dict[str, Any] = {
            k: tuple(v) if isinstance(v, list) else v for k, v in meta["features"].items()
        }
        settings = FeatureSettings(**stored)
        lexicon = None
        if meta.get("lexicon"):
            lexicon = Lexicon.load(model_dir / meta["lexicon"])
        clusters = None
        if meta.get("clusters"):
            clusters = load_clusters(model_dir / meta["clusters"])
        pos_tagger = PosTagger(model_dir / meta["pos"]) if meta.get("pos") else None
        embedding_clusters = None
        if meta.get("embedding_clusters"):
            embedding_clusters = load_clusters(model_dir / meta["embedding_clusters"])
        return cls(
            model_dir,
            settings,
            meta["scheme"],
            lexicon,
            clusters,
            meta.get("postprocess", ()),
            pos_tagger,
            embedding_clusters,
            CandidateFeatures.from_meta(meta),
        )

    def features(self, text: str, spans: Sequence[Span]) -> list[list[str]]:
        return self._context.features(text, spans)

    def tag_labels(self, text: str, spans: Sequence[Span]) -> list[str]:
        if not spans:
            return []
        return self._tagger.tag(self.features(text, spans))

    def tag(self, text: str, spans: Sequence[Span]) -> list[tuple[int, int, str, float]]:
        """Mentions ``(begin, end, label, marginal of the first token)`` in one sentence."""
        labels = self.tag_labels(text, spans)
        out = []
        for first, last, label in decode(labels):
            confidence = self._tagger.marginal(labels[first], first)
            out.append((spans[first][0], spans[last - 1][1], label, confidence))
        for step in self.postprocess:
            out = step(text, out)
        return out


def train_crf(
    sequences: Sequence[tuple[list[list[str]], list[str]]],
    model_dir: str | Path,
    params: TrainingParams,
    settings: FeatureSettings,
    lexicon: Lexicon | None = None,
    meta_extra: dict[str, Any] | None = None,
    clusters: dict[str, tuple[int, ...]] | None = None,
    pos_model: Path | None = None,
    embedding_clusters: dict[str, tuple[int, ...]] | None = None,
) -> dict[str, Any]:
    """Train on (features, labels) sequences; write the model folder; return its meta."""
    model_dir = Path(model_dir)
    model_dir.mkdir(parents=True, exist_ok=True)
    trainer = _ProgressTrainer(verbose=False)
    for xseq, yseq in sequences:
        trainer.append(xseq, yseq)
    trainer.select("lbfgs")
    trainer.set_params(
        {
            "c1": params.c1,
            "c2": params.c2,
            "max_iterations": params.max_iterations,
            "feature.possible_transitions": True,
            "feature.minfreq": params.min_freq,
        }
    )
    started = time.time()
    trainer.train(str(model_dir / MODEL_FILE))
    seconds = time.time() - started
    if lexicon is not None:
        lexicon.save(model_dir / LEXICON_FILE)
    if clusters is not None:
        save_clusters(clusters, model_dir / CLUSTERS_FILE)
    if pos_model is not None:
        shutil.copyfile(pos_model, model_dir / POS_FILE)
    if embedding_clusters is not None:
        save_clusters(embedding_clusters, model_dir / EMBEDDING_CLUSTERS_FILE)
    meta = {
        "scheme": params.scheme,
        "features": asdict(settings),
        "training": {
            "c1": params.c1,
            "c2": params.c2,
            "max_iterations": params.max_iterations,
            "min_freq": params.min_freq,
            "iterations_run": trainer.logparser.last_iteration.get("num", None)
            if trainer.logparser.last_iteration
            else None,
            "seconds": round(seconds, 1),
            **params.extra,
        },
        "lexicon": LEXICON_FILE if lexicon is not None else None,
        "clusters": CLUSTERS_FILE if clusters is not None else None,
        "pos": POS_FILE if pos_model is not None else None,
        **(
            {"embedding_clusters": EMBEDDING_CLUSTERS_FILE}
            if embedding_clusters is not None
            else {}
        ),
        **(meta_extra or {}),
    }
    (model_dir / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return meta
