"""cheems_lib.analyses.calibration: per-prompt Table 1 counts, one threshold per quantity, the calibrated claims."""
from __future__ import annotations

from dataclasses import replace

import pytest

from cheems_lib.analyses import calibration, claims
from cheems_lib.analyses.calibration import calibrated_claims, checks, table1, table1_per_prompt
from cheems_lib.conflicts import resolve_records
from cheems_lib.records import Record, Response


def _record(pid, lengths, annotations):
    return Record(prompt="p" * 5, id=pid, responses=[Response(i, "x" * n) for i, n in zip("abcd", lengths)],
                  annotations=annotations, category=["理解"])


@pytest.fixture
def files():
    recs = [_record("1", [10, 4, 1], [("a", "b", "1"), ("b", "c", "1")]),
            _record("2", [3, 6, 9, 2], [("a", "b", "0"), ("c", "d", "1"), ("b", "c", "2")])]
    resolve_records(recs)
    return {"cheems_preference/gpt.jsonl": recs}


class TestTable1PerPrompt:
    def test_sums_give_table1(self, files):
        """Per-prompt comparisons and chosen/rejected characters add up to Table 1's columns."""
        per = table1_per_prompt(files["cheems_preference/gpt.jsonl"])
        t1 = table1(files)["cheemspreference_gpt"]
        assert per["comparisons"].sum() == t1["comparisons_excluding_ties"]
        assert per["chosen"].sum() / per["comparisons"].sum() == pytest.approx(t1["avg_chars_chosen"])
        assert per["rejected"].sum() / per["comparisons"].sum() == pytest.approx(t1["avg_chars_rejected"])
        assert per["all_pairs"].tolist() == [3, 6]

    def test_hand_count(self, files):
        """a > b > c orders all three pairs; in the second prompt c leads a ~ b and d, which are one layer, so
        only c's three pairs count (ties and same-layer pairs excluded)."""
        per = table1_per_prompt(files["cheems_preference/gpt.jsonl"])
        assert per["comparisons"].tolist() == [3, 3]
        assert per["chosen"].tolist() == [10 + 10 + 4, 9 * 3] and per["rejected"].tolist() == [4 + 1 + 1, 3 + 6 + 2]


class TestThresholds:
    def test_shared_quantities_use_the_claims_thresholds(self, files, monkeypatch):
        """Position shares, conflict ratios and Table 1's comparisons and length ratio are checked with claims.py's
        constants, not a copy of them."""
        t = calibration.THRESHOLDS
        assert t.human_position is claims.POSITION_EQUIVALENCE
        assert t.gpt_position is claims.GPT_POSITION_TARGET
        assert t.conflict_ratio is claims.CONFLICT_TOLERANCE
        assert t.table1 is claims.TABLE1_TOLERANCE
        gpt = {"cheems_bench_gpt/open.jsonl": files["cheems_preference/gpt.jsonl"]}
        row = next(c for c in checks(gpt) if c["check"].startswith("GPT: share"))
        assert row["target"] == f"≥ {claims.GPT_POSITION_TARGET:g}"
        assert not row["ok"]  # a share of 0.25
        monkeypatch.setattr(calibration, "THRESHOLDS", replace(t, gpt_position=row["value"] - 0.01))
        assert next(c for c in checks(gpt) if c["check"].startswith("GPT: share"))["ok"]

    def test_every_check_takes_its_tolerance_from_the_table(self, monkeypatch):
        """Every row of checks() follows THRESHOLDS: all pass with loose tolerances and all fail with strict ones,
        so no row keeps a bare tolerance of its own (each kind of row is present: the smoke world has them all)."""
        from cheems_lib.world.simulation import SIZES, WorldConfig, build_world

        w = build_world(WorldConfig(size="smoke", seed=3))
        truth = {(r["prompt_id"], r["response_id"]): r["utility"] for r in w.truth}
        kw = dict(length_scale=SIZES["smoke"]["length_scale"], truth=truth, sizes=calibration.table1_sizes("smoke"))
        loose = calibration.Thresholds(conflict_ratio=1, human_position=1, gpt_position=0, responses_per_prompt=1e9,
                                       chars=1e9, table1=1e9, prompt_share=1e9, length_baseline=1.01,
                                       learnable_margin=-1)
        strict = calibration.Thresholds(conflict_ratio=-1, human_position=-1, gpt_position=1.01,
                                        responses_per_prompt=-1, chars=-1, table1=-1, prompt_share=-1,
                                        length_baseline=0, learnable_margin=1.01)
        kinds = set()
        for table, ok in ((loose, True), (strict, False)):
            monkeypatch.setattr(calibration, "THRESHOLDS", table)
            rows = checks(w.files, **kw)
            assert [r["check"] for r in rows if r["ok"] is not ok] == []
            kinds |= {r["check"].split(",")[0].split(":")[0] for r in rows}
        assert kinds == {"conflict ratio", "human", "GPT", "Table 1 responses_per_prompt", "Table 1 avg_chars_prompt",
                         "Table 1 avg_chars_chosen", "Table 1 avg_chars_rejected", "Table 1 comparisons per prompt",
                         "Table 1 chosen / rejected length", "prompt counts in Table 1's proportion",
                         "longest-response baseline accuracy", "learnable"}  # every kind of row was exercised


def test_calibrated_claims_have_stable_ids_and_reasons():
    """Every calibrated claim id is a valid claim id with a reason (the reason a chapter's Claim carries)."""
    for cid, reason in calibrated_claims().items():
        claims.Claim(id=cid, paper_ref="x", claim="x", kind="calibrated", verdict="supported", reason=reason)
        assert reason
    assert {"tab5-gpt-more-conflicts", "fig15-gpt-position"} <= set(calibrated_claims())


def test_design_inputs_are_structural_not_calibrated():
    """Claims the simulated annotators are built to make true, with no number fitted (no human position term,
    the human length shape), are structural with that reason on a simulated world, findings on real files,
    and never listed as calibrated."""
    for cid in ("fig15-human-no-position", "fig15-length", "fig15-human-shorter-at-large"):
        kind = calibration.claim_kind(cid, True)
        assert kind["kind"] == "structural" and "by design" in kind["reason"] and cid not in calibrated_claims()
        assert calibration.claim_kind(cid, False)["kind"] == "finding"


class TestTable5PerPrompt:
    def test_gpt_prompts_follow_the_human_order(self):
        """GPT annotations are aligned to the human file's prompt order (paired draws), with subset/category
        strata; a GPT file missing a prompt is refused with the fix."""
        cycle = [("a", "b", "1"), ("b", "c", "1"), ("c", "a", "1")]
        human = [_record("1", [1, 2], [("a", "b", "1")]), _record("2", [1, 2, 3], cycle)]
        gpt = [_record("2", [1, 2, 3], [("a", "b", "1")]), _record("1", [1, 2], [("a", "b", "1"), ("b", "a", "1")])]
        resolve_records(human + gpt)
        files = {"cheems_bench/open.jsonl": human, "cheems_bench_gpt/open.jsonl": gpt}
        h = calibration.table5_per_prompt(files, "human", subsets=("open_prompt",))
        g = calibration.table5_per_prompt(files, "gpt", subsets=("open_prompt",))
        assert h["conflicted"].tolist() == [0, 1] and g["conflicted"].tolist() == [1, 0]
        assert h["strata"].tolist() == g["strata"].tolist() == ["open_prompt/理解"] * 2
        files["cheems_bench_gpt/open.jsonl"] = gpt[:1]
        with pytest.raises(ValueError, match="prompt 1 .* missing"):
            calibration.table5_per_prompt(files, "gpt", subsets=("open_prompt",))


def test_claim_kind_is_calibrated_only_on_a_simulated_world():
    """A calibration target's claim is 'calibrated' with its reason on simulated data, a 'finding' on real files."""
    assert calibration.claim_kind("fig15-gpt-position", True) == {"kind": "calibrated",
                                                                   "reason": calibrated_claims()["fig15-gpt-position"]}
    assert calibration.claim_kind("fig15-gpt-position", False)["kind"] == "finding"
    with pytest.raises(KeyError, match="not in data/paper/claims.yaml"):
        calibration.claim_kind("no-such-claim", True)


def test_parameters_cover_every_simulator_field_and_read_live_values():
    """Every annotator and subset field is listed as fitted or assumed, with the default's current value."""
    from dataclasses import fields, replace

    from cheems_lib.world import annotators
    from cheems_lib.analyses import calibration
    from cheems_lib.world.simulation import SubsetSpec

    table = calibration.parameters()
    listed = " ".join(table["parameter"])
    for cls in (annotators.HumanAnnotator, annotators.GPTAnnotator, SubsetSpec):
        for f in fields(cls):
            if f.name not in ("key",):
                assert f"{f.name}" in listed, f"{cls.__name__}.{f.name} is not in calibration.PARAMETERS"
    assert set(table["fixed by"].str.split(":").str[0].str.split(" ").str[0]) <= {"fitted", "assumed"}
    row = table.set_index("parameter").loc["HumanAnnotator.shared_noise"]
    assert row["value"] == str(annotators.HumanAnnotator().shared_noise) and row["fixed by"] == "assumed"


def test_table1_sizes_follow_the_simulators_layout():
    """Each Table 1 column gets the simulator's prompt count of the file at that column's layout path."""
    from cheems_lib.world.simulation import SIZES
    from cheems_lib.world_files import LAYOUT

    for size in SIZES:
        sizes = calibration.table1_sizes(size)
        assert list(sizes) == list(calibration.TABLE1_COLUMNS)
        for col, path in calibration.TABLE1_COLUMNS.items():
            key = next(k for k, p in LAYOUT.items() if p == path)
            assert sizes[col] == SIZES[size][key]


def test_paper_gpt_human_ratio_reads_table1():
    """The paper's GPT : human prompt ratio is Table 1's prompt counts divided, read from the CSV."""
    import csv

    from conftest import ROOT

    with open(ROOT / "data/paper/table1_statistics.csv", encoding="utf-8") as fh:
        prompts = next(r for r in csv.DictReader(fh) if r["statistic"] == "prompts")
    want = float(prompts["cheemspreference_gpt"]) / float(prompts["cheemspreference_human"])
    assert calibration.paper_gpt_human_ratio() == pytest.approx(want)
