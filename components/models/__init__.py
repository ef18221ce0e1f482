"""Models shipped with casflow, trained by casflow from the gold corpora.

Each model is a folder here, loadable with ``spacy.load(shipped_model_path(name))``:

- ``craft_syntax``: spaCy pipeline (CRAFT tokenizer rules, tok2vec CNN, Penn XPOS
  tagger, dependency parser with CRAFT's CLEAR labels; sentences from the parse),
  trained on the 60 CRAFT train articles. See ``craft_syntax/MODEL_CARD.md``.
- ``craft_constituency``: Stanza constituency parser (``model.pt``, ``pretrain.pt``)
  trained on the 60 CRAFT train treebank articles by ``train.stanza.constituency.v1``
  (``casflow:craft_constituency`` in ``parse.constituency.v1``). See its MODEL_CARD.md.
- ``craft_opennlp``: Apache OpenNLP sentence detector, tokenizer, POS tagger, chunker
  and chunking parser trained on CRAFT train by ``train.opennlp.v1``
  (``model: casflow:craft_opennlp`` in ``opennlp.pipeline.v1``). See its MODEL_CARD.md.
- ``gene_bc2gm``: CRF gene/gene-product tagger trained on BC2GM train
  (``casflow:gene`` in ``ner.gene.v1``). See ``gene_bc2gm/MODEL_CARD.md``.
- ``anatomy_anatem``: vote of three CRF taggers for AnatEM's 12 classes
  (``casflow:anatomy`` in ``ner.anatomy.v1``). See ``anatomy_anatem/MODEL_CARD.md``.
"""

from __future__ import annotations

from pathlib import Path

MODELS_DIR = Path(__file__).resolve().parent


def _is_model(path: Path) -> bool:
    # spaCy pipelines have config.cfg; casflow's CRF taggers have meta.json.
    return (path / "config.cfg").is_file() or (path / "meta.json").is_file()


def shipped_model_path(name: str) -> Path:
    """Folder of the shipped model ``name`` (FileNotFoundError if it is not installed)."""
    path = MODELS_DIR / name
    if "/" in name or "\\" in name or not _is_model(path):
        available = sorted(p.name for p in MODELS_DIR.iterdir() if _is_model(p))
        raise FileNotFoundError(
            f"no shipped model {name!r} in {MODELS_DIR} (installed: {', '.join(available) or 'none'}); "
            "reinstall casflow or retrain it as its MODEL_CARD.md says"
        )
    return path
