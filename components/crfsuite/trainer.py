"""``train.crf.mentions.v1``: the CRF mention taggers (genes, anatomy) from gold views.

The trainer of ``casflow train`` for ``ner.crf.v1`` models. A gold view becomes a
:class:`~.gold_view.MentionDocument` (sentences on casflow tokens); ``train``
builds the features (jackknifed training-mention lexicon, ontology and CRAFT
lexicons, word clusters, POS features, post-processing) and writes a model folder
the runtime component loads as it loads the shipped ones: one CRF, or a vote of
member CRFs (:mod:`.ensemble`). ``evaluate`` runs that component on the raw text
of each document and scores its mentions as the model cards do.

Everything else a model is made from is named in the settings
(``resources``): the gold views of the CRAFT lexicon, the word clusters' text and
the POS tagger, read by their readers (:mod:`casflow.pipeline.gold_sources`), and
the ontologies (OBO). They are built once per run and shared by the members and
folds; cluster and POS files are caches kept where the settings name them. A
member whose folder was trained with the same settings and data is not trained
again (:mod:`casflow.pipeline.fingerprints`), so an interrupted run resumes.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator, Sequence
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any, ClassVar

import cassis

from casflow.cas.sofa import set_sofa_text
from casflow.components.crfsuite.crf import (
    MENTION_TYPE_KEY,
    META_FILE,
    DocumentContext,
    TrainingParams,
    labels_for,
    train_crf,
)
from casflow.components.crfsuite.features import FeatureSettings
from casflow.components.crfsuite.gold_view import (
    MENTION_LAYER_TYPES,
    MENTION_LAYERS,
    Example,
    MentionDocument,
    mention_document,
    mention_layer_problems,
    one_mention_layer,
)
from casflow.components.crfsuite.lexicon import Lexicon
from casflow.components.crfsuite.lexicons import (
    ONTOLOGY_PREFIXES,
    mention_lexicon,
    merged,
    ontology_lexicon,
    view_mention_texts,
)
from casflow.components.crfsuite.trainer_config import (
    CrfMentionTrainerConfig,
    CrfOptions,
    CrfResources,
    DefinitionText,
)
from casflow.components.dictionary.features import CandidateFeatures
from casflow.components.dictionary.tagger import DictionaryTagger
from casflow.components.inputs import resolve_input
from casflow.components.unlabelled_text import ontology_path as unlabelled_ontology_path
from casflow.components.unlabelled_text import ontology_problems, read_texts
from casflow.pipeline.component import ComponentConfig, RunContext, Trainer, TrainingContext
from casflow.pipeline.counts import Counts, add_counts
from casflow.pipeline.files import atomic_write_text
from casflow.pipeline.fingerprints import Fingerprint, forget, mark_done, step_status
from casflow.pipeline.gold_sources import check_source, read_source
from casflow.pipeline.locks import built_once
from casflow.pipeline.training import LogLines
from casflow.typesystem import SENTENCE, load_typesystem, short_name

Log = Callable[[str], None]
MODEL_DIR = "model"
#: the shipped spaCy pipeline whose static vectors (word2vec, CRAFT + BC2GM text) make
#: the embedding clusters
VECTORS_MODEL = "craft_syntax"
#: the ontologies whose concept-mention texts a CRAFT lexicon may hold
MENTION_ONTOLOGIES = frozenset({"GO_CC", "CL", "UBERON", "PR", "SO", "NCBITaxon", "CHEBI"})


def ontology_path(resources: CrfResources, context: RunContext, ontology: str) -> Path:
    """The OBO file of ``ontology``: in resources.ontologies, else CRAFT's."""
    return unlabelled_ontology_path(resources.ontologies, context, ontology)


def cache_path(name: str, context: RunContext) -> Path:
    """A cache file's path: the working directory first, then the workflow's folder."""
    return Path(resolve_input(name, context.workflow_dir))


def resource_problems(
    options: CrfOptions, resources: CrfResources, context: RunContext
) -> list[str]:
    """What is missing to build the resources ``options`` use (gold sources are checked
    by their readers, ontologies by their files); caches that exist need nothing."""
    problems: list[str] = []
    ontologies: list[str] = []
    if options.ontology_lexicon:
        ontologies += list(ONTOLOGY_PREFIXES)
    if options.dictionary is not None:
        problems += [
            f"the dictionary features: {p}"
            for p in DictionaryTagger.check_config(options.dictionary, context)
        ]
    if options.craft_lexicon:
        problems += [
            f"the CRAFT lexicon (resources.mention_lexicon): {p}"
            for p in check_source(resources.mention_lexicon, context)
        ]
    if options.clusters is not None and not cache_path(options.clusters, context).is_file():
        for item in resources.cluster_text:
            if isinstance(item, DefinitionText):
                ontologies += item.definitions
            else:
                problems += [
                    f"building the word clusters {options.clusters}: {p}"
                    for p in check_source(item, context)
                ]
    if (
        options.embedding_clusters is not None
        and not cache_path(options.embedding_clusters, context).is_file()
        and not _shipped_vectors_model().is_dir()
    ):
        problems.append(
            f"building the embedding clusters {options.embedding_clusters} needs "
            f"{_shipped_vectors_model()}, which does not exist"
        )
    if options.pos_model is not None and not cache_path(options.pos_model, context).is_file():
        problems += [
            f"training the POS tagger {options.pos_model}: {p}"
            for p in check_source(resources.pos_tagger, context)
        ]
    return problems + ontology_problems(
        ontologies, resources.ontologies, context, "resources.ontologies"
    )


def _shipped_vectors_model() -> Path:
    """The spaCy pipeline whose word vectors the embedding clusters group."""
    from casflow.components import models

    return models.MODELS_DIR / VECTORS_MODEL


class Resources:
    """Lexicons, word clusters and POS taggers, built once and shared by members and folds."""

    def __init__(self, settings: CrfResources, context: RunContext, seed: int) -> None:
        self.settings = settings
        self.context = context
        self.seed = seed
        self._ontology: Lexicon | None = None
        self._mentions: list[tuple[str, str]] | None = None
        self._static: dict[tuple[bool, tuple[str, ...]], Lexicon | None] = {}
        self._clusters: dict[Path, dict[str, tuple[int, ...]]] = {}

    def static_lexicon(self, options: CrfOptions, log: Log) -> Lexicon | None:
        """Ontology names and concept-mention texts of other gold views."""
        key = (options.ontology_lexicon, tuple(options.craft_lexicon))
        if key not in self._static:
            lexicon = None
            if options.ontology_lexicon:
                if self._ontology is None:
                    files = {
                        name: ontology_path(self.settings, self.context, name)
                        for name in ONTOLOGY_PREFIXES
                    }
                    log(f"reading the ontologies {', '.join(map(str, files.values()))}")
                    self._ontology = ontology_lexicon(files)
                lexicon = merged(self._ontology)  # a copy: mention entries must not leak into it
            if options.craft_lexicon:
                lexicon = lexicon or Lexicon()
                wanted = set(options.craft_lexicon)
                for phrase, ontology in self.mention_texts(log):
                    if ontology in wanted:
                        lexicon.add(phrase, "K-" + ontology)
            self._static[key] = lexicon
        return self._static[key]

    def mention_texts(self, log: Log) -> list[tuple[str, str]]:
        """(text, ontology) of the contiguous concept mentions of resources.mention_lexicon."""
        if self._mentions is None:
            source = self.settings.mention_lexicon
            log(f"reading concept mentions with {source.component}")
            per_document = read_source(
                source,
                self.context,
                lambda view, _: view_mention_texts(view, MENTION_ONTOLOGIES),
            )
            self._mentions = [pair for pairs in per_document for pair in pairs]
        return self._mentions

    def cluster_text(self, log: Log) -> Iterator[str]:
        """The sentences of resources.cluster_text, in order."""
        return read_texts(self.settings.cluster_text, self.settings.ontologies, self.context, log)

    def clusters(self, name: str, log: Log) -> dict[str, tuple[int, ...]]:
        from casflow.components.crfsuite.clusters import (
            build_clusters,
            load_clusters,
            save_clusters,
        )

        path = cache_path(name, self.context)
        if path not in self._clusters:

            def build(target: str) -> None:
                log(f"building word clusters -> {path}")
                save_clusters(build_clusters(self.cluster_text(log), seed=self.seed), Path(target))

            built_once(path, build, log)
            self._clusters[path] = load_clusters(path)
        return self._clusters[path]

    def embedding_clusters(self, name: str, log: Log) -> dict[str, tuple[int, ...]]:
        from casflow.components.crfsuite.clusters import (
            load_clusters,
            save_clusters,
            spacy_vector_clusters,
        )

        path = cache_path(name, self.context)
        if path not in self._clusters:

            def build(target: str) -> None:
                model = _shipped_vectors_model()
                log(f"clustering the word vectors of {model} -> {path}")
                save_clusters(spacy_vector_clusters(model, seed=self.seed), Path(target))

            built_once(path, build, log)
            self._clusters[path] = load_clusters(path)
        return self._clusters[path]

    def pos_model(self, name: str, log: Log) -> Path:
        from casflow.components.crfsuite.pos_features import pos_sequences, train_pos_tagger

        path = cache_path(name, self.context)

        def build(target: str) -> None:
            source = self.settings.pos_tagger
            log(f"training the POS tagger on the views of {source.component} -> {path}")
            per_document = read_source(source, self.context, lambda view, _: pos_sequences(view))
            train_pos_tagger((seq for seqs in per_document for seq in seqs), Path(target))

        return built_once(path, build, log)


def training_fingerprint(
    examples: Sequence[Example],
    options: CrfOptions,
    label: str | None,
    seed: int,
    resource_files: Sequence[Path] = (),
) -> str:
    """What a member's model depends on: its settings, the label rule, seed, the cluster
    and POS files it uses (their bytes) and the training data."""
    settings = options.model_dump(mode="json")
    if settings.get("dictionary") is None:
        # models trained before the option existed keep their fingerprints
        settings.pop("dictionary", None)
    digest = Fingerprint(settings, label, seed)
    for path in resource_files:
        digest.add_file(path)
    for example in examples:
        mentions = [(m.begin, m.end, m.label) for m in example.mentions]
        digest.add([example.id, example.tokens, mentions])
    return digest.hexdigest()


def train_member(
    examples: Sequence[Example],
    options: CrfOptions,
    output: Path,
    resources: Resources,
    log: Log,
    *,
    label: str | None = None,
    meta_extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One CRF on sentence ``examples`` into ``output`` with the features ``options`` name."""
    from casflow.components.crfsuite.pos_features import PosTagger

    pos_path = resources.pos_model(options.pos_model, log) if options.pos_model else None
    clusters = resources.clusters(options.clusters, log) if options.clusters else None
    embedding_clusters = (
        resources.embedding_clusters(options.embedding_clusters, log)
        if options.embedding_clusters
        else None
    )
    features = options.features
    settings = FeatureSettings(
        window=features.window,
        affix_max=features.affix_max,
        char_ngrams=tuple(features.char_ngrams),
        word_context=features.word_context,
        bigrams=features.bigrams,
        abbreviations=features.abbreviations,
        clusters=clusters is not None,
        pos=pos_path is not None,
        embedding_clusters=embedding_clusters is not None,
    )
    pos_tagger = PosTagger(pos_path) if pos_path is not None else None
    static = resources.static_lexicon(options, log)
    k = options.train_lexicon_folds
    # jackknife: each fold's dictionary features come from the other folds' mentions,
    # so the CRF learns how far to trust a match on unseen text
    fold_lexicons = [
        merged(
            static,
            mention_lexicon([e for i, e in enumerate(examples) if i % k != fold], label)
            if k
            else None,
        )
        for fold in range(max(k, 1))
    ]
    candidates = (
        CandidateFeatures(options.dictionary, resources.context) if options.dictionary else None
    )
    contexts = [
        DocumentContext(settings, lexicon, clusters, pos_tagger, embedding_clusters, candidates)
        for lexicon in fold_lexicons
    ]

    def sequences():
        for i, example in enumerate(examples):
            x = contexts[i % k if k else 0].features(example.text, example.tokens)
            spans = [(m.begin, m.end, m.label) for m in example.mentions]
            yield x, labels_for(example.tokens, spans, options.scheme)

    params = TrainingParams(
        c1=options.c1,
        c2=options.c2,
        max_iterations=options.iterations,
        scheme=options.scheme,
        min_freq=options.min_freq,
        extra={
            "train_lexicon_folds": k,
            "ontology_lexicon": options.ontology_lexicon,
            "craft_lexicon": list(options.craft_lexicon),
            "trainer": CrfMentionTrainer.name,
        },
    )
    shipped_lexicon = merged(static, mention_lexicon(examples, label) if k else None)
    with LogLines(log) as lines, redirect_stdout(lines):
        return train_crf(
            sequences(),
            output,
            params,
            settings,
            shipped_lexicon,
            meta_extra={
                "train_sentences": len(examples),
                "postprocess": list(options.postprocess),
                **(candidates.meta() if candidates is not None else {}),
                **(meta_extra or {}),
            },
            clusters=clusters,
            pos_model=pos_path,
            embedding_clusters=embedding_clusters,
        )


def _percent(value: float) -> float:
    return round(100 * float(value), 2)


class CrfMentionTrainer(Trainer[CrfMentionTrainerConfig]):
    name = "train.crf.mentions.v1"
    description = (
        "CRF mention tagger (one CRF or a vote of several) trained from gold GeneMention or "
        "AnatomyMention annotations; the model kind of the shipped gene and anatomy taggers."
    )
    libraries = ("spacy", "python-crfsuite")
    layers: ClassVar[dict[str, tuple[str, ...]]] = MENTION_LAYER_TYPES

    def __init__(self, config: CrfMentionTrainerConfig, context: TrainingContext) -> None:
        super().__init__(config, context)
        self.seed = context.seed
        self.layer = one_mention_layer(self.name, context.layers)
        self.mention_type = MENTION_LAYERS[self.layer]
        self.resources = Resources(config.resources, context, self.seed)

    @classmethod
    def check_layers(cls, config: ComponentConfig, layers: Sequence[str]) -> list[str]:
        return mention_layer_problems("a CRF model", layers)

    @classmethod
    def check_config(cls, config: ComponentConfig, context: RunContext) -> list[str]:
        assert isinstance(config, CrfMentionTrainerConfig)
        problems: dict[str, list[int]] = {}
        for number, options in enumerate(config.models(), start=1):
            for problem in resource_problems(options, config.resources, context):
                problems.setdefault(problem, []).append(number)
        found = []
        for problem, numbers in problems.items():
            who = (
                "crf"
                if config.crf is not None
                else f"member{'s' if len(numbers) > 1 else ''} {', '.join(map(str, numbers))}"
            )
            found.append(f"{who}: {problem}")
        return found

    # ------------------------------------------------------------------ examples

    def example(self, view: cassis.Cas, doc_id: str) -> MentionDocument:
        return mention_document(view, doc_id, self.mention_type, self.config.label)

    # ------------------------------------------------------------------ training

    def train(
        self,
        train: Sequence[MentionDocument],
        dev: Sequence[MentionDocument],
        output_dir: Path,
        log: Log,
    ) -> Path:
        documents = list(train)
        if self.config.document_order == "id":
            documents.sort(key=lambda d: d.id)
        examples = [e for d in documents for e in d.examples]
        output_dir = Path(output_dir)
        output_dir.mkdir(parents=True, exist_ok=True)
        model_dir = output_dir / MODEL_DIR
        models = self.config.models()
        if self.config.crf is not None:
            self._train_one(examples, models[0], model_dir, output_dir / f"{MODEL_DIR}.done", log)
            meta_path = model_dir / META_FILE
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            # not part of the CRF's fingerprint: it runs after tagging, so it is (re)set here
            meta.pop("document_postprocess", None)
            meta.pop(MENTION_TYPE_KEY, None)
            meta.update(self._document_meta())
            # rewritten on every run, after the model is marked done: a kill while writing
            # must leave the whole old file, which the next run reads and rewrites
            atomic_write_text(meta_path, json.dumps(meta, indent=2) + "\n")
            return model_dir
        names = []
        for number, options in enumerate(models, start=1):
            name = f"member{number}"
            log(f"member {number}/{len(models)}")
            self._train_one(examples, options, model_dir / name, output_dir / f"{name}.done", log)
            names.append(name)
        needed = self.config.needed or len(names) // 2 + 1
        meta = {"members": names, "needed": needed, **self._document_meta()}
        atomic_write_text(model_dir / META_FILE, json.dumps(meta, indent=2) + "\n")
        return model_dir

    def _document_meta(self) -> dict[str, Any]:
        steps = list(self.config.document_postprocess)
        # ner.crf.v1 writes GeneMention unless told otherwise: the model says what it
        # learned, so a tagger set to write another type is refused before the run
        return {
            MENTION_TYPE_KEY: self.mention_type,
            **({"document_postprocess": steps} if steps else {}),
        }

    def _train_one(
        self, examples: list[Example], options: CrfOptions, folder: Path, done: Path, log: Log
    ) -> None:
        # cluster and POS caches are made first: the model depends on what they hold
        files = []
        if options.clusters:
            self.resources.clusters(options.clusters, log)
            files.append(cache_path(options.clusters, self.context))
        if options.embedding_clusters:
            self.resources.embedding_clusters(options.embedding_clusters, log)
            files.append(cache_path(options.embedding_clusters, self.context))
        if options.pos_model:
            files.append(self.resources.pos_model(options.pos_model, log))
        if options.dictionary:
            files.extend(CandidateFeatures(options.dictionary, self.context).paths)
        fingerprint = training_fingerprint(examples, options, self.config.label, self.seed, files)
        if step_status(done, fingerprint, folder) == "done":
            log(f"{folder}: already trained with these settings and data; skipped")
            return
        if folder.exists():
            shutil.rmtree(folder)  # a model of other settings or an interrupted run
        forget(done)
        log(
            f"training a CRF ({options.scheme}, c1 {options.c1}, c2 {options.c2}, "
            f"{options.iterations} iterations) on {len(examples)} sentences -> {folder}"
        )
        meta = train_member(
            examples,
            options,
            folder,
            self.resources,
            log,
            label=self.config.label,
            meta_extra={"seed": self.seed},
        )
        log(f"trained in {meta['training']['seconds']} s")
        mark_done(done, fingerprint)

    # ------------------------------------------------------------------ scoring

    def evaluate(self, model_dir: Path, examples: Sequence[MentionDocument]) -> dict[str, float]:
        from casflow.components.crfsuite.evaluate import unit_counts
        from casflow.components.crfsuite.tagger import CrfNer, CrfNerConfig
        from casflow.components.metrics.mentions import score_mentions

        component = CrfNer(
            CrfNerConfig(model=str(Path(model_dir).resolve()), mention_type=self.mention_type),
            RunContext(output_dir=Path(model_dir)),
        )
        typesystem = load_typesystem()
        sentence = typesystem.get_type(SENTENCE)
        alternatives = self.config.scoring == "alt_eval"
        total: Counts = {}
        for document in examples:
            cas = cassis.Cas(typesystem=typesystem)
            set_sofa_text(cas, document.text)
            if self.config.eval_sentences == "gold":
                cas.add_all([sentence(begin=b, end=e) for b, e in document.sentences])
            component.process(cas)
            system = [(m.begin, m.end, m.value) for m in cas.select(self.mention_type)]
            add_counts(
                total,
                unit_counts(
                    document.mentions,
                    system,
                    with_alternatives=alternatives,
                    accepted=document.accepted,
                ),
            )
        component.close()
        return self._scores(score_mentions(total))

    def _scores(self, scores: dict[str, Any]) -> dict[str, float]:
        head = scores[self.config.scoring]
        micro = head["micro"]
        out = {
            "p": _percent(micro["precision"]),
            "r": _percent(micro["recall"]),
            "f": _percent(micro["f1"]),
        }
        if self.config.scoring != "strict":
            strict = scores["strict"]["micro"]
            out.update(
                strict_p=_percent(strict["precision"]),
                strict_r=_percent(strict["recall"]),
                strict_f=_percent(strict["f1"]),
            )
        if head["macro"]["classes"] > 1:
            out["macro_f"] = _percent(head["macro"]["f1"])
        return out

    def describe(self) -> str:
        kind = (
            "One linear-chain CRF"
            if self.config.crf is not None
            else f"A vote of {len(self.config.models())} linear-chain CRFs (a mention is kept "
            f"when {self.config.needed or len(self.config.models()) // 2 + 1} output it)"
        )
        criterion = (
            "alt_eval (BioCreative II: a system mention equal to a gold mention or one of its "
            "accepted alternatives is a match); strict_* require the exact gold span"
            if self.config.scoring == "alt_eval"
            else "strict (exact span and class)"
        )
        sentences = (
            "the gold sentence spans"
            if self.config.eval_sentences == "gold"
            else "sentences from the rule-based splitter"
        )
        steps = (
            f", then {', '.join(self.config.document_postprocess)} over each document's mentions"
            if self.config.document_postprocess
            else ""
        )
        return (
            f"{kind} (python-crfsuite, L-BFGS) over casflow's tokens, trained from the gold "
            f"{short_name(self.mention_type)} annotations{steps}; load the model folder with "
            f"`ner.crf.v1` (`model: <folder>`, `mention_type: {short_name(self.mention_type)}`). "
            "Scores run that component on each document's "
            f"raw text ({sentences}) and count {criterion}. p, r and f are micro-averaged "
            "percentages; macro_f (with several classes) is the mean F over the gold classes."
        )
