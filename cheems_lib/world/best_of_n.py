"""Best-of-N sampling on simulated downstream tasks (paper §6.2, Fig. 5).

The paper measures what a reward model is worth downstream by Best-of-32: a policy
samples 32 responses per prompt, the reward model picks the one it scores highest, and a
judge rates the pick. Two tasks stand in for the paper's three:

- ``human_win_rate`` (the paper's Human Win-rate): held-out prompts drawn uniformly over the
  eight top-level categories (:data:`HELD_OUT_MIX`: not the mix of either CheemsBench subset,
  so neither subset is favoured by its prompts), a strong policy (like Qwen2-72B-Instruct) that
  also writes one fixed baseline response per prompt; a human judge marks each sample +1 if it
  clearly exceeds the baseline and -1 otherwise. The judges are a panel of their own
  (:func:`judge_panel`), drawn independently of CheemsBench's human annotator. The task
  value is the win rate.
- ``mt_bench_sim`` (standing in for MT-bench): an MT-bench-like category mix (writing,
  extraction, reasoning, math, coding, knowledge), a weaker policy (like Qwen2-7B-Instruct),
  and a simulated GPT-like judge grading each sample 1-10 (:func:`cheems_lib.world.panels.grade`).
  The judge is :func:`mt_judge`: drawn from the GPT-like ranges of :data:`cheems_lib.world.panels.RANGES`
  on a stream of its own, never the GPT annotator of CheemsBench's GPT-annotated copy (that
  identity would decide the human-versus-GPT comparison by construction; :func:`regrade` with the
  annotator itself gives that case as a sensitivity row). The task value is the mean grade.

Sampling and judging use two random streams: the prompts and samples depend only on the seed
and the task, so a task re-judged by another judge (:func:`regrade`) has the same samples, the
reward models' scores are reused, and the two judgements are paired.

As in the paper, every sample is judged once, when it is drawn (:func:`sample_candidates`,
or :func:`sample_tasks` for both tasks), so two reward models that pick the same response get
the same verdict. A reward model's task value is then :func:`evaluate` of its
:func:`select_best` picks; :func:`task_range` gives each task's range (a chooser that sees the
hidden utility, and one that picks at random); :func:`length_controlled` removes the outcome's
linear dependence on the sample's length for the length-controlled rows.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, replace
from typing import Mapping, Sequence

import numpy as np

from ..categories import CATEGORIES
from ..input_files import DataError
from ..records import Record, Response
from .annotators import GPTAnnotator, HumanAnnotator, length_preference
from .panels import draw_panel
from .quality import sample_response, utility
from .simulation import sample_task

__all__ = ["DownstreamTask", "TASKS", "TASK_LABELS", "HELD_OUT_MIX", "MIN_WIN_RATE_PROMPTS", "Candidates",
           "JUDGE_PANEL_SIZE", "judge_panel", "mt_judge", "prompts_note", "sample_candidates", "sample_tasks", "regrade",
           "length_controlled", "select_best", "oracle_choice", "random_choice", "evaluate", "prompt_resamples",
           "task_range"]

HELD_OUT_MIX: dict[str, float] = {c: 1.0 / len(CATEGORIES) for c in CATEGORIES}
"""The win-rate task's category mix: uniform over the eight top-level categories (not the Human
Instruction or Open Prompt subset's mix, which would tie the task to one CheemsBench subset)."""

MIN_WIN_RATE_PROMPTS = 500
"""Held-out prompts of the win-rate task in the default profile: with 80 binary outcomes a win
rate's interval is about ±0.1, too wide to rank dozens of reward models."""


@dataclass(frozen=True)
class DownstreamTask:
    """One downstream task: prompts, policy and judge."""

    name: str
    """Stable name, used in tables and seeds."""
    mix: dict
    """Weight of each top-level category of the held-out prompts."""
    policy_strength: float
    """Strength of the sampling policy on the scale of :data:`cheems_lib.world.simulation.MODELS`."""
    judge: str
    """``human``: win (1) or not (0) against a fixed baseline response; ``gpt``: a 1-10 grade."""
    prompt_chars: float = 190.0
    """Mean prompt length in characters at length scale 1."""
    response_chars: float = 440.0
    """Mean response length at length scale 1."""
    description: str = ""
    """What the task stands in for."""


TASKS: dict[str, DownstreamTask] = {
    "human_win_rate": DownstreamTask(
        "human_win_rate",
        HELD_OUT_MIX,  # uniform over the categories: no CheemsBench subset's mix
        policy_strength=0.8, judge="human",
        description="Human Win-rate: win rate against a fixed baseline response, judged by a panel of simulated humans"),
    "mt_bench_sim": DownstreamTask(
        "mt_bench_sim",
        {"理解": .125, "知识": .25, "创意写作": .25, "推理": .125, "数学": .125, "代码": .125, "安全": 0.0, "复杂指令": 0.0},
        policy_strength=0.0, judge="gpt",
        description="MT-bench stand-in: mean 1-10 grade of a simulated GPT-like judge"),
}

TASK_LABELS: dict[str, str] = {"human_win_rate": "Human win rate", "mt_bench_sim": "MT-bench-like grade"}
"""How tables and figures name each task of :data:`TASKS`."""


@dataclass
class Candidates:
    """The N samples of every held-out prompt, with the judge's verdict on each."""

    task: DownstreamTask
    records: list[Record]
    """One record per prompt with its N samples as responses (no annotations)."""
    utility: np.ndarray
    """(prompts, N) hidden utility of each sample."""
    outcome: np.ndarray
    """(prompts, N) the task value of picking each sample: 1/0 win or a 1-10 grade."""
    baselines: list[str] | None
    """The fixed baseline response per prompt (``human`` judge only)."""
    baseline_utility: np.ndarray | None = None
    """(prompts,) hidden utility of each baseline response (``human`` judge only)."""
    seed: int = 0
    """The seed the samples were drawn with (the judging stream derives from it)."""
    length_scale: float = 1 / 3
    """The world's length scale the samples were written at."""

    @property
    def n(self) -> int:
        return self.utility.shape[1]

    @property
    def lengths(self) -> np.ndarray:
        """(prompts, N) characters of each sample."""
        return np.array([[len(r.content) for r in rec.responses] for rec in self.records], dtype=float)


JUDGE_PANEL_SIZE = 5
"""Human judges of the win-rate task (one per prompt, drawn from :func:`judge_panel`)."""


def judge_panel(seed: int = 0) -> list[HumanAnnotator]:
    """The win-rate task's human judges: drawn from :data:`cheems_lib.world.panels.RANGES` with a stream of
    their own, so they share no parameter value with CheemsBench's human annotator or any comparator's panel."""
    return draw_panel("human", seed=seed, size=JUDGE_PANEL_SIZE, stream="win-rate judges")


def mt_judge(seed: int = 0) -> GPTAnnotator:
    """The MT-bench-like task's GPT-like judge: one draw from the GPT-like ranges of
    :data:`cheems_lib.world.panels.RANGES` on a stream of its own (``"mt-bench judge"``), so it shares no
    parameter value with CheemsBench's GPT annotator (the paper's MT-bench and GPT copies are both
    judged by GPT-4o, but making them one simulated annotator would decide Fig. 5's human-versus-GPT
    claim by construction)."""
    return draw_panel("gpt", seed=seed, size=1, stream="mt-bench judge")[0]


def prose_values(n: int, prompts: int, mt_prompts: int) -> dict[str, object]:
    """The chapter's glued values on the tasks: ``n`` samples per prompt, the win-rate task's ``prompts`` (and
    :func:`prompts_note` on them) and the MT-bench-like task's ``mt_prompts``."""
    return {"n_samples": n, "n_bon_prompts": prompts, "n_mt_prompts": mt_prompts, "prompts_note": prompts_note(prompts)}


def prompts_note(prompts: int) -> str:
    """The chapter's sentence on the win-rate task's number of held-out prompts (a smoke run uses fewer
    than :data:`MIN_WIN_RATE_PROMPTS`, and says so)."""
    if prompts < MIN_WIN_RATE_PROMPTS:
        return (f"This run gives the win-rate task {prompts:,} held-out prompts, fewer than the "
                f"{MIN_WIN_RATE_PROMPTS:,} of the default profile (a reduced run, to check the build rather than to decide its claims).")
    return f"The win-rate task has {prompts:,} held-out prompts (the default profile's floor is {MIN_WIN_RATE_PROMPTS:,})."


def _streams(task: DownstreamTask, seed: int) -> tuple[np.random.Generator, np.random.Generator]:
    """The task's sampling stream (prompts and samples) and its judging stream (verdicts)."""
    key = sum(task.name.encode())  # the sampling stream is the one before the judge had its own
    return np.random.default_rng([seed, key]), np.random.default_rng([seed, key, zlib.crc32(b"judging")])


def sample_candidates(task: DownstreamTask | str, *, prompts: int = 80, n: int = 32, seed: int = 0,
                      length_scale: float = 1 / 3, panel: Sequence[HumanAnnotator] | None = None,
                      gpt: GPTAnnotator | None = None) -> Candidates:
    """Draw ``prompts`` held-out prompts, ``n`` policy samples each, and judge every sample.

    The ``human`` judge of a prompt is one member of ``panel`` (default: :func:`judge_panel` of
    ``seed``); the ``gpt`` judge grades with ``gpt`` (default: :func:`mt_judge` of ``seed``).
    Deterministic in ``seed``; the samples do not depend on the judges (:func:`regrade`); prompt
    ids (``<task>-<i>``) never collide with the world's.
    """
    task = TASKS[task] if isinstance(task, str) else task
    if n < 1 or prompts < 1:
        raise ValueError(f"need prompts >= 1 and n >= 1, got prompts={prompts}, n={n}")
    rng, _ = _streams(task, seed)
    records, utils, baselines, base_u = [], [], [], []
    for i in range(prompts):
        t = sample_task(task.mix, task.prompt_chars, length_scale, rng)
        draws = [sample_response(t, task.policy_strength, 1.0, task.response_chars, length_scale, rng)
                 for _ in range(n + (task.judge == "human"))]
        if task.judge == "human":  # draw 0 is the fixed baseline response
            baselines.append(draws[0][0])
            base_u.append(utility(draws[0][1]))
            draws = draws[1:]
        pid = f"{task.name}-{i:04d}"
        records.append(Record(prompt=t.prompt, responses=[Response(f"{pid}-{j:02d}", text) for j, (text, _) in enumerate(draws)],
                              id=pid, category=t.category))
        utils.append([utility(tr) for _, tr in draws])
    u = np.array(utils, dtype=float)
    c = Candidates(task, records, u, np.zeros_like(u), baselines or None,
                   np.array(base_u) if baselines else None, seed, length_scale)
    return regrade(c, panel=panel, gpt=gpt)


def regrade(c: Candidates, *, panel: Sequence[HumanAnnotator] | None = None, gpt: GPTAnnotator | None = None) -> Candidates:
    """``c`` with every sample judged again by ``panel`` (``human`` task) or ``gpt`` (``gpt`` task),
    defaults :func:`judge_panel` and :func:`mt_judge` of ``c.seed``.

    Same samples, same judging stream: two judges' verdicts differ only by their parameters (the
    judge-identity sensitivity row grades with CheemsBench's own GPT annotator this way)."""
    _, rng = _streams(c.task, c.seed)
    lens = c.lengths
    rows = []
    if c.task.judge == "human":
        panel = list(panel or judge_panel(c.seed))
        base_lens = [float(len(b)) for b in c.baselines]
        for p in range(len(c.records)):
            judge = panel[int(rng.integers(len(panel)))]
            rows.append(_versus_baseline(np.r_[c.baseline_utility[p], c.utility[p]], np.r_[base_lens[p], lens[p]],
                                         judge, rng, c.length_scale))
    else:
        from .panels import grade

        gpt = gpt or mt_judge(c.seed)
        rows = [grade(c.utility[p], lens[p], gpt, rng, length_scale=c.length_scale) for p in range(len(c.records))]
    return replace(c, outcome=np.array(rows, dtype=float).reshape(c.utility.shape))


def sample_tasks(*, prompts: int = MIN_WIN_RATE_PROMPTS, mt_prompts: int = 80, n: int = 32, seed: int = 0,
                 length_scale: float = 1 / 3, panel: Sequence[HumanAnnotator] | None = None,
                 gpt: GPTAnnotator | None = None) -> dict[str, Candidates]:
    """:func:`sample_candidates` of every task of :data:`TASKS` (by name), all with the same judges:
    ``prompts`` held-out prompts for the win-rate task, ``mt_prompts`` for the MT-bench-like one (MT-bench
    has 80 questions)."""
    count = {"human_win_rate": prompts, "mt_bench_sim": mt_prompts}
    return {name: sample_candidates(name, prompts=count[name], n=n, seed=seed, length_scale=length_scale,
                                    panel=panel, gpt=gpt)
            for name in TASKS}


def _versus_baseline(u: np.ndarray, lens: np.ndarray, judge: HumanAnnotator, rng: np.random.Generator,
                     length_scale: float) -> np.ndarray:
    """1 where sample ``k >= 1`` clearly exceeds the baseline (draw 0) for ``judge``, else 0.

    The judge perceives each response once (the baseline once per prompt); a tie does not exceed it."""
    seen = u + rng.normal(0.0, judge.shared_noise, size=len(u)) + rng.normal(0.0, judge.noise, size=len(u))
    bonus = length_preference(lens[1:] - (lens[1:] + lens[0]) / 2, judge, length_scale)
    diff = seen[1:] + bonus - (seen[0] - bonus)  # the pair's median is its midpoint
    return (diff >= judge.tie_margin).astype(float)


def length_controlled(c: Candidates) -> np.ndarray:
    """(prompts, N) outcomes with their linear dependence on the sample's length removed.

    The covariate is ``log(length / the prompt's median sample length)``; the slope ``beta`` is fitted
    once per task, within prompts (prompt fixed effects), on all samples, so it depends on no reward
    model. The adjusted outcome is ``outcome - beta * covariate``: a pick of median length keeps its
    verdict, a longer one loses what its length bought on average. Like AlpacaEval's length-controlled
    win rate this removes every linear association with length, the judge's preference and any real
    one alike.
    """
    x = np.log(np.maximum(c.lengths, 1.0))
    x = x - np.median(x, axis=1, keepdims=True)
    xc = x - x.mean(axis=1, keepdims=True)
    yc = c.outcome - c.outcome.mean(axis=1, keepdims=True)
    denom = float((xc * xc).sum())
    beta = float((xc * yc).sum()) / denom if denom > 0 else 0.0
    return c.outcome - beta * x


def select_best(records: Sequence[Record], scores: Mapping[tuple[str, str], float]) -> np.ndarray:
    """Index of the highest-scored response of every record (the first one on a tie).

    A missing score is an error, never a silent skip.
    """
    picks = np.empty(len(records), dtype=np.int64)
    for p, rec in enumerate(records):
        try:
            s = [scores[(rec.id, r.id)] for r in rec.responses]
        except KeyError as err:
            raise DataError(None, None, f"no score for (prompt {rec.id}, response {err.args[0][1]})",
                            "score every sample of the candidate set before selecting") from None
        picks[p] = int(np.argmax(s))
    return picks


def oracle_choice(c: Candidates) -> np.ndarray:
    """Picks of a reward model that sees the hidden utility (ties: first)."""
    return np.argmax(c.utility, axis=1)


def random_choice(c: Candidates, *, seed: int = 0) -> np.ndarray:
    """Picks of a reward model that scores at random (Best-of-1 in effect)."""
    return np.random.default_rng(seed).integers(c.n, size=len(c.records))


def evaluate(c: Candidates, picks: np.ndarray, *, n_boot: int = 1000, seed: int = 0, ci: float = 0.95) -> dict:
    """Task value of ``picks`` (mean outcome over prompts) with a bootstrap interval over prompts."""
    picks = np.asarray(picks)
    if picks.shape != (len(c.records),) or picks.min(initial=0) < 0 or picks.max(initial=0) >= c.n:
        raise ValueError(f"picks must be {len(c.records)} indices in [0, {c.n})")
    values = c.outcome[np.arange(len(picks)), picks]
    out = {"value": float(values.mean()), "prompts": len(values)}
    if n_boot:
        idx = np.random.default_rng(seed).integers(len(values), size=(n_boot, len(values)))
        boot = values[idx].mean(axis=1)
        out["lo"], out["hi"] = (float(x) for x in np.quantile(boot, [(1 - ci) / 2, (1 + ci) / 2]))
    return out


def prompt_resamples(prompts: int, n_boot: int, *, seed: int = 0, stream: str = "") -> np.ndarray:
    """``(n_boot, prompts)``: how often each held-out prompt is in each bootstrap replicate (drawn with
    replacement). One matrix serves every reward model, so their task values stay paired:
    ``counts @ values.T / prompts`` is every model's value in every replicate. ``stream`` (e.g. the
    task's name) keeps tasks' resamples independent of each other and of the training-set resamples.

    >>> prompt_resamples(4, 3, seed=1).sum(axis=1).tolist()
    [4.0, 4.0, 4.0]
    """
    rng = np.random.default_rng([seed, zlib.crc32(f"prompt resamples {stream}".encode())])
    draw = rng.integers(prompts, size=(n_boot, prompts))
    counts = np.zeros((n_boot, prompts))
    np.add.at(counts, (np.arange(n_boot)[:, None], draw), 1.0)
    return counts


def task_range(candidates: Mapping[str, Candidates], *, n_boot: int = 1000, seed: int = 0):
    """Each task's range: the value of the :func:`oracle_choice` and of a :func:`random_choice` (seed ``seed``).

    ``candidates`` maps a task name of :data:`TASKS` to its samples. Returns a DataFrame with
    task (its :data:`TASK_LABELS` name), chooser, value, lo, hi (the :func:`evaluate` interval,
    None without ``n_boot``) and ``value [95% interval]``, the value and interval as text.
    """
    import pandas as pd

    rows = []
    for name, c in candidates.items():
        for who, picks in [("oracle (sees the hidden utility)", oracle_choice(c)),
                           ("random pick (Best-of-1)", random_choice(c, seed=seed))]:
            v = evaluate(c, picks, n_boot=n_boot, seed=seed)
            rows.append({"task": TASK_LABELS[name], "chooser": who, "value": v["value"], "lo": v.get("lo"),
                         "hi": v.get("hi")})
    frame = pd.DataFrame(rows)
    text = [f"{v:.3f} [{lo:.3f}, {hi:.3f}]" if lo is not None else f"{v:.3f}"
            for v, lo, hi in zip(frame["value"], frame["lo"], frame["hi"])]
    return frame.assign(**{"value [95% interval]": text})
