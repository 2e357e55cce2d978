"""Build the book: jupytext sources -> papermill-executed notebooks -> Jupyter Book HTML.

``notebooks/<chapter>.md`` (MyST, jupytext) is converted to a notebook, executed by
papermill with the profile's parameters (plus ``-p NAME VALUE`` overrides) into
``book/<chapter>.ipynb``, and ``jupyter-book build`` renders the result with execution
off and warnings as errors.

A chapter is executed again only when its cache key changes: the hash of its source,
its parameters, the library's source files and the size/mtime of data files its
parameters name. The key is stored in the executed notebook's metadata.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from .chapters import CHAPTERS, PROFILES, chapter

__all__ = ["BookError", "parameters_of", "coerce", "cache_key", "data_files", "execute_chapter", "default_jobs", "build",
           "find_root"]

# `name: type = default  # help`, one parameter per line (papermill reads the same form)
_PARAM = re.compile(r"^(?P<name>[A-Za-z_]\w*)\s*:\s*(?P<type>[^=]+?)\s*=\s*(?P<default>.+?)\s*(?:#\s*(?P<help>.*))?$")


class BookError(RuntimeError):
    """A chapter failed or the build is misconfigured; the message says which and where."""


def find_root(start: Path | None = None) -> Path:
    """The repository root: the nearest folder upwards holding ``_toc.yml``."""
    here = (start or Path.cwd()).resolve()
    for p in (here, *here.parents):
        if (p / "_toc.yml").exists() and (p / "notebooks").is_dir():
            return p
    raise BookError(f"{here}: no _toc.yml found here or above (fix: run from the repository root)")


def parameters_of(source: Path) -> dict[str, dict[str, str]]:
    """Parse a chapter's ``parameters`` cell into ``{name: {"type", "default", "help"}}``."""
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
                out[m["name"]] = {"type": m["type"], "default": m["default"], "help": m["help"] or ""}
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


def _library_fingerprint() -> str:
    h = hashlib.sha256()
    for p in sorted(Path(__file__).parent.glob("*.py")):
        h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()


def cache_key(source: Path, params: dict[str, Any], root: Path) -> str:
    """Hash of what a chapter's output depends on."""
    h = hashlib.sha256()
    h.update(source.read_bytes())
    h.update(json.dumps(params, sort_keys=True, default=str).encode())
    h.update(_library_fingerprint().encode())
    for v in params.values():
        if isinstance(v, str) and v and (root / v).exists():
            for f in sorted((root / v).rglob("*")) if (root / v).is_dir() else [root / v]:
                if f.is_file():
                    st = f.stat()
                    h.update(f"{f}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()


def _cached_key(path: Path) -> str | None:
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))["metadata"].get("cheems", {}).get("cache_key")
    except (ValueError, KeyError):
        return None


def data_files(source: Path, params: dict[str, Any], root: Path) -> tuple[str | None, list[Path]]:
    """The data a chapter reads: its world folder's files and the paper's tables in data/paper."""
    from . import simulation

    world = params.get("world_dir") or None
    if world is None and "size" in params:
        world = str(simulation.world_path(params["size"], params.get("seed", 0)))
    files = sorted(p for p in (root / world).rglob("*") if p.is_file()) if world and (root / world).is_dir() else []
    files += sorted((root / "data" / "paper").glob("*.csv"))
    return world, files


def _add_header_footer(nb, source: Path, params: dict[str, Any], root: Path, *, profile: str, wall_time_s: float) -> None:
    """Put the run's parameters under the chapter title and the reproducibility footer at the end."""
    import nbformat

    from .publish import footer, header

    world, files = data_files(source, params, root)
    head = header(profile, params, parameters_of(source), world)
    for cell in nb.cells:
        if cell.cell_type == "markdown" and re.search(r"^# ", cell.source, flags=re.M):
            # right under the title (which may follow a label line such as `(paper-alg1)=`)
            cell.source = re.sub(r"^(# .*)$", lambda m: f"{m.group(1)}\n\n{head}", cell.source, count=1, flags=re.M)
            break
    for cell in nb.cells:  # the header shows the values; papermill's injected cell would repeat them
        tags = cell.metadata.setdefault("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            tags.append("remove-cell")
    nb.cells.append(nbformat.v4.new_markdown_cell(footer(root, files, wall_time_s)))


def execute_chapter(name: str, params: dict[str, Any], root: Path, *, profile: str, force: bool = False,
                    log: Callable[[str], None] = print) -> bool:
    """Execute one chapter into ``book/<name>.ipynb``; returns False when the cache was fresh."""
    import jupytext
    import nbformat
    import papermill
    from papermill.exceptions import PapermillExecutionError

    source = root / "notebooks" / f"{name}.md"
    out = root / "book" / f"{name}.ipynb"
    key = cache_key(source, params, root)
    if not force and _cached_key(out) == key:
        log(f"[cheems book] {name}: up to date")
        return False
    log(f"[cheems book] {name}: executing ({profile} profile)")
    nb = jupytext.read(source)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        src_nb = Path(tmp) / f"{name}.ipynb"
        nbformat.write(nb, src_nb)
        try:
            papermill.execute_notebook(str(src_nb), str(out), parameters=params, cwd=str(root),
                                       kernel_name="python3", progress_bar=False, log_output=False)
        except PapermillExecutionError as e:
            failed = nbformat.read(out, as_version=4)
            # papermill prepends an error banner, so find the cell by its execution count
            cell = next((c for c in failed.cells if c.get("execution_count") == e.exec_count), None)
            first = cell.source.strip().splitlines()[:1] if cell is not None else []
            out.rename(out.with_suffix(".failed.ipynb"))
            raise BookError(f"chapter {name!r} failed in cell {e.exec_count} "
                            f"({first[0] if first else ''!r}): {e.ename}: {e.evalue.splitlines()[0] if e.evalue else ''} "
                            f"(see {out.with_suffix('.failed.ipynb')})") from None
    done = nbformat.read(out, as_version=4)
    wall = round(time.time() - start, 2)
    done.metadata["cheems"] = {"cache_key": key, "profile": profile, "parameters": params, "wall_time_s": wall}
    _add_header_footer(done, source, params, root, profile=profile, wall_time_s=wall)
    nbformat.write(done, out)
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


def _run_chapters(plans, root: Path, *, profile: str, force: bool, log, jobs: int) -> None:
    env = {"PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}  # kernel = this venv
    if jobs > 1:
        threads = str(max(1, (os.cpu_count() or 1) // jobs))
        env.update(OMP_NUM_THREADS=threads, MKL_NUM_THREADS=threads)
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # kernels inherit the environment
    try:
        if jobs <= 1:
            for name, params in plans:
                execute_chapter(name, params, root, profile=profile, force=force, log=log)
            return
        from concurrent.futures import ThreadPoolExecutor

        log(f"[cheems book] {len(plans)} chapters, {jobs} at a time")
        with ThreadPoolExecutor(jobs) as pool:
            futures = [pool.submit(execute_chapter, name, params, root, profile=profile, force=force, log=log)
                       for name, params in plans]
            errors = [f.exception() for f in futures if f.exception()]
        if errors:
            raise errors[0]
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def build(profile: str = "default", chapters: list[str] | None = None, overrides: dict[str, str] | None = None,
          *, root: Path | None = None, force: bool = False, html: bool = True, jobs: int = 1,
          log: Callable[[str], None] = print) -> Path:
    """Execute the chapters of ``profile`` and render the book; returns the HTML folder.

    ``jobs`` chapters run at once (0: :func:`default_jobs`); they share the model zoo, whose
    per-model locks make a chapter wait for a model another chapter is training.
    """
    if profile not in PROFILES:
        raise BookError(f"unknown profile {profile!r} (fix: use one of {', '.join(PROFILES)})")
    root = root or find_root()
    selected = [chapter(n) for n in chapters] if chapters else list(CHAPTERS)
    overrides = overrides or {}
    used: set[str] = set()
    plans = []
    for ch in selected:
        declared = parameters_of(root / "notebooks" / f"{ch.name}.md")
        params = ch.parameters(profile)
        unknown = set(params) - set(declared)
        if unknown:
            raise BookError(f"chapters.py: chapter {ch.name!r} sets undeclared parameters {sorted(unknown)}")
        for k, v in overrides.items():
            if k in declared:
                try:
                    params[k] = coerce(v, declared[k]["type"])
                except ValueError as e:
                    raise BookError(f"-p {k} {v}: not a {declared[k]['type']} ({e})") from None
                used.add(k)
        plans.append((ch.name, params))
    if set(overrides) - used:
        raise BookError(f"-p {sorted(set(overrides) - used)}: no selected chapter has such a parameter "
                        f"(fix: see the parameters cell at the top of each chapter)")
    (root / "book").mkdir(exist_ok=True)
    (root / "book" / "_extra").mkdir(exist_ok=True)  # downloads (cheems_lib.publish); html_extra_path
    _run_chapters(plans, root, profile=profile, force=force, log=log, jobs=jobs or default_jobs(profile))
    html_dir = root / "_build" / "html"
    if html:
        exe = Path(sys.executable).parent / "jupyter-book"
        cmd = [str(exe) if exe.exists() else shutil.which("jupyter-book") or "jupyter-book",
               "build", str(root), "--warningiserror", "--keep-going", "--quiet"]
        log("[cheems book] rendering: " + " ".join(cmd[1:]))
        proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
        if proc.returncode:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-30:])
            raise BookError(f"jupyter-book build failed:\n{tail}")
        log(f"[cheems book] HTML in {html_dir / 'index.html'}")
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


def setup(app):
    """Sphinx extension used by the book (``_config.yml``): de-duplicates page scripts."""
    app.connect("html-page-context", _dedupe_scripts, priority=100)  # early: emit_firstresult may stop later handlers
    return {"parallel_read_safe": True, "parallel_write_safe": True}
