"""Atomic outputs and single-writer locks (the "nothing lost" guarantees)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from cheems_lib.outputs import OutputLock, atomic_open
from conftest import ROOT


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


def test_classify_output_tells_every_kind_of_path(tmp_path):
    """Absent, regular, folder, pipe, and links to each (and to a descriptor), dangling links and loops."""
    import os

    from cheems_lib.outputs import classify_output

    (tmp_path / "f").write_text("x")
    (tmp_path / "d").mkdir()
    os.mkfifo(tmp_path / "p")
    links = {"f.lnk": "f", "d.lnk": "d", "p.lnk": "p", "fd.lnk": "/proc/self/fd/1", "gone.lnk": "no/such",
             "loop": "loop"}
    for name, target in links.items():
        (tmp_path / name).symlink_to(target)
    kinds = {name: classify_output(tmp_path / name).kind for name in ["f", "d", "p", "new", "loop/x", *links]}
    assert kinds == {"f": "regular", "d": "directory", "p": "special", "new": "absent", "loop/x": "loop",
                     "f.lnk": "link-regular", "d.lnk": "link-directory", "p.lnk": "link-special",
                     "fd.lnk": "link-fd", "gone.lnk": "dangling", "loop": "loop"}
    assert classify_output(tmp_path / "f.lnk").target == tmp_path / "f"
    assert classify_output("/dev/stdout").fd == 1


def test_a_link_to_a_regular_file_stays_a_link(tmp_path):
    """The file the link points to is replaced atomically (its temporary beside it); the link stays a link."""
    import os

    (tmp_path / "real").mkdir()
    (tmp_path / "real/o.txt").write_text("old")
    link = tmp_path / "o.lnk"
    link.symlink_to("real/o.txt")
    with atomic_open(link, "w") as fh:
        fh.write("new")
    assert link.is_symlink() and os.readlink(link) == "real/o.txt" and (tmp_path / "real/o.txt").read_text() == "new"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["o.lnk", "o.txt", "real"]


def test_a_dangling_link_is_written_where_it_points(tmp_path):
    """A link to a file that does not exist yet: the file is created there, the link stays."""
    link = tmp_path / "o.lnk"
    link.symlink_to("sub/o.txt")
    with atomic_open(link, "w") as fh:
        fh.write("new")
    assert link.is_symlink() and (tmp_path / "sub/o.txt").read_text() == "new"


def test_a_link_to_a_pipe_is_written_through(tmp_path):
    """A link to a named pipe: the bytes go into the pipe, nothing is renamed over the link."""
    import os
    import threading

    os.mkfifo(tmp_path / "p")
    (tmp_path / "p.lnk").symlink_to("p")
    got = []
    reader = threading.Thread(target=lambda: got.append((tmp_path / "p").read_bytes()))
    reader.start()
    with atomic_open(tmp_path / "p.lnk", "wb") as fh:
        fh.write(b"through")
    reader.join()
    assert got == [b"through"] and (tmp_path / "p.lnk").is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p", "p.lnk"]


def test_a_link_to_stdout_writes_through_the_descriptor(tmp_path):
    """A link to /proc/self/fd/1 (what /dev/stdout is) with stdout redirected to a file: what is written and what
    is printed after both land in the file, in order, and the link stays. (Not /dev/stdout itself: on a broken
    writer, run as root, the test would replace the machine's /dev/stdout.)"""
    import os

    out, link = tmp_path / "out.txt", tmp_path / "so.lnk"
    link.symlink_to("/proc/self/fd/1")
    code = ("import sys; from cheems_lib.outputs import atomic_open\nprint('before', flush=True)\n"
            "with atomic_open(sys.argv[1], 'w') as fh: fh.write('through\\n')\nprint('after')")
    with open(out, "w") as fh:
        subprocess.run([sys.executable, "-c", code, str(link)], stdout=fh, check=True)
    assert out.read_text() == "before\nthrough\nafter\n" and os.readlink(link) == "/proc/self/fd/1"


def test_a_link_loop_or_a_folder_is_refused_before_writing(tmp_path):
    """A loop raises ELOOP and a folder EISDIR before any temporary file exists."""
    import errno

    (tmp_path / "loop").symlink_to("loop")
    (tmp_path / "d").mkdir()
    for name, code in (("loop", errno.ELOOP), ("d", errno.EISDIR)):
        with pytest.raises(OSError) as e:
            with atomic_open(tmp_path / name, "w") as fh:
                fh.write("x")
        assert e.value.errno == code and e.value.filename == str(tmp_path / name)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d", "loop"]


def test_write_error_tells_a_full_disk_in_library_errors(tmp_path, monkeypatch):
    """torch's zip writer on a nearly full disk and safetensors' os error 28 are ENOSPC; others stay themselves."""
    import errno

    from cheems_lib import outputs

    torch_full = RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 64 vs 0")
    monkeypatch.setattr(outputs, "_free_bytes", lambda path: 1024)
    assert outputs.write_error(torch_full, tmp_path).errno == errno.ENOSPC
    monkeypatch.setattr(outputs, "_free_bytes", lambda path: 10 * 2**30)
    assert outputs.write_error(torch_full, tmp_path).errno == errno.EIO  # a failed write, but not for lack of space
    safetensors = type("SafetensorError", (Exception,), {})("I/O error: No space left on device (os error 28)")
    assert outputs.write_error(safetensors, tmp_path).errno == errno.ENOSPC
    assert outputs.write_error(ValueError("bad"), tmp_path) is None


def test_doctests():
    """The module's examples still print what they say."""
    import doctest

    from cheems_lib import outputs

    assert doctest.testmod(outputs).failed == 0


# --- interrupt points: tests interrupt at a chosen moment, never after a sleep ---

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


def test_a_waiting_lock_takes_over_when_the_holder_releases(tmp_path):
    """``OutputLock(wait=True)`` (the model zoo's) waits for the holder instead of refusing, and gets the lock once it
    is released: the waiter finds what the holder wrote just before releasing."""
    import threading

    from cheems_lib.outputs import OutputLock

    out, marker = tmp_path / "entry", tmp_path / "written-by-the-holder"
    trying, seen = threading.Event(), []

    def waiter():
        trying.set()
        with OutputLock(out, wait=True):
            seen.append(marker.exists())

    with OutputLock(out):
        thread = threading.Thread(target=waiter)
        thread.start()
        trying.wait()
        marker.write_text("done")
    thread.join()
    assert seen == [True] and not (tmp_path / "entry.lock").exists()


def test_stale_temporaries_of_killed_writers_are_removed(tmp_path):
    """``remove_stale_temporaries`` removes the file :func:`atomic_path` leaves when its process is killed (a real
    SIGKILL after the write, before the rename), and leaves a live writer's temporary file, the output and other
    hidden files alone."""
    import os

    from cheems_lib.outputs import atomic_path, remove_stale_temporaries

    out = tmp_path / "table.csv"
    out.write_text("old")
    code = f"from cheems_lib.outputs import atomic_path\nwith atomic_path({str(out)!r}) as tmp:\n    tmp.write_text('new')\n"
    env = {**os.environ, "CHEEMS_TEST_INTERRUPT": "atomic.written=1:SIGKILL", "PYTHONPATH": str(ROOT)}
    assert subprocess.run([sys.executable, "-c", code], env=env, capture_output=True).returncode == -9
    (stale,) = [p for p in tmp_path.iterdir() if p.name.startswith(".table.csv.tmp-")]
    (tmp_path / ".hidden.tmp-notes").write_text("not ours")
    with atomic_path(tmp_path / "other.csv") as live:  # this process is writing it now
        live.write_text("being written")
        assert remove_stale_temporaries(tmp_path) == [stale]
        assert live.exists()
    assert out.read_text() == "old" and (tmp_path / "other.csv").read_text() == "being written"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".hidden.tmp-notes", "other.csv", "table.csv"]


# --- no output is an input (an output must not overwrite an input); one lock per output, training folders included ---

def test_an_output_that_is_an_input_is_refused_through_links_and_hard_links(tmp_path):
    """The same file by its name, a symbolic link or a hard link is refused with one line naming the input; so is an
    output inside a folder the command reads, and (for a folder replaced whole) a folder holding an input. Other
    outputs (a new file, a device, a link loop, which the writer refuses itself) pass."""
    import os

    from cheems_lib.input_files import check_not_input
    from cheems_lib.input_files import DataError

    src = tmp_path / "in.jsonl"
    src.write_text("{}\n")
    (tmp_path / "sym.jsonl").symlink_to("in.jsonl")
    os.link(src, tmp_path / "hard.jsonl")
    (tmp_path / "set").mkdir()
    (tmp_path / "loop").symlink_to("loop")
    inputs = [("--gpt", src), ("", tmp_path / "set"), ("--scores", None)]
    for out, words in ((src, "is also a --gpt input;"), (tmp_path / "sym.jsonl", "(" + str(src) + ", the same file)"),
                       (tmp_path / "hard.jsonl", "is also a --gpt input ("), (tmp_path / "set", "is also an input"),
                       (tmp_path / "set/new.jsonl", "lies inside an input, the folder")):
        with pytest.raises(DataError) as e:
            check_not_input(out, inputs)
        assert words in str(e.value) and str(e.value).startswith(f"{out}: ") and "(fix: " in str(e.value), str(e.value)
        assert "\n" not in str(e.value)
    for out in (tmp_path / "new.jsonl", "/dev/null", tmp_path / "loop", None):
        check_not_input(out, inputs)
    check_not_input(tmp_path, [("--data", src)])  # a folder written file by file may hold an input
    with pytest.raises(DataError, match=r"holds a --data input, .*in\.jsonl, which the run would replace"):
        check_not_input(tmp_path, [("--data", src)], folder=True, flag="--output")
    assert src.read_text() == "{}\n"


def test_a_writer_joins_its_own_threads_lock_and_the_outer_block_releases_it(tmp_path):
    """The model zoo holds an entry's lock and starts a training run that locks the same folder with ``join``: the
    run goes on under that hold; another process stays refused until the outer block ends. Without ``join`` a
    second hold is refused, in the same thread too."""
    import os

    from cheems_lib.outputs import LockedError
    out = tmp_path / "rm"
    probe = ("from cheems_lib.outputs import OutputLock, LockedError\n"
             f"try:\n    with OutputLock({str(out)!r}): print('got')\n"
             "except LockedError as e:\n    print(e)")
    other = lambda: subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout
    with OutputLock(tmp_path / "rm"):
        with OutputLock(tmp_path / "." / "rm", join=True):  # another spelling of the same output
            assert "another process" in other()
        assert "another process" in other() and (tmp_path / "rm.lock").exists()
        with pytest.raises(LockedError, match=rf"pid {os.getpid()}\)"), OutputLock(out):
            pass
    assert other().strip() == "got" and not (tmp_path / "rm.lock").exists()


def test_a_lock_removes_the_folders_it_made_when_nothing_was_written(tmp_path):
    """A command refused after taking its lock writes nothing: the folders made for the lock file go again; a folder
    that holds the output stays."""
    with OutputLock(tmp_path / "a" / "b" / "out.jsonl"):
        assert (tmp_path / "a" / "b").is_dir()
    assert list(tmp_path.iterdir()) == []
    with OutputLock(tmp_path / "a" / "b" / "out.jsonl"):
        (tmp_path / "a" / "b" / "out.jsonl").write_text("x")
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == ["a", "a/b", "a/b/out.jsonl"]
    (tmp_path / "f").write_text("")
    with pytest.raises(NotADirectoryError) as e, OutputLock(tmp_path / "f" / "x" / "out.jsonl"):
        pass
    assert e.value.filename == str(tmp_path / "f")
