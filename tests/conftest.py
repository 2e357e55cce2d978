"""Shared fixtures: small records built in code, and the repository root."""
from __future__ import annotations

from pathlib import Path

import pytest

from cheems_lib.records import Record, Response

ROOT = Path(__file__).resolve().parents[1]


def make_record(pid: str, ids: str | list[str], annotations=(), rank=None, category=("理解",)) -> Record:
    return Record(prompt=f"prompt {pid}", id=pid, responses=[Response(i, f"response {i}") for i in ids],
                  annotations=list(annotations), rank=rank, category=list(category))


@pytest.fixture
def root() -> Path:
    return ROOT
