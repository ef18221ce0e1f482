"""Constituency evaluators: PARSEVAL (EVALB), leaf-ancestor and productions.

Trees come from DKPro Constituent annotations (see ``cas_adapters``). A gold
tree is paired with the system tree whose root has the same (whitespace-trimmed)
span; a gold tree without one is scored as "no parse" (skipped, as EVALB does),
and system trees without a gold partner are listed in the errors. Counts are
split per gold tree (``units``) so significance tests can shuffle sentences.

PARSEVAL's outer bracket: a tree read from a treebank file is scored as EVALB
reads its line (``( (S ...) )``, ``(TOP ...)``, ``(ROOT ...)``, ``(S ...)``), and so
is the line casflow's parsers write (``parse.constituency.v1`` and
``stanza.pipeline.v1``: ``( (S ...) )``; ``opennlp.pipeline.v1``: ``(TOP ...)``); a
tree without a line (a component that writes none, trees whose ``PennTree`` was not
kept) as its partner's line is written, as a user would write such output for EVALB
in the gold file's convention; ``( (S ...) )`` when neither tree has a line. Against
gold in another convention than a parser's line, ``outer_bracket: drop``.
"""

from __future__ import annotations

import functools
from abc import abstractmethod
from collections import Counter
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, Literal, TypeVar

import cassis
from pydantic import Field

from casflow.components.evaluators.adapters import (
    as_written,
    constituent_trees,
    pair_by_span,
    written_outer_brackets,
)
from casflow.components.evaluators.base import (
    CasEvaluator,
    percent,
)
from casflow.components.formats.penn.parse import Tree, prune
from casflow.components.metrics.leaf_ancestor import (
    DEFAULT_DELETE_TAGS,
    compare_lineages,
    pruned_lineages,
    score_leaf_ancestor,
)
from casflow.components.metrics.leaf_ancestor import PREFIX as LA_PREFIX
from casflow.components.metrics.length_bands import PREFIX as LENGTH_PREFIX
from casflow.components.metrics.length_bands import score_length_bands, sentence_length_counts
from casflow.components.metrics.parseval import (
    COLLINS_PARAMS,
    EvalbParams,
    evaluate_parseval,
    parse_evalb_params,
    score_parseval,
)
from casflow.components.metrics.parseval import PREFIX as PARSEVAL_PREFIX
from casflow.components.metrics.productions import (
    ERROR_CLASSES,
    Production,
    compare_productions,
    pruned_productions,
    score_productions,
)
from casflow.components.metrics.productions import PREFIX as PRODUCTIONS_PREFIX
from casflow.pipeline.component import (
    BandScores,
    ComponentConfig,
    DetailTable,
    EvaluatorConfig,
    EvaluatorConfigT,
    RunContext,
    evaluation_memo,
)
from casflow.pipeline.counts import Counts, EvaluationResult, sum_counts
from casflow.pipeline.significance import Metric, RatioMetric
from casflow.typesystem import CONSTITUENT, TOKEN

Span = tuple[int, int]
T = TypeVar("T")


def _per_tree(kind: str, tree: Tree, settings: Hashable, compute: Callable[[], T]) -> T:
    """What a metric reads from one tree, computed once per document.

    A view's trees are shared by its evaluators and system views (``constituent_trees``),
    so a gold tree is read for each system view and a system tree by each tree metric:
    the pruned tree, its lineages and productions are kept in the engine's evaluation
    memo, with the tree itself so that its ``id`` cannot name another tree."""
    memo = evaluation_memo()
    if memo is None:
        return compute()
    key = (kind, id(tree), settings)
    kept = memo.get(key)
    if kept is not None and kept[0] is tree:
        return kept[1]
    value = compute()
    memo[key] = (tree, value)
    return value


def _pruned(tree: Tree, delete_tags: frozenset[str]) -> Tree | None:
    return _per_tree("pruned", tree, delete_tags, lambda: prune(tree, delete_tags))


class _TreeEvaluator(CasEvaluator[EvaluatorConfigT]):
    """Pairs gold and system trees; subclasses score one pair."""

    requires = (TOKEN, CONSTITUENT)

    @abstractmethod
    def sentence(
        self, gold: Tree, test: Tree | None, span: Span, text: str
    ) -> tuple[Counts, list[dict[str, Any]]]:
        """Counts and errors of one gold tree and its system tree (None: no parse)."""

    def trees(self, view: cassis.Cas) -> list[tuple[Span, Tree]]:
        """The view's trees as this metric reads them."""
        return constituent_trees(view, require_tags=True)

    def paired_trees(
        self, gold: cassis.Cas, system: cassis.Cas, text: str
    ) -> tuple[list[tuple[Span, Tree, Tree | None]], list[Span]]:
        """``(gold span, gold tree, system tree or None)`` per gold tree, and the spans of
        system trees without a gold partner."""
        return pair_by_span(self.trees(gold), self.trees(system), text)

    def compare(self, gold: cassis.Cas, system: cassis.Cas, text: str) -> EvaluationResult:
        pairs, unpaired = self.paired_trees(gold, system, text)
        units: list[Counts] = []
        errors: list[dict[str, Any]] = []
        for span, gold_tree, test_tree in pairs:
            counts, sentence_errors = self.sentence(gold_tree, test_tree, span, text)
            units.append(counts)
            errors.extend({"begin": span[0], "end": span[1], **e} for e in sentence_errors)
        errors.extend(
            {"type": "unpaired_system_tree", "begin": b, "end": e, "text": text[b:e]}
            for b, e in unpaired
        )
        return EvaluationResult(counts=sum_counts(units), units=units, errors=errors)


def _skip_error(status: str, span: Span, text: str) -> dict[str, Any]:
    return {"type": status, "text": text[span[0] : span[1]]}


class ConstituentEvaluatorConfig(EvaluatorConfig):
    prm: str | None = Field(
        None,
        description="EVALB parameter file (relative to the workflow); none: COLLINS.prm "
        "settings (punctuation and TOP deleted, ADVP = PRT, cutoff 40 words).",
    )
    outer_bracket: Literal["count", "drop"] = Field(
        "count",
        description="The tree's outer bracket (the DKPro ROOT): 'count' scores it as EVALB "
        "scores the tree line it was read from ('( (S ...) )': one empty-label bracket; "
        "'(TOP ...)': deleted by COLLINS.prm; '(S ...)': none), casflow's parsers' lines "
        "alike, a tree without a line as its partner's line is written ('( (S ...) )' if "
        "neither has a line); 'drop' never counts it (for gold in another convention than "
        "the parser's line).",
    )


class ConstituentEvaluator(_TreeEvaluator[ConstituentEvaluatorConfig]):
    """PARSEVAL labelled brackets as EVALB computes them, plus the mean sentence F.

    By default each tree is scored as EVALB scores the line it was read from (the
    ``PennTree`` the CRAFT reader and ``penn.import.v1`` keep): ``( (S ...) )``, how
    CRAFT and most treebanks are distributed, counts its outer bracket once with an
    empty label. casflow's parsers write a line too (``( (S ...) )``, OpenNLP's
    ``(TOP ...)``), scored as written. A tree without a line is scored as its partner's
    line is written: a parse identical to a ``(ROOT ...)`` or ``(TOP ...)`` gold tree
    scores 100, not one unmatched outer bracket short of it. When neither tree has a
    line, both are scored as ``penn.writer.v1`` writes them, ``( (S ...) )``.
    """

    name = "eval.constituents.v1"
    description = "Constituency PARSEVAL (EVALB): P/R/F, mean sentence F, crossing, complete match."
    data_score_keys = (LENGTH_PREFIX, "len<=")  # the bands and the cutoff sentences have

    @classmethod
    def _prm_path(cls, config: ConstituentEvaluatorConfig, context: RunContext) -> Path | None:
        if config.prm is None:
            return None
        path = Path(config.prm)
        return path if path.is_absolute() else context.workflow_dir / path

    @classmethod
    def check_config(cls, config: ComponentConfig, context: RunContext) -> list[str]:
        assert isinstance(config, ConstituentEvaluatorConfig)
        path = cls._prm_path(config, context)
        if path is None:
            return []
        if not path.is_file():
            return [f"EVALB parameter file {path} does not exist; fix 'prm' or remove it"]
        try:
            parse_evalb_params(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            return [f"EVALB parameter file {path}: {exc}"]
        return []

    def paired_trees(
        self, gold: cassis.Cas, system: cassis.Cas, text: str
    ) -> tuple[list[tuple[Span, Tree, Tree | None]], list[Span]]:
        if self.config.outer_bracket == "drop":
            return super().paired_trees(gold, system, text)
        # Each tree keeps the outer bracket of its line, as EVALB reads the file. A parser's
        # tree has no line: it takes its partner's, since "( (S" against a "(ROOT" or "(TOP"
        # gold would cost every sentence an unmatched bracket that no parse can avoid.
        gold_written, system_written = written_outer_brackets(gold), written_outer_brackets(system)
        system_trees = [(span, (span, tree)) for span, tree in self.trees(system)]
        pairs, unpaired = pair_by_span(self.trees(gold), system_trees, text)
        written: list[tuple[Span, Tree, Tree | None]] = []
        for gold_span, gold_tree, partner in pairs:
            if partner is None:
                written.append(
                    (gold_span, as_written(gold_tree, gold_written.get(gold_span, "")), None)
                )
                continue
            system_span, system_tree = partner
            gold_outer = gold_written.get(gold_span, system_written.get(system_span, ""))
            system_outer = system_written.get(system_span, gold_outer)
            written.append(
                (
                    gold_span,
                    as_written(gold_tree, gold_outer),
                    as_written(system_tree, system_outer),
                )
            )
        return written, unpaired

    @functools.cached_property
    def params(self) -> EvalbParams:
        # Read on first use: scoring summed counts (e.g. `casflow significance`) needs no file.
        path = self._prm_path(self.config, self.context)
        return COLLINS_PARAMS if path is None else parse_evalb_params(path.read_text("utf-8"))

    def sentence(
        self, gold: Tree, test: Tree | None, span: Span, text: str
    ) -> tuple[Counts, list[dict[str, Any]]]:
        result = evaluate_parseval(
            gold, test, self.params, outer_bracket=self.config.outer_bracket == "count"
        )
        counts = result.counts(PARSEVAL_PREFIX, self.params.cutoff_len)
        if not result.valid:
            return counts, [_skip_error(result.status, span, text)]
        # Length as EVALB counts it (after deletions), the length its cutoff uses.
        counts.update(
            sentence_length_counts(result.length, result.matched, result.gold, result.test)
        )
        errors = [
            {"type": kind, "bracket_start": start, "bracket_end": end, "label": label}
            for kind, brackets in (("FN", result.missing), ("FP", result.extra))
            for start, end, label in brackets
        ]
        return counts, errors

    def score(self, counts: Counts) -> dict[str, Any]:
        scores = score_parseval(counts)
        if by_length := score_length_bands(counts):
            scores[LENGTH_PREFIX] = by_length
        return scores

    def band_scores(self, scores: dict[str, Any]) -> dict[str, BandScores]:
        by_length = scores.get(LENGTH_PREFIX)
        return {"sentence length (words)": by_length} if by_length else {}

    def column_direction(self, column: str) -> int:
        return {"avg crossing": -1, "skipped": 0}.get(column, 1)

    def summary(self, scores: dict[str, Any]) -> dict[str, float]:
        columns: dict[str, float] = {
            "P": percent(scores["precision"]),
            "R": percent(scores["recall"]),
            "F": percent(scores["f1"]),
            "mean sentence F": percent(scores["mean_sentence_f1"]),
            "complete match": percent(scores["complete_match"]),
            "avg crossing": scores["average_crossing"],
            "no crossing": percent(scores["no_crossing"]),
            "tagging accuracy": percent(scores["tagging_accuracy"]),
        }
        for key, group in scores.items():
            if key.startswith("len<=") and isinstance(group, dict):
                columns[f"F ({key})"] = percent(group["f1"])
        columns["skipped"] = int(scores["error_sentences"] + scores["skip_sentences"])
        return columns

    def batch_metric(self, path: str) -> Metric | None:
        prefix = PARSEVAL_PREFIX
        if path.startswith("len<="):
            group, _, path = path.partition("/")
            prefix = f"{prefix}/{group}"
        matched, gold, test = (f"{prefix}/{k}" for k in ("matched", "gold", "test"))
        ratios = {
            # EVALB's F = 2PR/(P+R) = 2 matched / (gold + test)
            "f1": ((matched, matched), (gold, test)),
            "precision": ((matched,), (test,)),
            "recall": ((matched,), (gold,)),
            "mean_sentence_f1": ((f"{prefix}/sentence_f_sum",), (f"{prefix}/valid",)),
            "complete_match": ((f"{prefix}/complete_match",), (f"{prefix}/valid",)),
            "tagging_accuracy": ((f"{prefix}/correct_tags",), (f"{prefix}/words",)),
        }
        return RatioMetric(*ratios[path]) if path in ratios else None


class TreeDeleteConfig(EvaluatorConfig):
    delete_tags: list[str] = Field(
        default_factory=lambda: sorted(DEFAULT_DELETE_TAGS),
        description="Preterminal tags removed with their words before scoring "
        "(add , : `` '' . to drop punctuation as EVALB's COLLINS.prm does).",
    )


class LeafAncestorConfig(TreeDeleteConfig):
    include_tags: bool = Field(False, description="Put the POS tag at the bottom of lineages.")


class LeafAncestorEvaluator(_TreeEvaluator[LeafAncestorConfig]):
    """Sampson's leaf-ancestor metric: per-word lineage similarity."""

    name = "eval.leaf_ancestor.v1"
    description = "Constituency leaf-ancestor metric: corpus and mean sentence scores."

    def sentence(
        self, gold: Tree, test: Tree | None, span: Span, text: str
    ) -> tuple[Counts, list[dict[str, Any]]]:
        delete_tags = frozenset(self.config.delete_tags)
        include_tags = self.config.include_tags

        def read(tree: Tree | None) -> list[tuple[str, list[str]]]:
            if tree is None:
                return []
            pruned = _pruned(tree, delete_tags)
            if pruned is None:
                return []
            return _per_tree(
                "lineages", pruned, include_tags, lambda: pruned_lineages(pruned, include_tags)
            )

        result = compare_lineages(read(gold), read(test))
        if result.status != "ok":
            return result.counts(LA_PREFIX), [_skip_error(result.status, span, text)]
        errors = [
            {
                "type": "lineage",
                "word": word,
                "gold_lineage": " ".join(g),
                "system_lineage": " ".join(t),
            }
            for word, g, t in zip(
                result.words, result.gold_lineages, result.test_lineages, strict=True
            )
            if g != t
        ]
        return result.counts(LA_PREFIX), errors

    def score(self, counts: Counts) -> dict[str, Any]:
        return score_leaf_ancestor(counts)

    def summary(self, scores: dict[str, Any]) -> dict[str, float]:
        return {
            "LA corpus": percent(scores["corpus_score"]),
            "LA mean sentence": percent(scores["mean_sentence_score"]),
            "exact sentences": percent(scores["exact_sentences"]),
            "skipped": int(scores["skipped_sentences"]),
        }

    def column_direction(self, column: str) -> int:
        return 0 if column == "skipped" else 1

    def batch_metric(self, path: str) -> Metric | None:
        p = LA_PREFIX
        ratios = {
            "corpus_score": ((f"{p}/word_score_sum",), (f"{p}/words",)),
            "mean_sentence_score": ((f"{p}/sentence_score_sum",), (f"{p}/valid",)),
            "exact_sentences": ((f"{p}/exact_sentences",), (f"{p}/valid",)),
            "exact_words": ((f"{p}/exact_words",), (f"{p}/words",)),
        }
        return RatioMetric(*ratios[path]) if path in ratios else None


class ProductionEvaluator(_TreeEvaluator[TreeDeleteConfig]):
    """Production precision/recall with closest-match error classes."""

    name = "eval.productions.v1"
    description = "Constituency productions P/R/F with error classes (Clegg & Shepherd 2005)."

    def sentence(
        self, gold: Tree, test: Tree | None, span: Span, text: str
    ) -> tuple[Counts, list[dict[str, Any]]]:
        delete_tags = frozenset(self.config.delete_tags)

        def read(tree: Tree | None) -> tuple[list[str], Counter[Production]]:
            pruned = _pruned(tree, delete_tags) if tree is not None else None
            if pruned is None:
                return [], Counter()
            return _per_tree("productions", pruned, None, lambda: pruned_productions(pruned))

        result = compare_productions(read(gold), read(test))
        if result.status != "ok":
            return result.counts(PRODUCTIONS_PREFIX), [_skip_error(result.status, span, text)]
        return result.counts(PRODUCTIONS_PREFIX), [
            {"type": e["side"], **e} for e in result.errors()
        ]

    def score(self, counts: Counts) -> dict[str, Any]:
        return score_productions(counts)

    def summary(self, scores: dict[str, Any]) -> dict[str, float]:
        return {
            "P": percent(scores["precision"]),
            "R": percent(scores["recall"]),
            "F": percent(scores["f1"]),
            "skipped": int(scores["skipped_sentences"]),
        }

    def column_direction(self, column: str) -> int:
        return 0 if column == "skipped" else 1

    def detail_tables(self, scores: dict[str, Any]) -> dict[str, DetailTable]:
        # What the parser gets wrong, as Clegg & Shepherd tabulate it: each missing gold
        # production and each extra system production by the class of its closest match.
        table: DetailTable = {
            name.replace("_", " "): {
                "missing": scores["missing"][name],
                "missing %": percent(scores["missing_share"][name]),
                "extra": scores["extra"][name],
                "extra %": percent(scores["extra_share"][name]),
            }
            for name in ERROR_CLASSES
        }
        table["total"] = {
            "missing": scores["gold"] - scores["matched"],
            "missing %": 100.0 if scores["gold"] > scores["matched"] else 0.0,
            "extra": scores["test"] - scores["matched"],
            "extra %": 100.0 if scores["test"] > scores["matched"] else 0.0,
        }
        missed = scores["gold"] - scores["matched"]
        instead: DetailTable = {
            f"{pair['gold']}  ⇒  {pair['instead']}": {
                "count": pair["count"],
                "% of missing": percent(pair["count"] / missed) if missed else 0.0,
            }
            for pair in scores.get("instead", [])
        }
        return {
            "production errors (Clegg & Shepherd classes)": table,
            "missed gold productions and what the parser built instead (most frequent)": instead,
        }

    def batch_metric(self, path: str) -> Metric | None:
        matched, gold, test = (f"{PRODUCTIONS_PREFIX}/{k}" for k in ("matched", "gold", "test"))
        ratios = {
            "f1": ((matched, matched), (gold, test)),
            "precision": ((matched,), (test,)),
            "recall": ((matched,), (gold,)),
        }
        return RatioMetric(*ratios[path]) if path in ratios else None
