"""Dependencies from constituency trees by head rules learned from a treebank."""
