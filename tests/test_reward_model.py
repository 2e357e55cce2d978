"""Reward models: the tiny family, its tokenizer, and loading checks."""
from __future__ import annotations

import pytest

from cheems_lib import reward_model as rm

TEXTS = ["计算：7 × 8 + 5 等于多少？", "第一步，先算乘法：7×8=56。所以答案是61。", "Hello world, 你好世界。", "def f(x):\n    return x"] * 20


@pytest.fixture(scope="module")
def tok():
    return rm.train_tokenizer(TEXTS, vocab_size=400)


def test_tokenizer_reloads_identically(tok, tmp_path):
    """Saved with a qwen2 model, AutoTokenizer gives the same ids and the same chat encoding."""
    from transformers import AutoTokenizer

    model = rm.build_tiny("tiny-xs", tok)
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    back = AutoTokenizer.from_pretrained(tmp_path)
    for t in TEXTS[:4] + ["混合 mixed 文本 123\n\n  spaces"]:
        assert back(t)["input_ids"] == tok(t)["input_ids"]
    assert rm.encode_pair(back, "问", "答") == rm.encode_pair(tok, "问", "答")


def test_tiny_family_spans_30x(tok):
    """At least five named sizes spanning at least 30x in parameters."""
    counts = [rm.count_parameters(rm.build_tiny(name, tok)) for name in rm.TINY_SIZES]
    assert len(counts) >= 5 and counts == sorted(counts) and counts[-1] / counts[0] >= 30


def test_seeded_initialisation(tok):
    import torch

    a, b = rm.build_tiny("tiny-xs", tok, seed=1), rm.build_tiny("tiny-xs", tok, seed=1)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


def test_untrained_head_is_refused(tok, tmp_path):
    """A base model without a reward head is an error, never a silently random head."""
    from transformers import Qwen2Config, Qwen2Model

    base = Qwen2Model(Qwen2Config(vocab_size=len(tok), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                  num_key_value_heads=1, intermediate_size=64, pad_token_id=tok.pad_token_id))
    base.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    with pytest.raises(rm.ModelError, match="not in the checkpoint"):
        rm.load(tmp_path)
    model, _ = rm.load(tmp_path, require_trained_head=False)  # training may start from a base model
    assert model.config.num_labels == 1


def test_tokenizer_larger_than_embeddings_is_refused(tok):
    small = rm.build_tiny("tiny-xs", rm.train_tokenizer(TEXTS, vocab_size=300))
    with pytest.raises(rm.ModelError, match="embeds only"):
        rm.check_pair(small, rm.train_tokenizer(TEXTS * 3 + ["更多的字符让词表更大一些。" * 5], vocab_size=600))


def test_convert_gguf_refuses_an_existing_folder(tmp_path):
    """convert_gguf never writes into an existing folder: it raises and leaves the folder as it was."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="already exists"):
        rm.convert_gguf(tmp_path / "missing.gguf", out)
    assert [p.name for p in out.iterdir()] == ["keep.txt"] and list(tmp_path.iterdir()) == [out]
