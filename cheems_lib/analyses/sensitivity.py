"""Sensitivity: does a claim's verdict survive the simulator's unfitted assumptions?

Some parameters of the simulated world are fitted to no number of the paper
(:data:`cheems_lib.analyses.calibration.PARAMETERS`, "assumed"). Where a claim's outcome rests on one,
the claim is re-tested across a plausible range of it, and the verdict at each value is shown,
so a reader sees where it flips. The claims re-tested are :data:`TARGETS`: Table 4's first row
direction (the GPT subset alone underperforms the human subset, ``tab4-human-beats-gpt``) and our
Table 3 question on annotation source (pairwise human labels against as many pairwise machine
labels, ``tab3-human-beats-machine``). Two sweeps:

- :func:`shared_noise_sweeps`: the humans' shared perception noise
  (:attr:`cheems_lib.world.annotators.HumanAnnotator.shared_noise`), for both claims (recorded by
  :func:`add_shared_noise_claims`). It creates no
  conflicts, so Table 5 cannot fit it, yet it sets how accurate the human labels are next to GPT's
  fitted noise. Each value is a whole new world (the benchmark's human labels change with it too),
  built once for both claims; the GPT labels do not depend on it, so Table 4's GPT model is trained once
  and Table 3's machine pairs are one list, cut to as many pairs as each world's human pairs.
- :func:`ratio_sweep`: GPT-annotated prompts per human-annotated prompt in training, for Table 4. The
  paper has 8.5 : 1; the chapters train on about 1 : 1 to fit the CPU budget.

At every point the two reward models are trained with the same config and seeds and scored on the
same benchmark, so their difference is paired (:mod:`cheems_lib.analyses.claims`). :func:`summarize` turns a
sweep into one ledger verdict: does the verdict at the world's own value hold across the range?
:data:`ASSUMPTIONS` holds how each sweep is named, drawn (:func:`sweep_figure`) and recorded
(:func:`add_sweep_claim`, kind ``robustness``: a sweep is never a finding of its own); on real files
there is nothing to sweep, and both say so. The downstream chapter sweeps Fig. 5's claims over the same shared
noise more cheaply (:func:`cheems_lib.analyses.downstream_robustness.noise_sweeps`: CheemsBench re-annotated, the models' scores kept)
and records them with the same two functions, passing a :class:`Target` of its own.

One point of the ratio sweep is a finding of its own: Table 4's comparison at the paper's ratio
(:func:`add_paper_ratio_claim`, claim :data:`PAPER_RATIO_ID`), the setting of the paper's claim, beside
the preference chapter's test at the book's ratio; :func:`headline` says which of the two is the
headline (:data:`HEADLINE_RULE`). Where that ratio cannot be trained (real files, a world with too few
GPT prompts: :func:`unfit`) the claim is *untestable* with the reason, never absent; :func:`ratio_values` are the
ratios the chapter sweeps, that ratio among them where the world holds it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from ..estimates import decide
from ..paper import table
from ..world.annotators import HumanAnnotator
from ..world.simulation import build_world, SIZES, WorldConfig
from ..world_files import LAYOUT
from . import experiments
from .claims import Claim
from .claim_registry import entry
from .construction_ablation import DIRECTIONS, paper_pair
from .transfer import annotation_pairs, HUMAN_CLAIM, PAIR_HUMAN, PAIR_MACHINE

__all__ = ["SweepConfig", "Target", "TARGETS", "TAB4", "TAB3", "Assumption", "ASSUMPTIONS", "CATEGORICAL", "CLAIM", "STATISTIC",
           "PAPER_RATIO_ID", "HEADLINE_RULE", "difference", "sweep_frame", "shared_noise_sweeps", "add_shared_noise_claims",
           "unfit", "ratio_sweep", "ratio_values", "summarize", "sweep_figure", "add_sweep_claim",
           "add_paper_ratio_claim", "headline"]

_CLAIM_ID = DIRECTIONS[0][0]
CLAIM = entry(_CLAIM_ID).statement
"""The claim (Table 4's first comparison, ``tab4-human-beats-gpt``) whose verdict is swept."""
TAB4, TAB3 = _CLAIM_ID, "tab3-human-beats-machine"
"""The ids of the swept claims (:data:`TARGETS`)."""
STATISTIC = "Overall accuracy on CheemsBench, human-subset model minus GPT-subset model (paired)"
"""Its statistic."""
PAPER_RATIO_ID = f"{TAB4}-paper-ratio"
"""Table 4's first comparison at the paper's GPT : human ratio (:func:`add_paper_ratio_claim`)."""
HEADLINE_RULE = (
    "Table 4's first comparison is tested twice: by the preference chapter at its own GPT : human ratio, and by the "
    "sensitivity chapter at the paper's ratio. The paper's claim is about its own ratio, so that test is the headline "
    "wherever it can be run. The Claims page shows the two side by side.")
"""Which of the two tests of Table 4's first comparison is the headline (glued by the chapters, :func:`headline`)."""
_VERDICT_COLORS = {"supported": "#59a14f", "contradicted": "#e15759", "inconclusive": "#9c9c9c",
                   "insufficient data": "#d9d9d9"}


@dataclass(frozen=True)
class SweepConfig:
    """How every point of a sweep is trained and tested."""

    model: str = "tiny-xs"
    """Reward-model size trained at every point (tiny names of :mod:`cheems_lib.models.reward_model`)."""
    seeds: tuple[int, ...] = (0,)
    """Training seeds per point."""
    epochs: int = 2
    """Training epochs of every model."""
    n_boot: int = 1000
    """Bootstrap replicates over benchmark prompts."""
    seed: int = 0
    """World and bootstrap seed (and the seed that picks the pairwise sets' pairs, as in the transfer chapter)."""
    direction: str = "greater"
    """What the claim says about the first model's accuracy minus the second's."""


@dataclass(frozen=True)
class Target:
    """A claim a sweep re-tests: the two models compared at every point and how the figure names them."""

    claim_id: str
    """The swept claim's ledger id."""
    claim: str
    """Its words."""
    statistic: str
    """What every point's estimate measures."""
    names: tuple[str, str]
    """The two training sets' names (first minus second)."""
    ylabel: str
    """The figure's y axis."""
    title: str
    """The figure's title, before "across the <parameter>"."""
    anchor: str
    """Suffix of the chapter section that shows the sweep (after the assumption's link)."""
    link: str = ""
    """The section that shows the sweep when it is not the sensitivity chapter's (then ``anchor`` is unused)."""
    note: str = ""
    """What the sweep holds fixed, added to the claim's reason (e.g. the reward models, in the downstream chapter)."""


TARGETS = {
    TAB4: Target(TAB4, CLAIM, STATISTIC, ("human", "gpt"), "human minus GPT\n(Overall accuracy)",
                 "Table 4, human minus GPT subset", ""),
    TAB3: Target(TAB3, HUMAN_CLAIM, "Overall accuracy on CheemsBench, pairwise human-annotated set minus a pairwise "
                 "machine-annotated set of as many pairs (paired)", (PAIR_HUMAN, PAIR_MACHINE),
                 "pairwise human minus machine\n(Overall accuracy)", "Our Table 3 question, human minus machine labels",
                 "-tab3"),
}
"""The claims the sweeps of this module re-test, by id. A sweep run elsewhere (the downstream chapter's, of Fig. 5)
passes its own :class:`Target` to :func:`sweep_figure` and :func:`add_sweep_claim`."""


@dataclass(frozen=True)
class Assumption:
    """How the book names, draws and records the sweep of one assumed parameter."""

    suffix: str
    """Ledger id of the sweep's claim, after the swept claim's id."""
    parameter: str
    """The parameter in prose ("the verdict holds for every <parameter> from ...")."""
    xlabel: str
    """The figure's x axis."""
    marker: str
    """Label of the dotted line at the figure's marked value."""
    link: str
    """The chapter section that shows the sweep (of Table 4; another target adds its anchor)."""
    unswept_reason: str
    """Why real files cannot be swept (the ``untestable`` claim's reason)."""
    unswept_says: str
    """The sentence the chapter shows on real files."""

    @property
    def claim_id(self) -> str:
        """The sweep's claim id for Table 4's comparison."""
        return self.claim_for(TAB4)

    def claim_for(self, target: str) -> str:
        """The sweep's claim id for the swept claim ``target``."""
        return f"{target}-{self.suffix}"


ASSUMPTIONS = {
    "shared_noise": Assumption(
        "vs-shared-noise", "humans' shared noise", "HumanAnnotator.shared_noise",
        " world's own value", "sensitivity-shared-noise", "real files have no simulator parameter to sweep",
        "These are real files: there is no simulated parameter to sweep."),
    "ratio": Assumption(
        "vs-ratio", "GPT : human ratio", "GPT-annotated prompts per human-annotated prompt",
        " paper's ratio", "sensitivity-ratio", "the sweep trains on the simulated subsets only",
        "These are real files: the ratio sweep runs on the simulated world only."),
    "annotator": Assumption(
        "separate-annotator", "human training annotator",
        "annotator of the human training subset (own: the benchmark's; 1, 2, ...: drawn)", " benchmark's own annotator",
        "sensitivity-annotator", "real files hold the labels they hold: there is no annotator to redraw",
        "These are real files: their human subset keeps the labels it has."),
}
"""The swept assumptions, by name (the annotator's: :mod:`cheems_lib.analyses.annotator_reuse`)."""
CATEGORICAL = {"annotator": "own"}
"""Assumptions whose points are categories, not a scale (the drawn annotators), with the label of the marked one."""


def difference(world, first, second, bench, cfg: SweepConfig, names: tuple[str, str] = TARGETS[TAB4].names):
    """Paired Overall accuracy, the model trained on ``first`` minus the one trained on ``second``, on ``bench``;
    ``diff`` is the :class:`~cheems_lib.estimates.Estimate` the row's numbers come from."""
    a, b = names
    fam = experiments.Family({a: list(first), b: list(second)}, seeds=tuple(cfg.seeds), epochs=cfg.epochs,
                             models={a: cfg.model, b: cfg.model}, group="sensitivity")
    res = experiments.evaluate(fam, world, records=bench, n_boot=cfg.n_boot, seed=cfg.seed, progress=False)
    diff = experiments.estimate(res, a) - experiments.estimate(res, b)
    lo, hi = diff.interval(seed=cfg.seed)
    return {"estimate": diff.value, "ci_low": lo, "ci_high": hi, "seeds": diff.seeds, "n": diff.n,
            "verdict": decide(diff, cfg.direction, seed=cfg.seed), "diff": diff}


def sweep_frame(rows: list[dict]):
    """The sweep's table: one row per value without the estimates, which ride along in ``attrs["diffs"]``
    (``{value: Estimate}``) for a claim that needs its replicates (:func:`add_paper_ratio_claim`)."""
    import pandas as pd

    frame = pd.DataFrame([{k: v for k, v in r.items() if k != "diff"} for r in rows])
    frame.attrs["diffs"] = {r["value"]: r["diff"] for r in rows}
    return frame


def shared_noise_sweeps(world, values: Sequence[float], cfg: SweepConfig = SweepConfig(), *, gpt_prompts: int = 0,
                        targets: Sequence[str] = (TAB4, TAB3)) -> dict:
    """``{claim id: sweep}`` for each of ``targets`` (:data:`TARGETS`): one row per value of the humans' shared
    noise, the claim's statistic, interval and verdict.

    ``world`` is the chapter's simulated :class:`cheems_lib.analyses.world_folder.World`; each value re-simulates it
    (same size and seed) with only that parameter changed, once for every target, and retrains the models on
    human labels and re-labels the benchmark. Table 4's GPT subset (first ``gpt_prompts``, default as many as
    human prompts) does not depend on it, so its model is trained once (the zoo reuses it); Table 3's machine pairs
    (:func:`cheems_lib.analyses.transfer.annotation_pairs`, from the world's GPT subset) are one list cut to as many pairs
    as that world's human pairs, so their model is retrained only where that count changes.
    """
    from tqdm.auto import tqdm

    if unknown := [t for t in targets if t not in TARGETS]:
        raise ValueError(f"no sweep target {unknown[0]!r}; targets are {list(TARGETS)}")
    rows: dict[str, list[dict]] = {t: [] for t in targets}
    n_gpt = gpt_prompts or SIZES[world.size]["pref_human"]
    gpt_all = world.gpt() if TAB3 in targets else []  # GPT labels are the same in every re-simulated world
    for v in tqdm(values, desc="shared noise"):
        # files are prefix-stable in their prompt count, so only the GPT prompts used are simulated
        files = build_world(WorldConfig(size=world.size, seed=world.seed, counts={"pref_gpt": n_gpt},
                                        human=replace(HumanAnnotator(), shared_noise=float(v)))).files
        human = files[LAYOUT["pref_human"]]
        bench = {"open": files[LAYOUT["bench_open"]], "human": files[LAYOUT["bench_human"]]}
        sets = {TAB4: (human, files[LAYOUT["pref_gpt"]])}
        if TAB3 in targets:
            sets[TAB3] = annotation_pairs(human, gpt_all, seed=cfg.seed)
        for t in targets:
            rows[t].append({"value": float(v), **difference(world, *sets[t], bench, cfg, TARGETS[t].names)})
    return {t: sweep_frame(rows[t]) for t in targets}


def add_shared_noise_claims(ledger, world, values: Sequence[float], cfg: SweepConfig = SweepConfig(), *, own: float,
                            swept: bool = True) -> tuple:
    """Sweep both :data:`TARGETS` over the humans' shared noise at ``values`` and the world's ``own`` value
    (:func:`shared_noise_sweeps`: one re-simulated world per value serves both) and add each sweep's claim
    (:func:`add_sweep_claim`); returns ``(Table 4's sweep, Table 3's sweep)``. Without ``swept`` (real files, or
    files missing) nothing is simulated: both sweeps are None and their claims untestable."""
    sweeps = shared_noise_sweeps(world, sorted(set(map(float, values)) | {own}), cfg) if swept else {}
    for target in (TAB4, TAB3):
        add_sweep_claim(ledger, sweeps.get(target), "shared_noise", own=own, target=target)
    return sweeps.get(TAB4), sweeps.get(TAB3)


def unfit(world, ratio: float) -> str | None:
    """Why the GPT : human ``ratio`` cannot be trained on ``world`` (too few GPT-annotated prompts), or None. The
    one check :func:`ratio_sweep` refuses with and the chapter filters its values and words its untestable claim by."""
    human, gpt = len(world.human), len(world.gpt())
    n = round(float(ratio) * human)
    if n <= gpt:
        return None
    return (f"GPT : human {float(ratio):.2f} : 1 needs {n:,} GPT-annotated prompts for the {human:,} human ones, and "
            f"the world (size {world.size}) has {gpt:,} (fix: a larger world size)")


def ratio_values(world, ratios: Sequence[float], paper: float) -> list[float]:
    """The GPT : human ratios the chapter sweeps: ``ratios`` with 1 : 1 (the other chapters') and the ``paper``'s
    added, ascending, those the world cannot hold left out (:func:`unfit`)."""
    return [v for v in sorted(set(map(float, ratios)) | {1.0, float(paper)}) if unfit(world, v) is None]


def ratio_sweep(world, ratios: Sequence[float], cfg: SweepConfig = SweepConfig()):
    """One row per ratio of GPT-annotated to human-annotated training prompts (the world's own
    labels): the human-subset model against a GPT-subset model on ``round(ratio * human prompts)``
    GPT prompts. Ratios beyond what the world holds are refused (:func:`unfit`)."""
    from tqdm.auto import tqdm

    human, gpt_all = world.human, world.gpt()
    rows = []
    for r in tqdm(ratios, desc="GPT : human ratio"):
        if why := unfit(world, r):
            raise ValueError(f"ratio {r}: {why}")
        n = round(float(r) * len(human))
        rows.append({"value": float(r), "gpt_prompts": n,
                     **difference(world, human, gpt_all[:n], world.bench, cfg)})
    return sweep_frame(rows)


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


def sweep_figure(sweep, name: str, *, marked: float, model: str, target: str = TAB4):
    """The statistic and its 95% interval across ``sweep`` (rows of :func:`shared_noise_sweeps` or
    :func:`ratio_sweep` for the claim ``target``), each point coloured by its verdict, a dotted line at ``marked``;
    ``model`` is named in the title; ``target`` is a claim id of :data:`TARGETS` or a :class:`Target`. ``sweep=None``
    (real files) gives a figure saying there is nothing to sweep."""
    import matplotlib.pyplot as plt

    if sweep is None:
        fig, ax = plt.subplots(figsize=(7, 1.2))
        ax.axis("off")
        ax.text(0.5, 0.5, "real files: no simulator parameter to sweep", ha="center", va="center")
        return fig
    spec, goal = ASSUMPTIONS[name], _target(target)
    fig, ax = plt.subplots(figsize=(7, 3.6))
    ax.axhline(0, color="black", lw=0.8)
    if name in CATEGORICAL:  # points with no order between them: no line, one tick each
        ax.set_xticks(sweep["value"], [CATEGORICAL[name] if v == marked else f"{v:g}" for v in sweep["value"]])
    else:
        ax.plot(sweep["value"], sweep["estimate"], color="#4e79a7", lw=1, zorder=1)
    for verdict, d in sweep.groupby("verdict"):
        ax.errorbar(d["value"], d["estimate"], yerr=[d["estimate"] - d["ci_low"], d["ci_high"] - d["estimate"]],
                    fmt="o", color=_VERDICT_COLORS[verdict], capsize=3, label=verdict, zorder=2)
    ax.axvline(marked, color="#4e79a7", ls=":", lw=1)
    ax.annotate(spec.marker, (marked, ax.get_ylim()[1]), fontsize=8, ha="left", va="top", color="#4e79a7")
    ax.set(xlabel=spec.xlabel, ylabel=goal.ylabel,
           title=f"{goal.title}, across the {spec.parameter} (simulated; {model})")
    ax.legend(title="verdict at this value", fontsize=8, title_fontsize=8, loc="best")
    fig.tight_layout()
    return fig


def _target(target) -> Target:
    """``target`` as a :class:`Target`: an id of :data:`TARGETS`, or a Target passed as is."""
    return target if isinstance(target, Target) else TARGETS[target]


def add_sweep_claim(ledger, sweep, name: str, *, own: float, target: str | Target = TAB4,
                    reason: str | None = None) -> None:
    """Add the sweep's claim to ``ledger``: does the verdict on ``target`` (an id of :data:`TARGETS`, or a
    :class:`Target`) at the world's own value ``own`` hold across ``sweep`` (:func:`summarize`)? ``sweep=None`` adds
    it as ``untestable``, with ``reason`` (default: the assumption's, for real files)."""
    spec, goal = ASSUMPTIONS[name], _target(target)
    # the paper reference: the claims registry's (data/paper/claims.yaml), filled when the ledger records it
    cid, link, ref, target = spec.claim_for(goal.claim_id), goal.link or spec.link + goal.anchor, "", goal.claim_id
    if sweep is None:
        says = spec.unswept_says if reason is None else f"Not swept: {reason}."
        ledger.add(Claim(
            cid, ref, f"the verdict on '{goal.claim}' holds across the {spec.parameter}", "untestable",
            "inconclusive", reason=reason or spec.unswept_reason, link=link, says={"inconclusive": says}))
        return
    verdict, base = summarize(sweep, own)
    parameter, span = spec.parameter, f"{sweep['value'].min():.3g} to {sweep['value'].max():.3g}"
    flips = ", ".join(f"{r.value:.3g} ({r.verdict})" for r in sweep.itertuples() if r.verdict != base["verdict"])
    ledger.add(Claim(
        cid, ref, f"the verdict on '{goal.claim}' holds for every {parameter} from {span}",
        "robustness", verdict, reason=f"a sweep of {target} over the assumed {parameter}: it says whether that "
        "claim's verdict rests on the assumption; not a claim of the paper, so not a finding" + goal.note,
        estimate=base["estimate"], ci_low=base["ci_low"], ci_high=base["ci_high"], seeds=base["seeds"], n=base.get("n"),
        unit=base.get("unit", "prompt"),
        statistic=f"{goal.statistic}, at the world's own {parameter}; swept over {span}",
        paper="no sweep in the paper", link=link,
        says={"supported": f"Across {parameter} from {span}, every value gives the verdict of the world's own value "
                           f"({base['verdict']}): on this range the claim does not depend on the assumption.",
              "contradicted": f"The verdict flips across {parameter} from {span}: {base['verdict']} at the world's own "
                              f"value, but {flips}. The claim rests on the assumption.",
              "inconclusive": _inconclusive_says(sweep, base, parameter, span, flips)}))


def _inconclusive_says(sweep, base: dict, parameter: str, span: str, flips: str) -> str:
    """The sweep claim's *inconclusive* sentence: the own value's definite verdict is not reached everywhere, or the
    own value has no definite verdict to hold (every value's verdict listed then)."""
    if base["verdict"] != "inconclusive":
        return (f"Across {parameter} from {span}, the verdict at the world's own value ({base['verdict']}) is not "
                f"reached everywhere: {flips}.")
    every = ", ".join(f"{r.value:.3g} ({r.verdict})" for r in sweep.itertuples())
    return (f"At the world's own {parameter} the verdict is inconclusive, so there is no definite verdict to hold "
            f"across {span}; the verdict at each value: {every}.")


SAME_RATIO = 0.05
"""Relative distance below which the preference chapter's GPT : human ratio counts as the paper's own: there the
two tests of Table 4's first comparison are one test run twice (:func:`add_paper_ratio_claim`)."""


def add_paper_ratio_claim(ledger, sweep, cfg: SweepConfig, *, ratio: float, why: str | None = None,
                          book_ratio: float | None = None) -> None:
    """Table 4's first comparison at the paper's GPT : human ``ratio`` (claim :data:`PAPER_RATIO_ID`, kind
    *finding*, the same statistic as ``tab4-human-beats-gpt``): the ratio sweep's row at ``ratio``, decided from
    its replicates. Without that row (``sweep`` None on real files, or the ratio left out because the world cannot
    hold it) the claim is *untestable* with ``why`` (:func:`unfit`'s reason; the sweep's unswept reason on real
    files), never absent. Where the preference chapter already trains at the paper's ratio (``book_ratio`` within
    :data:`SAME_RATIO` of it, as in the smoke world) it is the same test run twice: kind *robustness*, so that
    multiplicity counts it once."""
    _, a, b = DIRECTIONS[0]
    fields = dict(paper_ref="", claim=f"{CLAIM}, at the paper's GPT : human ratio ({ratio:.2f} : 1)",
                  paper=paper_pair(table("table4_ablation").set_index("training_data"), a, b), link="sensitivity-ratio")
    diff = None if sweep is None else sweep.attrs.get("diffs", {}).get(float(ratio))
    if diff is None:
        reason = why or ASSUMPTIONS["ratio"].unswept_reason
        ledger.add(Claim.untestable(PAPER_RATIO_ID, reason=f"not trained at the paper's ratio: {reason}", **fields))
        return
    row = sweep.loc[sweep["value"] == float(ratio)].iloc[0]
    human = round(row["gpt_prompts"] / ratio)
    same = book_ratio is not None and abs(book_ratio - ratio) <= SAME_RATIO * ratio
    if same:
        fields["reason"] = (f"a second test of {TAB4}: the preference chapter already trains at {book_ratio:.2f} : 1, "
                            f"the paper's ratio, so this repeats it with the sensitivity chapter's models")
    ledger.add(Claim.test(
        PAPER_RATIO_ID, diff, cfg.direction, seed=cfg.seed, kind="robustness" if same else "finding", **fields,
        statistic=f"Overall of {a} minus {b} ({cfg.model} reward models), paired; trained at GPT : human prompts "
                  f"{int(row['gpt_prompts']):,} : {human:,}, the paper's {ratio:.2f} : 1"))


def headline(frame) -> str:
    """Short sentences that name the headline test of Table 4's first comparison in the ledger ``frame`` (the Claims
    page's, :func:`cheems_lib.analyses.claims.to_frame`; rule :data:`HEADLINE_RULE`): the test at the paper's ratio
    where it was run, else the one at the book's ratio, with both verdicts and whether they agree. The claim ids are
    in the ledger, not in these sentences."""
    rows = {r["id"]: r for r in frame.to_dict("records")} if len(frame) else {}
    one, paper = rows.get(TAB4), rows.get(PAPER_RATIO_ID)

    def said(r):
        if r["kind"] == "untestable":
            return f"untestable, {r['reason']}"
        seeds = int(r["seeds"])
        return (f"{r['verdict']}, {r['estimate']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}] over {seeds} training "
                f"seed{'s' if seeds != 1 else ''}")

    if paper is None or one is None:
        missing = " and ".join(w for w, r in (("the preference chapter's test", one),
                                              ("the test at the paper's ratio", paper)) if r is None)
        return f"Table 4's first comparison has no headline in this ledger: {missing} is missing from it."
    if paper["kind"] == "robustness":
        return (f"The preference chapter already trains at the paper's GPT : human ratio, so its test is the "
                f"headline: {said(one)}. The sensitivity chapter repeats it: {said(paper)}.")
    if paper["kind"] == "untestable":
        return (f"The headline is the preference chapter's test, at its own GPT : human ratio: {said(one)}. "
                f"At the paper's ratio the comparison is {said(paper)}. So the paper's own setting is not tested in "
                "this build.")
    agree = ("The two verdicts agree." if paper["verdict"] == one["verdict"] else
             "The two verdicts differ: the result depends on the setting.")
    return (f"The headline is the test at the paper's GPT : human ratio: {said(paper)}. "
            f"At the preference chapter's ratio: {said(one)}. {agree}")
