"""The one place built-in components are registered.

Names map to "module:Class" strings so nothing is imported until a workflow
asks for it (spaCy is heavy; a workflow that only converts XMI never loads it).
Plug-in packages register theirs through the ``casflow.components`` entry point
group instead. tests/test_registry.py checks that every entry here loads and
declares the name it is registered under.

Where a component lives says what it is: ``formats/<format>/`` holds the
reader or importer and the writer of one file format over its pure parser,
``corpora/`` the gold corpus readers, ``evaluators/`` the CAS evaluators over
the pure ``metrics/``, and each wrapped tool has a folder named after it.
"""

from __future__ import annotations

_F = "casflow.components.formats."
_C = "casflow.components.corpora."
_E = "casflow.components.evaluators."

BUILTIN_COMPONENTS: dict[str, str] = {
    # readers of documents
    "text.reader.v1": _F + "text.reader:TextReader",
    "xmi.reader.v1": _F + "xmi.reader:XmiReader",
    "nxml.reader.v1": _F + "jats.reader:NxmlReader",
    "pmc.reader.v1": "casflow.components.pmc.reader:PmcReader",
    # gold corpora
    "craft.reader.v1": _C + "craft:CraftReader",
    "bc2gm.reader.v1": _C + "bc2gm:Bc2gmReader",
    "genetag.reader.v1": _C + "genetag:GenetagReader",
    "anatem.reader.v1": _C + "anatem:AnatemReader",
    # importers: precomputed annotations of a document into a view (processors)
    "conllu.import.v1": _F + "conllu.importer:ConlluImport",
    "penn.import.v1": _F + "penn.importer:PennImport",
    "bc2.import.v1": _F + "bc2.importer:Bc2Import",
    "genetag.import.v1": _F + "genetag.importer:GenetagImport",
    "brat.import.v1": _F + "brat.importer:BratImport",
    "bio.import.v1": _F + "bio.importer:BioImport",
    # views
    "view.copy.v1": "casflow.components.views.copy:CopyAnnotations",
    # system combination: several views -> one
    "combine.dependencies.v1": "casflow.components.combine.dependencies:CombineDependencies",
    "combine.constituents.v1": "casflow.components.combine.constituents:CombineConstituents",
    "combine.mentions.v1": "casflow.components.combine.mentions:CombineMentions",
    # constituency trees -> dependency trees (learned head rules)
    "convert.dependencies.v1": "casflow.components.headrules.component:ConvertDependencies",
    # CRF mention taggers (python-crfsuite)
    "ner.crf.v1": "casflow.components.crfsuite.tagger:CrfNer",
    "ner.gene.v1": "casflow.components.crfsuite.tagger:GeneNer",
    "ner.anatomy.v1": "casflow.components.crfsuite.tagger:AnatomyNer",
    # dictionary tagger (UBERON and CL names)
    "ner.dictionary.v1": "casflow.components.dictionary.tagger:DictionaryTagger",
    # writers of whole CASes
    "xmi.writer.v1": _F + "xmi.writer:XmiWriter",
    "xmi.dkpro.writer.v1": _F + "xmi.dkpro_writer:DkproXmiWriter",
    "json.writer.v1": _F + "json.writer:JsonWriter",
    # format writers
    "conllu.writer.v1": _F + "conllu.writer:ConlluWriter",
    "penn.writer.v1": _F + "penn.writer:PennWriter",
    "brat.writer.v1": _F + "brat.writer:BratWriter",
    "bio.writer.v1": _F + "bio.writer:BioWriter",
    "bc2.writer.v1": _F + "bc2.writer:Bc2Writer",
    "genetag.writer.v1": _F + "genetag.writer:GenetagWriter",
    # evaluators
    "eval.sentences.v1": _E + "segmentation:SentenceEvaluator",
    "eval.tokens.v1": _E + "segmentation:TokenEvaluator",
    "eval.pos.v1": _E + "pos:PosEvaluator",
    "eval.mentions.v1": _E + "mentions:MentionEvaluator",
    "eval.dependencies.v1": _E + "dependencies:DependencyEvaluator",
    "eval.constituents.v1": _E + "constituents:ConstituentEvaluator",
    "eval.leaf_ancestor.v1": _E + "constituents:LeafAncestorEvaluator",
    "eval.productions.v1": _E + "constituents:ProductionEvaluator",
    "eval.agreement.v1": _E + "agreement:AgreementEvaluator",
    # spaCy and rule-based segmentation
    "spacy.pipeline.v1": "casflow.components.spacy.pipeline:SpacyPipeline",
    "sentences.rules.v1": "casflow.components.rules.sentences:SentenceRulesSplitter",
    "tokens.fine.v1": "casflow.components.rules.tokens:FineTokens",
    # sentence splitters and tokenizers that need no model download
    "sentences.pysbd.v1": "casflow.components.pysbd.sentences:PysbdSentences",
    "sentences.syntok.v1": "casflow.components.syntok.segmenter:SyntokSentences",
    "tokens.syntok.v1": "casflow.components.syntok.segmenter:SyntokTokens",
    "sentences.blingfire.v1": "casflow.components.blingfire.segmenter:BlingfireSentences",
    "tokens.blingfire.v1": "casflow.components.blingfire.segmenter:BlingfireTokens",
    "sentences.nltk.punkt.v1": "casflow.components.nltk.punkt:PunktSentences",
    "tokens.nltk.treebank.v1": "casflow.components.nltk.treebank:TreebankTokens",
    "sentences.spacy.sentencizer.v1": "casflow.components.spacy.segmenters:SpacySentencizer",
    "tokens.spacy.english.v1": "casflow.components.spacy.segmenters:SpacyTokens",
    "tokens.scispacy.v1": "casflow.components.spacy.segmenters:ScispacyTokens",
    # UDPipe 1
    "udpipe.v1": "casflow.components.udpipe.pipeline:UdpipePipeline",
    "stanza.pipeline.v1": "casflow.components.stanza.pipeline:StanzaPipeline",
    "parse.constituency.v1": "casflow.components.stanza.constituency:ConstituencyParser",
    # transformer NER models fine-tuned by train.transformers.ner.v1 (Hugging Face)
    "transformers.ner.v1": "casflow.components.transformer_ner.tagger:TransformerNer",
    # Apache OpenNLP (one JVM per worker)
    "opennlp.pipeline.v1": "casflow.components.opennlp.pipeline:OpenNlpPipeline",
    # any Apache UIMA Java analysis engine (one JVM per worker)
    "uima.engine.v1": "casflow.components.uima.engine:UimaEngine",
    # scispaCy
    "scispacy.core.v1": "casflow.components.spacy.scispacy:ScispacyCore",
    "scispacy.ner.v1": "casflow.components.spacy.scispacy:ScispacyNer",
    "scispacy.abbreviations.v1": "casflow.components.spacy.scispacy:ScispacyAbbreviations",
    # trainers (casflow train)
    "train.spacy.syntax.v1": "casflow.components.spacy.trainer:SpacySyntaxTrainer",
    "train.crf.mentions.v1": "casflow.components.crfsuite.trainer:CrfMentionTrainer",
    "train.nltk.punkt.v1": "casflow.components.nltk.punkt:PunktSentenceTrainer",
    "train.udpipe.v1": "casflow.components.udpipe.trainer:UdpipeTrainer",
    "train.opennlp.v1": "casflow.components.opennlp.trainer:OpenNlpTrainer",
    "train.headrules.v1": "casflow.components.headrules.trainer:HeadRulesTrainer",
    "train.stanza.constituency.v1": (
        "casflow.components.stanza.constituency_trainer:StanzaConstituencyTrainer"
    ),
    "train.stanza.ner.v1": "casflow.components.stanza.ner_trainer:StanzaNerTrainer",
    "train.stanza.syntax.v1": "casflow.components.stanza.syntax_trainer:StanzaSyntaxTrainer",
    "train.transformers.ner.v1": (
        "casflow.components.transformer_ner.trainer:TransformerNerTrainer"
    ),
}
