"""cheems_lib.analyses.claims_page: the Claims page's loading, counts, interval figure, power line and tables."""
from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd

from cheems_lib import estimates
from cheems_lib.analyses import claim_registry, claims, claims_page
from cheems_lib.analyses.claims import Claim, Ledger
from cheems_lib.estimates import Estimate
from cheems_lib.publishing.claims_files import claims_dir
from test_claims_files import _page_shows


def _saved(tmp_path, chapter="preference"):
    """One chapter's ledger (a supported finding, an inconclusive finding, an untestable claim), saved and shown."""
    ledger = Ledger(chapter, "simulated world (size smoke, seed 0)", registered=False)  # made-up claims
    sure = Estimate(np.array([0.03]), np.linspace(0.01, 0.05, 200).reshape(1, -1), n=200)
    unsure = Estimate(np.array([0.01, 0.01]), np.stack([np.linspace(-0.01, 0.03, 200)] * 2), n=100)
    ledger.add(Claim.test("tab4-x", sure, "greater", paper_ref="Table 4", claim="x helps", kind="finding",
                          link="tab-x"), glue=False)
    ledger.add(Claim.test("tab4-y", unsure, "greater", paper_ref="Table 4", claim="y helps", kind="finding"),
               glue=False)
    ledger.add(Claim("fig7-z", "§6.4", "z", "untestable", "inconclusive", reason="no pretrained tiny models"),
               glue=False)
    run = json.loads(ledger.save(tmp_path, glue=False).read_text(encoding="utf-8"))["run"]
    _page_shows(tmp_path, chapter, run)


def test_every_verdict_has_its_colour():
    """A new verdict needs its colour in the figure and the ledger (the check the page used to make itself)."""
    assert set(claims_page.VERDICT_COLOURS) == set(estimates.VERDICTS) | {"untestable"} == set(claims_page.SHOWN_VERDICTS)


def test_load_reads_the_shown_runs_and_names_the_rest(tmp_path):
    """The page's ledger is the shown claims with the multiplicity columns; chapters without a file are missing,
    a file of another run is stale and not missing; sources come from the rows."""
    _saved(tmp_path)
    _saved(tmp_path, "data")
    (tmp_path / "book" / "data.ipynb").unlink()  # its page no longer shows the run that wrote data.json
    page = claims_page.load(claims_dir(tmp_path), tmp_path / "book")
    assert page.ledger["id"].tolist() == ["tab4-x", "tab4-y", "fig7-z"]
    assert set(claims.CSV_COLUMNS) <= set(page.ledger.columns)
    assert page.order == ["preference"] and list(page.stale) == ["data"]
    assert "preference" not in page.missing and "data" not in page.missing and "conflicts" in page.missing
    assert "claims" not in page.missing and page.sources == ["simulated world (size smoke, seed 0)"]


def test_summary_counts_kinds_and_findings(tmp_path):
    """The kind-by-verdict table and the glued counts, in the order the page glues them."""
    _saved(tmp_path)
    counts, numbers = claims_page.summary(claims_page.load(claims_dir(tmp_path), tmp_path / "book").ledger)
    assert counts.loc["finding", "supported"] == 1 and counts.loc["untestable", "untestable"] == 1
    assert counts["inconclusive"].sum() == 1  # the inconclusive finding; the untestable claim is shown as untestable
    assert list(counts.columns) == list(claims_page.SHOWN_VERDICTS) and list(counts.index) == list(claim_registry.KINDS)
    assert numbers["n_finding"] == 2 and numbers["n_untestable"] == 1 and numbers["n_findings_insufficient_data"] == 0
    assert numbers["n_findings_supported"] == numbers["n_findings_inconclusive"] == 1
    assert numbers["n_pooled"] == 0 and numbers["n_forced"] == 0 and numbers["holm_rule"].startswith("Multiplicity")
    assert list(numbers)[-3:] == ["holm_rule", "findings_text", "ledger_text"]
    assert numbers["ledger_text"] == "3 claims from 1 chapter: 2 findings and 1 untestable claim."
    assert numbers["holm_rule"].count(". ") <= 2 and "(" not in numbers["holm_rule"]  # short sentences, no asides
    empty_counts, empty = claims_page.summary(claims.multiplicity(claims.to_frame([])))
    assert empty_counts.empty and empty["n_finding"] == 0 and empty["n_pooled"] == 0


def test_plot_intervals_draws_one_line_per_interval(tmp_path):
    """Each claim with an interval gets a line and a dot in its verdict's colour; the untestable claim none."""
    import matplotlib

    matplotlib.use("Agg")
    _saved(tmp_path)
    fig = claims_page.plot_intervals(claims_page.load(claims_dir(tmp_path), tmp_path / "book").ledger)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["tab4-y (finding)", "tab4-x (finding)"]
    drawn = [line for line in ax.lines if len(line.get_xdata()) == 2 and line.get_linewidth() == 2.5]
    assert {line.get_color() for line in drawn} == {claims_page.VERDICT_COLOURS["supported"],
                                                    claims_page.VERDICT_COLOURS["inconclusive"]}
    fig.clf()


def test_power_table_names_the_count_that_would_decide(tmp_path):
    """Only the inconclusive finding gets a power line: the prompts (and training seeds) at its observed effect."""
    _saved(tmp_path)
    ledger = claims_page.load(claims_dir(tmp_path), tmp_path / "book").ledger
    undecided, power = claims_page.power_table(ledger)
    assert undecided["id"].tolist() == power["id"].tolist() == ["tab4-y"]
    row = ledger.set_index("id").loc["tab4-y"]
    assert power["ours [95%]"].iloc[0] == f"{row['estimate']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"
    text = power["decided at the observed effect by"].iloc[0]
    assert text.startswith(f"about {int(row['decides_at_n']):,} prompts (now 100, ×") and "training seeds (now 2)" in text
    on_boundary = pd.Series({"estimate": 0.0, "ci_low": -0.1, "ci_high": 0.1, "direction": "greater", "margin": 0.0,
                             "unit": "prompt", "decides_at_n": pd.NA, "n": 10, "seeds": 1})
    assert claims_page.decides_at(on_boundary).startswith("no count decides it")
    assert claims_page.power_table(claims.multiplicity(claims.to_frame([])))[1].columns.tolist()[-1] == \
        "decided at the observed effect by"
    no_interval = on_boundary.copy()
    no_interval[["ci_low", "ci_high"]] = float("nan")
    assert claims_page.decides_at(no_interval).startswith("no interval")


def test_power_table_counts_every_inconclusive_finding_the_summary_counts(tmp_path):
    """The power table has a row for each inconclusive finding the summary counts, also one outside the Holm family
    (no p-value), so the page's two counts agree."""
    _saved(tmp_path)
    ledger = claims_page.load(claims_dir(tmp_path), tmp_path / "book").ledger
    ledger.loc[ledger["id"] == "tab4-y", "holm"] = ""  # outside the family
    undecided, _ = claims_page.power_table(ledger)
    assert len(undecided) == claims_page.summary(ledger)[1]["n_findings_inconclusive"] == 1


def test_ledger_table_links_and_colours(tmp_path):
    """The page's ledger: intervals as text, each claim linked to where it is shown, verdicts coloured."""
    _saved(tmp_path)
    ledger = claims_page.load(claims_dir(tmp_path), tmp_path / "book").ledger
    html = claims_page.ledger_styler(ledger).to_html()
    assert '<a href="preference.html#tab-x">preference#tab-x</a>' in html
    assert f"color: {claims_page.VERDICT_COLOURS['supported']}" in html
    verdicts = claims_page.ledger_styler(ledger).data.set_index(ledger["id"].to_numpy())["verdict"]
    assert verdicts["fig7-z"] == "untestable" and f"color: {claims_page.VERDICT_COLOURS['untestable']}" in html
    assert claims_page.interval_text({"estimate": 0.5, "ci_low": float("nan"), "ci_high": float("nan")}) == "0.500"
    assert claims_page.interval_text({"estimate": float("nan"), "ci_low": 0.0, "ci_high": 1.0}) == claims_page.NONE
    assert claims_page.interval_text({"estimate": 1.0, "ci_low": 1.0, "ci_high": 1.0, "verdict": "insufficient data"}) == "1.000"
    assert claims_page.link("data") == '<a href="data.html">data</a>'
    assert list(claims_page.csv_frame(ledger).columns) == claims.CSV_COLUMNS
    assert list(claims_page.csv_frame(ledger.iloc[:0]).columns) == claims.CSV_COLUMNS


def test_ledger_is_compact_with_details_on_demand_and_no_nan(tmp_path):
    """One short row per claim. The long texts (statistic, reason) sit in a closed <details> under the
    claim, not in columns of their own; a missing value shows a dash, never "nan"; every text is escaped."""
    _saved(tmp_path)
    ledger = claims_page.load(claims_dir(tmp_path), tmp_path / "book").ledger
    ledger.loc[ledger.index[0], ["paper", "reason", "seeds", "n", "estimate"]] = [float("nan"), "<b>why</b>", float("nan"),
                                                                                    float("nan"), float("nan")]
    styler = claims_page.ledger_styler(ledger)
    assert list(styler.data.columns) == ["id", "claim", "paper's numbers", "ours [95%]", "verdict", "kind", "family",
                                         "Holm"]
    html = styler.to_html()
    assert not re.search(r"\bnan\b", html, flags=re.I)
    first = styler.data.iloc[0]
    assert first["paper's numbers"] == first["ours [95%]"] == claims_page.NONE
    assert first["claim"].count("<details>") == 1 and "&lt;b&gt;why&lt;/b&gt;" in first["claim"]
    assert "training seeds" not in first["claim"] and "<b>paper</b>: Table 4" in first["claim"]
    assert all(row.count("<details>") == 1 for row in styler.data["claim"])


def test_replicate_table_hides_the_bookkeeping_and_marks_flips():
    """The replicate table hides chapter, worlds, min and max, names the per-seed columns in words and colours a
    flip red."""
    frame = pd.DataFrame({"id": ["tab4-x"], "chapter": ["preference"], "worlds": [2], "min": [0.1], "max": [0.2],
                          "estimate_seed1": [0.1], "verdict_seed1": ["supported"], "mean_ci_width": [0.05],
                          "flips": ["yes"], "reverses": ["no"]})
    html = claims_page.replicate_styler(frame).to_html()
    assert "world seed 1" in html and "verdict, seed 1" in html and "mean 95% width" in html
    assert "color: #c62828" in html and ">preference<" not in html
