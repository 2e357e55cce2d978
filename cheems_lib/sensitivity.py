"""Sensitivity: does a claim's verdict survive the simulator's unfitted assumptions?

Some parameters of the simulated world are fitted to no number of the paper
(:data:`cheems_lib.calibration.PARAMETERS`, "assumed"). Where a claim's outcome rests on one,
the claim is re-tested across a plausible range of it, and the verdict at each value is shown,
so a reader sees where it flips. Two sweeps, both for Table 4's first row direction (the GPT
subset alone underperforms the human subset, claim ``tab4-human-beats-gpt``):

- :func:`shared_noise_sweep`: the humans' shared perception noise
  (:attr:`cheems_lib.annotators.HumanAnnotator.shared_noise`). It creates no conflicts, so
  Table 5 cannot fit it, yet it sets how accurate the human labels are next to GPT's fitted
  noise. Each value is a whole new world (the benchmark's human labels change with it too).
- :func:`ratio_sweep`: GPT-annotated prompts per human-annotated prompt in training. The
  paper has 8.5 : 1; the chapters train on about 1 : 1 to fit the CPU budget.

At every point the two reward models (human subset, GPT subset) are trained with the same
config and seeds and scored on the same benchmark, so their difference is paired
(:mod:`cheems_lib.claims`). :func:`summarize` turns a sweep into one ledger verdict: does the
verdict at the world's own value hold across the range? :data:`ASSUMPTIONS` holds how each sweep
is named, drawn (:func:`sweep_figure`) and recorded (:func:`add_sweep_claim`, kind ``robustness``:
a sweep is never a finding of its own); on real files
there is nothing to sweep, and both say so.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from .construction_ablation import DIRECTIONS

__all__ = ["SweepConfig", "Assumption", "ASSUMPTIONS", "CLAIM", "STATISTIC", "shared_noise_sweep", "ratio_sweep",
           "summarize", "sweep_figure", "add_sweep_claim"]

_CLAIM_ID, CLAIM = DIRECTIONS[0][:2]
"""The claim (Table 4's first comparison, ``tab4-human-beats-gpt``) whose verdict is swept."""
STATISTIC = "Overall accuracy on CheemsBench, human-subset model minus GPT-subset model (paired)"
"""Its statistic."""
_VERDICT_COLORS = {"supported": "#59a14f", "contradicted": "#e15759", "inconclusive": "#9c9c9c",
                   "insufficient data": "#d9d9d9"}


@dataclass(frozen=True)
class SweepConfig:
    """How every point of a sweep is trained and tested."""

    model: str = "tiny-xs"
    """Reward-model size trained at every point (tiny names of :mod:`cheems_lib.reward_model`)."""
    seeds: tuple[int, ...] = (0,)
    """Training seeds per point."""
    epochs: int = 2
    """Training epochs of every model."""
    n_boot: int = 1000
    """Bootstrap replicates over benchmark prompts."""
    seed: int = 0
    """World and bootstrap seed."""
    direction: str = "greater"
    """What the claim says about human minus GPT accuracy."""


@dataclass(frozen=True)
class Assumption:
    """How the book names, draws and records the sweep of one assumed parameter."""

    claim_id: str
    """Ledger id of the sweep's claim."""
    parameter: str
    """The parameter in prose ("the verdict holds for every <parameter> from ...")."""
    xlabel: str
    """The figure's x axis."""
    marker: str
    """Label of the dotted line at the figure's marked value."""
    link: str
    """The chapter section that shows the sweep."""
    unswept_reason: str
    """Why real files cannot be swept (the ``untestable`` claim's reason)."""
    unswept_says: str
    """The sentence the chapter shows on real files."""


ASSUMPTIONS = {
    "shared_noise": Assumption(
        f"{_CLAIM_ID}-vs-shared-noise", "humans' shared noise", "HumanAnnotator.shared_noise",
        " world's own value", "sensitivity-shared-noise", "real files have no simulator parameter to sweep",
        "These are real files: there is no simulated parameter to sweep."),
    "ratio": Assumption(
        f"{_CLAIM_ID}-vs-ratio", "GPT : human ratio", "GPT-annotated prompts per human-annotated prompt",
        " paper's ratio", "sensitivity-ratio", "the sweep trains on the simulated subsets only",
        "These are real files: the ratio sweep runs on the simulated world only."),
}
"""The two swept assumptions, by name."""


def _difference(world, human, gpt, bench, cfg: SweepConfig):
    """Paired Overall accuracy, human-subset model minus GPT-subset model, on ``bench``."""
    from . import experiments
    from .claims import decide

    fam = experiments.Family({"human": list(human), "gpt": list(gpt)}, seeds=tuple(cfg.seeds), epochs=cfg.epochs,
                             models={"human": cfg.model, "gpt": cfg.model}, group="sensitivity")
    res = experiments.evaluate(fam, world, records=bench, n_boot=cfg.n_boot, seed=cfg.seed, progress=False)
    diff = experiments.estimate(res, "human") - experiments.estimate(res, "gpt")
    lo, hi = diff.interval(seed=cfg.seed)
    return {"estimate": diff.value, "ci_low": lo, "ci_high": hi, "seeds": diff.seeds, "n": diff.n,
            "verdict": decide(diff, cfg.direction, seed=cfg.seed)}


def shared_noise_sweep(world, values: Sequence[float], cfg: SweepConfig = SweepConfig(), *, gpt_prompts: int = 0):
    """One row per value of the humans' shared noise: the claim's statistic, interval and verdict.

    ``world`` is the chapter's simulated :class:`cheems_lib.experiments.World`; each value
    re-simulates it (same size and seed) with only that parameter changed, retrains the
    human-subset model and re-labels the benchmark. The GPT subset (first ``gpt_prompts``,
    default as many as human prompts) does not depend on it, so its model is trained once.
    """
    import pandas as pd
    from tqdm.auto import tqdm

    from .annotators import HumanAnnotator
    from .simulation import SIZES, WorldConfig, build_world
    from .world_files import LAYOUT

    rows = []
    n_gpt = gpt_prompts or SIZES[world.size]["pref_human"]
    for v in tqdm(values, desc="shared noise"):
        # files are prefix-stable in their prompt count, so only the GPT prompts used are simulated
        files = build_world(WorldConfig(size=world.size, seed=world.seed, counts={"pref_gpt": n_gpt},
                                        human=replace(HumanAnnotator(), shared_noise=float(v)))).files
        human, gpt = files[LAYOUT["pref_human"]], files[LAYOUT["pref_gpt"]]
        bench = {"open": files[LAYOUT["bench_open"]], "human": files[LAYOUT["bench_human"]]}
        rows.append({"value": float(v), **_difference(world, human, gpt, bench, cfg)})
    return pd.DataFrame(rows)


def ratio_sweep(world, ratios: Sequence[float], cfg: SweepConfig = SweepConfig()):
    """One row per ratio of GPT-annotated to human-annotated training prompts (the world's own
    labels): the human-subset model against a GPT-subset model on ``round(ratio * human prompts)``
    GPT prompts. Ratios beyond what the world holds are refused."""
    import pandas as pd
    from tqdm.auto import tqdm

    human, gpt_all = world.human, world.gpt()
    rows = []
    for r in tqdm(ratios, desc="GPT : human ratio"):
        n = round(float(r) * len(human))
        if n > len(gpt_all):
            raise ValueError(f"ratio {r}: needs {n} GPT prompts, the world has {len(gpt_all)} (fix: a smaller ratio "
                             "or a larger world size)")
        rows.append({"value": float(r), "gpt_prompts": n,
                     **_difference(world, human, gpt_all[:n], world.bench, cfg)})
    return pd.DataFrame(rows)


def summarize(sweep, at: float) -> tuple[str, dict]:
    """The ledger verdict of a sweep and the row at the world's own value ``at``.

    *supported*: every point has the verdict of the point at ``at`` (the claim's verdict does not
    depend on the parameter in this range); *contradicted*: some point has the opposite definite
    verdict (it flips); *inconclusive*: otherwise (some point cannot tell); *insufficient data*: the
    point at ``at`` rests on too few prompts to have a verdict to hold.
    """
    rows = sweep.to_dict("records")
    base = min(rows, key=lambda r: abs(r["value"] - at))
    if abs(base["value"] - at) > 1e-9:
        raise ValueError(f"the sweep has no point at the world's own value {at} (fix: include it in the values)")
    if base["verdict"] == "insufficient data":
        return base["verdict"], base
    if base["verdict"] == "inconclusive":  # nothing definite to hold, even if every point agrees
        return "inconclusive", base
    verdicts = {r["verdict"] for r in rows}
    opposite = {"supported": "contradicted", "contradicted": "supported"}.get(base["verdict"])
    if verdicts == {base["verdict"]}:
        return "supported", base
    return ("contradicted" if opposite in verdicts else "inconclusive"), base


def sweep_figure(sweep, name: str, *, marked: float, model: str):
    """The statistic and its 95% interval across ``sweep`` (rows of :func:`shared_noise_sweep` or
    :func:`ratio_sweep`), each point coloured by its verdict, a dotted line at ``marked``; ``model`` is
    named in the title. ``sweep=None`` (real files) gives a figure saying there is nothing to sweep."""
    import matplotlib.pyplot as plt

    if sweep is None:
        fig, ax = plt.subplots(figsize=(7, 1.2))
        ax.axis("off")
        ax.text(0.5, 0.5, "real files: no simulator parameter to sweep", ha="center", va="center")
        return fig
    spec = ASSUMPTIONS[name]
    fig, ax = plt.subplots(figsize=(7, 3.6))
    ax.axhline(0, color="black", lw=0.8)
    ax.plot(sweep["value"], sweep["estimate"], color="#4e79a7", lw=1, zorder=1)
    for verdict, d in sweep.groupby("verdict"):
        ax.errorbar(d["value"], d["estimate"], yerr=[d["estimate"] - d["ci_low"], d["ci_high"] - d["estimate"]],
                    fmt="o", color=_VERDICT_COLORS[verdict], capsize=3, label=verdict, zorder=2)
    ax.axvline(marked, color="#4e79a7", ls=":", lw=1)
    ax.annotate(spec.marker, (marked, ax.get_ylim()[1]), fontsize=8, ha="left", va="top", color="#4e79a7")
    ax.set(xlabel=spec.xlabel, ylabel="human minus GPT\n(Overall accuracy)",
           title=f"Table 4, human minus GPT subset, across the {spec.parameter} (simulated; {model})")
    ax.legend(title="verdict at this value", fontsize=8, title_fontsize=8, loc="best")
    fig.tight_layout()
    return fig


def add_sweep_claim(ledger, sweep, name: str, *, own: float) -> None:
    """Add the sweep's claim to ``ledger``: does the verdict at the world's own value ``own`` hold across
    ``sweep`` (:func:`summarize`)? ``sweep=None`` (real files) adds it as ``untestable``."""
    from .claims import Claim

    spec, ref = ASSUMPTIONS[name], "§6.3, Table 4 (sensitivity)"
    if sweep is None:
        ledger.add(Claim(
            spec.claim_id, ref, f"the verdict on '{CLAIM}' holds across the {spec.parameter}", "untestable",
            "inconclusive", reason=spec.unswept_reason, says={"inconclusive": spec.unswept_says}))
        return
    verdict, base = summarize(sweep, own)
    parameter, span = spec.parameter, f"{sweep['value'].min():.3g} to {sweep['value'].max():.3g}"
    flips = ", ".join(f"{r.value:.3g} ({r.verdict})" for r in sweep.itertuples() if r.verdict != base["verdict"])
    ledger.add(Claim(
        spec.claim_id, ref, f"the verdict on '{CLAIM}' holds for every {parameter} from {span}",
        "robustness", verdict, reason=f"a sweep of {_CLAIM_ID} over the assumed {parameter}: it says whether that "
        "claim's verdict rests on the assumption; not a claim of the paper, so not a finding", estimate=base["estimate"], ci_low=base["ci_low"], ci_high=base["ci_high"],
        seeds=base["seeds"], n=base.get("n"), statistic=f"{STATISTIC}, at the world's own {parameter}; swept over {span}",
        paper="no sweep in the paper", link=spec.link,
        says={"supported": f"Across {parameter} from {span}, every value gives the verdict of the world's own value "
                           f"({base['verdict']}): on this range the claim does not depend on the assumption.",
              "contradicted": f"The verdict flips across {parameter} from {span}: {base['verdict']} at the world's own "
                              f"value, but {flips}. The claim rests on the assumption.",
              "inconclusive": f"Across {parameter} from {span}, the verdict at the world's own value "
                              f"({base['verdict']}) is not reached everywhere: {flips}."}))
