"""Chat encoding: batched and budget-cut encodings give the ids of encoding each conversation alone."""
from __future__ import annotations

import pytest

from cheems_lib.models import chat_encoding
from cheems_lib.models import reward_model as rm
from test_reward_model import TEXTS


@pytest.fixture(scope="module")
def tok():
    return rm.train_tokenizer(TEXTS, vocab_size=400)


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
        want = [chat_encoding.encode_pair(t, p, r, sys_prompt=s) for p, r, s in PAIRS]
        assert chat_encoding.encode_pairs(t, PAIRS) == want, name
        assert chat_encoding.encode_pairs(t, PAIRS, chunk=4) == want, name
    assert chat_encoding.encode_pairs(tok, []) == []


def test_batched_encoding_equals_one_at_a_time_for_smollm2(smollm2):
    """The same on SmolLM2's own tokenizer and chat template (default system turn)."""
    from transformers import AutoTokenizer

    t = AutoTokenizer.from_pretrained(smollm2)
    assert t.chat_template
    assert chat_encoding.encode_pairs(t, PAIRS, chunk=4) == [chat_encoding.encode_pair(t, p, r, sys_prompt=s) for p, r, s in PAIRS]


class _Spy:
    """A tokenizer that remembers the longest text it was asked to tokenize (its own call: a class of its own, so
    the backend is not called around it)."""

    def __init__(self, tok):
        self.tok, self.longest = tok, 0

    def __getattr__(self, name):
        return getattr(self.tok, name)

    def saw(self, texts):
        self.longest = max([self.longest, *map(len, [texts] if isinstance(texts, str) else texts)])

    def __call__(self, texts, **kw):
        self.saw(texts)
        return self.tok(texts, **kw)


LONG = "很长的回答，" * 5_000 + "and some English words " * 2_000  # 76,000 characters


def test_long_texts_are_cut_to_the_budget_before_tokenizing(tok):
    """With max_length the tokenizer never sees more than the budget of each text (not the whole 76,000
    characters), and the first max_length ids are those of the whole text, which is still seen as longer."""
    for name, t in _variants(tok).items():
        spy, budget = _Spy(t), chat_encoding.text_budget(t, 64)
        items = [("问", LONG, None), (LONG, "答", "系统"), *PAIRS]
        got = chat_encoding.encode_pairs(spy, items, max_length=64)
        assert 0 < spy.longest <= 2 * budget + 200 < len(LONG) // 10, name  # prompt + response budgets + the template
        for item, ids in zip(items, got):
            full = chat_encoding.encode_pair(t, item[0], item[1], sys_prompt=item[2])
            assert ids[:64] == full[:64] and (len(ids) > 64) == (len(full) > 64), name


def test_texts_within_the_budget_are_not_changed(tok):
    """Texts that fit are not cut: the ids with max_length equal the ids without it, for every tokenizer variant."""
    for name, t in _variants(tok).items():
        assert chat_encoding.encode_pairs(t, PAIRS, max_length=8) == chat_encoding.encode_pairs(t, PAIRS), name


def test_a_normaliser_that_drops_characters_gets_a_larger_budget(tok):
    """A tokenizer whose normaliser deletes spaces makes a cut text too short: it is encoded again, whole if need be."""
    from tokenizers import Tokenizer, normalizers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer.from_str(tok.backend_tokenizer.to_str())
    backend.normalizer = normalizers.Replace(" ", "")
    t = PreTrainedTokenizerFast(tokenizer_object=backend, pad_token=rm.PAD, eos_token=rm.IM_END)
    t.chat_template = rm.CHAT_TEMPLATE
    response = "开头" + " " * 50_000 + "中间的文字很多" * 40 + " " * 20_000
    (ids,) = chat_encoding.encode_pairs(t, [("问", response, None)], max_length=64)
    full = chat_encoding.encode_pair(t, "问", response)
    assert len(full) > 64 and ids[:64] == full[:64] and len(ids) > 64


def test_judge_prompts_are_cut_from_the_end_before_tokenizing(tok):
    """The judge keeps a prompt's last max_length tokens: the tokenizer sees at most the budget, the ids are the same."""
    from cheems_lib.models.judging import _encode_judge, _encode_judges

    spy = _Spy(tok)
    texts = [LONG + " 请回答", "短的"]
    got = _encode_judges(spy, texts, 64)
    assert spy.longest <= chat_encoding.text_budget(tok, 64) + 200
    assert got == [_encode_judge(tok, t, 64) for t in texts]


def test_the_backend_gives_the_wrappers_ids_and_is_skipped_where_the_call_would_change_its_state(tok, monkeypatch):
    """Chats are tokenized by the fast tokenizer's backend: the ids of ``tokenizer(texts, add_special_tokens=False)``,
    special-token text inside a message included. A backend left with truncation, padding or split special tokens
    goes through the wrapper, which resets them, and gives the wrapper's ids."""
    texts = [tok.apply_chat_template(chat_encoding._messages(*item), tokenize=False) for item in PAIRS]
    want = [list(x) for x in tok(texts, add_special_tokens=False)["input_ids"]]
    assert chat_encoding._template_ids(tok, texts) == want
    for name, setup in {"truncation": lambda b: b.enable_truncation(3), "padding": lambda b: b.enable_padding(length=90),
                        "split special tokens": lambda b: setattr(b, "encode_special_tokens", True)}.items():
        t = _variants(tok)["no chat template"]
        setup(t.backend_tokenizer)
        assert chat_encoding._template_ids(t, texts) == want, name
    split = _variants(tok)["no chat template"]
    split.split_special_tokens = True  # the wrapper spells special tokens out: its ids, not the backend's default
    assert chat_encoding._template_ids(split, texts) == [list(x) for x in split(texts, add_special_tokens=False)["input_ids"]] != want
    monkeypatch.setattr(type(tok), "__call__", lambda self, *a, **k: pytest.fail("the wrapper was called"))
    assert chat_encoding._template_ids(tok, texts) == want  # a clean backend, the class's own methods: no wrapper call


def test_a_tokenizer_class_with_its_own_encoding_is_called_as_it_is(tok):
    """A subclass that overrides a method between the call and the backend (``_encode_plus``) is called through it."""
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    seen = []

    class Custom(PreTrainedTokenizerFast):
        def _encode_plus(self, *args, **kwargs):
            seen.append(True)
            return super()._encode_plus(*args, **kwargs)

    custom = Custom(tokenizer_object=Tokenizer.from_str(tok.backend_tokenizer.to_str()), pad_token=rm.PAD,
                    eos_token=rm.IM_END)
    custom.chat_template = rm.CHAT_TEMPLATE
    assert chat_encoding.encode_pairs(custom, PAIRS) == chat_encoding.encode_pairs(tok, PAIRS) and seen


def test_chats_are_rendered_once_for_tokenizers_that_share_a_template(tok, monkeypatch):
    """Two vocabularies with one template: the second tokenizer reuses the rendering and gets its own ids; another
    template renders again."""
    other = rm.train_tokenizer(["回答问题的另一个词表"] * 3, vocab_size=280)
    items = [(f"问题{i}", f"回答{i}", None) for i in range(7)]
    rendered = []
    real = type(tok).apply_chat_template
    monkeypatch.setattr(type(tok), "apply_chat_template", lambda self, chats, **k: rendered.append(len(chats)) or real(self, chats, **k))
    chat_encoding._RENDERED.clear()
    first = chat_encoding.encode_pairs(tok, items)
    second = chat_encoding.encode_pairs(other, items)
    assert rendered == [7]
    monkeypatch.setattr(type(tok), "apply_chat_template", real)
    assert first == [chat_encoding.encode_pair(tok, p, r) for p, r, _ in items]
    assert second == [chat_encoding.encode_pair(other, p, r) for p, r, _ in items] != first
    other.chat_template = rm.CHAT_TEMPLATE + "{# another template #}"
    monkeypatch.setattr(type(tok), "apply_chat_template", lambda self, chats, **k: rendered.append(len(chats)) or real(self, chats, **k))
    chat_encoding.encode_pairs(other, items)
    assert rendered == [7, 7]


def test_a_rendering_is_reused_only_where_special_tokens_and_date_agree(tok):
    """A template that writes ``bos_token``: two tokenizers with the same template and vocabulary but different BOS
    tokens each get their own rendering; a template that reads the date is never reused."""
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    def with_bos(bos):
        t = PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(tok.backend_tokenizer.to_str()),
                                    pad_token=rm.PAD, eos_token=rm.IM_END, bos_token=bos)
        t.chat_template = "{{ bos_token }}" + rm.CHAT_TEMPLATE
        return t

    chat_encoding._RENDERED.clear()
    for t in (with_bos("<s>"), with_bos("[BOS]")):
        assert chat_encoding.encode_pairs(t, PAIRS) == [chat_encoding.encode_pair(t, p, r, sys_prompt=s) for p, r, s in PAIRS]
    assert len(chat_encoding._RENDERED) == 2
    dated = with_bos("<s>")
    dated.chat_template = "{{ strftime_now('%Y') }}" + rm.CHAT_TEMPLATE
    chat_encoding.encode_pairs(dated, PAIRS)
    assert len(chat_encoding._RENDERED) == 2
    texts = chat_encoding._rendered(tok, [chat_encoding._messages("问", "答", None)], False)
    texts[0] = "changed by a caller"
    assert chat_encoding._rendered(tok, [chat_encoding._messages("问", "答", None)], False)[0] != "changed by a caller"


def test_kept_renderings_are_bounded_in_count_and_characters(tok, monkeypatch):
    """The oldest renderings go first, once more than RENDERED_CHUNKS are kept or their characters pass
    RENDERED_CHARACTERS (the newest always stays)."""
    chat_encoding._RENDERED.clear()
    monkeypatch.setattr(chat_encoding, "RENDERED_CHUNKS", 2)
    for i in range(3):
        chat_encoding.encode_pairs(tok, [(f"问{i}", "答", None)])
    assert len(chat_encoding._RENDERED) == 2
    monkeypatch.setattr(chat_encoding, "RENDERED_CHARACTERS", 1)
    chat_encoding.encode_pairs(tok, [("很长的问题" * 10, "答", None)])
    assert len(chat_encoding._RENDERED) == 1
    assert chat_encoding.encode_pairs(tok, PAIRS) == [chat_encoding.encode_pair(tok, p, r, sys_prompt=s) for p, r, s in PAIRS]
