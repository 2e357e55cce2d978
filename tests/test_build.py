"""Building the book (cheems_lib.publishing.build): arguments checked before anything runs, one build at a time,
jupyter-book's failures cut to their cause, stale temporary files removed. Nothing here executes a chapter."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from cheems_lib.cli import main
from cheems_lib.outputs import OutputLock
from cheems_lib.publishing import build as builder
from cheems_lib.publishing.build import build
from cheems_lib.publishing.chapters import REPLICATE_SEEDS, BookError, BookInputError
from conftest import ROOT, copy_repo


BAD_ARGUMENTS = {  # id: (arguments, what the one line says)
    "jobs": (["--jobs", "-1"], "--jobs -1: not a number"),
    "chapter": (["--chapter", "no_such_chapter"], "--chapter no_such_chapter: no such chapter"),
    "parameter": (["-p", "no_such_parameter", "1"], "no selected chapter has such a parameter"),
    "value": (["--chapter", "biases", "-p", "n_bins", "many"], "-p n_bins many: not a int"),
    "seeds-0": (["--chapter", "downstream", "-p", "train_seeds", "0"], "-p train_seeds 0: must be in [1, 10] (fix: "),
    "seeds-11": (["--chapter", "scaling", "-p", "train_seeds", "11"], "-p train_seeds 11: must be in [1, 10]"),
    "n_boot": (["-p", "n_boot", "-5"], "-p n_boot -5: must be in [100, 100000]"),
    "nan": (["--chapter", "preference", "-p", "margin", "nan"], "-p margin nan: must be in [0, 100]"),
    "choice": (["--chapter", "data", "-p", "size", "huge"], "-p size huge: must be one of smoke|default|paper"),
    "list-type": (["--chapter", "scaling", "-p", "sizes", '["tiny", 3]'], "not a list[str]"),
    "list-element": (["--chapter", "sensitivity", "-p", "shared_noise", "[0.5, -1]"],
                     "-p shared_noise [0.5, -1]: element 1 (-1) must be in [0, 10]"),
    "file-is-root": (["--chapter", "conflicts", "-p", "data_path", "/"], "-p data_path /: is a folder, not a file"),
    "file-missing": (["--chapter", "conflicts", "-p", "data_path", "no/such.jsonl"], "no/such.jsonl: no such file"),
    "folder-is-file": (["--chapter", "data", "-p", "world_dir", "data/examples/annotations.jsonl"],
                       "is a file, not a folder"),
    "folder-is-root": (["--chapter", "data", "-p", "world_dir", "/"], "-p world_dir /: is not a world folder"),
    "folder-missing": (["--chapter", "data", "-p", "world_dir", "no/such"], "-p world_dir no/such: no such folder"),
}


@pytest.mark.parametrize("argv,says", BAD_ARGUMENTS.values(), ids=BAD_ARGUMENTS.keys())
def test_bad_arguments_exit_2_before_running(argv, says, tmp_path, monkeypatch, capsys):
    """A negative --jobs, an unknown chapter or -p name, a -p value of the wrong type, out of its declared range or
    choices (a list's elements too), a path that is missing or of the wrong kind (`/`, checked without walking it):
    one line naming the value and the fix, exit 2, no kernel started, nothing written."""

    root = copy_repo(tmp_path)
    monkeypatch.chdir(root)

    def forbidden(*args, **kwargs):
        raise AssertionError("nothing may run or walk a folder")

    monkeypatch.setattr(builder, "execute_chapter", forbidden)
    monkeypatch.setattr(pathlib.Path, "rglob", forbidden)
    monkeypatch.setattr(os, "walk", forbidden)
    with pytest.raises(SystemExit) as e:
        main(["book", "--profile", "smoke", "--no-html", *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1 and err[0].startswith("cheems: ") and "(fix: " in err[0], err
    assert says in err[0], err
    assert not list((root / "book").glob("*.ipynb"))


@pytest.mark.parametrize("profile", ["full", "full-smoke"])
def test_book_seed_that_is_a_replicate_seed_is_refused(profile, tmp_path, monkeypatch):
    """A full profile refuses ``-p seed`` equal to one of its world replicates' seeds (the book's world would be
    one of its own replicates) before anything runs; any other seed gives the replicates their own seeds."""

    root = copy_repo(tmp_path)
    monkeypatch.setattr(builder, "execute_chapter", lambda *a, **k: pytest.fail("nothing may run"))
    with pytest.raises(BookInputError, match=rf"-p seed {REPLICATE_SEEDS[0]}: the {profile} profile's world "
                                             r"replicates use seeds .*\(fix: pick another seed"):
        build(profile, ["data"], {"seed": str(REPLICATE_SEEDS[0])}, root=root, html=False, log=lambda s: None)
    plans = builder._plans(profile, ["data"], {"seed": "7"}, root, 0)
    assert [(n, p["seed"], s) for n, p, s in builder._replicas(plans, profile)] == [("data", s, s) for s in REPLICATE_SEEDS]
    assert builder._replicas(builder._plans("default", ["data"], {}, root, 0), "default") == []


def test_second_build_is_refused_with_the_running_pid(tmp_path, monkeypatch, capsys):
    """While another process holds the checkout's build lock, `cheems book` exits 2 at once with one line naming
    its pid, and runs nothing."""

    root = copy_repo(tmp_path)
    monkeypatch.chdir(root)

    def forbidden(*args, **kwargs):
        raise AssertionError("a second build ran a chapter")

    monkeypatch.setattr(builder, "execute_chapter", forbidden)
    with OutputLock(root / "_build" / "cheems-book"):  # what a running `cheems book` holds (build.build_lock)
        with pytest.raises(SystemExit) as e:
            main(["book", "--profile", "smoke", "--chapter", "conflicts", "--no-html"])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1, err
    assert f"another cheems book is running (pid {os.getpid()})" in err[0] and "(fix: wait" in err[0], err
    assert not list((root / "book").glob("*.ipynb"))


def test_render_failure_shows_the_cause(tmp_path, monkeypatch):
    """When jupyter-book fails, the message shows its first error lines (the cause, however long the traceback after
    it; without colour codes) and its last lines, not only the tail."""

    root = copy_repo(tmp_path)
    warning = "/book/data.ipynb:3: WARNING: undefined label: 'paper-table1'"
    output = "\n".join(["Running Jupyter-Book v1.0.4", f"\x1b[91m{warning}\x1b[39;49;00m", "Traceback (most recent call last):",
                        *[f'  File "/venv/lib/sphinx/module{i}.py", line {i}, in step{i}' for i in range(40)],
                        "FileNotFoundError: [Errno 2] No such file or directory: '_build/.doctrees/book/data.doctree'",
                        "", "The above exception was the direct cause of the following exception:", "",
                        *[f'  File "/venv/lib/jupyter_book/cli{i}.py", line {i}, in main{i}' for i in range(20)],
                        "RuntimeError: There was an error in building your book. Look above for the cause."])
    monkeypatch.setattr(builder.subprocess, "run",
                        lambda cmd, **kw: subprocess.CompletedProcess(cmd, 1, stdout=output, stderr=""))
    with pytest.raises(BookError) as e:
        builder._render(root, ["notebooks/data.md: chapter 'data' failed"], lambda s: None)
    lines = str(e.value).splitlines()
    assert lines[0] == "notebooks/data.md: chapter 'data' failed" and lines[1].startswith("jupyter-book build failed")
    assert lines[2] == "  " + warning  # without Sphinx's colour codes
    assert any("FileNotFoundError: [Errno 2] No such file or directory: '_build/.doctrees" in line for line in lines)
    assert "Look above for the cause" in lines[-1] and len(lines) <= 15


def test_unknown_parameter_is_refused(tmp_path):
    """-p with a name no selected chapter declares is refused before anything runs."""
    root = copy_repo(tmp_path)
    with pytest.raises(BookInputError, match="no selected chapter has such a parameter"):
        build("smoke", overrides={"no_such_parameter": "1"}, root=root, html=False)


def _killed_write(path: pathlib.Path) -> pathlib.Path:
    """The temporary file a writer killed between writing and renaming leaves (a real SIGKILL at the
    ``atomic.written`` interrupt point of :func:`cheems_lib.outputs.atomic_path`)."""
    code = (f"from cheems_lib.outputs import atomic_path\n"
            f"with atomic_path({str(path)!r}) as tmp:\n    tmp.write_text('half')\n")
    env = {**os.environ, "CHEEMS_TEST_INTERRUPT": "atomic.written=1:SIGKILL", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True)
    assert proc.returncode == -9, proc.stderr
    left = [p for p in path.parent.iterdir() if p.name.startswith(f".{path.name}.tmp-")]
    assert len(left) == 1 and not path.exists(), left
    return left[0]


def test_build_removes_what_killed_atomic_writes_left_in_the_book(tmp_path, monkeypatch):
    """A build removes the temporary files of :func:`cheems_lib.outputs.atomic_path` whose writer was killed, in
    ``book/`` and in every folder of ``book/_extra`` (the downloads and the claim files), and keeps a live
    writer's file and the outputs themselves."""
    root = copy_repo(tmp_path)
    extra = root / "book" / "_extra"
    for sub in ("tables", "figures", "claims"):
        (extra / sub).mkdir(parents=True)
    stale = [_killed_write(root / "book" / "data.ipynb"), _killed_write(extra / "tables" / "tab-x.csv"),
             _killed_write(extra / "figures" / "fig-x.svg"), _killed_write(extra / "claims" / "data.json")]
    live = extra / "claims" / f".conflicts.json.tmp-{os.getpid()}-0123abcd"  # this process writes it now
    live.write_text("being written")
    kept = extra / "claims" / "conflicts.json"
    kept.write_text("{}")
    monkeypatch.setattr(builder, "execute_chapter", lambda *a, **k: False)  # the chapter is up to date
    build("smoke", ["reproduce"], root=root, html=False, log=lambda s: None)
    assert [p for p in stale if p.exists()] == []
    assert live.exists() and kept.read_text() == "{}"


def test_a_bad_models_file_is_refused_before_anything_runs(tmp_path):
    """-p models_file with a file that is no models file exits 2 (BookInputError) with one line naming the file, the
    line, the entry and the fix; a good one is accepted."""
    root = copy_repo(tmp_path)
    bad = tmp_path / "models.yaml"
    bad.write_text("models:\n  - org/rm\n  - pth: runs/rm\n", encoding="utf-8")
    with pytest.raises(BookInputError) as e:
        builder._plans("smoke", ["evaluation"], {"models_file": str(bad)}, root, 0)
    assert str(e.value).startswith(f'-p models_file {bad}: line 3: models entry 2: unknown key "pth" (fix: use path, ')
    assert "\n" not in str(e.value)
    bad.write_text("models:\n  - org/rm\n", encoding="utf-8")
    plans = dict(builder._plans("smoke", ["evaluation"], {"models_file": str(bad)}, root, 0))
    assert plans["evaluation"]["models_file"] == str(bad)


def test_render_drops_downloads_the_book_no_longer_has(tmp_path, monkeypatch):
    """Sphinx copies book/_extra into the HTML but deletes nothing there: a render starts from the current
    downloads only, so a file renamed since the last build is not served beside its new name."""
    root = copy_repo(tmp_path)
    (root / "book/_extra/tables").mkdir(parents=True, exist_ok=True)
    (root / "book/_extra/tables/simulated-table1.csv").write_text("x\n1\n", encoding="utf-8")
    old = root / "_build/html/tables/paper-table1.csv"
    old.parent.mkdir(parents=True)
    old.write_text("stale\n", encoding="utf-8")
    (root / "_build/html/index.html").write_text("<html></html>", encoding="utf-8")
    monkeypatch.setattr(builder.subprocess, "run", lambda cmd, **kw: subprocess.CompletedProcess(cmd, 0, "", ""))
    builder._render(root, [], lambda s: None)
    assert not old.exists() and (root / "_build/html/index.html").exists()



def test_parallel_build_starts_the_costliest_chapters_first():
    """Two chapters at a time take the chapters by their measured cost, longest first: the longest runs on one
    worker while the others fill the second; a world replicate goes with its chapter's cost."""
    from cheems_lib.publishing.chapters import CHAPTERS

    plans = [(c.name, {}) for c in CHAPTERS if not c.after_all] + [("data", {"seed": 1}, 1)]
    order = [p[0] for p in builder.start_order(plans)]
    costs = [builder.chapter(n).cost for n in order]
    assert costs == sorted(costs, reverse=True) and order[0] == "downstream"
    assert order.index("data") < order.index("biases") and order.count("data") == 2
    assert sorted(order) == sorted([p[0] for p in plans])
    ties = [n for n in order if builder.chapter(n).cost == builder.chapter("biases").cost]
    assert ties == [c.name for c in CHAPTERS if c.name in ties]  # equal costs keep reading order


def test_a_parallel_build_runs_its_chapters_in_start_order(tmp_path, monkeypatch):
    """The pool is fed :func:`start_order`'s order (and the after-all page still runs last)."""
    ran, ordered = [], []
    monkeypatch.setattr(builder, "execute_chapter", lambda name, *a, **k: ran.append(name) or False)
    monkeypatch.setattr(builder, "resume_kernels", lambda: None)
    real = builder.start_order
    monkeypatch.setattr(builder, "start_order", lambda plans: ordered.extend(p[0] for p in real(plans)) or real(plans))
    plans = [("biases", {}), ("downstream", {}), ("claims", {}), ("data", {})]
    builder._run_chapters(plans, tmp_path, profile="smoke", force=False, log=lambda s: None, jobs=2)
    assert ordered == ["downstream", "data", "biases"] and sorted(ran[:3]) == sorted(ordered) and ran[3] == "claims"
