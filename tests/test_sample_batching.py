"""§5's sample-based batching claims (cheems_lib.analyses.sample_batching) against hand counts."""
from cheems_lib.analyses import sample_batching
from cheems_lib.analyses.claims import Ledger
from cheems_lib.records import Record, Response


def _record(pid: str, rank: dict[str, int], size: int = 5) -> Record:
    return Record(prompt=pid, id=pid, responses=[Response(r, "字" * size) for r in rank], rank=rank)


def test_counts_match_a_hand_count():
    """Two prompts: 3 ranked responses (3 pairs) and 2 tied ones (no pair). Each response is forwarded once: 5
    sequences; by pairs 2 x 3 = 6. A budget smaller than one prompt still splits no prompt."""
    records = [_record("p", {"a": 0, "b": 1, "c": 2}), _record("q", {"d": 0, "e": 0})]
    for budget in (sample_batching.BATCH_CHARS, 4):
        assert sample_batching.counts(records, max_chars=budget) == {
            "responses": 5, "duplicated": 0, "missing": 0, "sample_passes": 5, "pair_passes": 6}


def test_claims_follow_the_counts():
    """Both claims are structural and supported on a ranked set; a prompt with one compared pair among three
    responses forwards more sequences sample by sample (3) than by pairs (2), which contradicts the second; a set
    with no compared pair has insufficient data for it; no records: both untestable."""
    ledger = Ledger("preference", "simulated world (test)")
    sample_batching.add_claims(ledger, [_record("p", {"a": 0, "b": 1, "c": 2})], what="x")
    no_dup, fewer = ledger.claims["s5-batching-no-duplicates"], ledger.claims["s5-batching-fewer-passes"]
    assert (no_dup.kind, no_dup.verdict, fewer.verdict) == ("structural", "supported", "supported")
    assert fewer.estimate == 3 / 6 - 1 and no_dup.reason and no_dup.paper_words
    one_pair = _record("p", {"a": 0, "b": 1})
    one_pair.responses.append(Response("c", "字"))  # unranked
    sparse = Ledger("preference", "simulated world (test)")
    sample_batching.add_claims(sparse, [one_pair], what="x")
    assert sparse.claims["s5-batching-fewer-passes"].verdict == "contradicted"
    tied = Ledger("preference", "simulated world (test)")
    sample_batching.add_claims(tied, [_record("p", {"a": 0, "b": 0})], what="x")
    assert tied.claims["s5-batching-fewer-passes"].verdict == "insufficient data"
    missing = Ledger("preference", "simulated world (test)")
    assert sample_batching.add_claims(missing, None, reason="needs x") is None
    assert {c.kind for c in missing.claims.values()} == {"untestable"}
