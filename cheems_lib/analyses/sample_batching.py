"""§5's sample-based batching, checked on a training set: no response is forwarded twice in an epoch, and fewer
sequences are forwarded than batching by pairs needs.

The paper forms each batch prompt by prompt ("if feasible, [all responses of a prompt] are added to the batch"),
so "no response is duplicated across batches" and the organisation "reduces redundant forward passes". Both are
properties of :func:`cheems_lib.models.batching.pack`, so both claims are *structural*: the counts test the code on
the chapter's own training set, and *contradicted* would be a bug.
"""
from __future__ import annotations

from collections import Counter
from typing import Sequence

from ..models.batching import pack
from ..records import Record, strict_pairs
from .claims import Claim

__all__ = ["BATCH_CHARS", "counts", "add_claims"]

BATCH_CHARS = 4096
"""The budget, in characters, of the batches :func:`counts` packs: any positive budget gives the same two counts
(a prompt is never split), so the responses' characters stand in for their tokens."""


def counts(records: Sequence[Record], *, max_chars: int = BATCH_CHARS, seed: int = 0) -> dict[str, int]:
    """One epoch of ``records`` packed as training packs them (:func:`~cheems_lib.models.batching.pack`): the
    responses, the times a response is forwarded beyond once (``duplicated``), the responses never forwarded
    (``missing``), the sequences forwarded (``sample_passes``: each response once) and the sequences batching by
    pairs would forward (``pair_passes``: both responses of every compared pair).

    >>> from cheems_lib.records import Response
    >>> r = Record(prompt="q", id="p", responses=[Response(i, "x" * 3) for i in "abc"], rank={"a": 0, "b": 1, "c": 2})
    >>> counts([r])
    {'responses': 3, 'duplicated': 0, 'missing': 0, 'sample_passes': 3, 'pair_passes': 6}
    """
    lengths = [[len(x.content) or 1 for x in r.responses] for r in records]
    forwarded = Counter((i, j) for b in pack(lengths, max_chars, seed=seed) for i in b.prompts
                        for j in range(len(records[i].responses)))
    every = [(i, j) for i, r in enumerate(records) for j in range(len(r.responses))]
    return {"responses": len(every), "duplicated": sum(c - 1 for c in forwarded.values()),
            "missing": sum(1 for k in every if k not in forwarded), "sample_passes": sum(forwarded.values()),
            "pair_passes": 2 * sum(len(strict_pairs(r.rank or {})) for r in records)}


def add_claims(ledger, records: Sequence[Record] | None, *, what: str = "the training set", reason: str = "",
               seed: int = 0) -> dict[str, int] | None:
    """``s5-batching-no-duplicates`` and ``s5-batching-fewer-passes`` on ``records`` (``what`` names them); both
    *untestable* with ``reason`` when ``records`` is None. Returns :func:`counts`."""
    ids = ("s5-batching-no-duplicates", "s5-batching-fewer-passes")  # their words: the registry's statements
    if records is None:
        for cid in ids:
            ledger.add(Claim.untestable(cid, "", "", reason, link="preference-batching"))
        return None
    n = counts(records, seed=seed)
    ok = n["duplicated"] == 0 and n["missing"] == 0
    ledger.add(Claim(
        ids[0], "", "", "", "supported" if ok else "contradicted", estimate=n["duplicated"],
        n=len(records), statistic=f"responses of {what} forwarded more than once in one packed epoch",
        link="preference-batching",
        says={"supported": f"Packed as training packs it, {what} forwards each of its {n['responses']:,} responses "
                           "exactly once per epoch, as §5 says.",
              "contradicted": f"Packed as training packs it, {what} forwards {n['duplicated']:,} responses more than "
                              f"once and misses {n['missing']:,}: a bug in cheems_lib.models.batching."}))
    ratio = n["sample_passes"] / n["pair_passes"] if n["pair_passes"] else float("nan")
    verdict = "insufficient data" if not n["pair_passes"] else "supported" if ratio < 1 else "contradicted"
    ledger.add(Claim(
        ids[1], "", "", "", verdict, estimate=ratio - 1,
        n=len(records), statistic=f"sequences forwarded per epoch over {what}, sample-based over by pairs, minus 1",
        link="preference-batching",
        says={"supported": f"Sample-based batching forwards {n['sample_passes']:,} sequences per epoch of {what}, "
                           f"against {n['pair_passes']:,} for batching by pairs ({{estimate:+.0%}}).",
              "contradicted": f"Sample-based batching forwards {n['sample_passes']:,} sequences per epoch of {what}, "
                              f"no fewer than the {n['pair_passes']:,} of batching by pairs.",
              "insufficient data": f"{what} has no compared pair, so there is nothing to batch by pairs."}))
    return n
