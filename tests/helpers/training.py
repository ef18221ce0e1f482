"""Tiny trainings through ``casflow train`` for the trainer tests (OpenNLP, UDPipe and
the Stanza trainers): gold XMI folders, a training workflow over them, word vectors for
a tiny vocabulary, a run with the lines it logs, an interrupted run, and the tensors a
saved PyTorch model holds."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import cassis
import pytest

if TYPE_CHECKING:
    from casflow.pipeline.training import TrainingResult


def write_gold_splits(
    root: Path, splits: Mapping[str, Iterable[int]], document: Callable[[int], cassis.Cas]
) -> Path:
    """One folder per split under ``root`` (``train``, ``dev``), holding ``document(k)``
    as ``{split}{k}.xmi`` for each ``k`` the split lists; returns ``root``."""
    for split, numbers in splits.items():
        folder = root / split
        folder.mkdir()
        for k in numbers:
            (folder / f"{split}{k}.xmi").write_text(document(k).to_xmi(), encoding="utf-8")
    return root


def write_vectors(path: Path, words: Iterable[str]) -> Path:
    """Word vectors for ``words`` as a word2vec text file: 8 seeded random dimensions,
    enough for a trainer that builds its pretrain from casflow's vectors."""
    rng = random.Random(0)
    rows = [w + " " + " ".join(f"{rng.uniform(-1, 1):.3f}" for _ in range(8)) for w in words]
    path.write_text(f"{len(rows)} 8\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def training_workflow(
    gold: Path,
    output: Path,
    *,
    types: Sequence[str],
    layers: Sequence[str],
    trainer: str,
    config: Mapping[str, object],
    seed: int,
) -> Path:
    """A ``casflow train`` workflow, written as ``output`` with the suffix ``.yaml``: view
    ``gold`` (holding ``types``) of the XMI files in ``gold/train`` and ``gold/dev``, the
    ``trainer`` component with ``config`` (JSON is YAML) learning ``layers``."""
    workflow = output.with_suffix(".yaml")
    workflow.write_text(
        f"""\
gold:
  reader:
    component: xmi.reader.v1
    view: gold
    config: {{views: {{gold: [{", ".join(types)}]}}}}
  train: {{input: {gold / "train"}}}
  dev: {{input: {gold / "dev"}}}
layers: [{", ".join(layers)}]
model:
  component: {trainer}
  config: {json.dumps(config)}
seed: {seed}
output: {output}
""",
        encoding="utf-8",
    )
    return workflow


def train(workflow: Path) -> tuple[TrainingResult, list[str]]:
    """``casflow train`` on ``workflow``: its result and the lines it logged."""
    from casflow.pipeline.training import load_training_workflow, run_training

    lines: list[str] = []
    result = run_training(load_training_workflow(workflow), log=lines.append)
    return result, lines


def train_until(workflow: Path, line: str) -> None:
    """``casflow train`` on ``workflow`` stopped (KeyboardInterrupt, as Ctrl-C stops it)
    when it logs a line holding ``line``; fails when it ends without logging one."""

    from casflow.pipeline.training import load_training_workflow, run_training

    def stop(logged: str) -> None:
        if line in logged:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_training(load_training_workflow(workflow), log=stop)


def saved_tensors(path: Path, key: str) -> dict[str, Any]:
    """Every tensor under ``key`` of a saved PyTorch model (nested dictionaries walked),
    by its path of keys; fails when there is none, so comparing two is never vacuous."""
    import torch

    found: dict[str, Any] = {}

    def walk(value: object, where: str) -> None:
        if isinstance(value, torch.Tensor):
            found[where] = value
        elif isinstance(value, dict):
            for name, item in value.items():
                walk(item, f"{where}/{name}")

    walk(torch.load(path, map_location="cpu", weights_only=False)[key], "")
    assert found, f"no tensor under {key!r} in {path}"
    return found


def assert_same_weights(first: Path, second: Path, key: str) -> None:
    """The two saved models hold the same tensors under ``key``, bit for bit."""
    import torch

    expected = saved_tensors(first, key)
    found = saved_tensors(second, key)
    assert expected.keys() == found.keys()
    for name, tensor in expected.items():
        assert torch.equal(tensor, found[name]), f"{second.name}: {name}"
