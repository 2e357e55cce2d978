"""The files of a Cheems world on disk (spec §6): the layout, writing it safely, reading it back.

A world is the official CheemsBench / CheemsPreference files under one folder (:data:`LAYOUT`,
:data:`GPT_LAYOUT`), plus ``truth.jsonl`` and ``summary.json`` for a simulated one. The book
reads real and simulated worlds alike (:func:`load_world`), so the layout does not depend on
how a world was made; the simulator (:mod:`cheems_lib.world.simulation`) builds on this module.

Reading any folder starts with :func:`detect_layout` (spec §6b): the simulated layout, the
official release (``cheems_bench/{open,human}.jsonl`` and one ``cheems_preference.jsonl``,
with or without a ``data/`` level, optional ``manifest.json``) or any subset of their files.
It returns a :class:`Layout` (kind, the logical files found and their paths, the manifest's
labels, whether the world is simulated); :func:`load_world` reads the records under their §6
keys, splitting a one-file preference set by its ``subset`` field or a ``human_ids`` file. Each
file may be in any form the release ships (flat pairs, records with ``rank``, records with raw
``annotations`` only): :func:`read_ranked` (and :func:`read_ranked_files`, the reader of
``cheems evaluate`` and ``train``) ranks a record without ``rank`` on read with Algorithm 1, and
what reading resolved or skipped is reported (:class:`cheems_lib.read_report.ReadReport`). Ranking
lives here, not in :mod:`cheems_lib.records`, which stays below the algorithm.
A chapter skips what is absent and says so with :func:`missing_sentence`.

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
from dataclasses import dataclass
from pathlib import Path

from .outputs import exchange as _exchange, folder_problem, interrupt_point, OutputLock, pid_alive
from .conflicts import resolve_records, unranked_responses
from .records import file_and_line, Record, read_files, read_records, write_records
from .input_files import DataError, read_json, read_text
from .read_report import ReadReport

__all__ = ["LAYOUT", "GPT_LAYOUT", "PaperFile", "PAPER_FILES", "LOGICAL", "Layout", "WORLD_PATHS", "write_files", "check_output", "write_world",
           "load_world", "load_layout", "detect_layout", "split_preference", "read_ids", "missing_sentence",
           "layout_files", "model_labels", "read_ranked", "read_ranked_files", "rank_on_read"]

LAYOUT = {"bench_open": "cheems_bench/open.jsonl", "bench_human": "cheems_bench/human.jsonl",
          "pref_human": "cheems_preference/human.jsonl", "pref_gpt": "cheems_preference/gpt.jsonl"}
GPT_LAYOUT = {"bench_open": "cheems_bench_gpt/open.jsonl", "bench_human": "cheems_bench_gpt/human.jsonl"}
# every records file a world folder may hold: the simulated layout (spec §6) and the official release (§6b)


@dataclass(frozen=True)
class PaperFile:
    """How the paper's tables name one file of :data:`LAYOUT` (a row of :data:`PAPER_FILES`)."""

    column: str
    """Its column in Table 1 (``data/paper/table1_statistics.csv``)."""
    short: str
    """Its short name, in claim ids (``tab1-comparisons-<short>``)."""
    name: str
    """Its name in prose."""
    subset: str | None = None
    """Its subset in Table 5 (``data/paper/table5_conflict_ratio.csv``); None: not in Table 5."""


PAPER_FILES = {
    "bench_open": PaperFile("cheemsbench_open_prompt", "open-prompt", "CheemsBench Open Prompt", "open_prompt"),
    "bench_human": PaperFile("cheemsbench_human_instruction", "human-instruction", "CheemsBench Human Instruction",
                             "human_instruction"),
    "pref_gpt": PaperFile("cheemspreference_gpt", "preference-gpt", "CheemsPreference GPT"),
    "pref_human": PaperFile("cheemspreference_human", "preference-human", "CheemsPreference human"),
}
"""The one table between the paper's Tables 1 and 5 and the files: :data:`LAYOUT` key (also the
simulator's subset name) -> :class:`PaperFile`, in Table 1's column order. A Table 5 subset's
human-annotated file is ``LAYOUT[key]``, its GPT-4o-annotated one ``GPT_LAYOUT[key]``."""


def write_files(world, out: Path) -> None:
    """Write the files of the spec §6 layout into the existing folder ``out`` (summary.json last).

    ``world`` is a :class:`cheems_lib.world.simulation.World` (its ``files``, ``truth`` and ``summary``; not
    imported here, as the simulator builds on this module). Not atomic: :func:`write_world` and
    :func:`cheems_lib.world.simulation.ensure_world` stage the folder and rename it into place.
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
    ``summary.json`` from the simulator, and no file that is not part of a world). A symbolic
    link to a folder (or a dangling one) is followed: the world is swapped in where it
    points and the link stays; a link loop, a device or a pipe is refused
    (:func:`cheems_lib.outputs.folder_problem`).
    """
    problem = folder_problem(out_dir)
    if problem:
        raise DataError(out_dir, None, problem, "pass a folder path; a link to a folder is fine")
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
    """Write the spec §6 layout of ``world`` (a :class:`cheems_lib.world.simulation.World`) as the folder ``out_dir``;
    returns the summary (also in summary.json).

    The files are written into a hidden sibling ``.<name>.tmp-<pid>-<token>`` and the folder is
    swapped into place when complete (one atomic rename; over an older world, an atomic
    exchange where Linux offers it, else rename-aside-then-rename, undone on failure and
    repaired by the next call after a kill). So ``out_dir`` is always the old complete world
    (or absent) or the new complete one, and a rerun leaves exactly what a run into a new folder
    would (nothing of the old world stays). ``out_dir`` must pass :func:`check_output`. Its lock
    (:class:`cheems_lib.outputs.OutputLock`, ``DIR.lock``) is held while it writes: a second writer
    gets :class:`~cheems_lib.outputs.LockedError`.
    """
    out = check_output(out_dir)
    above = next(a for a in out.parents if a.exists())
    if not above.is_dir():  # mkdir would say "File exists"
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(above))
    out.parent.mkdir(parents=True, exist_ok=True)
    with OutputLock(out, join=True):  # one writer (cheems simulate took it already: joined); a second is refused
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


def load_world(directory: str | Path, human_ids: str | Path | None = None,
               reports: dict[str, ReadReport] | None = None) -> dict[str, list[Record]]:
    """The records of every world file found under ``directory`` (any layout :func:`detect_layout`
    knows), keyed by their spec §6 path whatever the layout: ``cheems_bench/open.jsonl``, ...,
    ``cheems_preference/human.jsonl`` and ``cheems_preference/gpt.jsonl``. A release's one
    preference file is split into those two by its records' ``subset`` field or ``human_ids``
    (:func:`split_preference`); when nothing splits it, it stays whole under ``cheems_preference.jsonl``.
    Absent files are absent keys; :class:`DataError` when there is none.

    Each file is read in any form the release ships it in (:func:`read_ranked`): the preference file as flat pairs, as records with ``rank`` or with raw
    ``annotations`` only; the benchmark files with ``rank`` or ``annotations`` only. Every record
    comes back ranked: one without ``rank`` is ranked from its annotations with Algorithm 1 on
    read. ``reports`` (a dict) receives, per file where reading resolved records or skipped flat
    pairs for their label, its path relative to ``directory`` and the
    :class:`cheems_lib.read_report.ReadReport` saying so, for the pages to show.
    """
    return load_layout(detect_layout(directory, human_ids), reports)


def load_layout(layout: Layout, reports: dict[str, ReadReport] | None = None) -> dict[str, list[Record]]:
    """:func:`load_world` of an already detected :class:`Layout`."""
    found = {}
    for name, key in RECORD_FILES.items():
        if name not in layout.paths:
            continue
        report = ReadReport()
        records = read_ranked(layout.paths[name], report=report)
        rel = layout.paths[name].relative_to(layout.directory).as_posix()
        if records:
            found[key] = records
        else:  # an empty file is an absent one: each chapter skips what needs it, in one sentence
            report.notes.append(f"{rel} holds no record, so what needs it is skipped.")
        if report and reports is not None:
            reports[rel] = report
    whole = found.pop(RELEASE_FILES["preference"], None)
    if whole is not None:
        split = split_preference(whole, layout.paths["preference"], layout.human_ids)
        if split is None:
            found[RELEASE_FILES["preference"]] = whole
        else:
            rel = layout.paths["preference"].relative_to(layout.directory).as_posix()
            for key, part, name in ((LAYOUT["pref_human"], split[0], "human"), (LAYOUT["pref_gpt"], split[1], "GPT")):
                if part:
                    found.setdefault(key, part)
                    continue
                # an empty subset is an absent one (each chapter skips it in one sentence), said once here
                by = (f"the human_ids file {layout.human_ids.name} lists {'none' if name == 'human' else 'all'} of its "
                      f"{len(whole):,} prompts" if layout.human_ids is not None
                      else f'no record carries "subset": "{name.lower()}"')
                note = f"The {name} subset of {rel} is empty ({by}), so what needs it is skipped."
                if reports is not None:
                    reports.setdefault(rel, ReadReport()).notes.append(note)
    if not found:
        raise DataError(layout.directory, None, "holds no records file of a Cheems world (only "
                        + ", ".join(layout.found) + ")", f"run `cheems simulate -o {layout.directory}` "
                        "or copy the official files (cheems_bench/*.jsonl, cheems_preference.jsonl) into it")
    return found


# ---- reading ranked records, in every form the release ships ------------------------------------

def rank_on_read(records: list[Record], path: str | Path, report: ReadReport | None = None) -> None:
    """Rank every record of ``path`` that came without ``rank`` from its annotations with Algorithm 1, in place,
    and count them and their conflicts in ``report`` (spec §2: an annotation the ranking does not reproduce).

    A ranking the file gives is never replaced: only records without one are resolved, as ``cheems resolve``
    would resolve them (the same batched :func:`cheems_lib.conflicts.resolve_records`), so reading a file and
    reading its resolved copy give the same records. Every record must have annotations (the readers refuse one
    with neither, naming its line). The responses left unranked (in no annotation, or left out of a given
    ``rank``) are counted in ``report`` too: they take part in no comparison.
    """
    todo = [r for r in records if r.rank is None]
    if todo:
        stats = resolve_records(todo, overwrite=False)
        if report is not None:
            report.count_resolved(path, len(todo), stats)
    if report is not None:
        report.count_unranked(path, sum(unranked_responses(r) for r in records))


def read_ranked(path: str | Path, *, skipped: list | None = None, report: ReadReport | None = None) -> list[Record]:
    """The records of one file, every one ranked: :func:`cheems_lib.records.read_records` (any form: flat pairs,
    records with ``rank``, records with raw ``annotations`` only) and :func:`rank_on_read`; what reading
    resolved and skipped is counted in ``report``. Every chapter reads its world files with it."""
    records = read_records(path, skipped=skipped, need_rank=True, report=report)
    rank_on_read(records, path, report)
    return records


def read_ranked_files(paths, *, skipped: list | None = None, report: ReadReport | None = None) -> dict[Path, list[Record]]:
    """:func:`cheems_lib.records.read_files` (one command's files, checked together), every record ranked as
    :func:`read_ranked` ranks it: what ``cheems evaluate``, ``train`` and ``preference`` read with."""
    files = read_files(paths, skipped=skipped, need_rank=True, report=report)
    for path, records in files.items():
        rank_on_read(records, path, report)
    return files


# ---- detecting a folder's layout (spec §6 and §6b) -------------------------------------------

SIMULATED_FILES = {"open": LAYOUT["bench_open"], "human": LAYOUT["bench_human"],
                   "open_gpt": GPT_LAYOUT["bench_open"], "human_gpt": GPT_LAYOUT["bench_human"],
                   "preference_human": LAYOUT["pref_human"], "preference_gpt": LAYOUT["pref_gpt"],
                   "truth": "truth.jsonl", "summary": "summary.json"}
"""Logical file -> its path in the simulated layout (spec §6)."""
RELEASE_FILES = {"open": "cheems_bench/open.jsonl", "human": "cheems_bench/human.jsonl",
                 "preference": "cheems_preference.jsonl"}
"""Logical file -> its path in the official release layout (spec §6b), below ``DIR`` or ``DIR/data``."""
LOGICAL = ("open", "human", "open_gpt", "human_gpt", "preference_human", "preference_gpt", "preference",
           "truth", "summary", "manifest")
"""Every logical file a world folder may hold."""
RECORD_FILES = {"open": LAYOUT["bench_open"], "human": LAYOUT["bench_human"], "open_gpt": GPT_LAYOUT["bench_open"],
                "human_gpt": GPT_LAYOUT["bench_human"], "preference_human": LAYOUT["pref_human"],
                "preference_gpt": LAYOUT["pref_gpt"], "preference": RELEASE_FILES["preference"]}
"""Logical record file -> the key of its records in :func:`load_world` (the §6 path; whatever the layout)."""
UNKNOWN_LABELS = "unknown labels"
_SPLIT_KEYS = (LAYOUT["pref_human"], LAYOUT["pref_gpt"])
_MODEL_WORDS = re.compile(r"not human|\b(models?|judges?|llms?)\b|\b(gpt|chatgpt|claude|llama|qwen|gemini|deepseek|"
                          r"mistral|glm)", re.IGNORECASE)
_NOT_HUMAN = re.compile(r"\b(not|non|no)[- ]human", re.IGNORECASE)
_HUMAN_LABELS = re.compile(r"\b(humans?|people|experts?|crowd ?workers?)[- ](labels?|labell?ed|labell?ers?|scor\w*|"
                           r"annotat\w*|rat\w*|rank\w*|judg\w*|preferences?|evaluat\w*)|\bby (trained |expert )?"
                           r"(humans?|people|annotators|experts?|crowd ?workers?)\b|^\s*(humans?|people)\s*$",
                           re.IGNORECASE)


# the phrases that name who WROTE the answers ("answers of gpt-4.1 and Qwen", "19 models' answers"), not who labelled
_AUTHORS = re.compile(r"\b(answers|responses|outputs|completions) (of|from|by) [^,;:()]*|\b(\d+ )?models?'?s?'? "
                      r"(answers|responses|outputs|completions)\b", re.IGNORECASE)


def model_labels(labels: str) -> bool:
    """The one rule for whether a manifest's ``labels`` text describes labels made by a model, not by
    people. It errs toward "model": a page may call model labels "not human" wrongly without harm, never
    the reverse.

    - ``"unknown labels"`` is not model labels (the official release, without a manifest, is labelled by people);
    - "not human" (or "non-human") is model labels;
    - a model's name (``gpt-3.5-turbo``, ``Qwen``, ...), "model", "judge" or "LLM" is model labels, unless
      it only names who wrote the answers ("human scores of 19 models' answers", "answers of gpt-4.1,
      scored by people") and the text says that people labelled; "human preferences judged by GPT-4" or
      "gpt-4 annotations checked by humans" stay model labels;
    - any other text (no model named) is not model labels.

    Chapters then never call such labels human."""
    if labels == UNKNOWN_LABELS:
        return False
    if _NOT_HUMAN.search(labels):
        return True
    rest = _AUTHORS.sub(" ", labels)
    if _MODEL_WORDS.search(rest):
        return True
    if _MODEL_WORDS.search(labels):  # models named only as the answers' authors: human only if people labelled
        return not _HUMAN_LABELS.search(rest)
    return False


WORLD_PATHS = tuple(dict.fromkeys([p for n, p in SIMULATED_FILES.items() if n not in ("truth", "summary")]
                                   + [d + p for d in ("", "data/") for p in RELEASE_FILES.values()]))
"""Every records file of the §6 / §6b layouts, relative to the world folder (``data/`` level included)."""


def layout_files(directory: str | Path) -> list[Path]:
    """The files of the spec §6 / §6b layouts that exist in ``directory``: :data:`WORLD_PATHS`,
    ``truth.jsonl``, ``summary.json`` and ``manifest.json``. It looks up these names only, never
    walks the folder, so any folder (even ``/``) answers at once; no records file among them
    means ``directory`` is not a world."""
    directory = Path(directory)
    return [directory / p for p in (*WORLD_PATHS, "truth.jsonl", "summary.json", "manifest.json")
            if (directory / p).is_file()]


@dataclass(frozen=True)
class Layout:
    """What :func:`detect_layout` found in a folder.

    ``kind`` is ``"simulated"`` (the §6 layout: split preference files, GPT benchmark copies) or
    ``"release"`` (the official layout of §6b: one preference file, optionally under ``data/``);
    ``paths`` maps each logical file found (:data:`LOGICAL`) to its path; ``labels`` is the
    manifest's ``labels`` (or ``"unknown labels"``); ``simulated`` is true when the folder holds
    the output of ``cheems simulate`` (its ``summary.json`` names the simulator, or ``truth.jsonl``).
    """

    directory: Path
    kind: str
    paths: dict[str, Path]
    labels: str = UNKNOWN_LABELS
    manifest: dict | None = None
    simulated: bool = False
    human_ids: Path | None = None

    @property
    def found(self) -> tuple[str, ...]:
        """The logical files present, in :data:`LOGICAL` order."""
        return tuple(n for n in LOGICAL if n in self.paths)

    def has(self, *names: str) -> bool:
        """Whether every logical file in ``names`` is present."""
        return all(n in self.paths for n in names)

    def entry(self, key: str) -> dict:
        """The manifest's ``files`` entry of the records under ``key`` (a :func:`load_world` key; the split
        preference subsets are the release's ``cheems_preference.jsonl``), looked up with and without
        ``data/``; ``{}`` when the manifest says nothing about it."""
        files = (self.manifest or {}).get("files")
        rel = RELEASE_FILES["preference"] if self.kind == "release" and key in _SPLIT_KEYS else key
        for name in (rel, f"data/{rel}"):
            if isinstance(files, dict) and isinstance(files.get(name), dict):
                return files[name]
        return {}

    def comparable(self, key: str) -> bool:
        """Whether the paper's numbers may be compared with the records under ``key``: true unless the
        manifest's entry of the file, or else the manifest itself, says ``"comparable": false`` (the
        file may be the paper's own until something says it is other data)."""
        flag = self.entry(key).get("comparable", (self.manifest or {}).get("comparable", True))
        return flag is not False

    def content(self, key: str) -> str | None:
        """What the file under ``key`` holds, as the manifest says: its entry's ``content``, else the
        manifest's ``name``; None without either."""
        text = self.entry(key).get("content") or (self.manifest or {}).get("name")
        return str(text) if text else None

    def file_labels(self, key: str) -> str:
        """Who labelled the file under ``key``: its manifest entry's ``labels``, else the manifest's, else
        ``"unknown labels"``."""
        own = _labels({"labels": self.entry(key).get("labels")})
        return own if own != UNKNOWN_LABELS else self.labels


def _manifest(path: Path) -> dict:
    data = read_json(path, "fix or remove manifest.json")
    if not isinstance(data, dict):
        raise DataError(path, None, "is not a JSON object", "write {\"name\": ..., \"labels\": ..., \"files\": {...}}")
    return data


def _labels(manifest: dict | None) -> str:
    labels = (manifest or {}).get("labels")
    if isinstance(labels, list):
        labels = ", ".join(map(str, labels))
    return str(labels) if labels else UNKNOWN_LABELS


def detect_layout(directory: str | Path, human_ids: str | Path | None = None) -> Layout:
    """The layout of ``directory``: the simulated one (§6), the official release (§6b, with or
    without a ``data/`` level) or any subset of their files; :class:`DataError` when it holds
    none of them (the message lists what is expected) or names one file twice.

    ``human_ids`` (a file of prompt ids, one per line) is checked to exist and kept, to split a
    one-file preference set into its human and GPT subsets (:func:`split_preference`).
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise DataError(directory, None, "is not a folder", "pass the folder holding the world's files")
    paths: dict[str, Path] = {}
    for name, rel in [*SIMULATED_FILES.items(), *RELEASE_FILES.items(), ("manifest", "manifest.json")]:
        hits = [d / rel for d in (directory, directory / "data") if (d / rel).is_file()]
        if len(hits) > 1:
            raise DataError(directory, None, f"holds both {rel} and data/{rel}", "keep one of them")
        if hits and name not in paths:
            paths[name] = hits[0]
    manifest = _manifest(paths["manifest"]) if "manifest" in paths else None
    if not set(paths) - {"manifest"}:
        expected = sorted({*SIMULATED_FILES.values(), *RELEASE_FILES.values()})
        raise DataError(directory, None, "holds no file of a Cheems world: expected any of " + ", ".join(expected)
                        + " (the release files may also lie under data/)",
                        f"run `cheems simulate -o {directory}` or copy the official files into this layout")
    simulated = "truth" in paths or ("summary" in paths and _is_world(paths["summary"].parent))
    split = {"open_gpt", "human_gpt", "preference_human", "preference_gpt", "truth", "summary"}
    kind = "simulated" if simulated or (split & set(paths) and "preference" not in paths) else "release"
    if human_ids is not None and not Path(human_ids).is_file():
        raise DataError(human_ids, None, "does not exist", "pass a file of human-annotated prompt ids, one per line")
    return Layout(directory, kind, paths, _labels(manifest), manifest, simulated,
                  Path(human_ids) if human_ids is not None else None)


def read_ids(path: str | Path) -> set[str]:
    """The prompt ids of a ``human_ids`` file: one per line, blank lines and ``#`` comments skipped (decoded as
    every text input is, :func:`cheems_lib.input_files.read_text`)."""
    return {s for s in (line.strip() for line in read_text(path).split("\n")) if s and not s.startswith("#")}


def split_preference(records: list[Record], path: str | Path, human_ids: str | Path | None = None
                     ) -> tuple[list[Record], list[Record]] | None:
    """The human and GPT subsets of one preference file (``path``, for messages), or None when
    nothing says which is which.

    With ``human_ids`` (a file of prompt ids) a record is human when its id is listed; else by
    each record's ``"subset"`` field (``"human"`` or ``"gpt"``), which then every record must carry
    (in the flat pairwise form every line carries it, and the grouping keeps it:
    :func:`cheems_lib.records.from_pairwise`).
    """
    if human_ids is not None:
        ids = read_ids(human_ids)
        return [r for r in records if r.id in ids], [r for r in records if r.id not in ids]
    subsets = [r.extra.get("subset") for r in records]
    if not any(s is not None for s in subsets):
        return None
    for r, s in zip(records, subsets):
        if s not in ("human", "gpt"):
            line = file_and_line(r)[1]  # the record's first line (a flat-pairs record's first pair)
            raise DataError(path, line, f"record {r.id} has subset {json.dumps(s, ensure_ascii=False)}; the others "
                            "carry one, and a subset is \"human\" or \"gpt\"",
                            'give every record "subset": "human" or "gpt", or pass -p human_ids FILE')
    return ([r for r, s in zip(records, subsets) if s == "human"], [r for r, s in zip(records, subsets) if s == "gpt"])


def missing_sentence(what: str, *needs: str, quoted: bool = True) -> str:
    """One sentence saying a section was skipped and which file(s) it needs, e.g.
    ``missing_sentence("Table 5's GPT column", "cheems_bench_gpt/open.jsonl")`` (``quoted=False``:
    ``needs`` are Markdown already)."""
    names = [f"`{n}`" if quoted else n for n in needs]
    files = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return f"*Skipped: {what}; it needs {files}, which this folder does not hold.*"
