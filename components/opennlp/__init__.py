"""Apache OpenNLP (Debian package opennlp): its tools as one component, and its trainers."""
