"""Build the book: jupytext sources -> papermill-executed notebooks -> Jupyter Book HTML.

``notebooks/<chapter>.md`` (MyST, jupytext) is converted to a notebook, executed by
papermill with the profile's parameters (plus ``-p NAME VALUE`` overrides) into
``book/<chapter>.ipynb``, and ``jupyter-book build`` renders the result with execution
off and warnings as errors.

A chapter is executed again only when its cache key changes: the hash of its source,
its parameters, the library's source files and the size/mtime of the data files its path
parameters name (:func:`input_files`). The key is stored in the executed notebook's metadata
``cheems``, with the profile, parameters, wall time, start time, git commit, package versions and
the data files' SHA-256 (:func:`cheems_lib.publishing.publish.run_facts`); before rendering, the page "How this
book was built" (``book/build_stats.md``, :mod:`cheems_lib.publishing.build_stats`) is written from them and
from what this build did with each chapter (executed, up to date, failed). Each chapter's header
shows the ``cheems book`` and papermill commands that rerun it with exactly its parameters
(:func:`cheems_lib.publishing.publish.rerun_commands`).

The parameters cell (:func:`parameters_of`) is one line per parameter, valid Python that
papermill reads too::

    name: type = default  # CONSTRAINT: help

where the help may start with a declared constraint, followed by a colon:

- ``in [LO, HI]``: a number (``int``, ``float``, or each element of ``list[int]``/``list[float]``)
  from LO to HI inclusive; every numeric parameter declares one.
- ``one of a|b|c``: a string (or each element of a ``list[str]``) among these.
- ``file``, ``folder``, ``world folder`` (holding records files of the spec §6/§6b layout): a path,
  relative to the repository root, that must exist and be of that kind; ``... or missing``: the
  path (or a world folder's files) may be missing, the chapter reports what it found. An empty
  value is allowed where the default is empty (e.g. ``world_dir``: simulate). By convention
  ``*_path`` parameters are files and ``*_dir`` parameters folders. Only the files a chapter can
  read are hashed for its cache key (:func:`input_files`); no folder is walked.

``cheems book`` checks every value (types, list elements, ranges, choices, paths) before any
kernel starts; each chapter's first cell calls :func:`check_parameters`, so a plain papermill run
refuses the same values.

The ``full`` profiles also execute every ``replicated`` chapter on the worlds of
:data:`~cheems_lib.publishing.chapters.REPLICATE_SEEDS`, each in its own folder ``_build/replicates/seed<s>/``
(:mod:`cheems_lib.publishing.replicates`), in the same pool as the book's chapters and before the Claims page, which
reads them; their log and failure lines name the world seed.

Nothing is lost (see the README, "Nothing is lost"):

- papermill executes into a temporary folder; ``book/<chapter>.ipynb`` is replaced (temporary
  file in ``book/``, then an atomic rename) only by a complete, successfully executed
  notebook, so an interrupted or failing run leaves the last good one in place.
- A failing chapter's executed notebook goes to ``book/<chapter>.failed.ipynb`` (excluded
  from the book; removed again once the chapter succeeds). The other chapters still run,
  the book is still rendered, and :func:`build` then raises :class:`ChaptersFailed`, one
  line per failed chapter (``cheems book`` exits 1).
- Ctrl-C stops every chapter running in parallel (their kernels are killed; one still
  starting runs no cell) and exits 130; a chapter stopped so is not recorded as failed.
- The page of a failed chapter shows its last good run; a chapter that never succeeded
  gets a placeholder page with the error, and when rendering, a chapter never executed in
  this checkout gets one saying so (notebooks without a cache key, so the next build
  executes those chapters).
- Bad arguments (unknown chapter or ``-p`` name, a ``-p`` value of the wrong type, out of its
  declared range or naming a missing or wrong kind of path, ``jobs < 0``) raise
  :class:`BookInputError` before anything runs (``cheems book`` exits 2).
- One build at a time per checkout: a second ``cheems book`` while one runs exits 2 at once
  (``another cheems book is running (pid N)``), holding the lock ``_build/cheems-book.lock``
  (:class:`cheems_lib.outputs.OutputLock`, released when the process dies).
- When jupyter-book fails, the message shows its first error lines (the cause) and its last lines.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

from ..outputs import LockedError, OutputLock, interrupt_point, pid_alive
from .chapters import CHAPTERS, PROFILES, chapter, replicate_seeds

__all__ = ["BookError", "BookInputError", "ChapterFailed", "ChaptersFailed", "parameters_of", "coerce", "cache_key", "data_files", "execute_chapter", "default_jobs", "build",
           "find_root", "check_value", "check_parameters", "input_files", "build_lock", "category_table"]

# `name: type = default  # help`, one parameter per line (papermill reads the same form)
_PARAM = re.compile(r"^(?P<name>[A-Za-z_]\w*)\s*:\s*(?P<type>[^=]+?)\s*=\s*(?P<default>.+?)\s*(?:#\s*(?P<help>.*))?$")
# the constraint a help may start with (see the module docstring), then ": " and the text
_NUM = r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
_CHECK = re.compile(rf"^(?:in \[(?P<lo>{_NUM}), (?P<hi>{_NUM})\]|one of (?P<choices>[\w.-]+(?:\|[\w.-]+)+)"
                    rf"|(?P<path>file|folder|world folder)(?P<missing> or missing)?)(?::\s|$)")


class BookError(RuntimeError):
    """A chapter failed or the build is misconfigured; the message says which and where."""


class BookInputError(BookError):
    """A bad argument (chapter name, ``-p`` name or value, jobs); nothing was run."""


class ChapterFailed(BookError):
    """One chapter's execution failed; the message is one line naming chapter, cell, error and
    where the failed notebook was written."""


class ChaptersFailed(BookError):
    """Some chapters failed (the others ran and the book was rendered); one line per chapter."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        super().__init__("\n".join(lines))


def find_root(start: Path | None = None) -> Path:
    """The repository root: the nearest folder upwards holding ``_toc.yml``."""
    here = (start or Path.cwd()).resolve()
    for p in (here, *here.parents):
        if (p / "_toc.yml").exists() and (p / "notebooks").is_dir():
            return p
    raise BookInputError(f"{here}: no _toc.yml found here or above (fix: run from the repository root)")


def _check_of(help_text: str) -> dict | None:
    """The constraint a parameter's help starts with: ``{"text", "range": (lo, hi)}``, ``{"text", "choices"}``
    or ``{"text", "path": kind, "missing": bool}``; None when it declares none."""
    m = _CHECK.match(help_text)
    if not m:
        return None
    text = help_text[:m.end()].rstrip().rstrip(":")
    if m["lo"] is not None:
        return {"text": text, "range": (json.loads(m["lo"]), json.loads(m["hi"]))}
    if m["choices"]:
        return {"text": text, "choices": m["choices"].split("|")}
    return {"text": text, "path": m["path"], "missing": bool(m["missing"])}


def parameters_of(source: Path) -> dict[str, dict[str, Any]]:
    """Parse a chapter's ``parameters`` cell into ``{name: {"type", "default", "help", "check"}}``;
    ``check`` is the constraint the help starts with (module docstring), or None."""
    import jupytext

    nb = jupytext.read(source)
    for cell in nb.cells:
        if "parameters" in cell.metadata.get("tags", []):
            out = {}
            for n, line in enumerate(cell.source.splitlines(), 1):
                if not line.strip() or line.lstrip().startswith("#"):
                    continue
                m = _PARAM.match(line.strip())
                if not m:
                    raise BookError(f"{source}: parameters cell line {n} is not `name: type = default  # help`: {line!r}")
                out[m["name"]] = {"type": m["type"], "default": m["default"], "help": m["help"] or "",
                                  "check": _check_of(m["help"] or "")}
            return out
    raise BookError(f"{source}: no cell tagged 'parameters' (fix: tag the first code cell)")


def coerce(value: Any, type_name: str) -> Any:
    """Turn a command-line string into the parameter's declared type."""
    if not isinstance(value, str) or type_name == "str":
        return value
    if type_name == "int":
        return int(value)
    if type_name == "float":
        return float(value)
    if type_name == "bool":
        if value.lower() in ("1", "true", "yes", "on"):
            return True
        if value.lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"{value!r} is not a boolean")
    return json.loads(value)  # lists, dicts, optional values


_IS = {"int": lambda v: isinstance(v, int) and not isinstance(v, bool),
       "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
       "str": lambda v: isinstance(v, str), "bool": lambda v: isinstance(v, bool)}


def _elements(value: Any, type_name: str) -> list | None:
    """The values to check one by one (a list's elements for ``list[T]``); None if ``value`` is not of the type."""
    m = re.fullmatch(r"list\[(\w+)\]", type_name.replace(" ", ""))
    items = value if m else [value]
    inner = m[1] if m else type_name
    if m and not isinstance(value, list) or not all(_IS.get(inner, lambda v: True)(v) for v in items):
        return None
    return items


def _path_problem(value: str, check: dict, default: str, root: Path) -> tuple[str, str] | None:
    """Why the path ``value`` does not fit a ``file``/``folder``/``world folder`` parameter; looks up
    names only, never walks a folder."""
    from ..world_files import WORLD_PATHS, layout_files

    if value == "" and default in ('""', "''"):
        return None  # the documented "none" (e.g. world_dir: simulate the world)
    kind, path = check["path"], root / value
    if not path.exists():
        if check["missing"]:
            return None
        return f"no such {'file' if kind == 'file' else 'folder'}", f"check the path (relative paths start at {root})"
    if kind == "file" and not path.is_file():
        return "is a folder, not a file", "pass the file itself, not a folder"
    if kind != "file" and not path.is_dir():
        return "is a file, not a folder", "pass the folder that holds the files"
    if kind == "world folder" and not check["missing"] and not any(
            str(f.relative_to(path)) in WORLD_PATHS for f in layout_files(path)):
        return ("is not a world folder (none of the spec §6 records files, e.g. cheems_bench/open.jsonl, is in it)",
                "pass a folder written by `cheems simulate -o DIR` or holding the official files in that layout")
    return None


def check_value(value: Any, spec: dict[str, Any], root: Path) -> tuple[str, str] | None:
    """Why ``value`` is not allowed for the parameter ``spec`` (from :func:`parameters_of`), as (problem,
    fix); None if it is. Checks the type (a list's elements too) and the declared constraint."""
    items = _elements(value, spec["type"])
    if items is None:
        a = "an" if spec["type"][:1] in "aeiou" else "a"
        return f"not {a} {spec['type']}", f"pass {a} {spec['type']} like the default {spec['default']}"
    check = spec.get("check") or {}
    for i, v in enumerate(items):
        at = f"element {i} ({json.dumps(v)}) " if items is value else ""  # a list's element
        if "range" in check and not check["range"][0] <= v <= check["range"][1]:  # NaN fails too
            return f"{at}must be {check['text']}", f"pass a value {check['text']}"
        if "choices" in check and v not in check["choices"]:
            return f"{at}must be {check['text']}", f"pass one of {', '.join(check['choices'])}"
        if "path" in check and isinstance(v, str):
            problem = _path_problem(v, check, spec["default"], root)
            if problem:
                return problem
    return None


def check_parameters(name: str, namespace: dict[str, Any]) -> None:
    """Refuse, in a chapter's kernel, parameter values outside their declarations (the chapter's first
    cell calls ``check_parameters("<chapter>", globals())``), so a plain papermill run checks what
    ``cheems book`` checks. Paths are relative to the working directory, the repository root.
    Raises :class:`BookInputError` (one line)."""
    source = find_root() / "notebooks" / f"{name}.md"
    for param, spec in parameters_of(source).items():
        problem = check_value(namespace.get(param), spec, Path.cwd())
        if problem:
            raise BookInputError(f"parameter {param} = {json.dumps(namespace.get(param), default=str)}: {problem[0]} "
                                 f"(fix: {problem[1]}; see the parameters cell of notebooks/{name}.md)")


def _library_fingerprint() -> str:
    """Hash of every source file of the library, its sub-packages included (a recursive walk)."""
    package = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for p in sorted(package.rglob("*.py")):
        h.update(p.relative_to(package).as_posix().encode() + p.read_bytes())
    return h.hexdigest()


def input_files(params: dict[str, Any], declared: dict[str, dict], root: Path) -> list[Path]:
    """The files the path parameters in ``params`` name: a ``file``'s file, a ``world folder``'s spec
    §6/§6b files (:func:`cheems_lib.world_files.layout_files`), a ``folder``'s files (not its
    subfolders). Never walks a tree, so ``-p world_dir /`` costs a few lookups."""
    from ..world_files import layout_files

    files: list[Path] = []
    for name, value in params.items():
        kind = ((declared.get(name) or {}).get("check") or {}).get("path")
        if not kind or not isinstance(value, str) or not value:
            continue
        path = root / value
        if kind == "file":
            files += [path] if path.is_file() else []
        elif kind == "world folder":
            files += layout_files(path)
        elif path.is_dir():
            files += sorted(f for f in path.iterdir() if f.is_file())
    return files


def cache_key(source: Path, params: dict[str, Any], root: Path) -> str:
    """Hash of what a chapter's output depends on (the data: size and mtime of :func:`input_files`)."""
    h = hashlib.sha256()
    h.update(source.read_bytes())
    h.update(json.dumps(params, sort_keys=True, default=str).encode())
    h.update(_library_fingerprint().encode())
    h.update(os.environ.get("CHEEMS_FORCE_VERDICT", "").encode())  # forced verdicts (tests) change the prose
    for f in input_files(params, parameters_of(source), root):
        st = f.stat()
        h.update(f"{f}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()


def _cached_key(path: Path) -> str | None:
    """The cache key of a good executed notebook at ``path``; None if missing, a placeholder or unreadable."""
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))["metadata"].get("cheems", {}).get("cache_key")
    except (ValueError, KeyError, AttributeError, OSError):
        return None


def data_files(source: Path, params: dict[str, Any], root: Path) -> tuple[str | None, list[Path]]:
    """The data a chapter reads: its world folder's files and the paper's tables in data/paper."""
    from ..world import simulation
    from ..world_files import layout_files

    world = params.get("world_dir") or None
    if world is None and "size" in params:
        world = str(simulation.world_path(params["size"], params.get("seed", 0)))
    files = sorted(layout_files(root / world)) if world and (root / world).is_dir() else []
    files += sorted((root / "data" / "paper").glob("*.csv"))
    return world, files


def _add_header_footer(nb, source: Path, params: dict[str, Any], root: Path, *, profile: str,
                       wall_time_s: float) -> dict[str, Any]:
    """Put the commands that rerun the chapter and the run's parameters under the chapter title and the
    reproducibility footer at the end; returns the footer's :func:`cheems_lib.publishing.publish.run_facts`."""
    import nbformat

    from .publish import footer, header, run_facts

    world, files = data_files(source, params, root)
    facts = run_facts(root, files)
    head = header(profile, params, parameters_of(source), world, chapter=source.stem)
    for cell in nb.cells:
        if cell.cell_type == "markdown" and re.search(r"^# ", cell.source, flags=re.M):
            # right under the title (which may follow a label line such as `(paper-alg1)=`)
            cell.source = re.sub(r"^(# .*)$", lambda m: f"{m.group(1)}\n\n{head}", cell.source, count=1, flags=re.M)
            break
    for cell in nb.cells:  # the header shows the values; papermill's injected cell would repeat them
        tags = cell.metadata.setdefault("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            tags.append("remove-cell")
    nb.cells.append(nbformat.v4.new_markdown_cell(footer(root, files, wall_time_s, facts)))
    return facts


def _write_notebook(nb, path: Path) -> None:
    import nbformat

    from .publish import replace_atomically

    replace_atomically(path, lambda tmp: nbformat.write(nb, str(tmp)))


def _placeholder(name: str, text: str, *, error: str | None = None):
    """The page of a chapter with no good executed notebook: its title and ``text`` (Markdown) in
    an error box. It has no cache key, so the next build executes the chapter."""
    import nbformat

    from .publish import md_text

    title = next((c.title for c in CHAPTERS if c.name == name), name)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["cheems"] = {"placeholder": True, "error": error}
    nb.cells.append(nbformat.v4.new_markdown_cell(f"# {md_text(title)}\n\n:::{{error}}\n{text}\n:::\n"))
    return nb


def _fail(name: str, message: str, run_nb: Path, root: Path, log: Callable[[str], None]) -> ChapterFailed:
    """Keep the failed execution beside the chapter (never over it) and say where; a placeholder
    page stands in for a chapter that has no good executed notebook yet."""
    import nbformat

    out = root / "book" / f"{name}.ipynb"
    failed = root / "book" / f"{name}.failed.ipynb"
    if run_nb.exists():
        try:
            nb = nbformat.read(str(run_nb), as_version=4)
            nb.metadata["cheems"] = {"failure": message}  # the build-statistics page quotes it
            _write_notebook(nb, failed)
        except (ValueError, OSError):  # a half-written notebook of a dead kernel: keep its bytes
            from .publish import replace_atomically

            replace_atomically(failed, lambda tmp: shutil.copyfile(run_nb, tmp))
    else:
        failed = None
    if _cached_key(out) is None:
        from .publish import md_code, md_text

        where = f"The failed notebook is {md_code(failed.relative_to(root))}; " if failed else ""
        text = (f"This chapter has not executed successfully yet, so this page is a placeholder. The last build "
                f"failed:\n\n{md_text(message)}\n\n{where}fix the error and run "
                f"{md_code(f'cheems book --chapter {name}')} again.")
        _write_notebook(_placeholder(name, text, error=message), out)
        shown = "the page is a placeholder"
    else:
        shown = f"{out.relative_to(root)} keeps the last good run"
    where = f"failed notebook: {failed.relative_to(root)}; " if failed else ""
    line = f"notebooks/{name}.md: chapter {name!r} {message} ({where}{shown})"
    log(f"[cheems book] {name}: FAILED: {message}")
    return ChapterFailed(line)


_KERNELS: set = set()  # kernel managers of the chapters executing now
_KERNELS_LOCK = threading.Lock()
_STOPPING = threading.Event()  # set by an interrupt: a kernel that was still starting runs no cell


class _Stopped(Exception):
    """Raised before a cell of a chapter whose build was interrupted (see :func:`_stop_kernels`)."""


def _before_cell(**_) -> None:
    if _STOPPING.is_set():
        raise _Stopped


def _stop_kernels() -> None:
    """Kill the running chapters' kernels (they run in their own session, so Ctrl-C does not reach
    them): the chapter threads then end at once instead of finishing their chapters. A kernel
    still starting is not running yet: its chapter stops before its first cell."""
    _STOPPING.set()
    with _KERNELS_LOCK:
        kms = list(_KERNELS)
    for km in kms:
        proc = getattr(getattr(km, "provisioner", None), "process", None)
        if proc is not None and proc.poll() is None:
            proc.kill()


def _shutdown(km) -> None:
    """Stop a chapter's kernel once its notebook ran: papermill (nbclient) leaves a kernel manager it
    was given running, so a long-lived process (a test session, a notebook calling ``build``) would
    keep one kernel, and its memory, per chapter executed."""
    from jupyter_client.utils import run_sync

    if km.has_kernel:
        try:
            run_sync(km.shutdown_kernel)(now=True)
        except Exception:  # noqa: BLE001 - already killed (Ctrl-C, _stop_kernels) or gone: nothing left to stop,
            pass           # and cleanup must not replace the chapter's own outcome


def execute_chapter(name: str, params: dict[str, Any], root: Path, *, profile: str, force: bool = False,
                    log: Callable[[str], None] = print) -> bool:
    """Execute one chapter into ``book/<name>.ipynb``; returns False when the cache was fresh.

    Raises :class:`ChapterFailed` when a cell raises or the kernel dies; the last good
    ``book/<name>.ipynb`` is kept and the failed run is written to ``book/<name>.failed.ipynb``.
    """
    import jupytext
    import nbformat
    import papermill
    from papermill.exceptions import PapermillExecutionError

    from .publish import apply_conditions

    source = root / "notebooks" / f"{name}.md"
    out = root / "book" / f"{name}.ipynb"
    key = cache_key(source, params, root)
    if any(c.name == name and c.after_all for c in CHAPTERS):  # it reads the others' claim files and their pages' runs
        from ..analyses.claims import inputs_digest

        read = inputs_digest(root)
        if params.get("replicate_seeds"):  # and the world replicates' (cheems_lib.publishing.replicates)
            from .replicates import inputs_digest as replicates_digest

            read += ":" + replicates_digest(root, params["replicate_seeds"])
        key = hashlib.sha256(f"{key}:{read}".encode()).hexdigest()
    if not force and _cached_key(out) == key:
        log(f"[cheems book] {name}: up to date")
        return False
    log(f"[cheems book] {name}: executing ({profile} profile)")
    nb = jupytext.read(source)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    start = time.time()
    # papermill saves its output after every cell, truncating it: it writes into a temporary folder
    with tempfile.TemporaryDirectory(prefix=f"cheems-book-{name}-") as tmp:
        src_nb = Path(tmp) / f"{name}.ipynb"
        run_nb = Path(tmp) / f"{name}.executed.ipynb"
        nbformat.write(nb, src_nb)
        from jupyter_client.manager import AsyncKernelManager

        km = AsyncKernelManager(kernel_name="python3")  # ours, so an interrupt can stop it (_stop_kernels)
        with _KERNELS_LOCK:
            _KERNELS.add(km)
        try:
            # the kernel gets its working folder itself (nbclient's resources path), not from papermill's cwd: that
            # is a chdir of this whole process, which a chapter of another root (a world replicate) starting at once
            # in another thread undoes before this kernel starts, and this chapter would save into the other book
            papermill.execute_notebook(str(src_nb), str(run_nb), parameters=params, km=km,
                                       resources={"metadata": {"path": str(root)}},
                                       kernel_name="python3", progress_bar=False, log_output=False,
                                       on_cell_start=_before_cell,
                                       on_cell_executed=lambda **_: interrupt_point("book.cell"))
        except PapermillExecutionError as e:
            failed = nbformat.read(run_nb, as_version=4)
            # papermill prepends an error banner, so find the cell by its execution count
            cell = next((c for c in failed.cells if c.get("execution_count") == e.exec_count), None)
            first = cell.source.strip().splitlines()[:1] if cell is not None else []
            evalue = e.evalue.splitlines()[0] if e.evalue else ""
            raise _fail(name, f"failed in cell {e.exec_count} ({first[0] if first else ''!r}): {e.ename}: {evalue}",
                        run_nb, root, log) from None
        except _Stopped:
            raise KeyboardInterrupt from None
        except Exception as e:  # the kernel died, timed out or could not start
            if _STOPPING.is_set():  # killed by _stop_kernels: interrupted, not a failed chapter
                raise KeyboardInterrupt from None
            msg = str(e).strip().splitlines()
            raise _fail(name, f"failed: {type(e).__name__}: {msg[0] if msg else ''}", run_nb, root, log) from None
        finally:
            with _KERNELS_LOCK:
                _KERNELS.discard(km)
            _shutdown(km)
        done = nbformat.read(run_nb, as_version=4)
    wall = round(time.time() - start, 2)
    # what the "How this book was built" page (cheems_lib.publishing.build_stats) shows of this run
    done.metadata["cheems"] = {"cache_key": key, "profile": profile, "parameters": params, "wall_time_s": wall,
                               "executed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start))}
    done.metadata["cheems"] |= _add_header_footer(done, source, params, root, profile=profile, wall_time_s=wall)
    apply_conditions(done)  # drop the prose the world's files do not support (simulator prose on real files, ...)
    interrupt_point("book.executed")
    _write_notebook(done, out)
    (root / "book" / f"{name}.failed.ipynb").unlink(missing_ok=True)  # an old failure, fixed now
    log(f"[cheems book] {name}: done in {time.time() - start:.1f} s")
    return True


def default_jobs(profile: str) -> int:
    """2 parallel chapters on a CPU machine with 2+ cores (smoke/default), else 1.

    On 2 cores two single-threaded kernels do about 1.5x the work of one two-threaded
    kernel (small models do not keep two threads busy); GPU runs stay sequential.
    """
    if profile == "paper" or (os.cpu_count() or 1) < 2:
        return 1
    try:
        import torch

        if torch.cuda.is_available():
            return 1
    except ImportError:
        pass
    return 2


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
            from .replicates import replicate_root

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

            log(f"[cheems book] {len(plans)} chapters, {jobs} at a time")
            _STOPPING.clear()
            pool = ThreadPoolExecutor(jobs)
            costliest_first = sorted(plans, key=lambda plan: -chapter(plan[0]).cost)  # stable: ties keep reading order
            try:
                results = list(pool.map(lambda plan: run(*plan), costliest_first))
            except KeyboardInterrupt:  # start no further chapter, stop the running ones, keep their last good runs
                pool.shutdown(wait=False, cancel_futures=True)
                _stop_kernels()
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


def _remove_stale_temporaries(*folders: Path) -> None:
    """Temporary files (``.<name>.tmp-<pid>-*``) left by a killed build whose process is gone."""
    for folder in folders:
        for p in folder.glob(".*.tmp-*"):
            m = re.search(r"\.tmp-(\d+)-[0-9a-f]+$", p.name)
            if m and p.is_file() and not pid_alive(int(m.group(1))):
                p.unlink(missing_ok=True)


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
        declared = parameters_of(root / "notebooks" / f"{ch.name}.md")
        params = ch.parameters(profile)
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
    return plans


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
    from .build_stats import write_page
    from .publish import md_code

    missing = [c.name for c in CHAPTERS if not (root / "book" / f"{c.name}.ipynb").exists()]
    for name in missing:  # e.g. a --chapter build on a fresh clone
        _write_notebook(_placeholder(name, "This chapter has not been executed yet; run "
                                     f"{md_code(f'cheems book --chapter {name}')} to fill this page."),
                        root / "book" / f"{name}.ipynb")
    if missing:
        log(f"[cheems book] {len(missing)} chapters never executed here, shown as placeholder pages: "
            + ", ".join(missing))
    write_page(root, outcomes, None if started is None else time.time() - started)
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


def _build(plans, root: Path, *, profile: str, force: bool, html: bool, jobs: int, log, replicas=()) -> Path:
    """:func:`build` once its arguments are checked and the build lock is held."""
    extra = root / "book" / "_extra"  # downloads (cheems_lib.publishing.publish); html_extra_path
    extra.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(root / "book", extra / "figures", extra / "tables")
    if replicas:
        from .replicates import prepare

        for seed in sorted({r[2] for r in replicas}):
            where = prepare(root, seed)
            _remove_stale_temporaries(where / "book", where / "book" / "_extra" / "figures",
                                      where / "book" / "_extra" / "tables")
        log(f"[cheems book] world replicates: {len(replicas)} chapter runs on world seeds "
            + ", ".join(map(str, sorted({r[2] for r in replicas}))))
    jobs = min(jobs or default_jobs(profile), len(plans) + len(replicas))  # one chapter runs in this thread: Ctrl-C stops it at once
    started, outcomes = time.time(), {}
    failures = _run_chapters(plans, root, profile=profile, force=force, log=log, jobs=jobs, replicas=replicas,
                             outcomes=outcomes)
    from .provenance import write_index

    try:  # tables/index.csv and figures/index.csv from the chapters' sidecars
        write_index(root)
    except ValueError as e:  # a damaged sidecar: reported like a failed chapter, the book still renders
        log(f"[cheems book] index: FAILED: {e}")
        failures.append(str(e))
    html_dir = _render(root, failures, log, outcomes, started) if html else root / "_build" / "html"
    if failures:
        raise ChaptersFailed(failures)
    return html_dir


def _dedupe_scripts(app, pagename, templatename, context, doctree) -> None:
    """Drop repeated <script> entries: sphinx-thebe adds its inline config once per read phase,
    and a second ``const THEBE_JS_URL`` declaration is a JavaScript error on every page."""
    files = context.get("script_files")
    if not files:
        return
    seen, kept = set(), []
    for js in files:
        # an inline script is registered once with filename None and once with '' (same body)
        key = (getattr(js, "filename", str(js)) or "", repr(sorted(getattr(js, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            kept.append(js)
    files[:] = kept


def category_table() -> str:
    """The paper's top-level categories as a Markdown table, from :data:`cheems_lib.world.corpus.CATEGORIES` and
    :data:`~cheems_lib.world.corpus.DETERMINISTIC` (the ``{cheems-categories}`` directive of the book's pages)."""
    from ..world.corpus import CATEGORIES, DETERMINISTIC

    rows = [f"| {name} | {english} | {'yes' if name in DETERMINISTIC else 'no'} |" for name, english in CATEGORIES.items()]
    return "\n".join(["| `category[0]` | in English | deterministic answers |", "| --- | --- | --- |", *rows])


def _category_directive():
    """``{cheems-categories}``: :func:`category_table`, parsed where it stands, so a page lists the library's
    categories at every render instead of a hand-typed copy."""
    from docutils import nodes
    from docutils.statemachine import StringList
    from sphinx.util.docutils import SphinxDirective

    class CategoryTable(SphinxDirective):
        def run(self):
            box = nodes.container()
            self.state.nested_parse(StringList(category_table().splitlines(), source="cheems_lib.world.corpus"),
                                    self.content_offset, box)
            return box.children

    return CategoryTable


def setup(app):
    """Sphinx extension used by the book (``_config.yml``): de-duplicates page scripts and adds the
    ``{cheems-categories}`` directive (:func:`category_table`) and the citation directives of the cite page
    (:func:`cheems_lib.publishing.citation.setup_directives`)."""
    from .citation import setup_directives

    app.connect("html-page-context", _dedupe_scripts, priority=100)  # early: emit_firstresult may stop later handlers
    app.add_directive("cheems-categories", _category_directive())
    setup_directives(app)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
