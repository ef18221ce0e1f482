"""Stanza (stanfordnlp/stanza) wrapped as a casflow component (``stanza.pipeline.v1``)."""
