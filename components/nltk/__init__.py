"""NLTK: Punkt sentence splitting (trained here, unsupervised) and the Treebank tokenizer.

Nothing comes from ``nltk_data``: Punkt's parameters are learned by
``casflow train`` (``train.nltk.punkt.v1``) from raw training text, and the
Treebank tokenizer is rules only.
"""
