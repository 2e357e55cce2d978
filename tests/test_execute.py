"""Executing one chapter (cheems_lib.publishing.execute): its cache key, its failure page, its kernel's folder."""
from __future__ import annotations

import json
import os
import pathlib
import shutil

import pytest

from cheems_lib.publishing import execute
from cheems_lib.publishing.execute import ChapterFailed, cache_key, execute_chapter
from conftest import ROOT, copy_repo


def test_cache_key_hashes_only_the_files_a_chapter_reads(tmp_path, monkeypatch):
    """A world folder's key covers its spec §6 files, not other files in it; a file parameter its file; `/` as a
    world folder or file is a few lookups, never a walk."""

    root = copy_repo(tmp_path)
    source = root / "notebooks/conflicts.md"
    world = root / "world"
    (world / "cheems_bench").mkdir(parents=True)
    (world / "cheems_bench/open.jsonl").write_text("{}\n", encoding="utf-8")
    (world / "notes").mkdir()
    params = {"world_dir": "world", "data_path": "data/examples/annotations.jsonl"}
    key = cache_key(source, params, root)
    (world / "notes/todo.txt").write_text("unrelated", encoding="utf-8")
    (world / "readme.md").write_text("unrelated", encoding="utf-8")
    assert cache_key(source, params, root) == key
    (world / "cheems_bench/open.jsonl").write_text("{}\n{}\n", encoding="utf-8")
    assert cache_key(source, params, root) != key
    key = cache_key(source, params, root)
    (root / "data/examples/annotations.jsonl").write_text("\n", encoding="utf-8")
    assert cache_key(source, params, root) != key

    def not_at_root(owner, name):  # the library's own folder may be listed (its fingerprint), `/` never
        original = getattr(owner, name)

        def guarded(*args, **kwargs):
            assert not args or str(args[0]) != "/", f"cache_key listed / ({name})"
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, guarded)

    for owner, name in ((pathlib.Path, "rglob"), (pathlib.Path, "glob"), (pathlib.Path, "iterdir"), (os, "walk"),
                        (os, "scandir"), (os, "listdir")):
        not_at_root(owner, name)
    assert cache_key(source, {"world_dir": "/", "data_path": "/"}, root)


def test_cache_key_reads_the_files_of_parameters_left_at_their_default(tmp_path):
    """A path parameter the build does not pass (its default stands) is read all the same: regenerating the
    default file executes the chapter again instead of serving the page computed from the old file."""
    root = copy_repo(tmp_path)
    source = root / "notebooks/conflicts.md"
    default = execute._defaults(execute.parameters_of(source))["data_path"]
    key = cache_key(source, {}, root)
    path = root / default
    path.write_bytes(path.read_bytes() + b"\n")
    assert cache_key(source, {}, root) != key


def test_a_change_in_a_wing_executes_the_chapter_again(tmp_path, monkeypatch):
    """The cache key hashes every source file of the library, the sub-packages' (the wings) too: one byte changed in
    ``world/simulation.py``, ``models/zoo.py`` or ``analyses/claims.py`` of a copy of the package changes a chapter's
    key, while a file that is no Python source does not."""
    package = tmp_path / "cheems_lib"
    shutil.copytree(ROOT / "cheems_lib", package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(execute, "_PACKAGE", package)
    source, params = ROOT / "notebooks/conflicts.md", {"seed": 0}
    key = cache_key(source, params, ROOT)
    (package / "world" / "notes.txt").write_text("not a source file", encoding="utf-8")
    assert cache_key(source, params, ROOT) == key
    for wing in ("world/simulation.py", "models/zoo.py", "analyses/claims.py"):
        path = package / wing
        path.write_bytes(path.read_bytes() + b"\n")
        assert cache_key(source, params, ROOT) != key, wing
        key = cache_key(source, params, ROOT)


@pytest.mark.book
def test_failing_chapter_names_chapter_and_cell(tmp_path):
    """A chapter that raises names its cell and error; its failed run is kept aside and a placeholder page
    stands in for it (it never succeeded), so the book still renders."""
    root = copy_repo(tmp_path)
    (root / "notebooks/broken.md").write_text(
        (ROOT / "notebooks/conflicts.md").read_text(encoding="utf-8").split("---\n")[1].join(["---\n", "---\n"])
        + "# Broken\n\n"
        "```{code-cell} ipython3\n:tags: [parameters]\nseed: int = 0  # seed\n```\n\n"
        "```{code-cell} ipython3\nraise ValueError('boom')\n```\n", encoding="utf-8")
    with pytest.raises(ChapterFailed, match=r"chapter 'broken' failed in cell .*raise ValueError.*ValueError: boom "
                                            r"\(failed notebook: book/broken.failed.ipynb; the page is a placeholder\)"):
        execute_chapter("broken", {"seed": 1}, root, profile="smoke", log=lambda s: None)
    failed = json.loads((root / "book/broken.failed.ipynb").read_text(encoding="utf-8"))
    assert any("boom" in json.dumps(c.get("outputs", [])) for c in failed["cells"])
    page = json.loads((root / "book/broken.ipynb").read_text(encoding="utf-8"))
    assert page["metadata"]["cheems"]["placeholder"] and "boom" in "".join(page["cells"][0]["source"])
    assert sorted(p.name for p in (root / "book").iterdir() if p.name.startswith(".")) == []


@pytest.mark.book
def test_chapter_kernel_runs_in_its_root_whatever_the_process_cwd(tmp_path, monkeypatch):
    """A chapter's kernel starts in the chapter's root even when the process's working folder is changed under it
    (two chapters of different roots, e.g. a book and its world replicate, starting at once in two threads: papermill
    chdirs the whole process), so it saves into its own book, never another's."""
    import contextlib

    import papermill.execute

    (tmp_path / "book").mkdir()
    root = copy_repo(tmp_path / "book")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / "notebooks/where.md").write_text(
        (ROOT / "notebooks/conflicts.md").read_text(encoding="utf-8").split("---\n")[1].join(["---\n", "---\n"])
        + "# Where\n\n```{code-cell} ipython3\n:tags: [parameters]\nseed: int = 0  # seed\n```\n\n"
        "```{code-cell} ipython3\nimport os\nopen('saved-here.txt', 'w').write(os.getcwd())\n```\n", encoding="utf-8")

    @contextlib.contextmanager
    def another_thread_moved_us(path):  # what a chdir by a chapter starting at once in another thread does
        before = os.getcwd()
        os.chdir(elsewhere)
        try:
            yield
        finally:
            os.chdir(before)

    monkeypatch.setattr(papermill.execute, "chdir", another_thread_moved_us)
    execute_chapter("where", {"seed": 1}, root, profile="smoke", log=lambda s: None)
    assert (root / "saved-here.txt").is_file() and not (elsewhere / "saved-here.txt").exists()


@pytest.mark.book
def test_a_download_rewritten_by_another_run_executes_the_chapter_again(tmp_path):
    """A chapter's page records the digest of the downloads its run published; a papermill run in the checkout (or
    any edit) that rewrites one of them makes the next build execute the chapter again, so a page never stands
    beside downloads it did not write. Another chapter's downloads do not count."""
    root = copy_repo(tmp_path)
    (root / "notebooks/dl.md").write_text(
        (ROOT / "notebooks/conflicts.md").read_text(encoding="utf-8").split("---\n")[1].join(["---\n", "---\n"])
        + "# Downloads\n\n```{code-cell} ipython3\n:tags: [parameters]\nseed: int = 0  # seed\n```\n\n"
        "```{code-cell} ipython3\nimport pandas as pd\nfrom cheems_lib.publishing import publish\n"
        "publish.set_source('simulated world (size smoke, seed 0, simulator 1.0)')\n"
        "publish.table(pd.DataFrame({'x': [seed]}), 'tab-dl-x')\n```\n", encoding="utf-8")
    run = lambda: execute_chapter("dl", {"seed": 1}, root, profile="smoke", log=lambda s: None)  # noqa: E731
    assert run() is True and run() is False
    tables = root / "book/_extra/tables"
    (tables / "tab-other-y.csv").write_text("y\n2\n", encoding="utf-8")  # another chapter's download
    (tables / "tab-other-y.meta.json").write_text('{"label": "tab-other-y"}', encoding="utf-8")
    assert run() is False
    (tables / "tab-dl-x.csv").write_text("x,source\n7,simulated world (size smoke, seed 7)\n", encoding="utf-8")
    assert run() is True and run() is False
    assert "x,source\n1," in (tables / "tab-dl-x.csv").read_text(encoding="utf-8")


def test_a_models_file_is_one_of_the_files_a_chapter_reads(tmp_path):
    """A `models file` parameter's file is hashed for the cache key like a `file`'s: editing it executes the chapter again."""
    from cheems_lib.publishing.chapters import chapter

    models = tmp_path / "models.yaml"
    models.write_text("models:\n  - org/rm\n", encoding="utf-8")
    declared = chapter("evaluation").declared(ROOT)
    assert execute.input_files({"models_file": str(models)}, declared, ROOT) == [models]
    source = ROOT / "notebooks" / "evaluation.md"
    before = cache_key(source, {"models_file": str(models)}, ROOT)
    models.write_text("models:\n  - org/rm\n  - org/other\n", encoding="utf-8")
    assert cache_key(source, {"models_file": str(models)}, ROOT) != before


def test_local_checkpoints_a_chapter_names_are_files_it_reads(tmp_path):
    """A checkpoint folder listed in a models file, or passed in a list parameter, is read by the chapter: its
    weights retrained in place execute the chapter again; a hub name adds no file and the folder's other files
    (a score file written into it) change nothing."""
    from cheems_lib.publishing.chapters import chapter

    ckpt = tmp_path / "runs" / "rm"
    ckpt.mkdir(parents=True)
    (ckpt / "model.safetensors").write_bytes(b"weights v1")
    (ckpt / "config.json").write_text("{}")
    models = tmp_path / "models.yaml"
    models.write_text(f"models:\n  - org/rm\n  - path: {ckpt}\n    name: mine\n", encoding="utf-8")
    declared = chapter("evaluation").declared(ROOT)
    assert execute.input_files({"models_file": str(models)}, declared, ROOT) == [
        models, ckpt / "config.json", ckpt / "model.safetensors"]
    assert execute.input_files({"models": [str(ckpt), "org/rm"]}, declared, ROOT) == [
        ckpt / "config.json", ckpt / "model.safetensors"]
    source = ROOT / "notebooks" / "evaluation.md"
    for version, params in enumerate(({"models_file": str(models)}, {"models": [str(ckpt)]}), start=2):
        before = cache_key(source, params, ROOT)
        (ckpt / "scores.jsonl").write_text("{}")
        assert cache_key(source, params, ROOT) == before
        (ckpt / "model.safetensors").write_bytes(f"weights v{version}, retrained".encode())  # new content each time
        assert cache_key(source, params, ROOT) != before


def test_header_and_footer_name_the_data_of_parameters_left_at_their_default():
    """A chapter whose world folder and human-scores file are defaults (data/real) names them as its data, with the
    file among those the footer hashes: never "data: none"."""
    from cheems_lib.publishing.execute import data_files

    world, files = data_files(ROOT / "notebooks/human_labels.md", {"seed": 0}, ROOT)
    assert world == "data/real"
    assert ROOT / "data/real/writingpref/writingpref_zh.jsonl.xz" in files
    assert ROOT / "data/real/cheems_preference.jsonl" in files


def test_a_data_file_edited_in_place_with_its_size_and_mtime_kept_executes_the_chapter_again(tmp_path):
    """The reported stale Table 1: a chapter's data file rewritten in place, same size, its modification time set
    back with os.utime, changes the cache key (the key hashes content, not size and mtime)."""
    root = copy_repo(tmp_path)
    source = root / "notebooks/conflicts.md"
    params = {"data_path": "data/examples/annotations.jsonl"}
    path = root / params["data_path"]
    key = cache_key(source, params, root)
    st = path.stat()
    text = path.read_bytes()
    i = text.index(b'"')
    path.write_bytes(text[:i + 1] + bytes([text[i + 1] ^ 1]) + text[i + 2:])  # one letter changed in place
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    assert cache_key(source, params, root) != key


def test_a_big_checkpoint_keys_a_chapter_by_content_the_same_in_every_clone(tmp_path, monkeypatch):
    """A checkpoint over the full-hash size (lowered here) goes through the hash cache, whose entries name inodes
    and absolute paths: the chapter's key is still the same in two clones at different paths, and changes when the
    weights are rewritten in place with their size and mtime kept."""
    import numpy as np

    from cheems_lib import fingerprint

    monkeypatch.setenv(fingerprint.CACHE_ENV, str(tmp_path / "file_hashes.json"))
    monkeypatch.setattr(fingerprint, "FULL_HASH_BYTES", 1 << 10)
    source, params = ROOT / "notebooks/evaluation.md", {"models": ["runs/rm"]}
    weights = np.random.default_rng(0).bytes(1 << 16)
    keys = []
    for clone in ("a", "b/c"):
        ckpt = tmp_path / clone / "runs" / "rm"
        ckpt.mkdir(parents=True)
        (ckpt / "model.safetensors").write_bytes(weights)
        (ckpt / "config.json").write_text("{}")
        keys.append(cache_key(source, params, tmp_path / clone))
    assert keys[0] == keys[1]
    path = tmp_path / "a/runs/rm/model.safetensors"
    st = path.stat()
    path.write_bytes(weights[:100] + bytes([weights[100] ^ 1]) + weights[101:])
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert cache_key(source, params, tmp_path / "a") != keys[0]
