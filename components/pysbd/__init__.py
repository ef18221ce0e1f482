"""pySBD (Python Sentence Boundary Disambiguation), rule-based, no model."""
