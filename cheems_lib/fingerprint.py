"""Content fingerprints of files: what the book's chapter cache and the score cache key a file by.

:func:`file_hash` is the SHA-256 of a file's bytes, so a file edited in place, with its size kept and its
modification time set back (``os.utime``), gets a new fingerprint. The book's chapter cache
(:func:`cheems_lib.publishing.execute.cache_key`) and the score cache
(:func:`cheems_lib.models.score_output.model_fingerprint`) both key their files by it: one mechanism.

A file up to :data:`FULL_HASH_BYTES` is hashed on every call (64 MiB in about 45 ms on a 2-core AMD
EPYC; see benchmarks/README.md). A larger one (a checkpoint's weights) is hashed once and its hash kept in
the *hash cache* (:func:`cache_path`), a small JSON file in the user's cache folder, shared by every checkout
and every command: an entry is keyed by the file's ``(st_dev, st_ino)`` and holds its ``(st_size,
st_mtime_ns, st_ctime_ns)`` and its hash, and is used only while all five are unchanged. Any write to a file
and ``os.utime`` itself change its ``st_ctime``, which no user can set back, so an in-place rewrite is always
hashed again; a copy is a new inode, hashed once.

The hash cache may only ever cost a rehash, never give a wrong hash:

- an entry is kept only when the file's stat was the same after hashing as before (not written meanwhile) and
  its ``st_ctime`` lies at least :data:`RACY_NS` before the hash began: a write within the same tick of the
  file system's clock as the hash would leave ``st_ctime`` unchanged (git's "racy" index entries);
- the cache file is replaced atomically (:func:`cheems_lib.outputs.atomic_open`) after reading it again, so two
  processes updating it at once lose at most one another's new entry (a rehash next time);
- a cache file that does not read (corrupt, truncated, another version, a malformed entry) counts as empty and
  is replaced on the next store; one that cannot be written (a read-only home) is left alone.

The cache's keys name inodes and absolute paths; a fingerprint itself depends only on the bytes, so a chapter's
cache key stays the same in every clone of the checkout.
"""
from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import time
from pathlib import Path

from .outputs import atomic_open, pid_alive

__all__ = ["file_hash", "cache_path", "FULL_HASH_BYTES", "RACY_NS", "MAX_ENTRIES", "CACHE_ENV"]

ALGORITHM = "sha256"
"""The hash of :func:`file_hash`: on a 2-core AMD EPYC (a CPU with SHA instructions) SHA-256 hashes about
1.56 GB/s and BLAKE2b 0.80 GB/s; ``hashlib.file_digest`` is the same loop as :func:`_hash_file`, as fast, but
Python 3.11+ (benchmarks/bench_fingerprint.py)."""
CHUNK_BYTES = 1 << 18
FULL_HASH_BYTES = 64 << 20
"""Files up to this size are hashed on every call; a larger one's hash is kept in the hash cache."""
RACY_NS = 2_000_000_000
"""A hash is cached only for a file whose ``st_ctime`` is this much older than the start of the hash (covers
file systems with 1-2 s timestamps); a file written just before it is hashed is hashed again on the next call."""
MAX_ENTRIES = 1000
"""Entries the hash cache keeps, the most recently stored ones (a rehash is all a dropped entry costs)."""
CACHE_ENV = "CHEEMS_HASH_CACHE"
"""Environment variable naming the hash cache file instead of :func:`cache_path`'s default."""
_VERSION = 1
_HEX = re.compile(r"[0-9a-f]+")


def cache_path() -> Path:
    """The hash cache file: ``$CHEEMS_HASH_CACHE``, else ``$XDG_CACHE_HOME/cheems/file_hashes.json``, else
    ``~/.cache/cheems/file_hashes.json``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(base) / "cheems" / "file_hashes.json"


def _hash_file(path: str | Path) -> str:
    """Hex SHA-256 of the bytes of ``path``, read in :data:`CHUNK_BYTES` chunks into one buffer (as
    ``hashlib.file_digest`` does from Python 3.11)."""
    h = hashlib.new(ALGORITHM)
    buf = bytearray(CHUNK_BYTES)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as fh:
        while n := fh.readinto(buf):
            h.update(view[:n])
    return h.hexdigest()


def _stamp(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _entries(path: Path) -> dict:
    """The hash cache's entries; ``{}`` for a file that is missing or does not read as this version's."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return {}
    files = data.get("files") if isinstance(data, dict) and data.get("version") == _VERSION else None
    return files if isinstance(files, dict) else {}


def _cached(entry, st: os.stat_result) -> str | None:
    """The hash an entry holds for a file of stat ``st``; None if it is for another state of the file or malformed."""
    digest = entry.get(ALGORITHM) if isinstance(entry, dict) and entry.get("stat") == _stamp(st) else None
    if isinstance(digest, str) and len(digest) == 2 * hashlib.new(ALGORITHM).digest_size and _HEX.fullmatch(digest):
        return digest
    return None


def _store(key: str, entry: dict) -> None:
    """Add ``entry`` to the hash cache as read now (another process's entries kept); a cache that cannot be
    written is left as it is."""
    path = cache_path()
    files = _entries(path)
    files.pop(key, None)
    files[key] = entry  # the most recent last: the oldest are dropped first
    for old in list(files)[:max(0, len(files) - MAX_ENTRIES)]:
        del files[old]
    try:
        for tmp in path.parent.glob(f".{glob.escape(path.name)}.tmp-*"):  # of a writer killed before its rename
            pid = tmp.name.rsplit("-", 2)[-2]
            if pid.isdigit() and not pid_alive(int(pid)):
                tmp.unlink(missing_ok=True)
        with atomic_open(path, "w", encoding="utf-8") as fh:
            json.dump({"version": _VERSION, "files": files}, fh, separators=(",", ":"))
    except OSError:
        pass


def file_hash(path: str | Path) -> str:
    """Hex SHA-256 of the bytes of the file ``path``; a file over :data:`FULL_HASH_BYTES` through the hash cache
    (see the module docstring), so a rerun on an unchanged checkpoint costs a ``stat``."""
    st = os.stat(path)
    if st.st_size <= FULL_HASH_BYTES:
        return _hash_file(path)
    key = f"{st.st_dev}:{st.st_ino}"
    cached = _cached(_entries(cache_path()).get(key), st)
    if cached is not None:
        return cached
    started = time.time_ns()
    digest = _hash_file(path)
    after = os.stat(path)
    if (after.st_dev, after.st_ino) == (st.st_dev, st.st_ino) and _stamp(after) == _stamp(st) \
            and st.st_ctime_ns <= started - RACY_NS:
        _store(key, {"stat": _stamp(st), ALGORITHM: digest, "path": os.path.abspath(path)})
    return digest
