"""Reward models: the tiny family, its tokenizer, and loading checks."""
from __future__ import annotations

import pytest

from cheems_lib.models import chat_encoding
from cheems_lib.models import reward_model as rm

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
    assert chat_encoding.encode_pair(back, "问", "答") == chat_encoding.encode_pair(tok, "问", "答")


def test_tiny_family_spans_30x(tok):
    """At least five named sizes spanning at least 30x in parameters."""
    counts = [rm.count_parameters(rm.build_tiny(name, tok)) for name in rm.TINY_SIZES]
    assert len(counts) >= 5 and counts == sorted(counts) and counts[-1] / counts[0] >= 30


def test_seeded_initialisation(tok):
    """build_tiny with one seed gives identical weights."""
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
    """A tokenizer larger than the model's embeddings is refused before training."""
    small = rm.build_tiny("tiny-xs", rm.train_tokenizer(TEXTS, vocab_size=300))
    with pytest.raises(rm.ModelError, match="embeds only"):
        rm.check_pair(small, rm.train_tokenizer(TEXTS * 3 + ["更多的字符让词表更大一些。" * 5], vocab_size=600))


def test_tiny_config_is_shared_by_reward_model_and_judge(tok):
    """The reward model and the tiny judge get the same Qwen2 shape from tiny_config; unknown sizes fail."""
    from transformers import Qwen2ForCausalLM

    reward = rm.build_tiny("tiny-s", tok, max_length=64).config
    judge = Qwen2ForCausalLM(rm.tiny_config("tiny-s", tok, max_length=64)).config
    keys = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
            "intermediate_size", "max_position_embeddings", "pad_token_id", "tie_word_embeddings")
    assert {k: getattr(reward, k) for k in keys} == {k: getattr(judge, k) for k in keys}
    assert reward.num_labels == 1
    with pytest.raises(rm.ModelError, match="unknown tiny size"):
        rm.tiny_config("tiny-xxl", tok)


def test_placement_loads_whole_where_the_weights_fit_and_spreads_them_where_not(tmp_path, monkeypatch):
    """A chapter's model goes straight onto its GPU when its weights fit 90% of the GPU's memory, is spread over every
    GPU (device_map "auto") when not, and the CPU gets no device map; the dtype's bytes count."""
    import torch

    from cheems_lib.models import reward_model
    from cheems_lib.models.reward_model import build_tiny, count_parameters, placement_for, train_tokenizer

    tok = train_tokenizer(["a b c d"], vocab_size=300)
    build_tiny("tiny-xs", tok).save_pretrained(tmp_path)
    n = count_parameters(tmp_path)
    memory = {"total": 0}
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda d: type("P", (), {"total_memory": memory["total"]}))
    assert placement_for(tmp_path, "cpu") is None
    memory["total"] = int(4 * n / reward_model.FITS_SHARE) + 1
    assert placement_for(tmp_path, "cuda:0") == {"": "cuda:0"}
    assert placement_for(tmp_path, "cuda:0", torch.bfloat16) == {"": "cuda:0"}
    memory["total"] = int(3 * n / reward_model.FITS_SHARE)  # float32 no longer fits, bfloat16 does
    assert placement_for(tmp_path, "cuda:0") == "auto"
    assert placement_for(tmp_path, "cuda:0", "bfloat16") == {"": "cuda:0"}
