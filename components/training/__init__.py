"""Training casflow's own spaCy models from gold corpora.

- :mod:`.gold`: the CAS-independent per-document gold structure (:class:`GoldSyntaxDocument`).
- :mod:`.craft_syntax`: CRAFT CoNLL-U + text -> :class:`GoldSyntaxDocument`.
- :mod:`.spacy_docs`: gold documents -> spaCy ``Doc``/``DocBin`` (text and spacing kept).
- :mod:`.tokenizer`: tokenizer rules reproducing CRAFT tokenization.
- :mod:`.train`: the training driver around ``spacy.training.loop``.
- :mod:`.evaluate_syntax`: raw-text scoring of a pipeline against gold documents.
"""
