"""Shared fixtures: small records built in code, and the repository root."""
from __future__ import annotations

import shutil
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


def copy_repo(dst: Path) -> Path:
    """The book's sources (not the library, which is installed) in ``dst``."""
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(ROOT / name, dst / name)
    for name in ("notebooks", "data"):
        shutil.copytree(ROOT / name, dst / name, ignore=shutil.ignore_patterns("*.ipynb"))
    (dst / "book").mkdir()
    for page in (ROOT / "book").glob("*.md"):
        shutil.copy(page, dst / "book" / page.name)
    return dst


@pytest.fixture(scope="session")
def smoke_book(tmp_path_factory):
    """A smoke-profile build of the whole book: (root, html folder, build log), built once per session."""
    from cheems_lib.book import build

    root = copy_repo(tmp_path_factory.mktemp("book"))
    logs: list[str] = []
    html = build("smoke", root=root, log=logs.append)
    return root, html, logs
