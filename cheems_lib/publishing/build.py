"""Build the book: plan the chapters, execute them (in parallel), render with Jupyter Book.

:func:`build` checks its arguments and resolves each selected chapter's parameters (the profile's,
:mod:`cheems_lib.publishing.chapters`, plus ``-p NAME VALUE`` overrides) before any kernel starts, executes
the chapters (:func:`cheems_lib.publishing.execute.execute_chapter`; ``jobs`` at a time, the costliest first)
and renders the result with ``jupyter-book build`` (execution off, warnings as errors). Before rendering,
the page "How this book was built" (``book/build_stats.md``, :mod:`cheems_lib.publishing.build_stats`) is
written from the executed notebooks and from what this build did with each chapter (executed, up to
date, failed).

The ``full`` profiles also execute every ``replicated`` chapter on the worlds of
:data:`~cheems_lib.publishing.chapters.REPLICATE_SEEDS`, each in its own folder ``_build/replicates/seed<s>/``
(:mod:`cheems_lib.publishing.replicates`), in the same pool as the book's chapters and before the Claims page, which
reads them; their log and failure lines name the world seed.

Nothing is lost (book/cli.md, "Nothing is lost"; one chapter's rules are in
:mod:`cheems_lib.publishing.execute`):

- A failing chapter does not stop the others; the book is still rendered, and :func:`build` then raises
  :class:`ChaptersFailed`, one line per failed chapter (``cheems book`` exits 1).
- Ctrl-C stops every chapter running in parallel (their kernels are killed; one still
  starting runs no cell) and exits 130; a chapter stopped so is not recorded as failed.
- When rendering, a chapter never executed in this checkout gets a placeholder page saying so
  (a notebook without a cache key, so the next build executes it).
- Temporary files of :func:`cheems_lib.outputs.atomic_path` that a killed build left in the book's folders
  are removed at the next build (:func:`cheems_lib.outputs.remove_stale_temporaries`).
- Bad arguments (unknown chapter or ``-p`` name, a ``-p`` value of the wrong type, out of its
  declared range or naming a missing or wrong kind of path, ``jobs < 0``, the ``paper`` profile with a
  chapter left to simulate its world: no ``-p world_dir``) raise
  :class:`~cheems_lib.publishing.chapters.BookInputError` before anything runs (``cheems book`` exits 2).
- One build at a time per checkout: a second ``cheems book`` while one runs exits 2 at once
  (``another cheems book is running (pid N)``), holding the lock ``_build/cheems-book.lock``
  (:func:`build_lock`, a :class:`cheems_lib.outputs.OutputLock`, released when the process dies).
- When jupyter-book fails, the message shows its first error lines (the cause) and its last lines.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from ..estimates import counted
from ..models.training_config import default_device
from ..outputs import LockedError, OutputLock, remove_stale_temporaries
from .build_stats import write_page
from .chapters import (CHAPTERS, PROFILES, BookError, BookInputError, chapter, check_value, coerce, find_root,
                       replicate_seeds)
from .execute import ChapterFailed, execute_chapter, placeholder, resume_kernels, stop_kernels, write_notebook
from .provenance import write_index
from .publish import md_code
from .replicates import prepare, replicate_root

__all__ = ["ChaptersFailed", "build", "build_lock", "default_jobs", "start_order"]


class ChaptersFailed(BookError):
    """Some chapters failed (the others ran and the book was rendered); one line per chapter."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        super().__init__("\n".join(lines))


def default_jobs(profile: str) -> int:
    """2 parallel chapters on a CPU machine with 2+ cores (smoke/default), else 1.

    On 2 cores two single-threaded kernels do about 1.5x the work of one two-threaded
    kernel (small models do not keep two threads busy); GPU runs stay sequential.
    """
    if profile == "paper" or (os.cpu_count() or 1) < 2 or default_device() != "cpu":
        return 1
    return 2


def start_order(plans: list) -> list:
    """The order a parallel build starts ``plans`` in: by :attr:`~cheems_lib.publishing.chapters.Chapter.cost`, the
    costliest first (ties keep reading order), so the longest chapter starts at once and the others fill the second
    worker beside it, the shortest last where they even out the workers' ends."""
    return sorted(plans, key=lambda plan: -chapter(plan[0]).cost)


def _run_chapters(plans, root: Path, *, profile: str, force: bool, log, jobs: int, replicas=(),
                  outcomes: dict[str, str] | None = None) -> list[str]:
    """Execute every planned chapter, also after one fails; returns one line per failed chapter. ``outcomes``
    gets each of the book's chapters' ``"executed"``, ``"cached"`` (up to date) or ``"failed"``.

    ``replicas`` are ``(name, params, seed)``: a chapter run again on world ``seed`` in its replicate folder
    (:func:`cheems_lib.publishing.replicates.prepare`); they share the pool with the book's chapters, before the pages that
    gather everything (``after_all``)."""
    outcomes = {} if outcomes is None else outcomes
    env = {"PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}  # kernel = this venv
    if jobs > 1:
        threads = str(max(1, (os.cpu_count() or 1) // jobs))
        env.update(OMP_NUM_THREADS=threads, MKL_NUM_THREADS=threads)
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # kernels inherit the environment

    def run(name, params, seed=None):
        where, say, tag = root, log, ""
        if seed is not None:  # a world replicate: its own folder, its log lines and failures say which world
            where, tag = replicate_root(root, seed), f"world replicate seed {seed} ({replicate_root('.', seed)}): "
            say = lambda s: log(s.replace(f"] {name}:", f"] {name} (world seed {seed}):", 1))  # noqa: E731
        else:
            outcomes[name] = "failed"
        try:
            ran = execute_chapter(name, params, where, profile=profile, force=force, log=say)
            if seed is None:
                outcomes[name] = "executed" if ran else "cached"
        except ChapterFailed as e:
            return tag + str(e)
        except (BookError, OSError, ValueError) as e:  # e.g. an unreadable source, a full disk
            say(f"[cheems book] {name}: FAILED: {e}")
            return f"{tag}notebooks/{name}.md: chapter {name!r} failed: {type(e).__name__}: {e}"
        return None

    last = [p for p in plans if chapter(p[0]).after_all]  # they read what the others saved
    plans = [p for p in plans if not chapter(p[0]).after_all] + list(replicas)
    try:
        if jobs <= 1:
            results = [run(*plan) for plan in plans]
        else:
            from concurrent.futures import ThreadPoolExecutor

            log(f"[cheems book] {counted(len(plans), 'chapter')}, {jobs} at a time")
            resume_kernels()
            pool = ThreadPoolExecutor(jobs)
            try:
                results = list(pool.map(lambda plan: run(*plan), start_order(plans)))
            except KeyboardInterrupt:  # start no further chapter, stop the running ones, keep their last good runs
                pool.shutdown(wait=False, cancel_futures=True)
                stop_kernels()
                raise
            finally:
                pool.shutdown(wait=True)
        results += [run(name, params) for name, params in last]
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return [r for r in results if r]


def _plans(profile: str, chapters: list[str] | None, overrides: dict[str, str], root: Path, jobs: int
           ) -> list[tuple[str, dict[str, Any]]]:
    """Check ``build``'s arguments and resolve each selected chapter's parameters: (name, params) in
    reading order. Raises :class:`BookInputError` before anything runs."""
    if profile not in PROFILES:
        raise BookInputError(f"--profile {profile}: no such profile (fix: use one of {', '.join(PROFILES)})")
    with contextlib.suppress(ValueError):  # a seed that is no number is refused with the other -p values below
        if int(overrides.get("seed", -1)) in replicate_seeds(profile):  # the book's world would be a replicate too
            raise BookInputError(f"-p seed {overrides['seed']}: the {profile} profile's world replicates use seeds "
                                 f"{', '.join(map(str, replicate_seeds(profile)))} "
                                 "(fix: pick another seed for the book's own world)")
    if not isinstance(jobs, int) or jobs < 0:
        raise BookInputError(f"--jobs {jobs}: not a number of chapters to run at once "
                             "(fix: pass 0 for automatic or a positive number)")
    names = [c.name for c in CHAPTERS]
    for n in chapters or []:
        if n not in names:
            raise BookInputError(f"--chapter {n}: no such chapter (fix: use one of {', '.join(names)})")
    # each chapter once, in reading order (two threads must never execute the same chapter)
    # pages that gather the other chapters' results (the Claims page) follow any selection
    selected = [c for c in CHAPTERS if c.name in set(chapters) or c.after_all] if chapters else list(CHAPTERS)
    used: set[str] = set()
    plans = []
    for ch in selected:
        declared = ch.declared(root)
        params = ch.parameters(profile, declared)
        unknown = set(params) - set(declared)
        if unknown:
            raise BookError(f"chapters.py: chapter {ch.name!r} sets undeclared parameters {sorted(unknown)}")
        for k, v in params.items():  # the registry's values: a wrong one is our bug (exit 1)
            problem = check_value(v, declared[k], root)
            if problem:
                raise BookError(f"chapters.py: chapter {ch.name!r}, profile {profile}: {k} = {json.dumps(v)}: "
                                f"{problem[0]} (fix: {problem[1]})")
        for k, v in overrides.items():
            if k in declared:
                try:
                    params[k] = coerce(v, declared[k]["type"])
                except ValueError as e:
                    raise BookInputError(f"-p {k} {v}: not a {declared[k]['type']} ({e}) "
                                         f"(fix: see the parameters cell of notebooks/{ch.name}.md)") from None
                problem = check_value(params[k], declared[k], root)
                if problem:  # before any kernel starts
                    raise BookInputError(f"-p {k} {v}: {problem[0]} (fix: {problem[1]}; "
                                         f"see the parameters cell of notebooks/{ch.name}.md)")
                used.add(k)
        plans.append((ch.name, params))
    if set(overrides) - used:
        raise BookInputError(f"-p {' '.join(sorted(set(overrides) - used))}: no selected chapter has such a parameter "
                             f"(fix: see the parameters cell at the top of each chapter)")
    if profile == "paper":
        _check_paper_world(plans, root)
    return plans


def _check_paper_world(plans, root: Path) -> None:
    """The paper profile runs on the official files: a chapter left to simulate its world (empty ``world_dir``)
    would show the paper's settings on made-up data, hours of GPU time later."""
    import ast

    simulated = [name for name, params in plans if "world_dir" in (declared := chapter(name).declared(root))
                 and params.get("world_dir", ast.literal_eval(declared["world_dir"]["default"])) == ""]
    if simulated:
        raise BookInputError(f"--profile paper: {', '.join(simulated)} would run on a simulated world, not the official "
                             "files (fix: pass -p world_dir DIR, the folder holding the official files; see the "
                             "chapter Reproduce with real models)")


# lines that say what went wrong: Sphinx's "WARNING:"/"ERROR:" lines and exception lines ("OSError: ...")
_ERROR_LINE = re.compile(r"\b(?:ERROR|CRITICAL|SEVERE|WARNING)\b|^[\w.]*(?:Error|Exception|Warning)\b[^:]*:")


def _render_failure(output: str, *, head: int = 5, tail: int = 5) -> str:
    """jupyter-book's failure output cut to what says why: its first ``head`` error lines (the cause;
    a chained traceback ends in a generic "There was an error in building your book") and its last
    ``tail`` lines."""
    output = re.sub(r"\x1b\[[0-9;]*m", "", output)  # Sphinx colours its warnings
    lines = [line.rstrip() for line in output.splitlines() if line.strip()]
    first = [line for line in lines[:-tail] if _ERROR_LINE.search(line)][:head]
    last = lines[-tail:]
    text = ["jupyter-book build failed" + (", first errors:" if first else ":"), *("  " + line for line in first)]
    if first and last:
        text.append(f"  ... last lines ({len(lines)} in all):")
    return "\n".join(text + ["  " + line for line in last])


def _render(root: Path, failures: list[str], log: Callable[[str], None], outcomes: dict[str, str] | None = None,
            started: float | None = None) -> Path:
    """Run jupyter-book over ``root`` (chapters never executed here become placeholder pages, so the
    table of contents stays whole; the "How this book was built" page is written from the notebooks,
    :func:`cheems_lib.publishing.build_stats.write_page`); returns the HTML folder."""
    missing = [c.name for c in CHAPTERS if not (root / "book" / f"{c.name}.ipynb").exists()]
    for name in missing:  # e.g. a --chapter build on a fresh clone
        write_notebook(placeholder(name, "This chapter has not been executed yet; run "
                                     f"{md_code(f'.venv/bin/cheems book --chapter {name}')} to fill this page."),
                        root / "book" / f"{name}.ipynb")
    if missing:
        log(f"[cheems book] {counted(len(missing), 'chapter')} never executed here, shown as placeholder pages: "
            + ", ".join(missing))
    write_page(root, outcomes, None if started is None else time.time() - started)
    # Sphinx copies book/_extra into the HTML on every build but never deletes there: a download renamed or
    # dropped since the last render would stay beside the new one and be served as if current
    extra = root / "book" / "_extra"
    for folder in sorted(extra.iterdir()) if extra.is_dir() else ():
        if folder.is_dir():
            shutil.rmtree(root / "_build" / "html" / folder.name, ignore_errors=True)
    exe = Path(sys.executable).parent / "jupyter-book"
    cmd = [str(exe) if exe.exists() else shutil.which("jupyter-book") or "jupyter-book",
           "build", str(root), "--warningiserror", "--keep-going", "--quiet"]
    log("[cheems book] rendering: " + " ".join(cmd[1:]))
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    if proc.returncode:
        raise BookError("\n".join(failures + [_render_failure(proc.stdout + "\n" + proc.stderr)]))
    html_dir = root / "_build" / "html"
    log(f"[cheems book] HTML in {html_dir / 'index.html'}")
    return html_dir


def build(profile: str = "default", chapters: list[str] | None = None, overrides: dict[str, str] | None = None,
          *, root: Path | None = None, force: bool = False, html: bool = True, jobs: int = 1,
          log: Callable[[str], None] = print) -> Path:
    """Execute the chapters of ``profile`` and render the book; returns the HTML folder.

    ``jobs`` chapters run at once (0: :func:`default_jobs`); they share the model zoo, whose
    per-model locks make a chapter wait for a model another chapter is training.
    Bad arguments (also values outside their declared ranges, missing or wrong kinds of paths) raise
    :class:`BookInputError` before anything runs, and so does a second build of the same checkout
    while one runs (:func:`build_lock`). A failing chapter does
    not stop the others or the rendering; :class:`ChaptersFailed` is raised at the end.
    Before rendering, the downloads' sidecars are merged into ``tables/index.csv`` and
    ``figures/index.csv`` (:func:`cheems_lib.publishing.provenance.write_index`).
    """
    root = root or find_root()
    plans = _plans(profile, chapters, overrides or {}, root, jobs)
    replicas = _replicas(plans, profile)
    with _one_build(root):
        return _build(plans, root, profile=profile, force=force, html=html, jobs=jobs, log=log, replicas=replicas)


def _replicas(plans, profile: str) -> list[tuple[str, dict[str, Any], int]]:
    """The world replicates of ``profile`` (the full profiles, :func:`cheems_lib.publishing.chapters.replicate_seeds`):
    ``(name, params, seed)`` for each planned chapter marked ``replicated`` and each replicate seed, its
    parameters (overrides included) with ``seed`` replaced."""
    return [(name, params | {"seed": seed}, seed) for seed in replicate_seeds(profile)
            for name, params in plans if chapter(name).replicated]


def build_lock(root: Path) -> OutputLock:
    """The lock a ``cheems book`` holds on the checkout ``root`` while it runs: ``_build/cheems-book.lock``."""
    return OutputLock(root / "_build" / "cheems-book")


@contextlib.contextmanager
def _one_build(root: Path):
    """Hold :func:`build_lock`; a second build of the same checkout is refused at once (its chapters
    and jupyter-book would write the same files), with the running build's pid."""
    try:
        lock = build_lock(root).__enter__()
    except LockedError as e:
        pid = re.search(r"\(pid ([^)]*)\)", str(e))
        raise BookInputError(f"{root}: another cheems book is running (pid {pid[1] if pid else '?'}) "
                             "(fix: wait for it to finish, then run this command again)") from None
    try:
        yield
    finally:
        lock.__exit__(None, None, None)


def _written_folders(root: Path) -> list[Path]:
    """The folders a build's atomic writes land in: ``book/`` (the executed notebooks, the build statistics page)
    and every folder of ``book/_extra`` (the downloads, their indexes, the claim files)."""
    extra = root / "book" / "_extra"
    return [root / "book", extra, *sorted(p for p in extra.rglob("*") if p.is_dir())]


def _build(plans, root: Path, *, profile: str, force: bool, html: bool, jobs: int, log, replicas=()) -> Path:
    """:func:`build` once its arguments are checked and the build lock is held."""
    extra = root / "book" / "_extra"  # downloads (cheems_lib.publishing.publish); html_extra_path
    extra.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(*_written_folders(root))
    if replicas:
        for seed in sorted({r[2] for r in replicas}):
            remove_stale_temporaries(*_written_folders(prepare(root, seed)))
        log(f"[cheems book] world replicates: {len(replicas)} chapter runs on world seeds "
            + ", ".join(map(str, sorted({r[2] for r in replicas}))))
    jobs = min(jobs or default_jobs(profile), len(plans) + len(replicas))  # one chapter runs in this thread: Ctrl-C stops it at once
    started, outcomes = time.time(), {}
    failures = _run_chapters(plans, root, profile=profile, force=force, log=log, jobs=jobs, replicas=replicas,
                             outcomes=outcomes)
    try:  # tables/index.csv and figures/index.csv from the chapters' sidecars
        write_index(root)
    except ValueError as e:  # a damaged sidecar: reported like a failed chapter, the book still renders
        log(f"[cheems book] index: FAILED: {e}")
        failures.append(str(e))
    html_dir = _render(root, failures, log, outcomes, started) if html else root / "_build" / "html"
    if failures:
        raise ChaptersFailed(failures)
    return html_dir
