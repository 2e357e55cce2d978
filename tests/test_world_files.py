"""The files of a world on disk (spec §6): interrupt-safe writing, recovery after a kill, loading."""
from __future__ import annotations


import pytest

from cheems_lib.simulation import WorldConfig, build_world
from cheems_lib.world_files import load_world, write_world
from conftest import digest


def test_load_world_reports_missing_layout(tmp_path):
    """load_world on an empty folder says to run cheems simulate."""
    with pytest.raises(FileNotFoundError, match="cheems simulate"):
        load_world(tmp_path)


def _cli(argv, capsys):
    """Run ``cheems`` in-process like the console script: (exit code, stderr lines)."""
    from cheems_lib.cli import main

    try:
        rc = main(argv)
    except SystemExit as e:  # a message exits 1, as the interpreter does with sys.exit("...")
        rc = e.code if isinstance(e.code, int) or e.code is None else 1
        if not isinstance(e.code, int) and e.code is not None:
            print(e.code, file=__import__("sys").stderr)
    return rc or 0, capsys.readouterr().err.strip().splitlines()


def _hidden(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


class TestWritingSafely:
    def test_new_world_replaces_an_old_one(self, smoke_dir, tmp_path, capsys):
        """A second run over a world swaps in the complete new one (same bytes as a fresh run), no leftovers."""
        out = tmp_path / "w"
        assert _cli(["simulate", "--size", "smoke", "--seed", "1", "-o", str(out)], capsys)[0] == 0
        assert _cli(["simulate", "--size", "smoke", "--seed", "3", "-o", str(out)], capsys)[0] == 0
        assert digest(out) == digest(smoke_dir) and _hidden(tmp_path) == []

    def test_swap_without_atomic_exchange(self, smoke_dir, tmp_path, monkeypatch):
        """Where renameat2 is missing, rename-aside-then-rename gives the same result and no leftovers."""
        from cheems_lib import world_files

        monkeypatch.setattr(world_files, "_exchange", lambda a, b: False)
        write_world(build_world(WorldConfig(size="smoke", seed=1)), tmp_path / "w")
        write_world(build_world(WorldConfig(size="smoke", seed=3)), tmp_path / "w")
        assert digest(tmp_path / "w") == digest(smoke_dir) and _hidden(tmp_path) == []

    def test_a_world_set_aside_by_a_killed_run_is_restored(self, smoke_dir, tmp_path):
        """Killed between the two renames: the next run puts the old world back, then replaces it; ours only."""
        import shutil

        aside = tmp_path / ".w.old-4194305-deadbeef"  # pid above Linux's pid_max: a dead process
        shutil.copytree(smoke_dir, aside)
        (tmp_path / ".w.tmp-4194305-0badc0de").mkdir()
        (tmp_path / ".w.old-mine").mkdir()  # not our naming: left alone
        from cheems_lib import world_files

        world_files._recover(tmp_path / "w")
        assert digest(tmp_path / "w") == digest(smoke_dir) and _hidden(tmp_path) == [".w.old-mine"]

    @pytest.mark.parametrize("case", ["file", "foreign folder", "world with extra file", "negative seed"])
    def test_bad_arguments_exit_2_and_write_nothing(self, case, smoke_dir, tmp_path, capsys):
        """A file, a folder that is not a world, a world holding other files, or --seed -1: one line, exit 2."""
        import shutil

        out, seed = tmp_path / "out", "0"
        if case == "file":
            out.write_text("keep me\n")
        elif case == "foreign folder":
            out.mkdir()
            (out / "notes.txt").write_text("keep me\n")
        elif case == "world with extra file":
            shutil.copytree(smoke_dir, out)
            (out / "cheems_bench" / "scores.jsonl").write_text("keep me\n")
        else:
            seed = "-1"
        before = digest(tmp_path)
        rc, err = _cli(["simulate", "--size", "smoke", "--seed", seed, "-o", str(out)], capsys)
        assert rc == 2 and len(err) == 1 and err[0].startswith("cheems: ") and "(fix: " in err[0], err
        assert digest(tmp_path) == before and _hidden(tmp_path) == []

    def test_full_disk_keeps_the_old_world(self, smoke_dir, tmp_path, capsys, monkeypatch):
        """A write that fails (ENOSPC) half-way: exit 1, one line with path and reason, old world intact."""
        import errno
        import shutil

        from cheems_lib import world_files

        out = tmp_path / "w"
        shutil.copytree(smoke_dir, out)
        calls, write = [], world_files.write_records

        def full(records, path):
            calls.append(path)
            if len(calls) == 3:
                with open(path, "wb") as fh:
                    fh.write(b'{"half')
                raise OSError(errno.ENOSPC, "No space left on device", str(path))
            return write(records, path)

        monkeypatch.setattr(world_files, "write_records", full)
        rc, err = _cli(["simulate", "--size", "smoke", "--seed", "5", "-o", str(out)], capsys)
        assert rc == 1 and len(err) == 1 and "No space left on device" in err[0] and str(tmp_path) in err[0], err
        assert digest(out) == digest(smoke_dir) and _hidden(tmp_path) == []

    def test_output_under_a_file_is_one_line(self, tmp_path, capsys):
        """-o below a file (like /dev/full/x): exit 1 with the path and the reason, no traceback."""
        (tmp_path / "f").write_text("")
        rc, err = _cli(["simulate", "--size", "smoke", "-o", str(tmp_path / "f" / "x")], capsys)
        assert rc == 1 and err == [f"cheems: {tmp_path / 'f'}: Not a directory"]


def _run_killed(args, sig, point, cwd=None):
    """Run ``cheems ARGS`` in its own session; it sends itself ``sig`` at ``point`` (``NAME=N``, see
    cheems_lib.outputs.interrupt_point). Returns (exit code, stderr)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "CHEEMS_TEST_INTERRUPT": f"{point}:{sig.name}"}
    proc = subprocess.run([sys.executable, "-m", "cheems_lib.cli", *args], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, start_new_session=True, cwd=cwd, env=env, timeout=300)
    return proc.returncode, proc.stderr.decode(errors="replace")


# the first file, a middle one and the last one (summary.json) written, the staged folder, the swapped-in folder
POINTS = ["world.file=1", "world.file=4", "world.file=8", "world.staged=1", "world.swapped=1"]


class TestInterrupts:
    @pytest.mark.parametrize("old", [False, True], ids=["fresh", "over-old-world"])
    @pytest.mark.parametrize("sig_name", ["SIGINT", "SIGKILL"])
    def test_killed_simulate_leaves_old_or_complete_new_world(self, old, sig_name, smoke_dir, tmp_path):
        """A real SIGINT/SIGKILL while each file is written, when the world is staged, and after the swap:
        DIR is absent/the old world until the swap and the new one after it, SIGINT exits 130 with no
        traceback and no hidden folder, and the next run repairs what a SIGKILL left."""
        import shutil
        import signal

        sig = getattr(signal, sig_name)
        new = digest(smoke_dir)  # seed 3, uninterrupted
        old_world = tmp_path / "old"
        write_world(build_world(WorldConfig(size="smoke", seed=1)), old_world)
        before = digest(old_world) if old else None
        for point in POINTS:
            out = tmp_path / "w"
            shutil.rmtree(out, ignore_errors=True)
            if old:
                shutil.copytree(old_world, out)
            rc, err = _run_killed(["simulate", "--size", "smoke", "--seed", "3", "-o", str(out)], sig, point)
            got = digest(out) if out.exists() else None
            assert got == (new if point.startswith("world.swapped") else before), (point, rc, err)
            if sig == signal.SIGKILL:
                assert rc == -signal.SIGKILL, (point, rc, err)
            else:
                assert rc == 130 and "Traceback" not in err, (point, rc, err)
                assert [p for p in _hidden(tmp_path) if p.startswith(".w.")] == []
            # the next run repairs whatever a kill left and writes the complete world
            write_world(build_world(WorldConfig(size="smoke", seed=3)), out)
            assert digest(out) == new and [p for p in _hidden(tmp_path) if p.startswith(".w.")] == []
