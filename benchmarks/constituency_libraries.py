"""supar's CRF constituency parser trained on the CRAFT trees casflow's Stanza parser learned from.

Issue 13 asks which maintained neural parsing library trains best on this 2-core
machine. casflow ships Stanza's parser (``casflow:craft_constituency``; its model card
has the dev curve per epoch with the seconds). benepar's pip package has no training
code (it only loads published models), so supar is the other library measured here.
supar is not a casflow dependency; install it beside torch without letting pip touch
torch::

    .venv/bin/pip install --no-deps supar==1.1.4
    .venv/bin/pip install transformers dill nltk torch==2.13.0

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/constituency_libraries.py --minutes 60

The inputs are the files the Stanza training wrote (``--data``, by default
``runs/train-craft-constituency/final/data`` in the repository, where
``casflow train workflows/train-craft-constituency.yaml`` run from the repository root
writes ``train.mrg``, ``dev.mrg`` and the word vectors ``vectors.txt``); the script
writes its copies, converted for supar, to ``--workdir`` (by default
``runs/supar-compare`` in the repository; ``runs/`` is not tracked, so corpus data
stays out of git). The trees get what Stanza's
trainer does to them: duplicate training trees and trees of a root over one word are
dropped; the dev curve is scored, as Stanza's, on the dev trees without repeats.

supar sees: the words (its own embeddings, lowercased, plus casflow's vectors as
pretrained embeddings), a character LSTM over each word and, with ``--feat tag char``
(the default), the gold POS tags, as Stanza's parser got them. The network and
optimizer are supar's published PTB settings (3 x 400 BiLSTM, span MLP 500, label MLP
100, dropout .33, Adam 2e-3 with betas .9/.9, decay .75 every 5000 steps, batches of
5000 tokens); the training loss is the span CRF's, decoding is MBR as in supar's paper.

It trains one epoch after another on one PyTorch thread until the next epoch would end
after ``--minutes`` of the process's CPU time (``--clock cpu``, the default: on one
thread that is a core's time, which stays comparable when other jobs share the machine;
``--clock wall`` counts wall time), and after every epoch parses the dev trees (gold
words and tags), scores them with casflow's PARSEVAL (EVALB, COLLINS.prm, as the model
card) and prints one line: epoch, dev F on Stanza's dev set (no repeats), dev F on all
dev trees, wall and CPU time of the epoch (training and dev parsing) and in all. The
best epoch so far (by the first F, as Stanza keeps its best) is kept as it comes: its
parses in ``--workdir``/dev.pred.mrg, its model in model.pt, its casflow scores on all
dev trees (F, P, R, mean sentence F, bracket counts) in best.json; the curve is in
curve.json. At the end it prints the best epoch with those scores.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from _common import REPO, fail

from casflow.components.formats.penn.parse import Tree, parse_tree, tree_error, tree_texts
from casflow.components.metrics.parseval import parseval_counts, score_parseval
from casflow.pipeline.counts import Counts, add_counts

#: where workflows/train-craft-constituency.yaml, run from the repository root, writes
#: the trees and vectors it trained on
DATA = REPO / "runs" / "train-craft-constituency" / "final" / "data"
WORKDIR = REPO / "runs" / "supar-compare"
DATA_FILES = ("train.mrg", "dev.mrg", "vectors.txt")

#: supar's published PTB settings (its repository's config.ini): network and optimizer.
NETWORK = {
    "n_embed": 100,
    "n_char_embed": 50,
    "n_char_hidden": 100,
    "n_feat_embed": 100,
    "embed_dropout": 0.33,
    "n_lstm_hidden": 400,
    "n_lstm_layers": 3,
    "encoder_dropout": 0.33,
    "n_span_mlp": 500,
    "n_label_mlp": 100,
    "mlp_dropout": 0.33,
}
OPTIMIZER = {
    "lr": 2e-3,
    "mu": 0.9,
    "nu": 0.9,
    "eps": 1e-12,
    "weight_decay": 0.0,
    "clip": 5.0,
    "decay": 0.75,
    "decay_steps": 5000,
}


# -- trees: reading, Stanza's filtering, supar's format, casflow's scoring ---------------


def read_trees(text: str) -> list[str]:
    """The bracketed trees of a treebank file, one string each (whitespace collapsed).

    A tree may span several lines (as in the Penn Treebank's files): casflow's
    treebank reader finds where each ends and checks its bracketing.
    """
    trees: list[str] = []
    for first, last, tree_text in tree_texts(text.split("\n")):
        try:
            parse_tree(tree_text)
        except ValueError as error:
            raise ValueError(tree_error("treebank", first, last, error)) from error
        spaced = tree_text.replace("(", " ( ").replace(")", " ) ")
        trees.append(_join([token for token in _ASCII_SPACE.split(spaced) if token]))
    return trees


#: Only these separate tokens (a CRAFT word may hold a no-break space).
_ASCII_SPACE = re.compile(r"[ \t\n\r\f\v]+")
_OTHER_SPACE = re.compile(r"[^\S ]")


def _join(tokens: Sequence[str]) -> str:
    text = " ".join(tokens)
    return text.replace("( ", "(").replace(" )", ")")


def with_root(tree: str, root: str = "ROOT") -> str:
    """The tree under a labelled root bracket, as supar reads it (one child under the root).

    ``(ROOT (S ...))`` and ``(TOP (S ...))`` stay; ``( (S ...))`` gets the label; a
    tree whose outermost bracket is a phrase, ``(S ...)``, is wrapped; a root over
    several children or over a word is an error.
    """
    parsed = parse_tree(tree)
    if parsed.label not in ("", "ROOT", "TOP"):
        return str(Tree(root, [parsed]))
    if len(parsed.children) != 1 or parsed.children[0].word is not None:
        # supar reads the one phrase under the root; it has no label to invent.
        raise ValueError(f"the root has no single phrase under it: {tree[:80]}")
    return tree if parsed.label else str(Tree(root, list(parsed.children)))


def supar_line(tree: str) -> str:
    """The tree as supar reads it: :func:`with_root`, and whitespace inside a word other
    than ASCII space (CRAFT's training trees have five no-break spaces) as ``_``, since
    supar's reader (nltk's) would split the word there."""
    return _OTHER_SPACE.sub("_", with_root(tree))


def without_repeats(trees: Iterable[str]) -> list[str]:
    """The trees without later copies of an earlier one (Stanza's remove_duplicate_trees)."""
    seen: set[str] = set()
    kept = []
    for tree in trees:
        if tree not in seen:
            seen.add(tree)
            kept.append(tree)
    return kept


def without_singletons(trees: Iterable[str]) -> list[str]:
    """The trees without those of a root over one preterminal, ``(ROOT (NN word))``
    (Stanza's remove_singleton_trees, which it applies to the training trees)."""
    kept = []
    for tree in trees:
        parsed = parse_tree(tree)
        if not (len(parsed.children) == 1 and parsed.children[0].word is not None):
            kept.append(tree)
    return kept


def unrooted(tree: Tree) -> Tree:
    """The tree as EVALB reads CRAFT's files: the root as the unlabelled outer bracket
    (as casflow's Stanza trainer scores)."""
    return Tree("", list(tree.children)) if tree.label in ("ROOT", "TOP") else tree


def parseval(pairs: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """casflow's PARSEVAL (EVALB with COLLINS.prm) over (gold, predicted) tree strings."""
    counts: Counts = {}
    for gold, test in pairs:
        add_counts(counts, parseval_counts(unrooted(parse_tree(gold)), unrooted(parse_tree(test))))
    return score_parseval(counts)


# -- supar -------------------------------------------------------------------------------


@dataclass
class Epoch:
    epoch: int
    dev_f: float  # Stanza's dev set: no repeated trees
    dev_f_all: float  # every dev tree
    seconds: float  # wall, training and dev parsing
    cpu_seconds: float
    total_minutes: float  # wall since training started
    total_cpu_minutes: float


def _vectors_for_supar(source: Path, target: Path) -> None:
    """word2vec text without its "count dimension" header line (supar reads every line)."""
    with source.open(encoding="utf-8") as lines, target.open("w", encoding="utf-8") as out:
        for number, line in enumerate(lines):
            if number == 0 and len(line.split()) == 2:
                continue
            out.write(line)


def _batches(loader: Any) -> Iterator[tuple[Any, list[Any], list[Any], Any]]:
    for batch in loader:
        words, *feats, trees, charts = batch
        yield words, feats, trees, charts


def _masks(words: Any, pad_index: int) -> Any:
    word_mask = words.ne(pad_index)[:, 1:]
    mask = word_mask if len(words.shape) < 3 else word_mask.any(-1)
    return (mask.unsqueeze(1) & mask.unsqueeze(2)).triu_(1)


def train_epoch(parser: Any, loader: Any, optimizer: Any, scheduler: Any) -> None:
    """One pass over the training batches (supar's own _train, without its progress bar;
    the loss does not depend on MBR, so the marginals are not computed here)."""
    from torch import nn

    model = parser.model
    model.train()
    for words, feats, _trees, charts in _batches(loader):
        mask = _masks(words, parser.args.pad_index)
        s_span, s_label = model(words, feats)
        loss, _ = model.loss(s_span, s_label, charts, mask, False)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), OPTIMIZER["clip"])
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()


def parse_dev(parser: Any, loader: Any) -> list[tuple[str, str]]:
    """(gold, predicted) tree strings for every dev tree, MBR decoding, gold words and tags."""
    import torch

    # supar has no type information: imported by name, its objects are Any.
    ConstituencyCRF = importlib.import_module("supar.structs").ConstituencyCRF
    SuparTree = importlib.import_module("supar.utils.transform").Tree

    model = parser.model
    model.eval()
    pairs = []
    with torch.no_grad():
        for words, feats, trees, _charts in _batches(loader):
            mask = _masks(words, parser.args.pad_index)
            s_span, s_label = model(words, feats)
            s_span = ConstituencyCRF(s_span, mask[:, 0].sum(-1)).marginals
            for tree, chart in zip(trees, model.decode(s_span, s_label, mask), strict=True):
                spans = [(i, j, parser.CHART.vocab[label]) for i, j, label in chart]
                predicted = SuparTree.build(tree, spans)
                pairs.append((_one_line(tree), _one_line(predicted)))
    return pairs


def _one_line(tree: Any) -> str:
    return " ".join(str(tree.pformat(margin=1_000_000_000)).split())


def run(args: argparse.Namespace) -> list[Epoch]:
    import torch

    CRFConstituencyParser = importlib.import_module("supar").CRFConstituencyParser
    Dataset = importlib.import_module("supar.utils").Dataset
    from torch.optim import Adam
    from torch.optim.lr_scheduler import ExponentialLR

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    data, work = Path(args.data), Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)

    train = without_singletons(without_repeats(read_trees(_read(data / "train.mrg"))))
    dev_all = read_trees(_read(data / "dev.mrg"))
    dev = without_repeats(dev_all)
    (work / "train.supar.mrg").write_text("".join(supar_line(t) + "\n" for t in train))
    (work / "dev.supar.mrg").write_text("".join(supar_line(t) + "\n" for t in dev_all))
    vectors = work / "vectors.supar.txt"
    _vectors_for_supar(data / "vectors.txt", vectors)
    print(
        f"trees: train {len(train)} (no repeats, no singletons), dev {len(dev_all)} "
        f"({len(dev)} without repeats); features {' '.join(args.feat)}; one thread; "
        f"budget {args.minutes} min of {args.clock} time",
        flush=True,
    )

    parser = CRFConstituencyParser.build(
        path=str(work / "model.pt"),
        build=True,
        encoder="lstm",
        feat=list(args.feat),
        train=str(work / "train.supar.mrg"),
        embed=str(vectors),
        unk=None,
        min_freq=2,
        fix_len=20,
        **NETWORK,
    )
    parser.transform.train()
    train_set = Dataset(parser.transform, str(work / "train.supar.mrg"))
    train_set.build(args.batch_size, 32, True)
    dev_set = Dataset(parser.transform, str(work / "dev.supar.mrg"))
    dev_set.build(args.batch_size, 8)
    optimizer = Adam(
        parser.model.parameters(),
        OPTIMIZER["lr"],
        (OPTIMIZER["mu"], OPTIMIZER["nu"]),
        OPTIMIZER["eps"],
        OPTIMIZER["weight_decay"],
    )
    scheduler = ExponentialLR(optimizer, OPTIMIZER["decay"] ** (1 / OPTIMIZER["decay_steps"]))

    budget = 60 * args.minutes
    clock = time.process_time if args.clock == "cpu" else time.monotonic
    curve: list[Epoch] = []
    start_wall, start_cpu, start = time.monotonic(), time.process_time(), clock()
    longest = 0.0
    for epoch in range(1, args.max_epochs + 1):
        if epoch > 1 and clock() - start + longest > budget:
            break
        epoch_wall, epoch_cpu, epoch_start = time.monotonic(), time.process_time(), clock()
        train_epoch(parser, train_set.loader, optimizer, scheduler)
        pairs = parse_dev(parser, dev_set.loader)
        first: dict[str, str] = {}
        for gold, test in pairs:
            first.setdefault(gold, test)
        dev_f = float(parseval(first.items())["f1"])
        dev_f_all = float(parseval(pairs)["f1"])
        now_wall, now_cpu = time.monotonic(), time.process_time()
        longest = max(longest, clock() - epoch_start)
        row = Epoch(
            epoch,
            round(100 * dev_f, 2),
            round(100 * dev_f_all, 2),
            round(now_wall - epoch_wall, 1),
            round(now_cpu - epoch_cpu, 1),
            round((now_wall - start_wall) / 60, 2),
            round((now_cpu - start_cpu) / 60, 2),
        )
        print(
            f"epoch {row.epoch}: dev F {row.dev_f:.2f} (all dev trees {row.dev_f_all:.2f}); "
            f"{row.seconds:.0f} s wall, {row.cpu_seconds:.0f} s CPU; "
            f"{row.total_minutes:.1f} min wall, {row.total_cpu_minutes:.1f} min CPU in all",
            flush=True,
        )
        if not curve or row.dev_f > max(r.dev_f for r in curve):
            # Kept as it comes, so a run stopped early leaves its best epoch's results.
            parser.save(str(work / "model.pt"))
            predicted = dict(pairs)  # the same gold words and tags get the same parse
            (work / "dev.pred.mrg").write_text(
                "".join(predicted[supar_line(t)] + "\n" for t in dev_all)
            )
            best = {"epoch": row.epoch, "dev_f_without_repeats": row.dev_f} | parseval(pairs)
            (work / "best.json").write_text(json.dumps(best, indent=1))
        curve.append(row)
        (work / "curve.json").write_text(json.dumps([asdict(r) for r in curve], indent=1))
    kept = max(curve, key=lambda r: r.dev_f)
    scores = json.loads((work / "best.json").read_text())
    print(
        f"best epoch {kept.epoch} of {len(curve)} ({kept.total_minutes:.1f} min wall, "
        f"{kept.total_cpu_minutes:.1f} min CPU): casflow PARSEVAL (COLLINS.prm) on all "
        f"{int(scores['sentences'])} dev trees, gold words and tags: F "
        f"{100 * scores['f1']:.2f}, P {100 * scores['precision']:.2f}, R "
        f"{100 * scores['recall']:.2f}, mean sentence F "
        f"{100 * scores['mean_sentence_f1']:.2f} (matched {int(scores['matched'])}, "
        f"gold {int(scores['gold'])}, test {int(scores['test'])}, valid "
        f"{int(scores['valid_sentences'])}); on the dev trees without repeats F {kept.dev_f:.2f}",
        flush=True,
    )
    return curve


def check_data(data: Path) -> None:
    """Stop with one line (exit status 2) when ``data`` lacks a file the comparison reads."""
    missing = [name for name in DATA_FILES if not (data / name).is_file()]
    if missing:
        fail(
            f"{data} has no {', '.join(missing)}; train the Stanza parser first "
            "(casflow train workflows/train-craft-constituency.yaml, run from the repository "
            "root, writes them to runs/train-craft-constituency/final/data), or give --data "
            "the folder another training wrote them to"
        )


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data",
        default=str(DATA),
        help="the folder of train.mrg, dev.mrg and vectors.txt that "
        "workflows/train-craft-constituency.yaml wrote (default: %(default)s)",
    )
    parser.add_argument(
        "--workdir", default=str(WORKDIR), help="where supar's files go (default: %(default)s)"
    )
    parser.add_argument("--minutes", type=float, default=60.0, help="budget of training")
    parser.add_argument(
        "--clock",
        choices=["cpu", "wall"],
        default="cpu",
        help="what --minutes counts: the process's CPU time (one thread: a core's time, "
        "fair on a shared machine) or wall time",
    )
    parser.add_argument("--max-epochs", type=int, default=1000)
    parser.add_argument(
        "--feat", nargs="+", default=["tag", "char"], choices=["tag", "char"], help="inputs"
    )
    parser.add_argument("--batch-size", type=int, default=5000, help="tokens per batch")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    check_data(Path(args.data))
    if importlib.util.find_spec("supar") is None:
        fail("supar is not installed; install it beside torch as this script's docstring says")
    run(args)


if __name__ == "__main__":
    main()
