"""Majority vote over several CRF taggers (a model folder whose meta lists member folders).

Members trained with different feature sets and regularisation make different
errors; a mention (span and label) that most members output is kept, and when
kept mentions overlap, the one more members agree on (then the earlier one) wins.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from casflow.components.crfsuite.crf import META_FILE, CrfTagger
from casflow.components.crfsuite.postprocess import DOCUMENT_POSTPROCESSORS, DocumentStep
from casflow.components.crfsuite.tokenize import Span
from casflow.pipeline.files import atomic_write_text

Tagged = tuple[int, int, str, float]


def vote(outputs: Sequence[Sequence[Tagged]], needed: int) -> list[Tagged]:
    """Mentions output by at least ``needed`` members; confidence = share of members."""
    counts = Counter((b, e, label) for output in outputs for b, e, label, _ in output)
    chosen = sorted(
        (key for key, n in counts.items() if n >= needed), key=lambda k: (-counts[k], k[0], k[1])
    )
    kept: list[Tagged] = []
    for begin, end, label in chosen:
        if any(b < end and begin < e for b, e, _, _ in kept):
            continue
        kept.append((begin, end, label, counts[(begin, end, label)] / len(outputs)))
    return sorted(kept)


class EnsembleTagger:
    """Same interface as :class:`CrfTagger`: ``tag(text, spans)``."""

    def __init__(self, members: Sequence[CrfTagger], needed: int | None = None) -> None:
        self.members = list(members)
        self.needed = needed if needed is not None else len(self.members) // 2 + 1

    @classmethod
    def load(cls, model_dir: str | Path) -> EnsembleTagger:
        model_dir = Path(model_dir)
        meta = json.loads((model_dir / META_FILE).read_text(encoding="utf-8"))
        members = [CrfTagger.load(model_dir / name) for name in meta["members"]]
        return cls(members, meta.get("needed"))

    def tag(self, text: str, spans: Sequence[Span]) -> list[Tagged]:
        return vote([m.tag(text, spans) for m in self.members], self.needed)


def load_tagger(model_dir: str | Path) -> CrfTagger | EnsembleTagger:
    """A model folder as a tagger: one CRF, or a vote over the member folders its meta names."""
    model_dir = Path(model_dir)
    meta = json.loads((model_dir / META_FILE).read_text(encoding="utf-8"))
    return EnsembleTagger.load(model_dir) if "members" in meta else CrfTagger.load(model_dir)


def document_steps(model_dir: str | Path, meta: dict[str, Any] | None = None) -> list[DocumentStep]:
    """The document-level post-processing a model folder's meta names (after the vote);
    ValueError naming the file for a name this casflow does not know. ``meta``: the
    folder's meta.json, already read."""
    if meta is None:
        meta = json.loads((Path(model_dir) / META_FILE).read_text(encoding="utf-8"))
    names = meta.get("document_postprocess", [])
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise ValueError(
            f"{Path(model_dir) / META_FILE}: document_postprocess must be a list of step names"
        )
    unknown = [name for name in names if name not in DOCUMENT_POSTPROCESSORS]
    if unknown:
        raise ValueError(
            f"{Path(model_dir) / META_FILE}: unknown document_postprocess "
            f"{', '.join(unknown)}; known: {', '.join(DOCUMENT_POSTPROCESSORS)} "
            "(a newer casflow may have written this model)"
        )
    return [DOCUMENT_POSTPROCESSORS[name] for name in names]


def assemble(output: Path, members: Sequence[Path], needed: int | None = None) -> None:
    """Copy trained model folders into ``output`` as members of one voting model."""
    import shutil

    output.mkdir(parents=True, exist_ok=True)
    names = []
    for number, member in enumerate(members, 1):
        name = f"member{number}"
        shutil.copytree(member, output / name, dirs_exist_ok=True)
        names.append(name)
    meta = {"members": names, "needed": needed if needed is not None else len(names) // 2 + 1}
    atomic_write_text(output / META_FILE, json.dumps(meta, indent=2) + "\n")
