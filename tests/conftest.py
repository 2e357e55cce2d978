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


@pytest.fixture(scope="session")
def smoke_dir(tmp_path_factory):
    """The smoke world (seed 3) written to disk once per session; tests only read it."""
    from cheems_lib.simulation import WorldConfig, build_world
    from cheems_lib.world_files import write_world

    out = tmp_path_factory.mktemp("world")
    write_world(build_world(WorldConfig(size="smoke", seed=3)), out)
    return out


def digest(directory) -> dict[str, str]:
    """SHA-256 of every file under ``directory``, by relative path."""
    import hashlib

    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(Path(directory).rglob("*")) if p.is_file()}
