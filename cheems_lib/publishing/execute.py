"""Execute one chapter: jupytext source -> papermill-executed notebook ``book/<chapter>.ipynb``.

``notebooks/<chapter>.md`` (MyST, jupytext) is converted to a notebook and executed by papermill with
its parameters (:func:`execute_chapter`; :mod:`cheems_lib.publishing.build` runs the chapters of a
build). A chapter is executed again when a download it published was rewritten since by another run
(:func:`chapter_downloads`, recorded with its page), and otherwise only when its cache key changes
(:func:`cache_key`): the hash of
its source, its parameters, every source file of the library (its sub-packages included) and the
content of the data files its path parameters name (:func:`input_files`, each by
:func:`cheems_lib.fingerprint.file_hash`: a file edited in place with its size and mtime kept executes the chapter
again; a checkpoint over 64 MiB is hashed once, then recognised by its inode and stat). The key is stored in the
executed notebook's metadata ``cheems``, with the profile, parameters, wall time, start time, git commit,
package versions and the data files' SHA-256 (:func:`cheems_lib.publishing.publish.run_facts`), which the
page "How this book was built" (:mod:`cheems_lib.publishing.build_stats`) shows. Each chapter's header
shows the ``cheems book`` and papermill commands that rerun it with exactly its parameters
(:func:`cheems_lib.publishing.publish.rerun_commands`).

Nothing is lost (book/cli.md, "Nothing is lost"):

- papermill executes into a temporary folder; ``book/<chapter>.ipynb`` is replaced
  (:func:`cheems_lib.outputs.atomic_path`) only by a complete, successfully executed notebook, so an
  interrupted or failing run leaves the last good one in place.
- A failing chapter's executed notebook goes to ``book/<chapter>.failed.ipynb`` (excluded from the
  book; removed again once the chapter succeeds); :class:`ChapterFailed` says so in one line.
- The page of a failed chapter shows its last good run; a chapter that never succeeded gets a
  placeholder page with the error (:func:`placeholder`: a notebook without a cache key, so the next
  build executes the chapter).
- :func:`stop_kernels` (Ctrl-C during a parallel build) kills the running chapters' kernels; a chapter
  stopped so raises ``KeyboardInterrupt``, not :class:`ChapterFailed`.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

from ..fingerprint import file_hash
from ..models.score_output import checkpoint_files
from ..outputs import atomic_path, interrupt_point
from ..input_files import DataError
from ..world import simulation
from ..world_files import layout_files
from .chapters import CHAPTERS, BookError, parameters_of
from .claims_files import inputs_digest as claims_digest
from .model_list import read_checkpoints_file, read_models_file
from .publish import apply_conditions, footer, header, md_code, md_text, run_facts
from .provenance import downloads_digest
from .replicates import inputs_digest as replicates_digest

__all__ = ["ChapterFailed", "cache_key", "input_files", "data_files", "execute_chapter", "write_notebook",
           "placeholder", "stop_kernels", "resume_kernels", "owns", "chapter_downloads"]

_PACKAGE = Path(__file__).resolve().parents[1]
"""The library's folder: the cache key hashes every source file under it."""


class ChapterFailed(BookError):
    """One chapter's execution failed; the message is one line naming chapter, cell, error and
    where the failed notebook was written."""



def _library_fingerprint() -> str:
    """Hash of every source file of the library, its sub-packages (the wings) included: a recursive walk,
    so a change in ``cheems_lib/world/*.py`` executes the chapters again too."""
    h = hashlib.sha256()
    for p in sorted(_PACKAGE.rglob("*.py")):
        h.update(p.relative_to(_PACKAGE).as_posix().encode() + p.read_bytes())
    return h.hexdigest()


def _listed_checkpoints(models_file: Path, root: Path) -> list[Path]:
    """The checkpoint files of the local folders a models file lists (reward models and judges); none for a
    file that does not read (the chapter's parameter check refuses it before any kernel starts)."""
    try:
        listed = read_models_file(models_file)
    except DataError:
        return []
    return [f for p in [*listed.models.values(), *listed.judges.values()] for f in checkpoint_files(_local(p, root))]


def _mapped_checkpoints(path: Path, root: Path) -> list[Path]:
    """The checkpoint files of the folders a checkpoints file maps models to (a checkpoint retrained in place
    executes the chapter again); none for a file that does not read (refused before any kernel starts)."""
    try:
        mapped = read_checkpoints_file(path, root)
    except DataError:
        return []
    return [f for folders in mapped.values() for p in folders for f in checkpoint_files(_local(p, root))]


def _local(path: str, root: Path) -> Path:
    """Where a path a chapter's kernel opens lies (the kernel runs in ``root``)."""
    return Path(path).expanduser() if path.startswith("~") else root / path


def input_files(params: dict[str, Any], declared: dict[str, dict], root: Path) -> list[Path]:
    """The files the path parameters in ``params`` name: a ``file``'s file, a ``world folder``'s spec
    §6/§6b files (:func:`cheems_lib.world_files.layout_files`), a ``folder``'s files (not its
    subfolders); a ``models file`` and the weights and configs of the local checkpoints it lists
    (:func:`cheems_lib.models.score_output.checkpoint_files`), those of the folders a ``checkpoints file`` maps, and those
    of every local folder a list
    parameter names (``-p models '["runs/rm"]'``), so a checkpoint retrained in place executes the chapter
    again. Never walks a tree, so ``-p world_dir /`` costs a few lookups."""
    files: list[Path] = []
    for name, value in params.items():
        if isinstance(value, list):
            files += [f for v in value if isinstance(v, str) and v for f in checkpoint_files(_local(v, root))]
        kind = ((declared.get(name) or {}).get("check") or {}).get("path")
        if not kind or not isinstance(value, str) or not value:
            continue
        path = _local(value, root)
        if kind in ("file", "models file", "checkpoints file"):
            files += [path] if path.is_file() else []
            files += _listed_checkpoints(path, root) if kind == "models file" and path.is_file() else []
            files += _mapped_checkpoints(path, root) if kind == "checkpoints file" and path.is_file() else []
        elif kind == "world folder":
            files += layout_files(path)
        elif path.is_dir():
            files += sorted(f for f in path.iterdir() if f.is_file())
    return files


def _defaults(declared: dict[str, dict]) -> dict[str, Any]:
    """The declared defaults of a parameters cell (:func:`cheems_lib.publishing.chapters.parameters_of`) as values,
    but for ``folder`` parameters: those name what the build makes (the claims chapter's ``book/``), and keying a
    chapter on them would key it on its own output."""
    import ast

    out = {}
    for name, d in declared.items():
        if ((d.get("check") or {}).get("path")) == "folder":
            continue
        try:
            out[name] = ast.literal_eval(d["default"])
        except (ValueError, SyntaxError):  # a default that is an expression, not a literal: no path to read
            continue
    return out


def cache_key(source: Path, params: dict[str, Any], root: Path) -> str:
    """Hash of what a chapter's output depends on (the data: the content of :func:`input_files`, by
    :func:`cheems_lib.fingerprint.file_hash`; each file named relative to ``root``, so every clone of the
    checkout has the same key)."""
    h = hashlib.sha256()
    h.update(source.read_bytes())
    h.update(json.dumps(params, sort_keys=True, default=str).encode())
    h.update(_library_fingerprint().encode())
    h.update(os.environ.get("CHEEMS_FORCE_VERDICT", "").encode())  # forced verdicts (tests) change the prose
    declared = parameters_of(source)
    # a path parameter left at its default is read as well: its files belong in the key, or a regenerated
    # default file (data/real's) would keep serving the page computed from the old one
    for f in input_files(_defaults(declared) | params, declared, root):
        # named relative to the checkout, so a copied checkout (or a rerun from the page elsewhere) keeps its key
        name = f.resolve().relative_to(root.resolve()) if f.resolve().is_relative_to(root.resolve()) else f
        h.update(f"{name}:{file_hash(f)}".encode())
    return h.hexdigest()


def _cached_key(path: Path, field: str = "cache_key") -> str | None:
    """The cache key (or another ``field`` of its run record) of a good executed notebook at ``path``; None if
    missing, a placeholder or unreadable."""
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))["metadata"].get("cheems", {}).get(field)
    except (ValueError, KeyError, AttributeError, OSError):
        return None


def owns(name: str, label: str) -> bool:
    """Whether chapter ``name`` publishes the download ``label``: its own ids (``fig-<name>-*``, ``tab-<name>-*``,
    an underscore written as a hyphen) and the paper artefacts the registry gives it."""
    slug = name.replace("_", "-")
    return label.startswith((f"fig-{slug}-", f"tab-{slug}-")) or any(
        c.name == name and label in c.labels for c in CHAPTERS)


def chapter_downloads(root: Path, name: str) -> str:
    """The digest of chapter ``name``'s downloads under ``root`` (:func:`~cheems_lib.publishing.provenance.downloads_digest`)."""
    return downloads_digest(root, lambda label: owns(name, label))


def data_files(source: Path, params: dict[str, Any], root: Path) -> tuple[str | None, list[Path]]:
    """The data a chapter reads: its world folder's files, the files of its other path parameters and the paper's
    tables in data/paper. A parameter left at its default counts with its default (``world_dir: data/real``)."""
    declared = parameters_of(source)
    values = _defaults(declared) | params
    world = values.get("world_dir") or None
    if world is None and "size" in values:
        world = str(simulation.world_path(values["size"], values.get("seed", 0)))
    files = sorted(layout_files(root / world)) if world and (root / world).is_dir() else []
    others = input_files({k: v for k, v in values.items() if k != "world_dir"}, declared, root)
    files += [f for f in dict.fromkeys(others) if f not in files]
    files += sorted((root / "data" / "paper").glob("*.csv"))
    return world, files


PARAMETERS_PROMPT = "Show every parameter of this chapter, with its default and help (the values of this run are above)"
"""The toggle of a chapter's folded parameters cell (its source lists the defaults, not the run's values)."""


def _add_header_footer(nb, source: Path, params: dict[str, Any], root: Path, *, profile: str,
                       wall_time_s: float) -> dict[str, Any]:
    """Put the commands that rerun the chapter and the run's parameters under the chapter title and the
    reproducibility footer at the end; returns the footer's :func:`cheems_lib.publishing.publish.run_facts`."""
    import nbformat

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
        if "parameters" in tags and "hide-input" not in tags:  # its defaults, folded: not mistaken for this run's values
            tags.append("hide-input")
            cell.metadata["mystnb"] = {"code_prompt_show": PARAMETERS_PROMPT, "code_prompt_hide": "Hide the parameters"}
    nb.cells.append(nbformat.v4.new_markdown_cell(footer(root, files, wall_time_s, facts)))
    return facts


def write_notebook(nb, path: Path) -> None:
    """Write the notebook ``nb`` to ``path`` atomically (the old notebook or the new complete one, never half)."""
    import nbformat

    with atomic_path(path) as tmp:
        nbformat.write(nb, str(tmp))


def placeholder(name: str, text: str, *, error: str | None = None):
    """The page of a chapter with no good executed notebook: its title and ``text`` (Markdown) in
    an error box. It has no cache key, so the next build executes the chapter."""
    import nbformat

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
            write_notebook(nb, failed)
        except (ValueError, OSError):  # a half-written notebook of a dead kernel: keep its bytes
            with atomic_path(failed) as tmp:
                shutil.copyfile(run_nb, tmp)
    else:
        failed = None
    if _cached_key(out) is None:
        where = f"The failed notebook is {md_code(failed.relative_to(root))}; " if failed else ""
        text = (f"This chapter has not executed successfully yet, so this page is a placeholder. The last build "
                f"failed:\n\n{md_text(message)}\n\n{where}fix the error and run "
                f"{md_code(f'.venv/bin/cheems book --chapter {name}')} again.")
        write_notebook(placeholder(name, text, error=message), out)
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
    """Raised before a cell of a chapter whose build was interrupted (see :func:`stop_kernels`)."""


def _before_cell(**_) -> None:
    if _STOPPING.is_set():
        raise _Stopped


def resume_kernels() -> None:
    """Let chapters start again after :func:`stop_kernels` (a new parallel run in the same process)."""
    _STOPPING.clear()


def stop_kernels() -> None:
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
        except Exception:  # noqa: BLE001 - already killed (Ctrl-C, stop_kernels) or gone: nothing left to stop,
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

    source = root / "notebooks" / f"{name}.md"
    out = root / "book" / f"{name}.ipynb"
    key = cache_key(source, params, root)
    if any(c.name == name and c.after_all for c in CHAPTERS):  # it reads the others' claim files and their pages' runs
        read = claims_digest(root)
        if params.get("replicate_seeds"):  # and the world replicates' (cheems_lib.publishing.replicates)
            read += ":" + replicates_digest(root, params["replicate_seeds"])
        key = hashlib.sha256(f"{key}:{read}".encode()).hexdigest()
    if not force and _cached_key(out) == key:
        if _cached_key(out, "downloads") == chapter_downloads(root, name):
            log(f"[cheems book] {name}: up to date")
            return False
        log(f"[cheems book] {name}: its downloads in book/_extra were rewritten by another run")
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

        km = AsyncKernelManager(kernel_name="python3")  # ours, so an interrupt can stop it (stop_kernels)
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
            if _STOPPING.is_set():  # killed by stop_kernels: interrupted, not a failed chapter
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
                               "executed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start)),
                               "downloads": chapter_downloads(root, name)}  # what this run published
    done.metadata["cheems"] |= _add_header_footer(done, source, params, root, profile=profile, wall_time_s=wall)
    apply_conditions(done)  # drop the prose the world's files do not support (simulator prose on real files, ...)
    interrupt_point("book.executed")
    write_notebook(done, out)
    (root / "book" / f"{name}.failed.ipynb").unlink(missing_ok=True)  # an old failure, fixed now
    log(f"[cheems book] {name}: done in {time.time() - start:.1f} s")
    return True
