"""The score file's keys: a model's fingerprint follows its weight files, through the hash cache, whatever
their size and mtime say."""
from __future__ import annotations


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
    from cheems_lib.models.score_output import model_fingerprint, score_to_file
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
