"""GENETAG format: token/TAG sentences, token-index mentions, alternatives, writers."""

from __future__ import annotations

import warnings

import pytest

from casflow.components.formats.common import FormatError, FormatWarning
from casflow.components.formats.genetag import parse as genetag

TOKENIZED = (
    "@@1 Binding/TAG of/TAG CREB/TAG //TAG ATF/TAG proteins/TAG ./.\n"
    "@@2 The/TAG p53/TAG gene/TAG ./.\n"
)
TAGGED = (
    "@@1 Binding/NN of/IN CREB/NEWGENE //NEWGENE ATF/NEWGENE proteins/NEWGENE ./.\n"
    "@@2 The/DT p53/NEWGENE gene/NEWGENE1 ./.\n"
)
GOLD = "@@1|2 5|CREB / ATF proteins\n@@2|1 1|p53\n"
ALTERNATIVES = "@@1|2 4|CREB / ATF\n@@1|4 5|ATF proteins\n@@2|2 2|gene\n@@2|1 2|p53 gene\n"


def sentences_by_id():
    return {s.id: s for s in genetag.parse_sentences(TOKENIZED, "TOKENIZED_CORPUS")}


def test_tokens_split_on_the_last_slash_and_text_joins_with_spaces():
    sentence = genetag.parse_sentences(TOKENIZED)[0]
    assert [(t.text, t.tag) for t in sentence.tokens][2:5] == [
        ("CREB", "TAG"),
        ("/", "TAG"),
        ("ATF", "TAG"),
    ]
    assert sentence.text == "Binding of CREB / ATF proteins ."
    assert all(sentence.text[t.begin : t.end] == t.text for t in sentence.tokens)
    assert [t.begin for t in sentence.tokens][:3] == [0, 8, 11]


def test_sentence_files_round_trip():
    assert genetag.format_sentences(genetag.parse_sentences(TOKENIZED)) == TOKENIZED
    assert genetag.format_sentences(genetag.parse_sentences(TAGGED)) == TAGGED


@pytest.mark.parametrize("line", ["@@3 a/DT b", "3 a/DT", "@@3 a/DT  b/NN", "@@3 /NN"])
def test_malformed_sentence_line(line):
    with pytest.raises(FormatError, match=r"TAGGED:2:"):
        genetag.parse_sentences("@@1 a/DT\n" + line + "\n", "TAGGED")


def test_token_mentions_become_character_spans():
    by_id = sentences_by_id()
    located = genetag.locate_mentions(by_id, genetag.parse_mentions(GOLD, "Gold.format"))
    assert [(m.begin, m.end) for m in located] == [(11, 30), (4, 7)]
    assert by_id["@@1"].text[11:30] == "CREB / ATF proteins"


def test_mismatch_names_file_line_and_sentence():
    mentions = genetag.parse_mentions("@@2|1 1|p53\n@@2|1 2|p53\n", "Gold.format")
    with pytest.raises(FormatError, match=r"Gold\.format:2: sentence @@2: .*'p53 gene'"):
        genetag.locate_mentions(sentences_by_id(), mentions)
    with pytest.warns(FormatWarning, match="kept the token indices"):
        located = genetag.locate_mentions(sentences_by_id(), mentions, on_mismatch="warn")
    assert [m.text_matches for m in located] == [True, False]


def test_token_range_outside_sentence():
    mentions = genetag.parse_mentions("@@2|3 4|x\n", "Gold.format")
    with pytest.raises(FormatError, match="outside its 4 tokens"):
        genetag.locate_mentions(sentences_by_id(), mentions)


def test_damaged_lines_are_repaired_with_a_warning_unless_strict():
    damaged = "@@2|1 1p53\n@@1|2 4|CREB / ATF@@1|4 5|ATF proteins\n"
    with pytest.warns(FormatWarning) as caught:
        mentions = genetag.parse_mentions(damaged, "Gold.format")
    assert [w.message.line for w in caught] == [1, 2]
    assert [(m.sentence_id, m.first, m.last, m.text, m.line) for m in mentions] == [
        ("@@2", 1, 1, "p53", 1),
        ("@@1", 2, 4, "CREB / ATF", 2),
        ("@@1", 4, 5, "ATF proteins", 2),
    ]
    with pytest.raises(FormatError, match=r"Gold\.format:1:"):
        genetag.parse_mentions(damaged, "Gold.format", strict=True)


def test_alternatives_link_to_overlapping_gold():
    by_id = sentences_by_id()
    genes = genetag.locate_mentions(by_id, genetag.parse_mentions(GOLD))
    alternatives = genetag.locate_mentions(by_id, genetag.parse_mentions(ALTERNATIVES))
    orphans = genetag.link_alternatives(genes, alternatives)
    assert [[a.mention.text for a in g.alternatives] for g in genes] == [
        ["CREB / ATF", "ATF proteins"],
        ["p53 gene"],
    ]
    assert [o.mention.text for o in orphans] == ["gene"]


def test_writer_and_span_conversion(tmp_path):
    sentence = sentences_by_id()["@@1"]
    mention = genetag.mention_from_span(sentence, 11, 21)
    assert (mention.first, mention.last, mention.text) == (2, 4, "CREB / ATF")
    with pytest.raises(ValueError, match="token boundaries"):
        genetag.mention_from_span(sentence, 12, 21)
    path = tmp_path / "Test.format"
    genetag.write_mentions(
        [mention, genetag.GenetagMention("@@1", 0, 0, "Binding")], path, sort=True
    )
    assert path.read_text() == "@@1|0 0|Binding\n@@1|2 4|CREB / ATF\n"


def test_mentions_from_newgene_tags():
    sentences = genetag.parse_sentences(TAGGED)
    found = [
        (m.sentence_id, m.first, m.last, m.text)
        for s in sentences
        for m in genetag.mentions_from_tags(s)
    ]
    # NEWGENE1 after NEWGENE starts a second, adjacent name
    assert found == [
        ("@@1", 2, 5, "CREB / ATF proteins"),
        ("@@2", 1, 1, "p53"),
        ("@@2", 2, 2, "gene"),
    ]


def test_load_genetag_from_files(tmp_path):
    (tmp_path / "TOKENIZED_CORPUS").write_text(TOKENIZED)
    (tmp_path / "Gold.format").write_text(GOLD)
    (tmp_path / "Correct.Data").write_text(ALTERNATIVES)
    corpus = genetag.load_genetag(
        tmp_path / "TOKENIZED_CORPUS", tmp_path / "Gold.format", tmp_path / "Correct.Data"
    )
    assert [len(corpus.genes[s.id]) for s in corpus.sentences] == [1, 1]
    assert len(corpus.orphan_alternatives) == 1


# Lines of the distributed data whose text disagrees with the tokens they point at
# (offsets too short, a lower-cased text, an extra character), or whose sentence id
# is truncated; the other two kinds of damage (missing "|", glued records) are repaired.
KNOWN_DAMAGE = {
    ("train", "Gold.format", 298),  # 18 18 'CREB / ATF proteins': tokens 18..18 are 'CREB'
    ("train", "Gold.format", 2080),  # 5 5 'p185 ( neu )'
    ("train", "Gold.format", 6499),  # 18 18 'SAP': the token is 'SAPK'
    ("train", "Gold.format", 7808),  # '|' missing: '@@18719714263|11 11OCT-1'
    ("train", "Correct.Data", 13),  # sentence id @@8978690125 (one digit short)
    ("train", "Correct.Data", 753),  # 'protein S7 .3'
    ("train", "Correct.Data", 2332),  # lower-cased 'crp2 ( lim2 ) r122a'
    ("train", "Correct.Data", 3485),  # lower-cased 'chimeric h4'
    ("train", "Correct.Data", 5684),  # two records on one line
    ("devtest", "Gold.format", 1761),  # lower-cased 'il-2 receptor'
    ("devtest", "Correct.Data", 610),  # trailing space 'class II- '
    ("devtest", "Correct.Data", 2095),  # 'BamHI-F' at the token 'but'
}


@pytest.mark.slow
@pytest.mark.corpus
@pytest.mark.parametrize("split", ["train", "devtest"])
def test_genetag_corpus_round_trip(corpora_dir, split):
    folder = corpora_dir / "genetag" / split
    for name in ("TOKENIZED_CORPUS", "TAGGED_GENE_CORPUS"):
        path = folder / name
        sentences = genetag.read_sentences(path)
        assert genetag.format_sentences(sentences) == path.read_text()
    by_id = {s.id: s for s in genetag.read_sentences(folder / "TOKENIZED_CORPUS")}
    tagged = {s.id: s for s in sentences}
    assert [[t.text for t in s.tokens] for s in by_id.values()] == [
        [t.text for t in tagged[i].tokens] for i in by_id
    ]
    damaged = set()
    for name in ("Gold.format", "Correct.Data"):
        path = folder / name
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            mentions = genetag.read_mentions(path)
            located = genetag.locate_mentions(by_id, mentions, on_mismatch="warn")
        damaged |= {(split, name, w.message.line) for w in caught}
        repaired_lines = {
            w.message.line for w in caught if "record" in str(w.message) or "'|'" in str(w.message)
        }
        original = path.read_text().splitlines()
        written = genetag.format_mentions(mentions).splitlines()
        kept = [m for m in mentions if m.line not in repaired_lines]
        assert [original[m.line - 1] for m in kept] == [
            genetag.format_mentions([m]).rstrip("\n") for m in kept
        ]
        assert len(written) == len(mentions)
        for item in located:
            sentence = by_id[item.sentence_id]
            again = genetag.mention_from_span(sentence, item.begin, item.end)
            assert (again.first, again.last) == (item.mention.first, item.mention.last)
            assert (again.text == item.mention.text) == item.text_matches
    assert damaged == {d for d in KNOWN_DAMAGE if d[0] == split}
