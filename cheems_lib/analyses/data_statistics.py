"""Table 1: the statistics of CheemsBench and CheemsPreference, tested as claims and drawn.

:mod:`cheems_lib.analyses.calibration` computes Table 1 from the files (:func:`~cheems_lib.analyses.calibration.table1`,
:func:`~cheems_lib.analyses.calibration.table1_per_prompt`); this module is what the data chapter does
with it:

- :func:`table1`, :func:`paper_table1`: Table 1 of the files and the paper's, both with a column for
  a release's unsplit ``cheems_preference.jsonl`` (:data:`WHOLE_PREFERENCE`; the paper's: its two
  subsets pooled);
- :func:`other_data_columns`: the columns of Table 1 whose file the manifest says is other data
  (``"comparable": false``, the rule of :meth:`cheems_lib.world_files.Layout.comparable`);
- :func:`beside_paper`: Table 1 of the files next to the paper's, with their ratio, the paper's side
  left empty for those columns;
- :func:`comparison_bound`: the most comparisons per prompt a mean response count allows at its
  narrowest spread, and the spread needed to reach a target;
- :func:`add_comparison_claims`, :func:`add_length_claims`: the ledger claims on comparisons
  (excluding ties) per prompt and on the chosen / rejected length ratio, each with a paired
  bootstrap over prompts stratified by category (:func:`cheems_lib.estimates.ratio_estimate`);
  :func:`add_length_direction_claims`: whether chosen is longer or shorter than rejected in each
  human-labelled file, in the direction of the paper's Table 1;
- :func:`response_counts_figure`, :func:`category_counts`, :func:`categories_figure`,
  :func:`response_lengths`, :func:`lengths_figure`: what the files look like.

Files are ``{layout path: records}`` (spec §6), so the same code describes the real files.
"""
from __future__ import annotations

from ..categories import CATEGORIES
from ..estimates import all_of, p_value, ratio_estimate
from ..world.simulation import MODELS, response_count_pmf
from ..world_files import GPT_LAYOUT, PAPER_FILES, RELEASE_FILES
from .calibration import claim_kind, paper_table1 as _paper_table1, table1 as _table1, TABLE1_COLUMNS, table1_per_prompt
from .claims import TABLE1_TOLERANCE, Claim

__all__ = ["FILE_NAMES", "WHOLE_PREFERENCE", "TABLE1_FILES", "table1", "paper_table1", "other_data_columns", "beside_paper", "TABLE1_COUNTS", "table1_styler", "comparison_bound", "bound_texts", "add_comparison_claims",
           "add_length_claims", "LENGTH_DIRECTION_FILES", "add_length_direction_claims", "PREFERENCE_COLUMNS",
           "add_responses_claim", "response_counts_figure", "category_counts", "categories_figure", "response_lengths", "lengths_figure"]

FILE_NAMES = {f.column: (f.short, f.name) for f in PAPER_FILES.values()}
"""Table 1's column -> (claim id suffix, name in prose) (from :data:`cheems_lib.world_files.PAPER_FILES`)."""
WHOLE_PREFERENCE = "cheemspreference"
"""Table 1's column of a release's unsplit ``cheems_preference.jsonl`` (no human/GPT split): its own
statistics, beside the paper's two preference subsets pooled; it has no claim of its own."""
TABLE1_FILES = {**TABLE1_COLUMNS, WHOLE_PREFERENCE: RELEASE_FILES["preference"]}
"""Table 1 column -> layout path, the unsplit preference file included."""
# the benchmark's GPT-annotated variants repeat the human files' prompts and responses
_GPT_BENCH = tuple(GPT_LAYOUT.values())


def table1(files: dict, *, length_scale: float = 1.0):
    """:func:`cheems_lib.analyses.calibration.table1` of every file of :data:`TABLE1_FILES` present."""
    return _table1(files, length_scale=length_scale, columns=TABLE1_FILES)


def paper_table1():
    """:func:`cheems_lib.analyses.calibration.paper_table1` with :data:`WHOLE_PREFERENCE`: CheemsPreference's GPT and human
    subsets pooled (prompts and comparisons summed; per-prompt and length statistics weighted by prompts or
    comparisons, as a pooled file's own statistics would be)."""
    paper = _paper_table1()
    parts = paper[["cheemspreference_gpt", "cheemspreference_human"]]
    prompts, pairs = parts.loc["prompts"], parts.loc["comparisons_excluding_ties"]
    pooled = {"prompts": prompts.sum(), "comparisons_excluding_ties": pairs.sum()}
    for stat, weight in [("responses_per_prompt", prompts), ("avg_chars_prompt", prompts),
                         ("avg_chars_chosen", pairs), ("avg_chars_rejected", pairs)]:
        pooled[stat] = (parts.loc[stat] * weight).sum() / weight.sum()
    pooled["comparisons_per_prompt"] = pooled["comparisons_excluding_ties"] / pooled["prompts"]
    paper[WHOLE_PREFERENCE] = [pooled[stat] for stat in paper.index]
    return paper


def other_data_columns(world, ours) -> dict[str, str]:
    """Column -> what its file holds, for each column of ``ours`` (:func:`table1`) whose file ``world``'s
    manifest marks as other data (``world.other_data(path)`` not None, see
    :meth:`cheems_lib.analyses.world_folder.World.other_data`): the ``other`` of :func:`beside_paper` and of
    the claims below."""
    holds = {col: world.other_data(path) for col, path in TABLE1_FILES.items() if col in ours.columns}
    return {col: what for col, what in holds.items() if what}


def beside_paper(ours, paper, other: dict | None = None):
    """Table 1 as ``(file, statistic)`` rows with columns ``paper``, ``ours`` and ``ours / paper``
    (``ours``: :func:`table1`; ``paper``: :func:`paper_table1`). A column in ``other`` (column -> what the
    file holds, for files the manifest says are other data) gets no paper values (NaN), only ours."""
    import pandas as pd

    def theirs(col):
        return float("nan") if col in (other or {}) else paper.loc[ours.index, col]

    side = pd.concat({col: pd.DataFrame({"paper": theirs(col), "ours": ours[col]}, index=ours.index)
                      for col in ours.columns})
    side["ours / paper"] = side["ours"] / side["paper"]
    side.index.names = ["file", "statistic"]
    return side


TABLE1_COUNTS = ("prompts", "comparisons_excluding_ties")
"""Table 1's statistics that are counts, shown as integers."""


def table1_styler(side):
    """:func:`beside_paper` as the chapter shows it: counts (:data:`TABLE1_COUNTS`) as integers with thousands
    separators (``1,146``, not ``1,146.00``), the other statistics and every ratio with two decimals, a missing
    value as "–"; row labels with spaces for underscores, so that they wrap on a narrow page and the column
    ``ours`` stays in view (the CSV keeps the names as they are)."""
    import pandas as pd

    counts = side.index[side.index.get_level_values("statistic").isin(TABLE1_COUNTS)]
    return (side.style.format("{:,.2f}", na_rep="–")
            .format("{:,.0f}", na_rep="–", subset=pd.IndexSlice[counts, ["paper", "ours"]])
            .format_index(lambda label: str(label).replace("_", " "), axis="index"))


def comparison_bound(mean: float, target: float) -> tuple[float, float]:
    """The most comparisons per prompt at a mean of ``mean`` responses with the narrowest spread (every
    prompt ``floor(mean)`` or ``floor(mean) + 1`` responses, every pair ordered), and the variance of the
    response count needed to reach ``target`` with no ties: E[C(n, 2)] = (E[n²] − E[n]) / 2.

    ``comparison_bound(2.5, 2.0) == (2.0, 0.25)``: half the prompts have 2 responses (1 pair), half 3 (3 pairs).
    """
    k, frac = int(mean), mean - int(mean)
    bound = (1 - frac) * k * (k - 1) / 2 + frac * (k + 1) * k / 2
    return bound, 2 * target + mean - mean * mean


def bound_texts(paper) -> dict[str, str]:
    """The prose's numbers on the preference files' response counts, as ``{glue name: text}``:
    ``mean_``, ``target_``, ``bound_``, ``var_`` with suffix ``h`` (human) or ``g`` (GPT), and
    ``count_range`` (the simulator's response counts)."""
    import inspect

    out = {}
    for col, short in [("cheemspreference_human", "h"), ("cheemspreference_gpt", "g")]:
        m, target = paper.loc["responses_per_prompt", col], paper.loc["comparisons_per_prompt", col]
        bound, var = comparison_bound(m, target)
        out.update({f"mean_{short}": f"{m:.2f}", f"target_{short}": f"{target:.2f}",
                    f"bound_{short}": f"{bound:.2f}", f"var_{short}": f"{var:.2f}"})
    low = inspect.signature(response_count_pmf).parameters["low"].default
    out["count_range"] = f"{low} to {len(MODELS)}"
    return out


def _per_prompt(files: dict, col: str):
    """Table 1's per-prompt counts of one column's file and the prompts' categories (the bootstrap strata)."""
    recs = files[TABLE1_FILES[col]]
    return table1_per_prompt(recs), [r.top_category for r in recs]


def _comparisons_paper(paper, col: str) -> str:
    return (f"{paper.loc['comparisons_excluding_ties', col]:,.0f} comparisons / {paper.loc['prompts', col]:,.0f} "
            f"prompts = {paper.loc['comparisons_per_prompt', col]:.2f} per prompt")


def _file_comparison_claim(est, diff, target: float, col: str, paper, common: dict, seed: int) -> Claim:
    """Claim ``tab1-comparisons-<file>``: the file's comparisons per prompt (``est``) within ±TABLE1_TOLERANCE of
    the paper's ``target`` (``diff``: ``est / target - 1``)."""
    (short, name), tol = FILE_NAMES[col], TABLE1_TOLERANCE
    lo, hi = est.interval()
    opening = (f"{name}: {est.value:.2f} comparisons per prompt (95% interval {lo:.2f} to {hi:.2f}) against the "
               f"paper's {target:.2f}, ")
    off = "off by {estimate:+.1%} (95% interval {lo:+.1%} to {hi:+.1%}): "
    return Claim.test(
        f"tab1-comparisons-{short}", diff, "equal", margin=tol, seed=seed, **common,
        paper=_comparisons_paper(paper, col),
        claim=f"the {name} file has Table 1's comparisons (excluding ties) per prompt",
        statistic=f"comparisons per prompt, ours / paper - 1 (reached: within ±{tol:.0%})",
        says={"supported": opening + "off by {estimate:+.1%}: within ±" + f"{tol:.0%}.",
              "contradicted": opening + off + f"outside ±{tol:.0%}.",
              "inconclusive": opening + off + f"not clearly within ±{tol:.0%}."})


def _all_files_claim(rel: dict, cols, paper, common: dict, seed: int) -> Claim:
    """Claim ``tab1-comparisons``: every file within ±TABLE1_TOLERANCE, decided by the farthest one."""
    tol = TABLE1_TOLERANCE
    verdict, worst, est = all_of(rel, "equal", margin=tol, seed=seed)
    lo, hi = est.interval(seed=seed)
    interval = "{estimate:+.1%} (95% interval {lo:+.1%} to {hi:+.1%})"
    return Claim(
        id="tab1-comparisons", verdict=verdict, estimate=est.value, ci_low=lo, ci_high=hi, seeds=est.seeds, n=est.n,
        unit=est.unit, p=p_value(est, "equal", margin=tol, seed=seed), direction="equal", margin=tol, **common,
        claim="every file has Table 1's comparisons (excluding ties) per prompt",
        statistic=f"comparisons per prompt, ours / paper - 1, in the file farthest from being within ±{tol:.0%}",
        paper="; ".join(f"{FILE_NAMES[c][1]} {paper.loc['comparisons_per_prompt', c]:.2f}" for c in cols),
        says={"supported": f"Every file reaches the paper's comparisons per prompt within ±{tol:.0%}; the farthest, "
                           f"{worst}, is off by " + interval + ".",
              "contradicted": f"Not every file reaches the paper's comparisons per prompt: {worst} is off by "
                              + interval + f", outside ±{tol:.0%}.",
              "inconclusive": f"No file is clearly outside ±{tol:.0%} of the paper's comparisons per prompt, but "
                              f"{worst} is not clearly within it: off by " + interval + "."})


def add_comparison_claims(ledger, files: dict, ours, paper, *, simulated: bool, n_boot: int, seed: int,
                          other: dict | None = None):
    """Add a claim per paper file of ``ours`` (Table 1 of ``files``) that its comparisons (excluding ties) per
    prompt are the paper's within ±TABLE1_TOLERANCE, then the claim that every file's are; return the
    table beside the paper, with the most each file's response counts allow (every pair ordered).

    A file whose column ``other`` maps to what it holds (the manifest's ``content``: other data, see
    :meth:`cheems_lib.world_files.Layout.comparable`) gets an *untestable* claim saying so and no paper
    value; the unsplit preference file (:data:`WHOLE_PREFERENCE`) gets a row and no claim. Last, §4.1's responses
    per prompt (:func:`add_responses_claim`). Claims are ``calibrated`` on a ``simulated`` world
    (:func:`~cheems_lib.analyses.calibration.claim_kind`).
    """
    import pandas as pd

    common = dict(paper_ref="", link="paper-table1", **claim_kind("tab1-comparisons", simulated))
    other = other or {}
    rel, rows = {}, []
    for col in ours.columns:
        per, cats = _per_prompt(files, col)
        est = ratio_estimate(per["comparisons"], strata=cats, n_boot=n_boot, seed=seed)
        target = float("nan") if col in other else paper.loc["comparisons_per_prompt", col]
        lo, hi = est.interval()
        rows.append({"file": TABLE1_FILES[col], "paper": target, "ours": est.value, "ci_low": lo,
                     "ci_high": hi, "ours / paper": est.value / target,
                     "ours if every pair were ordered": per["all_pairs"].mean(),
                     "responses per prompt, paper": (float("nan") if col in other
                                                     else paper.loc["responses_per_prompt", col]),
                     "responses per prompt, ours": ours.loc["responses_per_prompt", col]})
        if col in FILE_NAMES and col not in other:
            rel[FILE_NAMES[col][1]] = est / target - 1
            ledger.add(_file_comparison_claim(est, rel[FILE_NAMES[col][1]], target, col, paper, common, seed))
    for col in [c for c in FILE_NAMES if FILE_NAMES[c][1] not in rel]:  # an absent file, or other data: untestable
        reason = (f"the paper's numbers are not comparable: {TABLE1_FILES[col]} holds {other[col]}" if col in other
                  else f"needs {TABLE1_COLUMNS[col]}")
        ledger.add(Claim.untestable(f"tab1-comparisons-{FILE_NAMES[col][0]}", common["paper_ref"],
                                    f"the {FILE_NAMES[col][1]} file has Table 1's comparisons (excluding ties) per "
                                    "prompt", reason, link="paper-table1"))
    if rel:
        ledger.add(_all_files_claim(rel, [c for c in ours.columns if c in FILE_NAMES and c not in other], paper,
                                    common, seed))
    else:
        why = ("needs " + " or ".join(TABLE1_COLUMNS.values()) if not other
               else "the paper's numbers are not comparable with these files (their manifest says so)")
        ledger.add(Claim.untestable("tab1-comparisons", common["paper_ref"], "every file has Table 1's comparisons "
                                    "(excluding ties) per prompt", why, link="paper-table1"))
    add_responses_claim(ledger, files, n_boot=n_boot, seed=seed, simulated=simulated, other=other)
    return pd.DataFrame(rows, columns=["file", "paper", "ours", "ci_low", "ci_high", "ours / paper",
                                       "ours if every pair were ordered", "responses per prompt, paper",
                                       "responses per prompt, ours"])


def _length_claims(ratio, paper_ratio: float, common: dict, seed: int) -> list[Claim]:
    """The direction (chosen longer) and the size (within ±TABLE1_TOLERANCE of the paper's ratio) claims."""
    tol, (r_lo, r_hi) = TABLE1_TOLERANCE, ratio.interval(seed=seed)
    ratio_text = f"{ratio.value:.3f} (95% interval {r_lo:.3f} to {r_hi:.3f})"
    against = "(95% interval {lo:+.1%} to {hi:+.1%}) against the paper's " + f"{paper_ratio - 1:+.1%}."
    gap = Claim.test(
        "tab1-gpt-length-gap", ratio - 1, "greater", seed=seed, **common,
        claim="in the GPT-annotated preference subset, chosen responses are longer than rejected ones",
        statistic="mean chosen length / mean rejected length - 1, GPT-annotated preference subset",
        says={"supported": "As in the paper, chosen responses are longer than rejected ones: by {estimate:.1%} (95% "
                           "interval {lo:.1%} to {hi:.1%}) against the paper's " + f"{paper_ratio - 1:.1%}.",
              "contradicted": "Unlike the paper, chosen responses are shorter than rejected ones: {estimate:+.1%} "
                              + against,
              "inconclusive": "Chosen and rejected responses are not clearly of different length: {estimate:+.1%} "
                              + against})
    size = Claim.test(
        "tab1-gpt-length-ratio", ratio / paper_ratio - 1, "equal", margin=tol, seed=seed, **common,
        claim="the GPT-annotated preference subset has Table 1's ratio of chosen to rejected length",
        statistic=f"(mean chosen / mean rejected length), ours / paper - 1 (reached: within ±{tol:.0%})",
        says={v: f"The ratio of mean chosen to mean rejected length is {ratio_text}, the paper's {paper_ratio:.3f}: "
                 "off by {estimate:+.1%} (95% interval {lo:+.1%} to {hi:+.1%}), " + t
              for v, t in [("supported", f"within ±{tol:.0%}."), ("contradicted", f"outside ±{tol:.0%}."),
                           ("inconclusive", f"not clearly within ±{tol:.0%}.")]})
    return [gap, size]


def add_length_claims(ledger, files: dict, paper, *, simulated: bool, n_boot: int, seed: int,
                      other: dict | None = None) -> None:
    """Add ``tab1-gpt-length-gap`` (chosen longer than rejected in the GPT-annotated preference subset) and
    ``tab1-gpt-length-ratio`` (their ratio within ±TABLE1_TOLERANCE of Table 1's), from one paired
    bootstrap of both mean lengths; both ``untestable`` when ``files`` hold no such subset, or when
    ``other`` maps its column to what it holds (other data, see :func:`add_comparison_claims`)."""
    col = "cheemspreference_gpt"
    paper_ratio = paper.loc["avg_chars_chosen", col] / paper.loc["avg_chars_rejected", col]
    common = dict(paper_ref="", link="paper-table1",
                  paper=(f"chosen {paper.loc['avg_chars_chosen', col]:.2f} / rejected "
                         f"{paper.loc['avg_chars_rejected', col]:.2f} characters = {paper_ratio:.3f}"),
                  **claim_kind("tab1-gpt-length-ratio", simulated))
    holds = (other or {}).get(col)
    if holds:
        for cid in ("tab1-gpt-length-gap", "tab1-gpt-length-ratio"):
            ledger.add(Claim.untestable(cid, common["paper_ref"], "chosen vs rejected length in the GPT-annotated "
                                        "preference subset", f"the paper's numbers are not comparable: "
                                        f"{TABLE1_COLUMNS[col]} holds {holds}", link="paper-table1"))
        return
    if TABLE1_COLUMNS[col] in files:
        per, cats = _per_prompt(files, col)
        chosen, rejected = (ratio_estimate(per[k], strata=cats, n_boot=n_boot, seed=seed)
                            for k in ("chosen", "rejected"))
        for claim in _length_claims(chosen / rejected, paper_ratio, common, seed):  # same resamples: paired
            ledger.add(claim)
        return
    for cid in ("tab1-gpt-length-gap", "tab1-gpt-length-ratio"):
        ledger.add(Claim(
            id=cid, verdict="inconclusive", **{**common, "kind": "untestable", "reason": "these files hold no "
                                                  "GPT-annotated preference subset"},
            claim="chosen vs rejected length in the GPT-annotated preference subset", statistic="",
            says={"inconclusive": "These files hold no GPT-annotated preference subset, so its lengths are not "
                                  "tested."}))


LENGTH_DIRECTION_FILES = ("cheemsbench_open_prompt", "cheemsbench_human_instruction", "cheemspreference_human")
"""The human-labelled Table 1 columns whose chosen-vs-rejected length direction is a claim (GPT's is
``tab1-gpt-length-gap``): the paper's benchmark picks the shorter response, its human preference subset the
longer one; each direction is read from the paper's Table 1, never typed."""


def add_length_direction_claims(ledger, files: dict, paper, *, n_boot: int, seed: int,
                                other: dict | None = None) -> None:
    """Add ``tab1-length-direction-<file>`` for each column of :data:`LENGTH_DIRECTION_FILES`: the mean chosen
    length over the mean rejected length, minus 1 (one paired bootstrap over prompts), in the direction of the
    paper's Table 1 (chosen longer: ``greater``; shorter: ``less``). Its kind comes from the claims registry (the
    ledger fills it from its source): on a simulated world a *simulator-check*, since no model is trained and the
    annotators' length preference, an input of the simulator, decides which response is chosen; on real files a
    *finding*. *untestable* when the file is absent or holds other data."""
    for col in LENGTH_DIRECTION_FILES:
        (short, name), path = FILE_NAMES[col], TABLE1_COLUMNS[col]
        chosen_p, rejected_p = paper.loc["avg_chars_chosen", col], paper.loc["avg_chars_rejected", col]
        direction, word = ("greater", "longer") if chosen_p > rejected_p else ("less", "shorter")
        fields = dict(paper_ref="", link="paper-table1",
                      claim=f"in {name}, chosen responses are {word} than rejected ones",
                      paper=f"chosen {chosen_p:.2f} vs rejected {rejected_p:.2f} characters (Table 1)")
        holds = (other or {}).get(col)
        if holds or path not in files:
            why = f"the paper's numbers are not comparable: {path} holds {holds}" if holds else f"needs {path}"
            ledger.add(Claim.untestable(f"tab1-length-direction-{short}", reason=why, **fields))
            continue
        per, cats = _per_prompt(files, col)
        chosen, rejected = (ratio_estimate(per[k], strata=cats, n_boot=n_boot, seed=seed) for k in ("chosen", "rejected"))
        ours = "mean chosen over mean rejected length "
        tail = "{estimate:+.1%} (95% interval {lo:+.1%} to {hi:+.1%})"
        ledger.add(Claim.test(
            f"tab1-length-direction-{short}", chosen / rejected - 1, direction, seed=seed, kind="", **fields,
            statistic=f"mean chosen length / mean rejected length - 1, {name}; paired",
            says={"supported": f"In {name}, as in the paper, chosen responses are {word} than rejected ones: {ours}"
                               + tail + ".",
                  "contradicted": f"In {name}, unlike the paper, chosen responses are "
                                  f"{'shorter' if word == 'longer' else 'longer'} than rejected ones: {ours}" + tail + ".",
                  "inconclusive": f"In {name}, chosen and rejected responses are not clearly of different length: "
                                  f"{ours}" + tail + f"; the paper's chosen are {word}."}))


def response_counts_figure(files: dict):
    """Histogram of responses per prompt in each Table 1 file present (:data:`TABLE1_FILES`), as shares of its
    prompts."""
    import matplotlib.pyplot as plt
    import pandas as pd
    import seaborn as sns

    counts = pd.DataFrame([{"file": path, "responses": len(r.responses)}
                           for path in TABLE1_FILES.values() if path in files for r in files[path]])
    fig, ax = plt.subplots(figsize=(8, 3.2))
    sns.histplot(counts, x="responses", hue="file", discrete=True, stat="probability", common_norm=False,
                 multiple="dodge", shrink=0.8, ax=ax)
    ax.set(xlabel="responses per prompt", ylabel="share of prompts")
    fig.tight_layout()
    return fig


def category_counts(files: dict):
    """Prompts per file and top-level category (``category``: "中文 (gloss)"), with each file's ``share`` and
    the English ``gloss``; the benchmark's GPT-annotated variants are left out (same prompts).

    A category outside the paper's eight has no English gloss: it is glossed ``other 1``, ``other 2``, ... in the
    order of its name (its row's ``category`` says which), so that each keeps a bar of its own in the figure,
    whose font has no Chinese glyphs."""
    import pandas as pd

    kept = [(path, r.top_category) for path, recs in files.items() if not path.startswith(_GPT_BENCH) for r in recs]
    other = {c: f"other {k}" for k, c in enumerate(sorted({c for _, c in kept} - set(CATEGORIES)), 1)}
    gloss = {**other, **CATEGORIES}
    rows = [{"file": path, "category": f"{c} ({gloss[c]})", "gloss": gloss[c]} for path, c in kept]
    cats = pd.DataFrame(rows).value_counts().rename("prompts").reset_index()
    cats["share"] = cats["prompts"] / cats.groupby("file")["prompts"].transform("sum")
    return cats


def categories_figure(cats):
    """Bars of each file's share of prompts per category (:func:`category_counts`)."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    fig, ax = plt.subplots(figsize=(9, 4))
    sns.barplot(cats, x="gloss", y="share", hue="file", ax=ax)
    ax.set_xlabel("top-level category")
    ax.set_ylabel("share of prompts")
    ax.tick_params(axis="x", rotation=30)
    fig.tight_layout()
    return fig


def response_lengths(files: dict, length_scale: float):
    """Every response's length per file (``file``, ``chars``), divided by ``length_scale`` (real length); the
    benchmark's GPT-annotated variants are left out (same responses)."""
    import pandas as pd

    return pd.DataFrame([{"file": path, "chars": len(x.content) / length_scale}
                         for path, recs in files.items() if not path.startswith(_GPT_BENCH)
                         for r in recs for x in r.responses], columns=["file", "chars"])


def lengths_figure(lengths):
    """Density of response lengths per file (:func:`response_lengths`); the x axis stops at the 99th percentile."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    fig, ax = plt.subplots(figsize=(8, 3.5))
    sns.histplot(lengths, x="chars", hue="file", element="step", stat="density", common_norm=False, bins=40, ax=ax)
    ax.set_xlabel("response length (characters, rescaled)")
    ax.set_xlim(0, lengths["chars"].quantile(0.99))
    fig.tight_layout()
    return fig


PREFERENCE_COLUMNS = ("cheemspreference_human", "cheemspreference_gpt")
"""Table 1's CheemsPreference columns, pooled for §4.1's responses per prompt (or the release's unsplit file)."""


def add_responses_claim(ledger, files: dict, *, n_boot: int, seed: int, simulated: bool,
                        other: dict | None = None) -> None:
    """``s41-more-than-five-responses`` (§4.1: "each prompt has more than 5 responses on average"): CheemsPreference's
    mean responses per prompt, its subsets pooled (or the release's unsplit file), minus the paper's 5, with a
    bootstrap over prompts stratified by category. *calibrated* on a simulated world (each prompt's count is drawn
    around Table 1's mean), a *finding* on real files; *untestable* without a preference file, or where ``other``
    (as :func:`add_comparison_claims`'s) says a preference file holds other data."""
    paths = [TABLE1_FILES[c] for c in PREFERENCE_COLUMNS if TABLE1_FILES[c] in files and c not in (other or {})]
    if not paths and TABLE1_FILES[WHOLE_PREFERENCE] in files and WHOLE_PREFERENCE not in (other or {}):
        paths = [TABLE1_FILES[WHOLE_PREFERENCE]]
    threshold = 5  # the paper's words, "more than 5 responses per prompt on average"
    fields = dict(paper_ref="", link="paper-table1", claim=f"CheemsPreference has more than {threshold} responses "
                  "per prompt on average", paper=f"more than {threshold} responses per prompt on average (§4.1); "
                  "Table 1: " + ", ".join(f"{_paper_table1().loc['responses_per_prompt', c]:.2f}"
                                          for c in PREFERENCE_COLUMNS))
    cid = "s41-more-than-five-responses"
    if not paths:
        why = ("the paper's numbers are not comparable: the preference files hold other data"
               if set(PREFERENCE_COLUMNS) & set(other or {}) else "needs cheems_preference/human.jsonl or gpt.jsonl")
        ledger.add(Claim.untestable(cid, reason=why, **fields))
        return
    recs = [r for p in paths for r in files[p]]
    counts = [len(r.responses) for r in recs]
    est = ratio_estimate(counts, strata=[r.top_category for r in recs], n_boot=n_boot, seed=seed)
    ledger.add(Claim.test(
        cid, est - threshold, "greater", seed=seed, **fields, **claim_kind(cid, simulated),
        statistic=f"mean responses per prompt in {' and '.join(paths)}, minus {threshold}",
        says={"supported": f"As §4.1 says, CheemsPreference has more than {threshold} responses per prompt: "
                           "{estimate:+.2f} (95% interval {lo:+.2f} to {hi:+.2f}) above it.",
              "contradicted": f"Unlike §4.1, CheemsPreference has fewer than {threshold} responses per prompt: "
                              "{estimate:+.2f} (95% interval {lo:+.2f} to {hi:+.2f}) from it.",
              "inconclusive": f"CheemsPreference's responses per prompt are not clearly above {threshold}: "
                              "{estimate:+.2f} (95% interval {lo:+.2f} to {hi:+.2f}) from it."}))
