"""Scaling ladders: geometric sizes, nested seeded subsets, pair counts."""
from __future__ import annotations

import pytest

from cheems_lib import scaling

from conftest import make_record


def test_ladder():
    """Sizes halve down from the total, ascending; too few records for the ladder is refused."""
    assert scaling.ladder(3200, points=6) == [100, 200, 400, 800, 1600, 3200]
    assert scaling.ladder(10, points=2, ratio=5) == [2, 10]
    with pytest.raises(ValueError, match="needs at least 32 records"):
        scaling.ladder(20, points=6)


def test_nested_subsets_are_nested_ordered_and_seeded():
    """Each subset holds the smaller ones, in file order; the full size is the file; the seed picks the chain."""
    recs = [make_record(f"p{i}", "ab", rank={"a": 0, "b": 1}) for i in range(40)]
    subs = scaling.nested_subsets(recs, [5, 10, 20, 40], seed=1)
    ids = {n: [r.id for r in s] for n, s in subs.items()}
    assert subs[40] == recs  # the full size is the file itself, in order
    for small, big in [(5, 10), (10, 20), (20, 40)]:
        assert set(ids[small]) <= set(ids[big])
        assert ids[small] == sorted(ids[small], key=lambda i: int(i[1:]))
    assert ids == {n: [r.id for r in s] for n, s in scaling.nested_subsets(recs, [5, 10, 20, 40], seed=1).items()}
    assert ids[10] != [r.id for r in scaling.nested_subsets(recs, [10], seed=2)[10]]
    with pytest.raises(ValueError, match="exceeds"):
        scaling.nested_subsets(recs, [41])


def test_count_pairs():
    """Pairs of different rank only: ties and unranked records give none."""
    recs = [make_record("p", "abcd", rank={"a": 0, "b": 1, "c": 1, "d": 2}), make_record("q", "ab"),
            make_record("r", "ab", rank={"a": 0, "b": 0})]
    assert scaling.count_pairs(recs) == 5  # a>b, a>c, a>d, b>d, c>d; unranked and tied give none

