"""Real-human-score records in the shipped shape, shared by the human-labels tests."""
from __future__ import annotations

import pytest

from cheems_lib.records import Record, Response

from conftest import ROOT


HUMAN_FILE = ROOT / "data/real/writingpref/writingpref_zh.jsonl.xz"


def _scored(pid: str, lengths: dict[str, int], scores: dict[str, int], second: dict[str, int] | None = None,
            tag: str = "诗歌") -> Record:
    """A record in the shipped shape: answers of the given lengths, ranked by their human scores."""
    levels = sorted(set(scores.values()), reverse=True)
    extra = {"human_scores": scores, **({"second_scores": second} if second is not None else {})}
    return Record(prompt=pid, id=pid, responses=[Response(m, "字" * n) for m, n in lengths.items()],
                  rank={m: levels.index(s) for m, s in scores.items()}, category=[tag], extra=extra)


@pytest.fixture
def no_glue(monkeypatch):
    """Claims glue their sentences into a notebook; outside one, nothing."""
    import myst_nb

    monkeypatch.setattr(myst_nb, "glue", lambda *a, **k: None)
