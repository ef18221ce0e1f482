"""The one place built-in components are registered.

Names map to "module:Class" strings so nothing is imported until a workflow
asks for it (spaCy is heavy; a workflow that only converts XMI never loads it).
Plug-in packages register theirs through the ``casflow.components`` entry point
group instead. tests/test_registry.py checks that every entry here loads and
declares the name it is registered under.
"""

from __future__ import annotations

_R = "casflow.components.readers."
_W = "casflow.components.writers."
_E = "casflow.components.evaluators."

BUILTIN_COMPONENTS: dict[str, str] = {
    # readers
    "text.reader.v1": _R + "text:TextReader",
    "xmi.reader.v1": _R + "xmi:XmiReader",
    "nxml.reader.v1": _R + "nxml:NxmlReader",
    # gold corpora
    "craft.reader.v1": _R + "craft:CraftReader",
    "bc2gm.reader.v1": _R + "bc2gm:Bc2gmReader",
    "genetag.reader.v1": _R + "genetag:GenetagReader",
    "anatem.reader.v1": _R + "anatem:AnatemReader",
    # importers: precomputed annotations of a document into a view (processors)
    "conllu.import.v1": _R + "conllu:ConlluImport",
    "penn.import.v1": _R + "penn:PennImport",
    "bc2.import.v1": _R + "bc2gm:Bc2Import",
    "brat.import.v1": _R + "brat:BratImport",
    "bio.import.v1": _R + "bio:BioImport",
    # views
    "view.copy.v1": "casflow.components.views.copy:CopyAnnotations",
    # NER
    "ner.crf.v1": "casflow.components.ner.component:CrfNer",
    "ner.gene.v1": "casflow.components.ner.component:GeneNer",
    "ner.anatomy.v1": "casflow.components.ner.component:AnatomyNer",
    # writers
    "xmi.writer.v1": _W + "xmi:XmiWriter",
    "json.writer.v1": _W + "json:JsonWriter",
    # format writers
    "conllu.writer.v1": _W + "conllu:ConlluWriter",
    "penn.writer.v1": _W + "penn:PennWriter",
    "brat.writer.v1": _W + "brat:BratWriter",
    "bio.writer.v1": _W + "bio:BioWriter",
    "bc2.writer.v1": _W + "bc2:Bc2Writer",
    # evaluators
    "eval.sentences.v1": _E + "eval_segmentation:SentenceEvaluator",
    "eval.tokens.v1": _E + "eval_segmentation:TokenEvaluator",
    "eval.pos.v1": _E + "eval_pos:PosEvaluator",
    "eval.mentions.v1": _E + "eval_mentions:MentionEvaluator",
    "eval.dependencies.v1": _E + "eval_dependencies:DependencyEvaluator",
    "eval.constituents.v1": _E + "eval_constituents:ConstituentEvaluator",
    "eval.leaf_ancestor.v1": _E + "eval_constituents:LeafAncestorEvaluator",
    "eval.productions.v1": _E + "eval_constituents:ProductionEvaluator",
    # spaCy and segmentation
    "spacy.pipeline.v1": "casflow.components.spacy.pipeline:SpacyPipeline",
    "sentences.rules.v1": "casflow.components.segmentation.rules:SentenceRulesSplitter",
    # scispaCy
    "scispacy.core.v1": "casflow.components.spacy.scispacy:ScispacyCore",
    "scispacy.ner.v1": "casflow.components.spacy.scispacy:ScispacyNer",
    "scispacy.abbreviations.v1": "casflow.components.spacy.scispacy:ScispacyAbbreviations",
    # trainers (casflow train)
    "train.spacy.syntax.v1": "casflow.components.training.syntax_trainer:SpacySyntaxTrainer",
    "train.crf.mentions.v1": "casflow.components.ner.trainer:CrfMentionTrainer",
}
