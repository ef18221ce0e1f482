"""Interoperability checks against other UIMA implementations (Apache UIMA Java)."""
