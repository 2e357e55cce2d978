"""Scores do not depend on batch size or batch neighbours; resume skips; truncation is counted."""
from __future__ import annotations

import numpy as np
import pytest

from cheems_lib.models.reward_model import build_tiny, train_tokenizer
from cheems_lib.models.scoring import score_records
from cheems_lib.world.simulation import WorldConfig, build_world


@pytest.fixture(scope="module")
def setup():
    recs = build_world(WorldConfig(size="smoke", seed=2)).files["cheems_bench/open.jsonl"][:12]
    tok = train_tokenizer((t for r in recs for t in [r.prompt, *(x.content for x in r.responses)]), vocab_size=600)
    return recs, tok, build_tiny("tiny-s", tok, seed=3)


def test_batch_size_invariance(setup):
    """Batch sizes 1, 3 and 16 give the same scores to 1e-5 in float32."""
    recs, tok, model = setup
    ref, _ = score_records(model, tok, recs, batch_size=1)
    for bs in (3, 16):
        other, _ = score_records(model, tok, recs, batch_size=bs)
        assert other.keys() == ref.keys()
        assert all(abs(other[k] - ref[k]) <= 1e-5 for k in ref)


def test_resume_skips_scored_and_truncation_is_counted(setup):
    """Scoring skips already-scored responses and counts truncated ones."""
    recs, tok, model = setup
    full, _ = score_records(model, tok, recs)
    done = set(list(full)[:10])
    rest, report = score_records(model, tok, recs, skip=done)
    assert report["skipped"] == 10 and set(rest) == set(full) - done
    _, report = score_records(model, tok, recs, max_length=16)
    assert report["truncated"] == report["scored"] > 0


def test_scores_are_unchanged_by_cutting_before_tokenizing(setup, monkeypatch):
    """Cutting texts to the character budget before tokenizing (reward_model.text_budget) changes no score and no
    truncation count: the same as tokenizing whole texts (the old path), normal texts and an 18,000-character one."""
    from dataclasses import replace

    from cheems_lib.models import reward_model
    from cheems_lib.records import Response

    from cheems_lib.models import scoring

    monkeypatch.setattr(scoring, "ENCODED_SETS", 0)  # every call tokenizes: the old path must really run
    recs, tok, model = setup
    long = replace(recs[0], id="long", responses=[Response("x", "很长的回答。" * 3_000), *recs[0].responses])
    records = [*recs[:4], long]
    new = [score_records(model, tok, records, max_length=m) for m in (None, 48)]
    monkeypatch.setattr(reward_model, "text_budget", lambda tokenizer, max_length: None)
    old = [score_records(model, tok, records, max_length=m) for m in (None, 48)]
    for (a, ra), (b, rb) in zip(new, old):
        assert ra == rb and ra["truncated"] >= 1
        assert a.keys() == b.keys() and all(abs(a[k] - b[k]) <= 1e-6 for k in a)


def test_a_tokenization_is_reused_only_for_the_same_tokenizer_limit_and_texts(setup, monkeypatch):
    """Scoring the same records again with the same tokenizer (another training seed of one set) tokenizes
    nothing and gives the same scores; another tokenizer, limit or text tokenizes again; at most
    ENCODED_SETS tokenizations are kept."""
    from dataclasses import replace

    from cheems_lib.models import scoring
    from cheems_lib.records import Response

    monkeypatch.setattr(scoring, "_ENCODED", {})
    calls = []
    real = scoring.encode_pairs
    monkeypatch.setattr(scoring, "encode_pairs", lambda tok, pairs, **kw: calls.append(len(pairs)) or real(tok, pairs, **kw))
    recs, tok, model = setup
    first, _ = score_records(model, tok, recs)
    again, _ = score_records(build_tiny("tiny-s", tok, seed=4), tok, recs)  # another seed, the same tokenizer
    assert len(calls) == 1 and again.keys() == first.keys() and again != first
    assert score_records(model, tok, recs)[0] == first
    other_tok = train_tokenizer((t for r in recs for t in [r.prompt, *(x.content for x in r.responses)]), vocab_size=500)
    score_records(build_tiny("tiny-s", other_tok, seed=3), other_tok, recs)
    score_records(model, tok, recs, max_length=16)
    edited = [replace(recs[0], responses=[Response(recs[0].responses[0].id, "改过的回答"), *recs[0].responses[1:]]), *recs[1:]]
    score_records(model, tok, edited)
    assert len(calls) == 4
    for k in range(scoring.ENCODED_SETS + 2):
        score_records(model, tok, recs[:1], max_length=20 + k)
    assert len(scoring._ENCODED) == scoring.ENCODED_SETS


def test_a_tiny_model_is_batched_by_count_as_before_bit_for_bit(setup):
    """A tiny model's default scoring is the count-batched path it always had (forward_in_batches of batch_size
    sequences sorted by length, padded with the tokenizer's pad): the same floats, so the book's numbers do not
    move. Up to 4 float32 ulps: under load, in a long test session, CPU kernels may take another SIMD path for
    tensors at another memory alignment and move the last bit (seen once in a full run, 0.11462995 against
    0.11462994); the smoke ledger test still holds the book's numbers exactly."""
    from cheems_lib.models.batching import forward_in_batches
    from cheems_lib.models.last_token import last_token_only
    from cheems_lib.models.reward_model import encode_pairs

    recs, tok, model = setup
    items = [((rec.id, r.id), ids) for rec in recs for r in rec.responses
             for ids in encode_pairs(tok, [(rec.prompt, r.content, rec.sys_prompt)])]
    items.sort(key=lambda kv: len(kv[1]))
    before = {}
    with last_token_only(model):
        for start, out in forward_in_batches(model, [t for _, t in items], tok.pad_token_id, 5,
                                             lambda logits, mask: logits.squeeze(-1).float().cpu().tolist()):
            before.update({k: float(s) for (k, _), s in zip(items[start:start + 5], out)})
    now, _ = score_records(model, tok, recs, batch_size=5)
    assert now.keys() == before.keys()
    keys = list(before)
    np.testing.assert_array_max_ulp(np.float32([now[k] for k in keys]), np.float32([before[k] for k in keys]), maxulp=4)


def test_an_explicit_token_budget_bounds_a_tiny_models_batches_too(setup):
    """With max_tokens_per_batch even a tiny model's forwards hold at most that many padded tokens (or one
    longer sequence), and its scores stay those of the count-batched path to 1e-5."""
    recs, tok, model = setup
    shapes = []
    hook = model.register_forward_pre_hook(lambda m, a, kw: shapes.append(tuple(kw["input_ids"].shape)), with_kwargs=True)
    try:
        budget, _ = score_records(model, tok, recs, batch_size=16, max_tokens_per_batch=300)
    finally:
        hook.remove()
    ref, _ = score_records(model, tok, recs, batch_size=16)
    assert all(b * n <= 300 or b == 1 for b, n in shapes) and len(shapes) > len(ref) // 16
    assert ref.keys() == budget.keys() and all(abs(ref[k] - budget[k]) <= 1e-5 for k in ref)


def test_placement_loads_onto_the_process_device_and_spreads_only_one_process():
    """No device map: the CPU as ever (None), a GPU straight onto it ({"": "cuda:K"}); "auto" is passed through
    for one process and refused, in one line naming the fix, for a data-parallel launch."""
    from types import SimpleNamespace

    import torch

    from cheems_lib.models.reward_model import ModelError
    from cheems_lib.models.scoring import placement

    cpu = SimpleNamespace(device=torch.device("cpu"), num_processes=1)
    assert placement(cpu) is None and placement(cpu, "auto") == "auto"
    assert placement(SimpleNamespace(device=torch.device("cuda", 3), num_processes=8)) == {"": "cuda:3"}
    with pytest.raises(ModelError, match="8 processes.*fix: run one process") as e:
        placement(SimpleNamespace(device=torch.device("cuda", 3), num_processes=8), "auto")
    assert "\n" not in str(e.value)


# --- the score cache keys a checkpoint's files by content (cheems_lib.fingerprint) ---

def _big_checkpoint(tmp_path, monkeypatch, *, racy_ns=0):
    """A checkpoint folder whose 3 MiB weight file counts as big (over a 1 MiB FULL_HASH_BYTES, so its hash goes
    through the hash cache, kept in tmp_path), without writing 64 MiB; ``racy_ns=0``: a hash of a file written just
    now may be cached (the tests make sure its ctime moves before they rely on it)."""
    import numpy as np

    from cheems_lib import fingerprint

    monkeypatch.setenv(fingerprint.CACHE_ENV, str(tmp_path / "cache" / "file_hashes.json"))
    monkeypatch.setattr(fingerprint, "FULL_HASH_BYTES", 1 << 20)
    monkeypatch.setattr(fingerprint, "RACY_NS", racy_ns)
    ckpt = tmp_path / "rm"
    ckpt.mkdir()
    (ckpt / "model.safetensors").write_bytes(np.random.default_rng(0).bytes(3 << 20))
    (ckpt / "config.json").write_text("{}")
    return ckpt / "model.safetensors"


def _rewrite_in_place(path, offset: int = 3 << 19) -> None:
    """Change one byte at ``offset`` (the middle, outside the first and last MiB), keep the size and set the
    modification time back, as the reported edit did; waits for ctime to move past the last write's if the edit
    fell in the same tick of the file system's clock (the kernel sets ctime; no user can set it back)."""
    import os
    import time

    before = path.stat()
    with open(path, "r+b") as fh:
        fh.seek(offset)
        byte = fh.read(1)
        fh.seek(offset)
        fh.write(bytes([byte[0] ^ 0xFF]))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    while path.stat().st_ctime_ns == before.st_ctime_ns:
        time.sleep(0.002)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)


def test_a_big_weight_file_rewritten_with_its_size_and_mtime_is_rescored(tmp_path, monkeypatch):
    """A weight file over the full-hash size rewritten in place, same size and mtime: the model's fingerprint
    changes and `cheems score` (score_to_file) rescores every record instead of keeping the stale scores. The old
    fingerprint (size, mtime, first and last MiB) kept them."""
    from cheems_lib.models.scoring import model_fingerprint, score_to_file
    from cheems_lib.records import Record, Response

    weights = _big_checkpoint(tmp_path, monkeypatch)
    ckpt = weights.parent
    recs = [Record(prompt=f"问题{i}", id=f"p{i}", responses=[Response("a", "甲" * i), Response("b", "乙")])
            for i in range(3)]
    scored = []

    def make(state):
        def scorer(records, done, sink):
            batch = {(r.id, x.id): float(len(x.content)) for r in records for x in r.responses if (r.id, x.id) not in done}
            scored.append(len(batch))
            sink(batch)
            return {"scored": len(batch)}
        return scorer

    out, settings = tmp_path / "s.jsonl", {"model": str(ckpt)}
    before = model_fingerprint(ckpt)
    assert score_to_file(recs, out, settings, make)["scored"] == 6
    again = score_to_file(recs, out, settings, make)
    assert again["scored"] == 0 and again["rescored_stale"] == 0  # unchanged: reused
    _rewrite_in_place(weights)
    assert model_fingerprint(ckpt) != before
    report = score_to_file(recs, out, settings, make)
    assert report["scored"] == 6 and report["rescored_stale"] == 6 and scored == [6, 0, 6]


def test_the_hash_cache_serves_an_unchanged_big_file_and_survives_corruption(tmp_path, monkeypatch):
    """A big file is hashed once and then served from the hash cache while nothing changed (its stat); a rewrite
    in place is hashed again; a corrupt, truncated or malformed cache file is ignored (the right hash, the file
    replaced by a good one), and so is a cache that cannot be written."""
    import hashlib
    import json

    from cheems_lib import fingerprint

    weights = _big_checkpoint(tmp_path, monkeypatch)
    calls = []
    real = fingerprint._hash_file
    monkeypatch.setattr(fingerprint, "_hash_file", lambda p: calls.append(p) or real(p))
    truth = hashlib.sha256(weights.read_bytes()).hexdigest()
    assert fingerprint.file_hash(weights) == truth and len(calls) == 1
    assert fingerprint.file_hash(weights) == truth and len(calls) == 1  # from the cache: a stat, no read
    small = tmp_path / "config.json"
    small.write_text("{}")
    fingerprint.file_hash(small), fingerprint.file_hash(small)
    assert len(calls) == 3  # a file up to FULL_HASH_BYTES is hashed every time, never cached
    _rewrite_in_place(weights)
    truth = hashlib.sha256(weights.read_bytes()).hexdigest()
    assert fingerprint.file_hash(weights) == truth and len(calls) == 4
    cache = fingerprint.cache_path()
    good = cache.read_bytes()
    left = cache.with_name(f".{cache.name}.tmp-999999999-0badf00d")  # a writer killed before its rename
    left.write_bytes(good[:10])
    for bad in (b"{not json", good[:len(good) // 2], b"\xff\xfe", b"[]", b'{"version": 1, "files": []}',
                json.dumps({"version": 1, "files": {k: {**v, "sha256": 5} for k, v in json.loads(good)["files"].items()}}
                           ).encode()):
        cache.write_bytes(bad)
        n = len(calls)
        assert fingerprint.file_hash(weights) == truth and len(calls) == n + 1, bad
        assert json.loads(cache.read_bytes())["files"], bad  # rewritten whole
        assert fingerprint.file_hash(weights) == truth and len(calls) == n + 1, bad
    assert sorted(p.name for p in cache.parent.iterdir()) == [cache.name]  # its temporary removed on a store
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv(fingerprint.CACHE_ENV, str(tmp_path / "a-file" / "file_hashes.json"))  # cannot be written
    assert fingerprint.file_hash(weights) == truth and fingerprint.file_hash(weights) == truth


def test_a_big_file_written_just_before_its_hash_is_not_cached(tmp_path, monkeypatch):
    """A file whose ctime is within RACY_NS of its hash could be written again within the same clock tick with
    no visible change: its hash is not kept (hashed again next time), nor one of a file that changed while it was
    read."""
    import os

    from cheems_lib import fingerprint

    weights = _big_checkpoint(tmp_path, monkeypatch, racy_ns=fingerprint.RACY_NS)
    calls = []
    real = fingerprint._hash_file
    monkeypatch.setattr(fingerprint, "_hash_file", lambda p: calls.append(p) or real(p))
    fingerprint.file_hash(weights), fingerprint.file_hash(weights)
    assert len(calls) == 2 and not fingerprint.cache_path().exists()
    monkeypatch.setattr(fingerprint, "RACY_NS", 0)

    def written_while_read(p):
        calls.append(p)
        digest = real(p)
        os.utime(p, ns=(0, 0))  # the file changed under the hash
        return digest

    monkeypatch.setattr(fingerprint, "_hash_file", written_while_read)
    fingerprint.file_hash(weights)
    assert not fingerprint.cache_path().exists()


def test_two_processes_updating_the_hash_cache_at_once_never_store_a_wrong_hash(tmp_path):
    """Two processes hashing 40 big files each into one hash cache at once: the cache stays valid JSON and every
    entry it kept holds its file's true hash (an update one overwrote only costs a rehash)."""
    import hashlib
    import json
    import os
    import subprocess
    import sys

    files = tmp_path / "files"
    files.mkdir()
    for i in range(40):
        (files / f"w{i}.bin").write_bytes(bytes([i]) * 5000 + os.urandom(100))
    cache = tmp_path / "file_hashes.json"
    script = ("import sys; from pathlib import Path; from cheems_lib import fingerprint as f\n"
              "f.FULL_HASH_BYTES, f.RACY_NS = 1000, 0\n"
              "order = sorted(Path(sys.argv[1]).iterdir(), reverse=sys.argv[2] == 'r')\n"
              "for _ in range(3):\n    [f.file_hash(p) for p in order]\n")
    env = {**os.environ, "CHEEMS_HASH_CACHE": str(cache)}
    procs = [subprocess.Popen([sys.executable, "-c", script, str(files), way], env=env) for way in "fr"]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    entries = json.loads(cache.read_bytes())["files"]
    assert entries
    for entry in entries.values():
        assert entry["sha256"] == hashlib.sha256(open(entry["path"], "rb").read()).hexdigest()
