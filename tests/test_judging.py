"""Generative judges: the paper's prompt, letter probabilities, both orders, scores for the metrics."""
from __future__ import annotations

import pytest

from cheems_lib.models.judging import (CATEGORY_CRITERION, CRITERIA, JUDGE_TEMPLATE, PairVerdict, judge_prompt, judge_records,
                                judge_scores, position_consistency)
from cheems_lib.models.reward_model import train_tokenizer
from cheems_lib.world.simulation import WorldConfig, build_world


@pytest.fixture(scope="module")
def judge():
    """A small causal LM created here: the judge code path, end to end, without a hub download."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    recs = build_world(WorldConfig(size="smoke", seed=1)).files["cheems_bench/human.jsonl"][:3]
    texts = [JUDGE_TEMPLATE, *CRITERIA.values()] + [t for r in recs for t in [r.prompt, *(x.content for x in r.responses)]]
    tok = train_tokenizer(texts, vocab_size=800)
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(Qwen2Config(vocab_size=len(tok), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                         num_key_value_heads=1, intermediate_size=64, pad_token_id=tok.pad_token_id,
                                         max_position_embeddings=4096))
    return model, tok, recs


def _paper_text(name: str) -> str:
    from cheems_lib.paper import data_dir

    return (data_dir() / name).read_text(encoding="utf-8").strip()


def test_template_is_fig11_verbatim():
    """JUDGE_TEMPLATE is the paper's Fig. 11 text (data/paper/fig11_judge_prompt.txt) after its heading, unchanged."""
    heading = "Judge Prompt Template "
    text = _paper_text("fig11_judge_prompt.txt")
    assert text.startswith(heading) and text[len(heading):] == JUDGE_TEMPLATE


def test_criteria_are_fig13_verbatim():
    """Each of CRITERIA is the text under its own heading in the paper's Fig. 13 (data/paper/fig13_criteria.txt)."""
    sections = _paper_text("fig13_criteria.txt").split("Criterion: ")[1:]
    paper = dict(section.strip().split(" ", 1) for section in sections)
    assert paper == CRITERIA


def test_prompt_is_the_papers_with_the_category_criterion():
    """The filled prompt holds both answers, the category's criterion, no placeholder, and ends as Fig. 11 does."""
    p = judge_prompt("问题", "答案甲", "答案乙", "数学")
    assert "「answerA」: 答案甲" in p and "「answerB」: 答案乙" in p and CRITERIA["推理/数学"] in p
    assert p.endswith("接下来回复结果:") and "{" not in p
    assert set(CATEGORY_CRITERION.values()) == set(CRITERIA)


def test_both_orders_probabilities_and_scores(judge):
    """Every pair is judged in both orders with probabilities summing to one; each pair hands out one unit of credit."""
    model, tok, recs = judge
    verdicts = judge_records(model, tok, recs, batch_size=4)
    assert len(verdicts) == sum(len(r.responses) * (len(r.responses) - 1) // 2 for r in recs)
    for v in verdicts:
        assert sum(v.ab) == pytest.approx(1, abs=1e-5) and sum(v.ba) == pytest.approx(1, abs=1e-5)
        assert v.ab != v.ba  # the two orders are different inputs
    scores = judge_scores(verdicts)
    for r in recs:  # each pair hands out exactly one unit of credit
        k = len(r.responses)
        assert sum(scores[(r.id, x.id)] for x in r.responses) == pytest.approx(k * (k - 1) / 2)
    # the reference: the share of pairs whose second-order argmax is the first's under the swap A<->B, C<->C
    swapped = [list(v.ab).index(max(v.ab)) == (1, 0, 2)[list(v.ba).index(max(v.ba))] for v in verdicts]
    assert position_consistency(verdicts) == pytest.approx(sum(swapped) / len(swapped))


def test_judging_is_repeatable_and_batch_independent(judge):
    """Same inputs, same probabilities: no unseeded pair order, no batch-size effect (as asked of RewardBench:
    https://github.com/allenai/reward-bench/issues/272, https://github.com/allenai/reward-bench/issues/137)."""
    model, tok, recs = judge
    one = judge_records(model, tok, recs[:1], batch_size=1)
    many = judge_records(model, tok, recs[:1], batch_size=7)
    for x, y in zip(one, many):
        assert x.ab == pytest.approx(y.ab, abs=1e-5) and x.ba == pytest.approx(y.ba, abs=1e-5)


def test_credit_and_consistency_by_hand():
    """a wins when shown first (A) and when shown second (B): credit 1, consistent; a tie is half credit."""
    win = PairVerdict("p", "a", "b", (1.0, 0.0, 0.0), (0.0, 1.0, 0.0))
    assert win.credit_a() == 1.0 and win.consistent()
    biased = PairVerdict("p", "a", "b", (0.0, 1.0, 0.0), (0.0, 1.0, 0.0))  # always picks the second answer
    assert biased.credit_a() == 0.5 and not biased.consistent()
    tie = PairVerdict("p", "a", "b", (0.0, 0.0, 1.0), (0.0, 0.0, 1.0))
    assert tie.credit_a() == 0.5 and tie.consistent()


def test_batched_judge_encoding_equals_one_at_a_time(judge):
    """_encode_judges gives _encode_judge's ids per prompt, with and without a chat template, cut or not."""
    from transformers import PreTrainedTokenizerFast

    from cheems_lib.models.judging import _encode_judge, _encode_judges

    _, tok, recs = judge
    prompts = [judge_prompt(r.prompt, x.content, y.content, r.top_category) for r in recs
               for x, y in zip(r.responses, r.responses[1:])]
    plain = PreTrainedTokenizerFast(tokenizer_object=tok.backend_tokenizer.__class__.from_str(tok.backend_tokenizer.to_str()),
                                    pad_token=tok.pad_token)
    assert tok.chat_template and not plain.chat_template
    for t in (tok, plain):
        for max_length in (None, 50):
            want = [_encode_judge(t, p, max_length) for p in prompts]
            assert _encode_judges(t, prompts, max_length, chunk=3) == want
    assert max(map(len, want)) == 50 < len(_encode_judge(plain, prompts[0], None))  # the cut was exercised


def test_judge_all_equals_judging_each_loaded_checkpoint(judge, tmp_path):
    """judge_all loads each judge by path and gives judge_records' scores and consistency for it."""
    from cheems_lib.models.judging import judge_all, load_judge

    model, tok, recs = judge
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    scores, consistency = judge_all({"tiny": tmp_path}, recs, batch_size=4)
    loaded, ltok = load_judge(tmp_path)
    verdicts = judge_records(loaded, ltok, recs, batch_size=4)
    assert list(scores) == ["tiny"] and consistency["tiny"] == pytest.approx(position_consistency(verdicts))
    ref = judge_scores(verdicts)
    assert scores["tiny"].keys() == ref.keys() and all(abs(scores["tiny"][k] - ref[k]) <= 1e-5 for k in ref)


def test_train_tiny_judge_saves_a_judge_that_loads(tmp_path):
    """The tiny judge's trainer (judging.train_judge, beside the judge it trains) saves a checkpoint that
    load_judge reads back and judge_records runs; the same seed gives the same weights."""
    import torch

    from cheems_lib.models.judging import load_judge, train_judge, train_tiny_judge

    assert train_judge.__module__ == "cheems_lib.models.judging"
    recs = build_world(WorldConfig(size="smoke", seed=1)).files["cheems_bench/human.jsonl"][:3]
    kw = dict(max_pairs=4, epochs=1, max_length=256, tokenizer_vocab=500, seed=0)
    first, again = train_tiny_judge(recs, tmp_path / "a", **kw), train_tiny_judge(recs, tmp_path / "b", **kw)
    (model, tok), (twin, _) = load_judge(first), load_judge(again)
    assert all(torch.equal(p, q) for p, q in zip(model.state_dict().values(), twin.state_dict().values()))
    verdicts = judge_records(model, tok, recs[:1], max_length=256)
    assert verdicts and all(sum(v.ab) == pytest.approx(1, abs=1e-5) for v in verdicts)


def test_judges_read_logits_only_where_they_need_them():
    """A transformers causal LM (the tiny judge's class) is asked for its last positions' logits only; a model whose
    forward has no ``logits_to_keep`` is read at every position instead of failing."""
    import torch
    from transformers import Qwen2ForCausalLM

    from cheems_lib.models.judging import _keeps_logits
    from cheems_lib.models.reward_model import tiny_config, train_tokenizer

    tok = train_tokenizer(["A B C 判断"] * 10, vocab_size=300)
    assert _keeps_logits(Qwen2ForCausalLM(tiny_config("tiny-xs", tok)))
    assert not _keeps_logits(torch.nn.Linear(2, 2))


def test_the_tiny_judge_trains_where_default_device_says(tmp_path, monkeypatch):
    """train_judge asks training_config.default_device where to train (a GPU when there is one) instead of always
    using the CPU, and marks its checkpoint as a tiny-family model."""
    from cheems_lib.models import judging

    asked = []
    monkeypatch.setattr(judging, "default_device", lambda: asked.append(1) or "cpu")
    recs = build_world(WorldConfig(size="smoke", seed=1)).files["cheems_bench/human.jsonl"][:2]
    out = judging.train_tiny_judge(recs, tmp_path / "j", max_pairs=2, epochs=1, max_length=128, tokenizer_vocab=400,
                                   size="tiny-xs")
    model, _ = judging.load_judge(out)
    assert asked and model.config.cheems_tiny_size == "tiny-xs"


def test_a_token_budget_bounds_the_judges_batches_and_keeps_its_verdicts(judge):
    """With max_tokens_per_batch each forward holds at most that many padded tokens (or one longer prompt) and
    batch_size prompts, and the verdicts are those of the count-batched path to 1e-5."""
    model, tok, recs = judge
    ref = judge_records(model, tok, recs, batch_size=4)
    shapes = []
    hook = model.register_forward_pre_hook(lambda m, a, kw: shapes.append(tuple(kw["input_ids"].shape)), with_kwargs=True)
    try:
        budget = judge_records(model, tok, recs, batch_size=4, max_tokens_per_batch=3000)
    finally:
        hook.remove()
    assert shapes and all(b <= 4 and (b * n <= 3000 or b == 1) for b, n in shapes)
    assert [(v.prompt_id, v.a, v.b) for v in budget] == [(v.prompt_id, v.a, v.b) for v in ref]
    assert all(abs(x - y) <= 1e-5 for v, w in zip(budget, ref) for x, y in zip(v.ab + v.ba, w.ab + w.ba))
