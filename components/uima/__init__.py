"""Apache UIMA Java analysis engines as casflow components."""
