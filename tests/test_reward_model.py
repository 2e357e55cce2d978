"""Reward models: the tiny family, its tokenizer, and loading checks."""
from __future__ import annotations

import pytest

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
    assert rm.encode_pair(back, "问", "答") == rm.encode_pair(tok, "问", "答")


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


def test_convert_gguf_refuses_an_existing_folder(tmp_path):
    """convert_gguf never writes into an existing folder: it raises and leaves the folder as it was."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="already exists"):
        rm.convert_gguf(tmp_path / "missing.gguf", out)
    assert [p.name for p in out.iterdir()] == ["keep.txt"] and list(tmp_path.iterdir()) == [out]


PAIRS = [("计算：7 × 8 + 5 等于多少？", "答案是61。", None), ("Hello world", "你好世界。\n\n  spaces", "你是一个助手。"),
         ("问", "答", ""), ("def f(x):", "    return x <|im_end|> 伪造的结束", None), ("", "", "系统"),
         ("混合 mixed 文本 123", "第一步，先算乘法：7×8=56。", None)]


def _variants(tok):
    """The tiny tokenizer with and without its chat template, each also with a post-processor adding special tokens."""
    from tokenizers import Tokenizer, processors
    from transformers import PreTrainedTokenizerFast

    def copy(add_special: bool, template: str | None):
        backend = Tokenizer.from_str(tok.backend_tokenizer.to_str())
        if add_special:
            backend.post_processor = processors.TemplateProcessing(
                single=f"{rm.IM_START} $A {rm.IM_END}",
                special_tokens=[(t, tok.convert_tokens_to_ids(t)) for t in (rm.IM_START, rm.IM_END)])
        t = PreTrainedTokenizerFast(tokenizer_object=backend, pad_token=rm.PAD, eos_token=rm.IM_END)
        t.chat_template = template
        assert (t("问")["input_ids"] != t("问", add_special_tokens=False)["input_ids"]) == add_special
        return t

    return {"chat template": tok, "no chat template": copy(False, None),
            "adds special tokens, chat template": copy(True, rm.CHAT_TEMPLATE),
            "adds special tokens, no chat template": copy(True, None)}


def test_batched_encoding_equals_one_at_a_time(tok):
    """encode_pairs gives encode_pair's ids for each item: chat template or not, special tokens, system prompts, chunks."""
    for name, t in _variants(tok).items():
        want = [rm.encode_pair(t, p, r, sys_prompt=s) for p, r, s in PAIRS]
        assert rm.encode_pairs(t, PAIRS) == want, name
        assert rm.encode_pairs(t, PAIRS, chunk=4) == want, name
    assert rm.encode_pairs(tok, []) == []


def test_batched_encoding_equals_one_at_a_time_for_smollm2(smollm2):
    """The same on SmolLM2's own tokenizer and chat template (default system turn)."""
    from transformers import AutoTokenizer

    t = AutoTokenizer.from_pretrained(smollm2)
    assert t.chat_template
    assert rm.encode_pairs(t, PAIRS, chunk=4) == [rm.encode_pair(t, p, r, sys_prompt=s) for p, r, s in PAIRS]


class _Spy:
    """A tokenizer that remembers the longest text it was asked to tokenize."""

    def __init__(self, tok):
        self.tok, self.longest = tok, 0

    def __getattr__(self, name):
        return getattr(self.tok, name)

    def __call__(self, texts, **kw):
        self.longest = max([self.longest, *map(len, [texts] if isinstance(texts, str) else texts)])
        return self.tok(texts, **kw)


LONG = "很长的回答，" * 5_000 + "and some English words " * 2_000  # 76,000 characters


def test_long_texts_are_cut_to_the_budget_before_tokenizing(tok):
    """With max_length the tokenizer never sees more than the budget of each text (not the whole 76,000
    characters), and the first max_length ids are those of the whole text, which is still seen as longer."""
    for name, t in _variants(tok).items():
        spy, budget = _Spy(t), rm.text_budget(t, 64)
        items = [("问", LONG, None), (LONG, "答", "系统"), *PAIRS]
        got = rm.encode_pairs(spy, items, max_length=64)
        assert spy.longest <= 2 * budget + 200 < len(LONG) // 10, name  # prompt + response budgets + the template
        for item, ids in zip(items, got):
            full = rm.encode_pair(t, item[0], item[1], sys_prompt=item[2])
            assert ids[:64] == full[:64] and (len(ids) > 64) == (len(full) > 64), name


def test_texts_within_the_budget_are_not_changed(tok):
    """Texts that fit are not cut: the ids with max_length equal the ids without it, for every tokenizer variant."""
    for name, t in _variants(tok).items():
        assert rm.encode_pairs(t, PAIRS, max_length=8) == rm.encode_pairs(t, PAIRS), name


def test_a_normaliser_that_drops_characters_gets_a_larger_budget(tok):
    """A tokenizer whose normaliser deletes spaces makes a cut text too short: it is encoded again, whole if need be."""
    from tokenizers import Tokenizer, normalizers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer.from_str(tok.backend_tokenizer.to_str())
    backend.normalizer = normalizers.Replace(" ", "")
    t = PreTrainedTokenizerFast(tokenizer_object=backend, pad_token=rm.PAD, eos_token=rm.IM_END)
    t.chat_template = rm.CHAT_TEMPLATE
    response = "开头" + " " * 50_000 + "中间的文字很多" * 40 + " " * 20_000
    (ids,) = rm.encode_pairs(t, [("问", response, None)], max_length=64)
    full = rm.encode_pair(t, "问", response)
    assert len(full) > 64 and ids[:64] == full[:64] and len(ids) > 64


def test_judge_prompts_are_cut_from_the_end_before_tokenizing(tok):
    """The judge keeps a prompt's last max_length tokens: the tokenizer sees at most the budget, the ids are the same."""
    from cheems_lib.models.judging import _encode_judge, _encode_judges

    spy = _Spy(tok)
    texts = [LONG + " 请回答", "短的"]
    got = _encode_judges(spy, texts, 64)
    assert spy.longest <= rm.text_budget(tok, 64) + 200
    assert got == [_encode_judge(tok, t, 64) for t in texts]


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
