"""The dictionary tagger's matches as CRF features (stacking, as the AnEM study did
with MetaMap under its CRF).

Each token gets the B/I tag of the match covering it with the match's class
(``dict:B-Cell``, ``dict:I-Organ``; ``dict:O`` outside any match), and its
neighbours' tags. The CRF computes them itself from the settings of
``ner.dictionary.v1`` stored in its model's ``meta.json`` (key ``dictionary``),
the same way when training on gold views and when tagging, so no other view is
needed at either time; the compiled dictionary comes from the on-disk cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from casflow.components.crfsuite.tokenize import Span
from casflow.components.dictionary.cache import default_cache_dir, load_dictionary
from casflow.components.dictionary.entries import Dictionary
from casflow.components.dictionary.tagger import DictionaryTaggerConfig, resolve_ontology
from casflow.pipeline.component import DocumentError, RunContext

#: the key of the dictionary settings in a CRF model's meta.json
META_KEY = "dictionary"


class MissingOntologyError(DocumentError, FileNotFoundError):
    hint = "set CASFLOW_CORPORA, or give the OBO files' paths in the dictionary settings"


class CandidateFeatures:
    """Callable ``(text, spans) -> per-token feature strings`` of one dictionary."""

    def __init__(self, config: DictionaryTaggerConfig, context: RunContext | None = None) -> None:
        self.config = config
        workflow_dir = context.workflow_dir if context is not None else Path.cwd()
        paths = [resolve_ontology(p, workflow_dir) for p in config.ontologies]
        missing = [str(p) for p in paths if not p.is_file()]
        if missing:
            raise MissingOntologyError(
                f"the dictionary features need the ontology files {', '.join(missing)}"
            )
        self.paths = paths
        cache = None
        if config.cache:
            cache = Path(config.cache_dir).expanduser() if config.cache_dir else default_cache_dir()
        self.dictionary: Dictionary = load_dictionary(paths, config.settings(), cache)

    def __call__(self, text: str, spans: Sequence[Span]) -> list[list[str]]:
        return candidate_features(self.dictionary, text, spans)

    def meta(self) -> dict[str, Any]:
        """The settings a model keeps. Ontologies given in the settings are kept as
        the paths they were read from; the default ones (CRAFT's UBERON and CL) are
        left out, so they are looked up again where the model runs (under
        $CASFLOW_CORPORA there), not at the training machine's paths."""
        stored = self.config.model_dump(mode="json")
        if "ontologies" in self.config.model_fields_set:
            stored["ontologies"] = [str(path.resolve()) for path in self.paths]
        else:
            del stored["ontologies"]
        return {META_KEY: stored}

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> CandidateFeatures | None:
        stored = meta.get(META_KEY)
        return cls(DictionaryTaggerConfig.model_validate(stored)) if stored else None


def candidate_features(dictionary: Dictionary, text: str, spans: Sequence[Span]) -> list[list[str]]:
    """Per token: its match tag and its neighbours' (``dict[-1]:``, ``dict[+1]:``)."""
    tags = ["O"] * len(spans)
    starts = {b: i for i, (b, _) in enumerate(spans)}
    for match in dictionary.match(text, spans):
        first = starts[match.begin]
        tags[first] = "B-" + match.entry.label
        i = first + 1
        while i < len(spans) and spans[i][1] <= match.end:
            tags[i] = "I-" + match.entry.label
            i += 1
    out = []
    for i, tag in enumerate(tags):
        features = ["dict:" + tag]
        if i > 0:
            features.append("dict[-1]:" + tags[i - 1])
        if i + 1 < len(tags):
            features.append("dict[+1]:" + tags[i + 1])
        out.append(features)
    return out
