"""syntok (segtok v2): rule-based sentence segmentation and tokenization, no model."""
