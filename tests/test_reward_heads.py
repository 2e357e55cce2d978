"""Hub reward models of every head (classifier, custom code, reward-as-logit) load and are read at the last real
token; a template without a system turn gets the system prompt folded in; batches are bounded by tokens.

Every model here is a tiny random checkpoint the test writes itself (hidden size 32, one layer), saved in bfloat16
as hub checkpoints are, and loaded back in float32 so that batched and single forwards agree to rounding."""
from __future__ import annotations

import json

import pytest

from cheems_lib.models import reward_heads
from cheems_lib.models.reward_model import ModelError, spare_pad_ids
from cheems_lib.models.chat_encoding import encode_pair, encode_pairs
from cheems_lib.models.scoring import score_records
from cheems_lib.records import Record, Response

EOT, BOS, RESERVED, REWARD = "<|eot_id|>", "<|begin_of_text|>", "<|reserved_special_token_0|>", "<|reward|>"
# Llama 3's chat template, cut down: every turn ends with eos, so a pad equal to eos would hide the last token
LLAMA_TEMPLATE = ("{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n"
                  "{{ m['content'] }}<|eot_id|>{% endfor %}")
# Gemma's way of refusing a system turn
GEMMA_TEMPLATE = ("{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('System role not "
                  "supported') }}{% endif %}<start_of_turn>{{ m['role'] }}\n{{ m['content'] }}<end_of_turn>\n"
                  "{% endfor %}")
TEXTS = ["what makes a reward model good", "it ranks the better answer higher", "short", "a much longer answer "
         "that goes on and on about preferences, rankings and the many ways of reading a score"]


def llama_tokenizer(*, spare: bool = True):
    """A byte-level BPE tokenizer with Llama 3's special tokens and no pad token (``spare``: with a reserved one and a
    reward token, special tokens that no conversation uses)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = [BOS, EOT, "<|start_header_id|>", "<|end_header_id|>"] + ([REWARD, RESERVED] if spare else [])
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(TEXTS * 5, trainers.BpeTrainer(vocab_size=320, special_tokens=specials, show_progress=False,
                                                           initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=BOS, eos_token=EOT)
    fast.chat_template = LLAMA_TEMPLATE
    assert fast.pad_token_id is None
    return fast


def llama_config(tok, **extra):
    from transformers import LlamaConfig

    return LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                       num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=512,
                       bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=None, **extra)


def save(model, tok, folder):
    """Save ``model`` in bfloat16, as hub checkpoints are, with its tokenizer."""
    import torch

    model.to(torch.bfloat16).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def records() -> list[Record]:
    """Three prompts whose responses differ in length, so batches are padded; one with a system prompt."""
    return [Record(prompt=TEXTS[0], id="p0", responses=[Response("a", TEXTS[1]), Response("b", TEXTS[2])]),
            Record(prompt=TEXTS[2], id="p1", responses=[Response("a", TEXTS[3]), Response("b", TEXTS[1] * 2)]),
            Record(prompt=TEXTS[1], id="p2", responses=[Response("a", TEXTS[2]), Response("b", TEXTS[3])],
                   sys_prompt="be brief")]


def one_by_one(read, tok, recs, extra=()):
    """``read(ids)``: the reward of one unpadded sequence, for every response of ``recs``."""
    import torch

    out = {}
    with torch.inference_mode():
        for rec in recs:
            for r in rec.responses:
                ids = encode_pair(tok, rec.prompt, r.content, sys_prompt=rec.sys_prompt) + list(extra)
                out[(rec.id, r.id)] = float(read(torch.tensor([ids])))
    return out


def last_token_reward(model, ids):
    """A sequence classifier's head at the last token of one unpadded sequence, whatever its pad id."""
    return model.score(model.model(input_ids=ids).last_hidden_state[:, -1])[0, 0]


def assert_close(a: dict, b: dict, tol: float = 1e-4):
    assert a.keys() == b.keys()
    assert all(abs(a[k] - b[k]) <= tol for k in a), {k: (a[k], b[k]) for k in a}


@pytest.fixture(scope="module")
def classifier_dir(tmp_path_factory):
    import torch
    from transformers import LlamaForSequenceClassification

    tok = llama_tokenizer()
    torch.manual_seed(0)
    return save(LlamaForSequenceClassification(llama_config(tok, num_labels=1)), tok,
                tmp_path_factory.mktemp("classifier"))


def test_a_classifier_without_pad_token_is_read_at_its_last_real_token(classifier_dir):
    """A Llama-style reward model whose tokenizer has no pad token and whose template ends each turn with eos:
    ``auto`` reads it as a sequence classifier, the pad is a spare special token (not eos, no new embedding
    row), and batched, padded scoring gives each response the reward of its unpadded single forward, which
    differs from the reward one token earlier (where a pad equal to eos would read it)."""
    import torch

    model, tok = reward_heads.load(classifier_dir, dtype=torch.float32, require_trained_head=False)
    assert reward_heads.head_of(model).kind == "classifier"
    assert tok.pad_token == RESERVED and tok.pad_token_id != tok.eos_token_id and len(tok) == model.config.vocab_size
    recs = records()
    scores, report = score_records(model, tok, recs, batch_size=4)
    assert report["scored"] == 6
    assert_close(scores, one_by_one(lambda ids: last_token_reward(model, ids), tok, recs))
    early = one_by_one(lambda ids: last_token_reward(model, ids[:, :-1]), tok, recs)
    assert all(abs(scores[k] - early[k]) > 1e-4 for k in scores)


def test_without_a_spare_token_the_pad_is_an_id_no_text_holds(tmp_path):
    """A tokenizer with neither a pad nor a spare special token: the batch is padded with an id that none of its
    sequences holds, so the reward is still read at the last real token (eos included)."""
    import torch
    from transformers import LlamaForSequenceClassification

    tok = llama_tokenizer(spare=False)
    torch.manual_seed(1)
    save(LlamaForSequenceClassification(llama_config(tok, num_labels=1)), tok, tmp_path)
    model, tok = reward_heads.load(tmp_path, dtype=torch.float32, require_trained_head=False)
    assert spare_pad_ids(tok) == [] and tok.pad_token_id == tok.eos_token_id  # eos stands in, and every text holds it
    recs = records()
    scores, _ = score_records(model, tok, recs, batch_size=6)
    assert_close(scores, one_by_one(lambda ids: last_token_reward(model, ids), tok, recs))


def test_a_reward_as_logit_model_reads_its_token_at_the_last_real_token(tmp_path):
    """A causal LM read with ``--reward-head logit``: the reward is its logit of the chosen token id at each
    sequence's last real token (the attention mask's), the same as the unpadded forward's; ``auto`` never reads
    a causal LM as a reward model, and says which flag does."""
    import torch
    from transformers import LlamaForCausalLM

    tok = llama_tokenizer()
    torch.manual_seed(2)
    save(LlamaForCausalLM(llama_config(tok)), tok, tmp_path)
    with pytest.raises(ModelError, match="--reward-head logit"):
        reward_heads.load(tmp_path)
    model, tok = reward_heads.load(tmp_path, head="logit", reward_token=7, dtype=torch.float32)
    assert reward_heads.head_of(model) == reward_heads.RewardHead("logit", token_id=7)
    recs = records()
    scores, _ = score_records(model, tok, recs, batch_size=3)
    assert_close(scores, one_by_one(lambda ids: model(input_ids=ids).logits[0, -1, 7], tok, recs))
    default, _ = score_records(reward_heads.load(tmp_path, head="logit", dtype=torch.float32)[0], tok, recs)
    assert_close(default, one_by_one(lambda ids: model(input_ids=ids).logits[0, -1, 0], tok, recs))


CONFIGURATION = '''from transformers import LlamaConfig


class TinyCustomConfig(LlamaConfig):
    model_type = "cheems_test_custom_rm"
'''
# InternLM2-reward style: the reward is read at the last column, after a reward token the caller appends
MODELING = '''from dataclasses import dataclass

import torch
from torch import nn
from transformers import LlamaModel, PreTrainedModel
from transformers.utils import ModelOutput

from .configuration_tinycustom import TinyCustomConfig


@dataclass
class RewardOutput(ModelOutput):
    score: torch.Tensor | None = None


class TinyCustomReward(PreTrainedModel):
    config_class = TinyCustomConfig
    base_model_prefix = "model"

    def __init__(self, config):
        super().__init__(config)
        self.model = LlamaModel(config)
        self.v_head = nn.Linear(config.hidden_size, 1, bias=False)
        self.post_init()

    def get_input_embeddings(self):
        return self.model.embed_tokens

    def forward(self, input_ids=None, attention_mask=None, **kwargs):
        assert bool((input_ids[:, -1] == self.config.reward_token_id).all()), "the reward token must come last"
        hidden = self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return RewardOutput(score=self.v_head(hidden)[:, -1])
'''


@pytest.fixture(scope="module")
def custom_dir(tmp_path_factory):
    return write_custom_checkpoint(tmp_path_factory.mktemp("custom"))


def write_custom_checkpoint(d):
    """A checkpoint with its own code in ``d``: configuration_*.py and modeling_*.py beside config.json's auto_map."""
    import torch
    from transformers import AutoConfig, AutoModel

    tok = llama_tokenizer()
    (d / "configuration_tinycustom.py").write_text(CONFIGURATION)
    (d / "modeling_tinycustom.py").write_text(MODELING)
    config = {**llama_config(tok).to_dict(), "model_type": "cheems_test_custom_rm",
              "reward_token_id": tok.convert_tokens_to_ids(REWARD), "architectures": ["TinyCustomReward"],
              "auto_map": {"AutoConfig": "configuration_tinycustom.TinyCustomConfig",
                           "AutoModel": "modeling_tinycustom.TinyCustomReward"}}
    (d / "config.json").write_text(json.dumps(config))
    torch.manual_seed(3)
    model = AutoModel.from_config(AutoConfig.from_pretrained(d, trust_remote_code=True), trust_remote_code=True)
    return save(model, tok, d)


def test_a_custom_code_model_needs_trust_and_is_read_from_its_own_score(custom_dir):
    """A checkpoint with custom code is refused without ``trust_remote_code`` (one line naming the flag); with it,
    ``auto`` picks the custom head, the config's reward token is appended to every sequence, and its ``.score``
    (read at the last column, as InternLM2's reward models do) equals the unpadded single forward's."""
    import torch

    with pytest.raises(ModelError, match="--trust-remote-code") as e:
        reward_heads.load(custom_dir)
    assert "\n" not in str(e.value)
    model, tok = reward_heads.load(custom_dir, trust_remote_code=True, dtype=torch.float32)
    head = reward_heads.head_of(model)
    assert head.kind == "custom" and head.end_token_id == tok.convert_tokens_to_ids(REWARD)
    recs = records()
    scores, _ = score_records(model, tok, recs, batch_size=4)
    assert_close(scores, one_by_one(lambda ids: model(input_ids=ids).score[0, 0], tok, recs, [head.end_token_id]))


def test_explicit_heads_the_checkpoint_cannot_have_are_refused(classifier_dir, custom_dir):
    """``custom`` without custom code, or without trust; a reward token outside the vocabulary; a classifier read
    as ``logit`` (no language-model head): each one line that names the fix."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(classifier_dir)
    with pytest.raises(ModelError, match="auto_map.*fix: --reward-head classifier or logit"):
        reward_heads.choose(config, "custom", trust_remote_code=True)
    custom = AutoConfig.from_pretrained(custom_dir, trust_remote_code=True)
    with pytest.raises(ModelError, match="fix: add --trust-remote-code"):
        reward_heads.choose(custom, "custom")
    with pytest.raises(ModelError, match=r"--reward-token 999 .*fix: pass an id in \[0, "):
        reward_heads.choose(config, "logit", token_id=999)
    with pytest.raises(ModelError, match="no language-model head"):
        reward_heads.load(classifier_dir, head="logit")
    assert reward_heads.detect(custom) == "classifier" and reward_heads.detect(custom, trust_remote_code=True) == "custom"


def test_a_custom_output_is_read_from_score_rewards_or_logits_of_any_reward_shape():
    """``.score`` goes before ``.rewards`` and ``.logits``; ``[batch]`` and ``[batch, 1]`` are per sequence,
    ``[batch, length]`` per token (read at each row's last real token); anything else is one line naming the fix."""
    from types import SimpleNamespace

    import torch

    last, shape = torch.tensor([1, 2]), (2, 3)
    per_token = torch.arange(6.0).view(2, 3)
    read = reward_heads.from_output
    assert read(SimpleNamespace(score=torch.tensor([[1.0], [2.0]]), rewards=per_token), last, shape).tolist() == [1, 2]
    assert read(SimpleNamespace(rewards=per_token), last, shape).tolist() == [1.0, 5.0]
    assert read({"logits": per_token[..., None]}, last, shape).tolist() == [1.0, 5.0]
    assert read(SimpleNamespace(logits=torch.tensor([3.0, 4.0])), last, shape).tolist() == [3.0, 4.0]
    with pytest.raises(ModelError, match=r"\.rewards has shape \[2, 19\].*fix:"):
        read(SimpleNamespace(rewards=torch.zeros(2, 19)), last, shape)
    with pytest.raises(ModelError, match="without a .score, .rewards or .logits tensor"):
        read((torch.zeros(2, 1),), last, shape)


def test_a_template_that_refuses_a_system_turn_gets_it_folded_into_the_user_turn():
    """Gemma's template raises for a system turn: the system prompt opens the user turn instead, one pair at a
    time and in batches alike; a template with a system turn is left as it is."""
    tok = llama_tokenizer()
    with_system = encode_pair(tok, "q", "a", sys_prompt="s")
    assert with_system != encode_pair(tok, "s\n\nq", "a") and tok.convert_tokens_to_ids("<|start_header_id|>") in with_system
    tok.chat_template = GEMMA_TEMPLATE
    folded = encode_pair(tok, "q", "a", sys_prompt="s")
    assert folded == encode_pair(tok, "s\n\nq", "a")
    assert encode_pairs(tok, [("q", "a", "s"), ("q", "a", None)]) == [folded, encode_pair(tok, "q", "a")]


def test_batches_of_a_hub_model_are_bounded_by_the_token_budget(classifier_dir):
    """Outside the tiny family every forward holds at most ``max_tokens_per_batch`` padded tokens (a longer
    sequence alone) and ``batch_size`` sequences, longest first; the scores do not depend on the budget."""
    import torch

    model, tok = reward_heads.load(classifier_dir, dtype=torch.float32, require_trained_head=False)
    shapes = []
    hook = model.register_forward_pre_hook(lambda m, a, kw: shapes.append(tuple(kw["input_ids"].shape)), with_kwargs=True)
    recs = records()
    try:
        wide, _ = score_records(model, tok, recs, batch_size=16)
        assert len(shapes) < 6
        shapes.clear()
        narrow, _ = score_records(model, tok, recs, batch_size=2, max_tokens_per_batch=40)
    finally:
        hook.remove()
    assert all(b <= 2 and (b * n <= 40 or b == 1) for b, n in shapes) and len(shapes) >= 3
    assert shapes[0][1] == max(n for _, n in shapes)  # the longest batch first
    assert_close(wide, narrow)
