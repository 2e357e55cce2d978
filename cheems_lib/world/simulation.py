"""A simulated Cheems world: the default data of the book (spec §6).

The official CheemsBench and CheemsPreference files cannot be downloaded here, so the
book runs on a world that follows the paper's data-generating process and writes the
official format:

1. **Prompts** of the eight top-level categories (:mod:`cheems_lib.world.corpus`), with a
   different category mix for Open Prompt, Human Instruction and the preference set.
2. **Responses** from ten simulated models of different strength (:data:`MODELS`). Their
   traits and hidden 0-5 quality (Tables 6-7) come from :mod:`cheems_lib.world.quality` and are
   rendered as visible Chinese text. Verbose models pad with polite filler, so length says
   little about quality.
3. **Annotators** (:mod:`cheems_lib.world.annotators`): human triple-wise rounds on the benchmark,
   a human complete ranking on the preference set's golden subset, GPT-4o all-pairs on the
   benchmark's GPT variants and the preference remainder. Ranks come from Algorithm 1.

Sizes: ``smoke`` (seconds), ``default`` (the book) and ``paper`` (Table 1's counts).
Lengths are multiplied by ``length_scale`` (1/3 below paper size, 1.0 at paper size) so
that CPU training stays fast; the book compares lengths after dividing by it.
The same seed gives byte-identical files.

This module holds the subsets and sizes (Table 1) and builds a world in memory
(:func:`build_world`), or only its human labels of some subsets (:func:`human_labels`: the same responses
re-annotated by other humans); :mod:`cheems_lib.world_files` writes and reads the files, and
:func:`ensure_world` caches a world under the hash of the code that made it.
"""
from __future__ import annotations

import os
import shutil
import sys
import threading
from dataclasses import asdict, dataclass, field, replace
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import numpy as np

from .. import categories, input_files, paper, read_report
from ..categories import CATEGORIES
from ..conflicts import resolve_records
from ..records import Record, Response, strict_pairs
from ..world_files import GPT_LAYOUT, LAYOUT, PAPER_FILES, write_files
from .annotators import (GPTAnnotator, HumanAnnotator, annotate_all_pairs, annotate_complete, annotate_rounds,
                         position_share)
from .corpus import Task, make_task
from .quality import components, sample_response, utility

__all__ = ["VERSION", "SIZES", "MODELS", "HUMAN_MIX", "SubsetSpec", "WorldConfig", "World", "sample_task",
           "response_count_pmf", "SUBSETS", "build_world", "human_labels", "length_stats", "world_path", "ensure_world",
           "fingerprint"]

VERSION = "1.0"

# (name, strength, verbosity): strength drives quality, verbosity only length.
MODELS = [("sim-01", -1.4, 1.0), ("sim-02", -1.0, 1.3), ("sim-03", -0.7, 0.8), ("sim-04", -0.4, 1.1),
          ("sim-05", -0.1, 0.9), ("sim-06", 0.2, 1.2), ("sim-07", 0.5, 0.8), ("sim-08", 0.8, 1.3),
          ("sim-09", 1.1, 0.9), ("sim-10", 1.4, 1.1)]  # verbosity uncorrelated with strength


@dataclass(frozen=True)
class SubsetSpec:
    """One file of the world."""

    key: str
    """Name in the layout: bench_open, bench_human, pref_human, pref_gpt."""
    mix: dict[str, float]
    """Weight of each top-level category."""
    responses_mean: float
    """Mean number of responses per prompt (Table 1)."""
    prompt_chars: float
    """Mean prompt length in characters at length_scale 1 (Table 1)."""
    response_chars: float
    """Mean response length at length_scale 1 (Table 1, mean of chosen and rejected)."""
    responses_sd: float = 0.0
    """Spread of the number of responses per prompt (0: every prompt has ``responses_mean``).
    Fitted to Table 1's comparisons per prompt, which a fixed count cannot reach
    (see :func:`response_count_pmf`)."""
    human_difficulty: float = 1.0
    """Multiplier of the human per-round noise: the paper finds Human Instruction prompts
    harder to annotate (appendix C); fitted to Table 5 with gpt_difficulty."""
    gpt_difficulty: float = 1.0
    """Multiplier of the GPT annotator's noise on this subset."""
    human_tie: float = 1.0
    """Multiplier of the human tie margin on this subset: how often annotators call two
    responses equal, fitted to Table 1's comparisons (excluding ties) per prompt."""

    @property
    def responses(self) -> dict[int, float]:
        """Distribution of the number of responses per prompt."""
        return response_count_pmf(self.responses_mean, self.responses_sd)


def response_count_pmf(mean: float, sd: float, low: int = 2, high: int | None = None) -> dict[int, float]:
    """Probabilities of ``low..high`` responses (default ``high``: one per simulated model) with
    the given mean and standard deviation: a beta-binomial, the spread family with both moments free.

    ``sd == 0`` with an integer mean gives that count alone. The spread must lie between the
    binomial's (the narrowest this family has) and the two-point distribution's on ``low``/``high``.

    >>> response_count_pmf(5, 0)
    {5: 1.0}
    >>> round(sum(k * p for k, p in response_count_pmf(5.07, 2.5).items()), 6)
    5.07
    """
    from math import exp, lgamma

    high = len(MODELS) if high is None else high
    if sd == 0 and float(mean).is_integer():
        return {int(mean): 1.0}
    n, p = high - low, (mean - low) / (high - low)
    if not 0 < p < 1:
        raise ValueError(f"mean {mean} must lie strictly between {low} and {high} responses")
    binomial, var = n * p * (1 - p), sd * sd
    if not binomial < var < n * binomial:
        raise ValueError(f"sd {sd} must lie between {binomial ** .5:.3f} (binomial) and {(n * binomial) ** .5:.3f} "
                         f"(all at {low} or {high}) for mean {mean}")
    kappa = (n * binomial - var) / (var - binomial)  # alpha + beta of the beta-binomial
    a, b = p * kappa, (1 - p) * kappa

    def log_beta(x, y):
        return lgamma(x) + lgamma(y) - lgamma(x + y)

    pmf = {low + k: exp(lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1) + log_beta(k + a, n - k + b) - log_beta(a, b))
           for k in range(n + 1)}
    total = sum(pmf.values())
    return {k: v / total for k, v in pmf.items()}


_OPEN_MIX = {"理解": .14, "知识": .18, "创意写作": .09, "推理": .13, "数学": .15, "代码": .12, "安全": .10, "复杂指令": .09}
HUMAN_MIX = {"理解": .17, "知识": .12, "创意写作": .19, "推理": .08, "数学": .07, "代码": .08, "安全": .07, "复杂指令": .22}
"""Category shares of Human Instruction prompts (assumed): also the prompts of the best-of-N win-rate task."""
_PREF_MIX = {"理解": .15, "知识": .15, "创意写作": .15, "推理": .10, "数学": .10, "代码": .10, "安全": .08, "复杂指令": .17}

_TABLE1 = paper.rows("table1_statistics")


def _table1(statistic: str, key: str) -> str:
    """One cell of Table 1 (data/paper/table1_statistics.csv) for the file ``key``, as the CSV's string."""
    return _TABLE1[statistic][PAPER_FILES[key].column]


def _response_chars(key: str) -> float:
    """Table 1's mean response length of ``key``: the mean of its chosen and rejected lengths, rounded half
    up to 0.1 character (the precision the simulator was first calibrated with; keeps worlds byte-identical)."""
    mean = (Decimal(_table1("avg_chars_chosen", key)) + Decimal(_table1("avg_chars_rejected", key))) / 2
    return float(mean.quantize(Decimal("0.1"), ROUND_HALF_UP))


def _spec(key: str, mix: dict[str, float], **fitted) -> SubsetSpec:
    """The spec of ``key``: Table 1's responses per prompt and lengths, and the ``fitted`` parameters."""
    return SubsetSpec(key, mix, float(_table1("responses_per_prompt", key)), float(_table1("avg_chars_prompt", key)),
                      _response_chars(key), **fitted)


SUBSETS = {
    "bench_open": _spec("bench_open", _OPEN_MIX, human_tie=1.18),
    "bench_human": _spec("bench_human", HUMAN_MIX, human_tie=1.07, gpt_difficulty=1.2),
    "pref_human": _spec("pref_human", _PREF_MIX, responses_sd=3.55),
    "pref_gpt": _spec("pref_gpt", _PREF_MIX, responses_sd=3.05),
}

_PAPER_COUNTS = {key: int(_table1("prompts", key)) for key in LAYOUT}  # SIZES["paper"] in the layout's order
# prompts per subset and the length factor, per size: paper = Table 1's counts; default = the benchmark at
# Table 1's counts and a quarter of each preference file; smoke = a few dozen prompts per file.
SIZES: dict[str, dict] = {
    "smoke": {"bench_open": 40, "bench_human": 47, "pref_human": 30, "pref_gpt": 256, "length_scale": 1 / 3},
    "default": {"bench_open": _PAPER_COUNTS["bench_open"], "bench_human": _PAPER_COUNTS["bench_human"],
                "pref_human": _PAPER_COUNTS["pref_human"] // 4, "pref_gpt": _PAPER_COUNTS["pref_gpt"] // 4,
                "length_scale": 1 / 3},
    "paper": {**_PAPER_COUNTS, "length_scale": 1.0},
}


@dataclass(frozen=True)
class WorldConfig:
    """Everything that decides a world; two equal configs give byte-identical files."""

    size: str = "default"
    """smoke, default or paper (see SIZES)."""
    seed: int = 0
    """Seed of every random draw."""
    human: HumanAnnotator = field(default_factory=HumanAnnotator)
    """The human annotators (benchmark rounds and golden preference subset)."""
    gpt: GPTAnnotator = field(default_factory=GPTAnnotator)
    """The GPT-4o-style annotator."""
    counts: dict | None = None
    """Optional prompt counts per subset (keys of SUBSETS) overriding the size's counts."""


@dataclass
class World:
    """The generated files, in memory."""

    config: WorldConfig
    files: dict[str, list[Record]]  # layout path -> records
    truth: list[dict]
    summary: dict


def sample_task(mix: dict[str, float], prompt_chars: float, length_scale: float, rng: np.random.Generator) -> Task:
    """One prompt: a category drawn from ``mix``, padded with context towards ``prompt_chars``."""
    cats = list(mix)
    weights = np.array([mix[c] for c in cats])
    cat = cats[int(rng.choice(len(cats), p=weights / weights.sum()))]
    base = make_task(cat, rng)
    ctx = int(rng.poisson(max(0.0, prompt_chars * length_scale - len(base.prompt)) / 9.5))
    return make_task(cat, np.random.default_rng(rng.integers(2**63)), context_sentences=ctx) if ctx else base


def _gen_subset(spec: SubsetSpec, n: int, length_scale: float, rng: np.random.Generator):
    """Prompts and responses of one subset: records without annotations, utilities, lengths, truth rows."""
    sizes, size_p = list(spec.responses), np.array(list(spec.responses.values()))
    records, utils, lengths, truth = [], [], [], []
    for i in range(n):
        task = sample_task(spec.mix, spec.prompt_chars, length_scale, rng)
        k = int(sizes[int(rng.choice(len(sizes), p=size_p / size_p.sum()))])
        pid = f"{spec.key}-{i:05d}"
        responses, u, lens = [], [], []
        for j, m in enumerate(rng.choice(len(MODELS), size=k, replace=False)):
            name, strength, verbosity = MODELS[int(m)]
            text, tr = sample_response(task, strength, verbosity, spec.response_chars, length_scale, rng)
            rid = f"{pid}-{j}"
            responses.append(Response(rid, text))
            q = utility(tr)
            u.append(q)
            lens.append(len(text))
            truth.append({"prompt_id": pid, "response_id": rid, "quality": int(round(q)), "utility": round(q, 3),
                          "model": name, **components(tr)})
        records.append(Record(prompt=task.prompt, responses=responses, id=pid, category=task.category))
        utils.append(np.array(u))
        lengths.append(np.array(lens))
    return records, utils, lengths, truth


def _annotate(records, utils, lengths, fn, annotator, rng, noise_scale, length_scale) -> list[Record]:
    out = []
    for rec, u, lens in zip(records, utils, lengths):
        ids = rec.response_ids
        anns = fn(u, lens, rng, annotator, noise_scale=noise_scale, length_scale=length_scale)
        out.append(Record(prompt=rec.prompt, responses=rec.responses, id=rec.id, category=rec.category,
                          annotations=[(ids[a], ids[b], p) for a, b, p in anns]))
    return out


def _streams(seed: int, key: str) -> tuple[np.random.Generator, ...]:
    """The subset ``key``'s three random streams: prompts and responses, human labels, GPT labels. One stream
    per subset and per annotator: resizing one file never changes another, and changing the human annotators
    never changes a prompt, a response or a GPT label (:func:`human_labels` relies on it)."""
    idx = list(SUBSETS).index(key)
    return tuple(np.random.default_rng([seed, idx, s]) for s in range(3))


def _human_file(key, records, utils, lengths, annotator: HumanAnnotator, rng, scale) -> list[Record]:
    """The human-annotated file of ``key``: triple-wise rounds on the benchmark, a complete ranking on the
    preference set's golden subset, with the subset's tie margin and difficulty."""
    spec = SUBSETS[key]
    human = replace(annotator, tie_margin=annotator.tie_margin * spec.human_tie)
    fn = annotate_rounds if key.startswith("bench") else annotate_complete
    return _annotate(records, utils, lengths, fn, human, rng, spec.human_difficulty, scale)


def _checked_size(config: WorldConfig) -> dict:
    """The prompt counts and length scale of ``config``, after checking its seed and size."""
    if not isinstance(config.seed, int) or config.seed < 0:
        raise ValueError(f"seed {config.seed!r}: must be an integer >= 0 (numpy seeds are non-negative)")
    if config.size not in SIZES:
        raise ValueError(f"unknown size {config.size!r}; choose one of {list(SIZES)}")
    return {**SIZES[config.size], **(config.counts or {})}


def human_labels(config: WorldConfig, keys: tuple[str, ...] = ("bench_open", "bench_human")) -> dict[str, list[Record]]:
    """The human-annotated files of ``keys`` (layout path -> records) of the world ``config``, without
    simulating the rest: the same prompts and responses as :func:`build_world`'s (their own stream), labelled by
    ``config.human`` and ranked (Algorithm 1). A re-annotation of the same responses by other humans costs one pass
    over these subsets."""
    size = _checked_size(config)
    files = {}
    for key in keys:
        if not key.startswith("bench") and key != "pref_human":
            raise ValueError(f"subset {key!r} has no human labels; choose bench_open, bench_human or pref_human")
        gen_rng, human_rng, _ = _streams(config.seed, key)
        recs, utils, lens, _ = _gen_subset(SUBSETS[key], size[key], size["length_scale"], gen_rng)
        files[LAYOUT[key]] = _human_file(key, recs, utils, lens, config.human, human_rng, size["length_scale"])
        resolve_records(files[LAYOUT[key]])  # ranked, as build_world's files
    return files


def build_world(config: WorldConfig | None = None, *, progress: bool = False) -> World:
    """Generate every file of the world in memory (see :func:`write_world`)."""
    config = config or WorldConfig()
    size = _checked_size(config)
    scale = size["length_scale"]
    files, truth, stats = {}, [], {}
    keys = list(SUBSETS)
    it = keys
    if progress:
        from tqdm.auto import tqdm
        it = tqdm(keys, desc="simulating")
    for key in it:
        spec = SUBSETS[key]
        gen_rng, human_rng, gpt_rng = _streams(config.seed, key)
        recs, utils, lens, rows = _gen_subset(spec, size[key], scale, gen_rng)
        for r in rows:
            r["subset"] = key
        truth += rows
        if key.startswith("bench"):
            files[LAYOUT[key]] = _human_file(key, recs, utils, lens, config.human, human_rng, scale)
            files[GPT_LAYOUT[key]] = _annotate(recs, utils, lens, annotate_all_pairs, config.gpt, gpt_rng, spec.gpt_difficulty, scale)
        elif key == "pref_human":
            files[LAYOUT[key]] = _human_file(key, recs, utils, lens, config.human, human_rng, scale)
        else:
            files[LAYOUT[key]] = _annotate(recs, utils, lens, annotate_all_pairs, config.gpt, gpt_rng, spec.gpt_difficulty, scale)
    for path, recs in files.items():
        stats[path] = resolve_records(recs)
    summary = {
        "simulator_version": VERSION, "size": config.size, "seed": config.seed, "length_scale": scale,
        "config": {"human": asdict(config.human), "gpt": asdict(config.gpt)},
        "categories": CATEGORIES,
        "files": {path: {**stats[path], **length_stats(recs), "position_second_share": position_share(recs)}
                  for path, recs in files.items()},
    }
    return World(config, files, truth, summary)


def length_stats(records: list[Record]) -> dict:
    """Table 1's columns: responses per prompt, comparisons (rank pairs), mean prompt/chosen/rejected length."""
    n_resp = sum(len(r.responses) for r in records)
    chosen = rejected = comps = 0
    for r in records:
        text = {x.id: len(x.content) for x in r.responses}
        for a, b in strict_pairs(r.rank):
            comps += 1
            chosen += text[a]
            rejected += text[b]
    return {
        "responses_per_prompt": n_resp / len(records) if records else 0.0,
        "comparisons_excluding_ties": comps,
        "avg_chars_prompt": float(np.mean([len(r.prompt) for r in records])) if records else 0.0,
        "avg_chars_chosen": chosen / comps if comps else float("nan"),
        "avg_chars_rejected": rejected / comps if comps else float("nan"),
    }


def fingerprint() -> str:
    """Hash of the code that decides a world's content, so cached worlds never go stale."""
    import hashlib

    h = hashlib.sha256(VERSION.encode())
    # world_files too: write_files sets the bytes of truth.jsonl and summary.json
    # categories, input_files and read_report: the taxonomy and how records are read shape a world too
    for obj in (fingerprint, components, make_task, GPTAnnotator, resolve_records, Record, write_files):
        h.update(Path(sys.modules[obj.__module__].__file__).read_bytes())  # each one's module source
    for module in (categories, input_files, read_report):
        h.update(Path(module.__file__).read_bytes())
    h.update((paper.data_dir() / "table1_statistics.csv").read_bytes())  # SUBSETS and SIZES read Table 1
    return h.hexdigest()[:12]


def world_path(size: str = "default", seed: int = 0, *, cache_dir: str | Path = "build/worlds") -> Path:
    """Where :func:`ensure_world` keeps the world (size, seed) of this simulator version."""
    return Path(cache_dir) / f"{size}-seed{seed}-{fingerprint()}"


def ensure_world(size: str = "default", seed: int = 0, *, cache_dir: str | Path = "build/worlds") -> Path:
    """The directory of the world (size, seed), simulated on first use and cached after."""
    out = world_path(size, seed, cache_dir=cache_dir)
    if not (out / "summary.json").exists():
        tmp = out.with_name(f"{out.name}.tmp-{os.getpid()}-{threading.get_ident()}")
        tmp.mkdir(parents=True, exist_ok=True)
        try:
            write_files(build_world(WorldConfig(size=size, seed=seed)), tmp)
        except BaseException:  # an interrupted or failed world is never left half-written
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        try:
            tmp.rename(out)
        except OSError:  # another process finished first
            shutil.rmtree(tmp)
    return out
