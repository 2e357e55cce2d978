"""The files of a Cheems world on disk (spec §6): the layout, writing it safely, reading it back.

A world is the official CheemsBench / CheemsPreference files under one folder (:data:`LAYOUT`,
:data:`GPT_LAYOUT`), plus ``truth.jsonl`` and ``summary.json`` for a simulated one. The book
reads real and simulated worlds alike (:func:`load_world`), so the layout does not depend on
how a world was made; the simulator (:mod:`cheems_lib.simulation`) builds on this module.

Writing is interrupt-safe (:func:`write_world`): the world is written into a hidden sibling
folder and swapped into place only when complete, so ``DIR`` always holds the old complete
world (or nothing) or the new complete one; a folder that is not a world is never replaced.
"""
from __future__ import annotations

import errno
import json
import os
import re
import secrets
import shutil
from pathlib import Path

from .outputs import exchange as _exchange, interrupt_point, pid_alive
from .records import DataError, Record, read_records, write_records

__all__ = ["LAYOUT", "GPT_LAYOUT", "write_files", "check_output", "write_world", "load_world"]

LAYOUT = {"bench_open": "cheems_bench/open.jsonl", "bench_human": "cheems_bench/human.jsonl",
          "pref_human": "cheems_preference/human.jsonl", "pref_gpt": "cheems_preference/gpt.jsonl"}
GPT_LAYOUT = {"bench_open": "cheems_bench_gpt/open.jsonl", "bench_human": "cheems_bench_gpt/human.jsonl"}


def write_files(world, out: Path) -> None:
    """Write the files of the spec §6 layout into the existing folder ``out`` (summary.json last).

    ``world`` is a :class:`cheems_lib.simulation.World` (its ``files``, ``truth`` and ``summary``; not
    imported here, as the simulator builds on this module). Not atomic: :func:`write_world` and
    :func:`cheems_lib.simulation.ensure_world` stage the folder and rename it into place.
    """
    import orjson

    for path, recs in world.files.items():
        write_records(recs, out / path)
        interrupt_point("world.file")
    with open(out / "truth.jsonl", "wb") as fh:
        for row in world.truth:
            fh.write(orjson.dumps(row) + b"\n")
    interrupt_point("world.file")
    (out / "summary.json").write_text(json.dumps(world.summary, ensure_ascii=False, indent=2, sort_keys=True) + "\n",
                                      encoding="utf-8")
    interrupt_point("world.file")


_WORLD_FILES = {*LAYOUT.values(), *GPT_LAYOUT.values(), "truth.jsonl", "summary.json"}
_WORLD_DIRS = {p.split("/")[0] for p in _WORLD_FILES if "/" in p}


def _is_world(folder: Path) -> bool:
    try:
        summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(summary, dict) and "simulator_version" in summary


def check_output(out_dir: str | Path) -> Path:
    """The folder :func:`write_world` may write (symbolic links followed); :class:`DataError` if not.

    Allowed: a path that does not exist, an empty folder, or a world written before (its
    ``summary.json`` from the simulator, and no file that is not part of a world).
    """
    out = Path(os.path.realpath(out_dir))
    if not out.exists():
        return out
    if not out.is_dir():
        raise DataError(out_dir, None, "exists and is not a folder", "pass a new folder name, or move the file away")
    entries = list(out.iterdir())
    if not entries:
        return out
    if not _is_world(out):
        raise DataError(out_dir, None, "is a folder that is not empty and holds no simulated world (no summary.json)",
                        "pass a new or empty folder; cheems simulate replaces only a world it wrote")
    for p in sorted(out.rglob("*")):
        rel = p.relative_to(out).as_posix()
        if rel not in _WORLD_FILES and not (rel in _WORLD_DIRS and p.is_dir()):
            raise DataError(out_dir, None, f"holds {rel}, which is not part of a simulated world and would be "
                            "deleted with the old world", "move it out of the folder, or pass another folder")
    return out


def _recover(out: Path) -> None:
    """Tidy after a killed :func:`write_world`: put back an old world that was set aside, and
    delete the hidden staging folders of dead processes (only folders of our own naming)."""
    pattern = re.compile(rf"^\.{re.escape(out.name)}\.(tmp|old)-(\d+)-[0-9a-f]{{8}}$")
    if not out.parent.is_dir():
        return
    for p in sorted(out.parent.iterdir()):
        m = pattern.match(p.name)
        if not m or not p.is_dir() or pid_alive(int(m.group(2))):
            continue
        if m.group(1) == "old" and not os.path.lexists(out) and _is_world(p):
            os.rename(p, out)  # killed between the two renames of the fallback swap
        else:
            shutil.rmtree(p, ignore_errors=True)


def write_world(world, out_dir: str | Path) -> dict:
    """Write the spec §6 layout of ``world`` (a :class:`cheems_lib.simulation.World`) as the folder ``out_dir``;
    returns the summary (also in summary.json).

    The files are written into a hidden sibling ``.<name>.tmp-<pid>-<token>`` and the folder is
    swapped into place when complete (one atomic rename; over an older world, an atomic
    exchange where Linux offers it, else rename-aside-then-rename, undone on failure and
    repaired by the next call after a kill). So ``out_dir`` is always the old complete world
    (or absent) or the new complete one. ``out_dir`` must pass :func:`check_output`.
    """
    out = check_output(out_dir)
    above = next(a for a in out.parents if a.exists())
    if not above.is_dir():  # mkdir would say "File exists"
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(above))
    out.parent.mkdir(parents=True, exist_ok=True)
    _recover(out)
    out = check_output(out)  # a recovered world is checked again
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    tmp.mkdir()
    try:
        write_files(world, tmp)
        interrupt_point("world.staged")
        if not os.path.lexists(out):
            os.rename(tmp, out)
            interrupt_point("world.swapped")
        elif _exchange(tmp, out):
            interrupt_point("world.swapped")
            shutil.rmtree(tmp)  # now the old world
        else:
            old = out.with_name(f".{out.name}.old-{os.getpid()}-{secrets.token_hex(4)}")
            os.rename(out, old)
            try:
                os.rename(tmp, out)
            except BaseException:
                os.rename(old, out)
                raise
            interrupt_point("world.swapped")
            shutil.rmtree(old)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return world.summary


def load_world(directory: str | Path) -> dict[str, list[Record]]:
    """Every file of the spec §6 layout that exists under ``directory`` (real or simulated)."""
    directory = Path(directory)
    paths = [*LAYOUT.values(), *GPT_LAYOUT.values()]
    found = {p: read_records(directory / p) for p in paths if (directory / p).exists()}
    if not found:
        raise FileNotFoundError(f"{directory}: none of {paths} found (fix: run `cheems simulate -o {directory}` "
                                "or copy the official files into this layout)")
    return found
