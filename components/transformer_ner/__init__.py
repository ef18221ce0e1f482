"""A fine-tuned transformer NER tagger (``transformers.ner.v1``) and its trainer
(``train.transformers.ner.v1``), over Hugging Face ``transformers`` on the CPU."""
