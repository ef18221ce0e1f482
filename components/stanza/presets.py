"""Label mappings of Stanza's biomedical NER packages onto GeneMention / AnatomyMention.

Label names are those the Stanza 1.x packages predict (their training sets' classes,
upper-cased). Labels not listed (chemicals, diseases, species, organisms, cell lines)
follow ``unmapped_entities``.
"""

from __future__ import annotations

from typing import Literal

from casflow.components.formats.anatem.parse import ANATEM_CLASSES
from casflow.components.layers import EntityTarget
from casflow.components.spacy.scispacy import BIONLP13CG_ANATOMY


def _gene(value: str) -> EntityTarget:
    return EntityTarget(type="gene", value=value)


def _anatomy(value: str) -> EntityTarget:
    return EntityTarget(type="anatomy", value=value)


NER_PRESETS: dict[str, dict[str, EntityTarget]] = {
    # BioNLP'13 CG: Stanza keeps the corpus's hyphen (MULTI-TISSUE_STRUCTURE), scispaCy
    # writes an underscore; both spellings map to AnatEM's class.
    "bionlp13cg": {
        "GENE_OR_GENE_PRODUCT": _gene("GENE_OR_GENE_PRODUCT"),
        **{label: _anatomy(value) for label, value in BIONLP13CG_ANATOMY.items()},
        "MULTI-TISSUE_STRUCTURE": _anatomy("Multi-tissue_structure"),
    },
    # AnatEM's single-class release as Stanza trained it.
    "anatem": {"ANATOMY": _anatomy("Anatomy")},
    # JNLPBA: DNA, RNA and protein names are gene mentions (GENETAG, BC2GM); cell types
    # are AnatEM's Cell; cell lines are neither.
    "jnlpba": {
        "DNA": _gene("DNA"),
        "RNA": _gene("RNA"),
        "PROTEIN": _gene("PROTEIN"),
        "CELL_TYPE": _anatomy("Cell"),
    },
    # BC5CDR has chemicals and diseases only: nothing maps, all follow unmapped_entities.
    "bc5cdr": {},
    # Models trained by train.stanza.ner.v1: the 12 AnatEM classes as the corpus spells
    # them (layer anatomy), or the one gene label of train-gene.yaml (layer genes).
    "casflow_anatem": {label: _anatomy(label) for label in ANATEM_CLASSES},
    "casflow_gene": {"GENE": _gene("GENE")},
}
StanzaNerPreset = Literal[
    "bionlp13cg", "anatem", "jnlpba", "bc5cdr", "casflow_anatem", "casflow_gene"
]
