"""English head rules for OpenNLP's chunking parser, in OpenNLP's head-rules format.

OpenNLP's trainer needs a head-rules file and the Debian package ships none, so casflow
writes its own from the head table of Collins (1999, Appendix A). A line is
``<number of tags + 2> <label> <1: search left to right, 0: right to left> <tags...>``.
OpenNLP's English ``HeadRules`` finds NP heads by its own code, so NP has no line.
"""

from __future__ import annotations

#: label -> (search from the left?, tags in priority order, space-separated)
COLLINS_HEAD_RULES: dict[str, tuple[bool, str]] = {
    "ADJP": (True, "NNS QP NN $ ADVP JJ VBN VBG ADJP JJR NP JJS DT FW RBR RBS SBAR RB"),
    "ADVP": (False, "RB RBR RBS FW ADVP TO CD JJR JJ IN NP JJS NN"),
    "CONJP": (False, "CC RB IN"),
    "FRAG": (False, ""),
    "INTJ": (True, ""),
    "LST": (False, "LS :"),
    "NAC": (True, "NN NNS NNP NNPS NP NAC EX $ CD QP PRP VBG JJ JJS JJR ADJP FW"),
    "PP": (False, "IN TO VBG VBN RP FW"),
    "PRN": (True, ""),
    "PRT": (False, "RP"),
    "QP": (True, "$ IN NNS NN JJ RB DT CD NCD QP JJR JJS"),
    "RRC": (False, "VP NP ADVP ADJP PP"),
    "S": (True, "TO IN VP S SBAR ADJP UCP NP"),
    "SBAR": (True, "WHNP WHPP WHADVP WHADJP IN DT S SQ SINV SBAR FRAG"),
    "SBARQ": (True, "SQ S SINV SBARQ FRAG"),
    "SINV": (True, "VBZ VBD VBP VB MD VP S SINV ADJP NP"),
    "SQ": (True, "VBZ VBD VBP VB MD VP SQ"),
    "UCP": (False, ""),
    "VP": (True, "TO VBD VBN MD VBZ VB VBG VBP VP ADJP NN NNS NP"),
    "WHADJP": (True, "CC WRB JJ ADJP"),
    "WHADVP": (False, "CC WRB"),
    "WHNP": (True, "WDT WP WP$ WHADJP WHPP WHNP"),
    "WHPP": (False, "IN TO FW"),
    "X": (False, ""),
    "TOP": (True, ""),
}


def head_rules_text() -> str:
    """The rules as OpenNLP's English ``HeadRules`` reads them."""
    return "".join(
        f"{len(tags.split()) + 2} {label} {1 if left else 0} {tags}".rstrip() + "\n"
        for label, (left, tags) in COLLINS_HEAD_RULES.items()
    )
