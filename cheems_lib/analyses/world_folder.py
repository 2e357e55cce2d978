"""The world a chapter runs on: a world folder, opened (the data of every table and figure of the paper).

Every chapter starts with :func:`open_world`: the files of a folder in any layout
:func:`cheems_lib.world_files.detect_layout` knows (the simulated world, the release's files, one's own), or the
simulated world of a size and seed, simulated on first use. The :class:`World` it returns holds the records by
their §6 path and says how to describe and run on them: where the data came from and who labelled it
(:attr:`World.about`), which files are present (:meth:`World.has`, :meth:`World.missing`, :attr:`World.conditions`),
whether the paper's numbers are comparable with them (:meth:`World.comparable`), the CheemsBench subsets and
preference sets (:attr:`World.bench`, :attr:`World.human`, :meth:`World.gpt`), the simulator's hidden truth, and the
device the chapter's models run on; :func:`seeds_text` names the training seeds of the models whose numbers
it labels (:meth:`World.trained_source`). The training sets and model families built on a world are
:mod:`cheems_lib.analyses.experiments`'.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Sequence

from .. import world_files
from ..input_files import json_lines, read_json
from ..models.training_config import default_device
from ..publishing.publish import md_code, md_text, world_source
from ..read_report import ReadReport
from ..records import Record
from ..world import simulation
from ..world_files import (GPT_LAYOUT, LAYOUT, missing_sentence, model_labels, RELEASE_FILES, SIMULATED_FILES,
                           UNKNOWN_LABELS)


__all__ = ["open_world", "World", "SUBSET_NAMES", "TRAINING_FILES", "seeds_text"]


def open_world(world_dir: str = "", size: str = "default", seed: int = 0, human_ids: str = "") -> World:
    """The files in ``world_dir`` (any layout :func:`cheems_lib.world_files.detect_layout` knows; a
    one-file preference set split by its ``subset`` field or the ``human_ids`` file), or the
    simulated world (size, seed), simulated on first use. Every file may be in any form the release
    ships it in; records without ``rank`` are ranked on read with Algorithm 1, and the World's
    :attr:`World.reading` and :attr:`World.about` say how many and with how many conflicts."""
    directory = Path(world_dir) if world_dir else simulation.ensure_world(size, seed)
    layout = world_files.detect_layout(directory, human_ids or None)
    summary = read_json(layout.paths["summary"]) if "summary" in layout.paths else None
    summary = summary if layout.simulated and isinstance(summary, dict) else None
    device, dtype = _device()
    reading: dict[str, ReadReport] = {}  # filled by load_layout: what reading resolved or skipped, per file
    return World(directory=directory, files=world_files.load_layout(layout, reading),
                 length_scale=summary.get("length_scale", 1.0) if summary else 1.0, simulated=layout.simulated,
                 # a simulated folder passed as world_dir is described (and re-simulated) by its own summary
                 size=(summary or {}).get("size", size), seed=(summary or {}).get("seed", seed), summary=summary,
                 device=device, dtype=dtype, layout=layout, reading=reading)


@dataclass
class World:
    """A world folder, opened: its files (any layout of spec §6/§6b, see
    :func:`cheems_lib.world_files.detect_layout`) and how to describe and run on them.

    A file the folder does not hold is absent: :attr:`human`, :meth:`gpt` and :attr:`preference`
    are None, :attr:`bench` lacks the subset; :meth:`has` and :meth:`missing` let a chapter skip a
    section and say which file it needs, never a KeyError.
    """

    directory: Path
    files: dict[str, list[Record]]
    length_scale: float
    """Simulated lengths are this fraction of real length (1.0 for real files)."""
    simulated: bool
    """True for the output of ``cheems simulate`` (its truth.jsonl / summary.json), false for real files."""
    size: str
    seed: int
    summary: dict | None = None
    device: str | None = None
    """``cuda`` when a GPU is available, else None (the CPU)."""
    dtype: Any = None
    """bfloat16 on a GPU, else None (float32)."""
    layout: Any = None
    """The :class:`cheems_lib.world_files.Layout` detected (None only for a World built by hand)."""
    reading: dict = field(default_factory=dict)
    """What reading the files did besides parsing them, per file (its path in the folder): the records that came
    without ``rank`` and were ranked on read with Algorithm 1 and their conflicts, the flat pairs skipped for their
    label (:class:`cheems_lib.read_report.ReadReport`; :func:`cheems_lib.world_files.load_world`). :attr:`about` says it."""

    @property
    def label(self) -> str:
        """How prose names the data: "the simulated world (size default, seed 0)" or "the files in DIR"."""
        return f"the simulated world (size {self.size}, seed {self.seed})" if self.simulated else f"the files in {self.directory}"

    @property
    def labels(self) -> str:
        """Who labelled the data: the manifest's ``labels``, "the simulator's annotators", or "unknown labels"."""
        if self.simulated:
            return "the simulator's annotators"
        return self.layout.labels if self.layout is not None else "unknown labels"

    @property
    def source(self) -> str:
        """Provenance of every number computed from this world (see :func:`cheems_lib.publishing.publish.world_source`)."""
        return world_source(self.directory)

    def trained_source(self, seeds: Sequence[int]) -> str:
        """:attr:`source` plus the training seeds of the models whose numbers it labels."""
        return world_source(self.directory, note=f"training seeds {seeds_text(seeds)}")

    def has(self, *keys: str) -> bool:
        """Whether every file in ``keys`` (§6 paths, e.g. ``cheems_bench_gpt/open.jsonl``) was loaded."""
        return all(k in self.files for k in keys)

    def needs(self, *keys: str) -> str:
        """``"needs a, b"``: the files in ``keys`` that were not loaded, as an untestable claim's reason."""
        return "needs " + ", ".join(k for k in keys if k not in self.files)

    def missing(self, what: str, *keys: str) -> str | None:
        """None when the files in ``keys`` are present, else the one sentence saying that ``what`` was
        skipped and which of them it needs (:func:`cheems_lib.world_files.missing_sentence`); for the
        human/GPT preference subsets of an unsplit ``cheems_preference.jsonl``, how to split it."""
        absent = [k for k in keys if k not in self.files]
        if not absent:
            return None
        split = {LAYOUT["pref_human"], LAYOUT["pref_gpt"]}
        if RELEASE_FILES["preference"] not in self.files or not split & {*absent}:
            return missing_sentence(what, *absent)
        needs = [f"`{k}`" for k in absent if k not in split]
        needs.append('the human and GPT subsets of `cheems_preference.jsonl` (give its records a `"subset"` field, '
                     '`"human"` or `"gpt"`, or pass `-p human_ids FILE`, one prompt id per line)')
        return missing_sentence(what, *needs, quoted=False)

    def missing_subset(self, what: str) -> str | None:
        """With exactly one CheemsBench subset, the one sentence saying that ``what`` runs on it alone and
        which file the other needs; None with both (or with neither: :meth:`missing` says that)."""
        if len(self.bench) != 1:
            return None
        absent = next(k for k in SUBSET_NAMES if k not in self.bench)
        return missing_sentence(f"{what} on the {SUBSET_NAMES[absent]} subset (only the "
                                f"{SUBSET_NAMES[next(iter(self.bench))]} subset is used)", SIMULATED_FILES[absent])

    def comparable(self, key: str) -> bool:
        """Whether the paper's numbers may be compared with the records under ``key`` (a §6 path): always for a
        simulated world, else unless its manifest says ``"comparable": false``
        (:meth:`cheems_lib.world_files.Layout.comparable`, the one rule)."""
        return self.simulated or self.layout is None or self.layout.comparable(key)

    def other_data(self, key: str) -> str | None:
        """None when :meth:`comparable`, else what the file under ``key`` holds: the manifest's ``content``
        (else its ``name``), or "other data"."""
        if self.comparable(key):
            return None
        return self.layout.content(key) or "other data"

    def not_comparable(self, what: str, key: str, shown_as: str = "") -> str | None:
        """None when :meth:`comparable`, else one Markdown sentence: the file (``shown_as``: its name in a
        table), what it holds (:meth:`other_data`) and that the paper's ``what`` are not comparable with it."""
        holds = self.other_data(key)
        if holds is None:
            return None
        shown = f" (shown as {md_code(shown_as)})" if shown_as else ""
        return (f"*{md_code(key)}{shown} holds {md_text(holds)}: the paper's {what} are not comparable with it, "
                f"as its `manifest.json` says (`\"comparable\": false`).*")

    def file_labels(self, key: str) -> str:
        """Who labelled the file under ``key``: "the simulator's annotators" or the manifest's
        (:meth:`cheems_lib.world_files.Layout.file_labels`)."""
        if self.simulated or self.layout is None:
            return self.labels
        return self.layout.file_labels(key)

    @property
    def bench_labels(self) -> tuple[str, bool]:
        """Who labelled the CheemsBench files present, and whether those are model labels
        (:func:`cheems_lib.world_files.model_labels`); ``("human annotators", False)`` on a simulated world,
        whose benchmark files hold its simulated human annotators' labels."""
        if self.simulated:
            return "human annotators", False
        keys = [SIMULATED_FILES[k] for k in self.bench] or [LAYOUT["bench_open"]]
        names = list(dict.fromkeys(self.file_labels(k) for k in keys))
        names = [n for n in names if n != UNKNOWN_LABELS] or [UNKNOWN_LABELS]
        return " and ".join(names), any(model_labels(n) for n in names)

    @property
    def conditions(self) -> dict[str, bool]:
        """What this world's files allow, for :func:`cheems_lib.publishing.publish.show_conditions` (cells tagged
        ``if-<name>`` / ``unless-<name>``): ``simulated``, ``truth``, ``open``, ``human`` (benchmark
        subsets), ``bench`` (either), ``bench-both``, ``gpt-bench`` (both GPT-annotated copies),
        ``pref-human``, ``pref-gpt``, ``pref-split`` (both), ``preference`` (any preference file)."""
        has = self.has
        pref_h, pref_g = has(LAYOUT["pref_human"]), has(LAYOUT["pref_gpt"])
        return {"simulated": self.simulated, "truth": self.truth is not None,
                "open": has(LAYOUT["bench_open"]), "human": has(LAYOUT["bench_human"]),
                "bench": bool(self.bench), "bench-both": len(self.bench) == 2,
                "gpt-bench": has(*GPT_LAYOUT.values()),
                "pref-human": pref_h, "pref-gpt": pref_g, "pref-split": pref_h and pref_g,
                "preference": self.preference is not None}

    @property
    def about(self) -> str:
        """Markdown for the top of a page: where the data came from and who labelled it, then (when reading
        did anything besides parsing) how many records were ranked on read with Algorithm 1 and their conflicts,
        and how many flat pairs were skipped for their label (:attr:`reading`). Every chapter shows it."""
        if self.simulated:
            text = f"Data: {md_text(self.source)}, annotated by the simulator's annotators (no real labels)."
        else:
            name = (self.layout.manifest or {}).get("name") if self.layout is not None else None
            named = f"{md_text(name)}: " if name else ""
            text = (f"Data: {named}{md_code(self.source)}. Labels: {md_text(self.labels)}"
                    f"{'' if self.labels.endswith('.') else '.'}")
        read = self.read_report
        return " ".join([text, *read.sentences(name=md_code, code=md_code)]) if read else text

    @property
    def read_report(self) -> ReadReport:
        """:attr:`reading` added up over the files, with each file named by its path in the folder."""
        total = ReadReport()
        for rel, report in self.reading.items():
            total.add(ReadReport(resolved=report.resolved, conflicted=report.conflicted,
                                 annotations=report.annotations, unreproduced=report.unreproduced,
                                 other_labels=dict(report.other_labels), notes=list(report.notes),
                                 unranked_by_file={rel: report.unranked} if report.unranked else {},
                                 resolved_files=[rel] if report.resolved else [],
                                 label_files=[rel] if report.other_labels else []))
        return total

    @property
    def bench(self) -> dict[str, list[Record]]:
        """The human-annotated CheemsBench subsets present (``open``, ``human``, or fewer)."""
        return {name: self.files[SIMULATED_FILES[name]] for name in SUBSET_NAMES if SIMULATED_FILES[name] in self.files}

    @property
    def bench_paths(self) -> dict[str, Path]:
        """The file of each subset of :attr:`bench` (``{"open": path, ...}``), where the folder holds it as a file."""
        paths = self.layout.paths if self.layout is not None else {}
        return {name: paths[name] for name in self.bench if name in paths}

    @property
    def bench_records(self) -> list[Record]:
        return [r for s in self.bench.values() for r in s]

    @property
    def human(self) -> list[Record] | None:
        """The golden human-annotated preference subset; None when absent (or not split from the one file)."""
        return self.files.get(LAYOUT["pref_human"])

    @property
    def preference(self) -> list[Record] | None:
        """Every preference record the folder holds (human then GPT subset, or the one unsplit file); None if none."""
        if RELEASE_FILES["preference"] in self.files:
            return self.files[RELEASE_FILES["preference"]]
        parts = [self.files[k] for k in (LAYOUT["pref_human"], LAYOUT["pref_gpt"]) if k in self.files]
        return [r for p in parts for r in p] if parts else None

    @cached_property
    def truth(self) -> dict[tuple[str, str], float] | None:
        """The simulator's hidden utility ``{(prompt id, response id): utility}`` from ``truth.jsonl``;
        None for real files (they have no hidden truth)."""
        path = self.layout.paths.get("truth") if self.layout is not None else self.directory / "truth.jsonl"
        if path is None or not path.exists():
            return None
        return {(t["prompt_id"], t["response_id"]): t["utility"] for _, t in json_lines(path)}

    def gpt(self, prompts: int = 0) -> list[Record] | None:
        """The first ``prompts`` of the GPT-annotated preference subset (0: all); None when absent."""
        gpt = self.files.get(LAYOUT["pref_gpt"])
        if gpt is None:
            return None
        return gpt[:prompts] if prompts else list(gpt)


SUBSET_NAMES = {"open": "Open Prompt", "human": "Human Instruction"}
#: The files a training ablation reads (Tables 3 and 4): both preference subsets and both benchmark subsets.
TRAINING_FILES = tuple(LAYOUT[k] for k in ("pref_human", "pref_gpt", "bench_open", "bench_human"))


def _device():
    """(device, dtype) of the chapters' models: ``cuda`` and bfloat16 on a GPU
    (:func:`cheems_lib.models.training_config.default_device`), else (None, None), the CPU in float32."""
    if default_device() == "cpu":
        return None, None
    import torch

    return "cuda", torch.bfloat16


def seeds_text(seeds: Sequence[int]) -> str:
    """``0-2`` for a run of seeds, else ``0, 3, 5``."""
    seeds = list(seeds)
    if len(seeds) > 1 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(map(str, seeds))
