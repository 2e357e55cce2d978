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
