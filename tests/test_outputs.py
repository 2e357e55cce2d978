"""Atomic outputs and single-writer locks (the "nothing lost" guarantees)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from cheems_lib.outputs import OutputLock, atomic_open


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    """An exception mid-write: the destination keeps its old bytes, the temporary file is gone."""
    out = tmp_path / "o.txt"
    out.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_open(out, "w") as fh:
            fh.write("half of the new")
            raise RuntimeError("interrupted")
    assert out.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["o.txt"]


def test_a_successful_write_replaces_the_file_whole(tmp_path):
    """The new content appears only at the end of the block."""
    out = tmp_path / "o.txt"
    out.write_text("old")
    with atomic_open(out, "w") as fh:
        fh.write("new")
        assert out.read_text() == "old"
    assert out.read_text() == "new"


def test_special_files_are_written_directly():
    """/dev/null is not replaced by a regular file (there is nothing there to protect)."""
    with atomic_open("/dev/null", "wb") as fh:
        fh.write(b"x")
    assert not __import__("pathlib").Path("/dev/null").is_file()


def test_a_second_process_cannot_take_the_lock(tmp_path):
    """flock is per open file: another process is refused with the holder's pid; after release it succeeds."""
    out = tmp_path / "s.jsonl"
    probe = ("import sys; from cheems_lib.outputs import OutputLock, LockedError\n"
             f"try:\n    with OutputLock({str(out)!r}): print('got')\n"
             "except LockedError as e:\n    print(e)")
    with OutputLock(out):
        held = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout
    assert "another process" in held and "pid" in held
    free = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout
    assert free.strip() == "got"
    assert not (tmp_path / "s.jsonl.lock").exists()
