"""Best-of-N sampling on simulated downstream tasks (paper §6.2, Fig. 5).

The paper measures what a reward model is worth downstream by Best-of-32: a policy
samples 32 responses per prompt, the reward model picks the one it scores highest, and a
judge rates the pick. Two tasks stand in for the paper's three:

- ``human_win_rate`` (the paper's Human Win-rate): held-out prompts with the Human
  Instruction category mix, a strong policy (like Qwen2-72B-Instruct) that also writes one
  fixed baseline response per prompt; a human judge marks each sample +1 if it clearly
  exceeds the baseline and -1 otherwise. The judges are a panel of their own
  (:func:`judge_panel`), drawn independently of CheemsBench's human annotator. The task
  value is the win rate.
- ``mt_bench_sim`` (standing in for MT-bench): an MT-bench-like category mix (writing,
  extraction, reasoning, math, coding, knowledge), a weaker policy (like Qwen2-7B-Instruct),
  and the simulated GPT-4o grading each sample 1-10 (:func:`cheems_lib.panels.grade`) with
  the GPT annotator's parameters. The task value is the mean grade.

As in the paper, every sample is judged once, when it is drawn (:func:`sample_candidates`,
or :func:`sample_tasks` for both tasks), so two reward models that pick the same response get
the same verdict. A reward model's task value is then :func:`evaluate` of its
:func:`select_best` picks; :func:`task_range` gives each task's range (a chooser that sees the
hidden utility, and one that picks at random).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from .annotators import GPTAnnotator, HumanAnnotator, length_preference
from .records import DataError, Record, Response
from .simulation import HUMAN_MIX

__all__ = ["DownstreamTask", "TASKS", "TASK_LABELS", "Candidates", "JUDGE_PANEL_SIZE", "judge_panel",
           "sample_candidates", "sample_tasks", "select_best", "oracle_choice", "random_choice", "evaluate",
           "task_range"]


@dataclass(frozen=True)
class DownstreamTask:
    """One downstream task: prompts, policy and judge."""

    name: str
    """Stable name, used in tables and seeds."""
    mix: dict
    """Weight of each top-level category of the held-out prompts."""
    policy_strength: float
    """Strength of the sampling policy on the scale of :data:`cheems_lib.simulation.MODELS`."""
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
        HUMAN_MIX,  # the Human Instruction mix of the simulated world
        policy_strength=0.8, judge="human",
        description="Human Win-rate: win rate against a fixed baseline response, judged by a panel of simulated humans"),
    "mt_bench_sim": DownstreamTask(
        "mt_bench_sim",
        {"理解": .125, "知识": .25, "创意写作": .25, "推理": .125, "数学": .125, "代码": .125, "安全": 0.0, "复杂指令": 0.0},
        policy_strength=0.0, judge="gpt",
        description="MT-bench stand-in: mean 1-10 grade of the simulated GPT-4o judge"),
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

    @property
    def n(self) -> int:
        return self.utility.shape[1]


JUDGE_PANEL_SIZE = 5
"""Human judges of the win-rate task (one per prompt, drawn from :func:`judge_panel`)."""


def judge_panel(seed: int = 0) -> list[HumanAnnotator]:
    """The win-rate task's human judges: drawn from :data:`cheems_lib.panels.RANGES` with a stream of
    their own, so they share no parameter value with CheemsBench's human annotator or any comparator's panel."""
    from .panels import draw_panel

    return draw_panel("human", seed=seed, size=JUDGE_PANEL_SIZE, stream="win-rate judges")


def sample_candidates(task: DownstreamTask | str, *, prompts: int = 80, n: int = 32, seed: int = 0,
                      length_scale: float = 1 / 3, panel: Sequence[HumanAnnotator] | None = None,
                      gpt: GPTAnnotator | None = None) -> Candidates:
    """Draw ``prompts`` held-out prompts, ``n`` policy samples each, and judge every sample.

    The ``human`` judge of a prompt is one member of ``panel`` (default: :func:`judge_panel` of
    ``seed``); the ``gpt`` judge grades with ``gpt`` (default: the GPT annotator's parameters, as the
    paper's MT-bench is judged by GPT-4). Deterministic in ``seed``; prompt ids (``<task>-<i>``)
    never collide with the world's.
    """
    from .panels import grade
    from .quality import sample_response, utility
    from .simulation import sample_task

    task = TASKS[task] if isinstance(task, str) else task
    if n < 1 or prompts < 1:
        raise ValueError(f"need prompts >= 1 and n >= 1, got prompts={prompts}, n={n}")
    panel, gpt = list(panel or judge_panel(seed)), gpt or GPTAnnotator()
    rng = np.random.default_rng([seed, sum(task.name.encode())])
    records, utils, outcomes, baselines = [], [], [], []
    for i in range(prompts):
        t = sample_task(task.mix, task.prompt_chars, length_scale, rng)
        draws = [sample_response(t, task.policy_strength, 1.0, task.response_chars, length_scale, rng)
                 for _ in range(n + (task.judge == "human"))]
        u = np.array([utility(tr) for _, tr in draws])
        lens = np.array([len(text) for text, _ in draws], dtype=float)
        pid = f"{task.name}-{i:04d}"
        if task.judge == "human":
            out = _versus_baseline(u, lens, panel[int(rng.integers(len(panel)))], rng, length_scale)
            baselines.append(draws[0][0])
            draws, u = draws[1:], u[1:]
        else:
            out = grade(u, lens, gpt, rng, length_scale=length_scale)
        records.append(Record(prompt=t.prompt, responses=[Response(f"{pid}-{j:02d}", text) for j, (text, _) in enumerate(draws)],
                              id=pid, category=t.category))
        utils.append(u)
        outcomes.append(out)
    return Candidates(task, records, np.array(utils), np.array(outcomes), baselines or None)


def sample_tasks(*, prompts: int = 80, n: int = 32, seed: int = 0, length_scale: float = 1 / 3,
                 panel: Sequence[HumanAnnotator] | None = None, gpt: GPTAnnotator | None = None) -> dict[str, Candidates]:
    """:func:`sample_candidates` of every task of :data:`TASKS` (by name), all with the same judges."""
    return {name: sample_candidates(name, prompts=prompts, n=n, seed=seed, length_scale=length_scale, panel=panel,
                                    gpt=gpt)
            for name in TASKS}


def _versus_baseline(u: np.ndarray, lens: np.ndarray, judge: HumanAnnotator, rng: np.random.Generator,
                     length_scale: float) -> np.ndarray:
    """1 where sample ``k >= 1`` clearly exceeds the baseline (draw 0) for ``judge``, else 0.

    The judge perceives each response once (the baseline once per prompt); a tie does not exceed it."""
    seen = u + rng.normal(0.0, judge.shared_noise, size=len(u)) + rng.normal(0.0, judge.noise, size=len(u))
    bonus = length_preference(lens[1:] - (lens[1:] + lens[0]) / 2, judge, length_scale)
    diff = seen[1:] + bonus - (seen[0] - bonus)  # the pair's median is its midpoint
    return (diff >= judge.tie_margin).astype(float)


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
