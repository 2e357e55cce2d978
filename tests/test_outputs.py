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


# --- interrupt points: tests interrupt at a chosen moment, never after a sleep (issue 24) ---

_REACH = """
import sys
from cheems_lib.outputs import interrupt_point
for i in range(1, 6):
    print(i, flush=True)
    interrupt_point("demo.point")
    interrupt_point("other.point")
print("end", flush=True)
"""


def _reach(spec, *, group=True):
    import os
    env = {k: v for k, v in os.environ.items() if k != "CHEEMS_TEST_INTERRUPT"}
    if spec is not None:
        env["CHEEMS_TEST_INTERRUPT"] = spec
    return subprocess.run([sys.executable, "-c", _REACH], capture_output=True, text=True, env=env,
                          start_new_session=group)


@pytest.mark.parametrize("n", [1, 3, 5])
@pytest.mark.parametrize("group", [True, False], ids=["group-leader", "in-caller-group"])
def test_an_interrupt_point_kills_at_exactly_the_nth_time(n, group):
    """SIGKILL the N-th time the point is reached (not before, not after), as a group leader or not."""
    import signal
    done = _reach(f"other.point=9:SIGINT,demo.point={n}:SIGKILL", group=group)
    assert done.returncode == -signal.SIGKILL
    assert done.stdout.split() == [str(i) for i in range(1, n + 1)]


def test_sigint_and_sigterm_are_real_signals():
    """SIGINT raises KeyboardInterrupt at the point (Python then exits by SIGINT); SIGTERM with no handler ends
    the process by the signal."""
    import signal
    done = _reach("demo.point=2:SIGINT")
    assert done.returncode == -signal.SIGINT and done.stderr.strip().endswith("KeyboardInterrupt")
    assert "line 6, in <module>" in done.stderr  # raised at the call of demo.point, before other.point
    assert done.stdout.split() == ["1", "2"]
    done = _reach("demo.point=4:SIGTERM")
    assert done.returncode == -signal.SIGTERM and done.stdout.split() == ["1", "2", "3", "4"]


@pytest.mark.parametrize("spec", [None, "", "another.point=1:SIGKILL", "demo.point=6:SIGKILL"])
def test_an_unset_or_unmatched_variable_does_nothing(spec):
    """No variable, an empty one, another point, or an N never reached: the process runs to its end."""
    done = _reach(spec)
    assert done.returncode == 0 and done.stdout.split() == ["1", "2", "3", "4", "5", "end"]


@pytest.mark.parametrize("spec", ["demo.point=1:SIGSTOP", "demo.point=0:SIGKILL", "demo.point:SIGKILL",
                                  "demo.point=1"])
def test_a_malformed_variable_is_a_clear_value_error(spec):
    """An unknown signal name, N < 1 or a missing part: ValueError naming the variable, the item and the form."""
    from cheems_lib.outputs import parse_interrupts
    with pytest.raises(ValueError, match=r"CHEEMS_TEST_INTERRUPT: .* is not POINT=N:SIGNAL"):
        parse_interrupts(spec)
    done = _reach(spec)
    assert done.returncode == 1 and "ValueError: CHEEMS_TEST_INTERRUPT" in done.stderr


def test_atomic_path_interrupted_before_and_after_its_rename(tmp_path):
    """SIGKILL at atomic.written keeps the old file (a temporary beside it); at atomic.replaced the new one."""
    import os
    import signal
    out = tmp_path / "o.txt"
    code = f"from cheems_lib.outputs import atomic_open\nwith atomic_open({str(out)!r}, 'w') as fh: fh.write('new')"
    for point, want in (("atomic.written", "old"), ("atomic.replaced", "new")):
        out.write_text("old")
        done = subprocess.run([sys.executable, "-c", code], start_new_session=True,
                              env={**os.environ, "CHEEMS_TEST_INTERRUPT": f"{point}=1:SIGKILL"})
        assert done.returncode == -signal.SIGKILL and out.read_text() == want
        assert len(list(tmp_path.glob(".o.txt.tmp-*"))) == (point == "atomic.written")
        for p in tmp_path.glob(".o.txt.tmp-*"):
            p.unlink()
