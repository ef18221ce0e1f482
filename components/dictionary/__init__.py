"""A dictionary tagger for anatomy: longest-match lookup of ontology names (UBERON, CL)."""
