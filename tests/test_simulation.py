"""The simulated world (spec §6): layout, determinism, loader round trip, Algorithm 1, calibration."""
from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from cheems_lib.calibration import TABLE1_COLUMNS, checks, table1, table5
from cheems_lib.conflicts import resolve
from cheems_lib.corpus import CATEGORIES, Traits, make_task, render_response
from cheems_lib.records import read_records
from cheems_lib.simulation import (GPT_LAYOUT, LAYOUT, SIZES, WorldConfig, build_world, load_world, utility,
                                   write_world)
from conftest import ROOT


@pytest.fixture(scope="module")
def smoke_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("world")
    write_world(build_world(WorldConfig(size="smoke", seed=3)), out)
    return out


def _digest(directory):
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


class TestLayout:
    def test_every_file_of_the_spec_exists_and_loads(self, smoke_dir):
        """All spec §6 paths are written and load through the project's own loader."""
        for path in [*LAYOUT.values(), *GPT_LAYOUT.values()]:
            recs = read_records(smoke_dir / path)
            assert recs and all(r.rank is not None and r.annotations and r.category for r in recs)
        truth = [json.loads(l) for l in (smoke_dir / "truth.jsonl").read_text(encoding="utf-8").splitlines()]
        assert all(0 <= t["quality"] <= 5 for t in truth)
        summary = json.loads((smoke_dir / "summary.json").read_text(encoding="utf-8"))
        assert summary["seed"] == 3 and summary["simulator_version"]

    def test_ranks_are_algorithm_1_of_the_raw_annotations(self, smoke_dir):
        """Every written rank is Algorithm 1 applied to the written annotations."""
        for path in [*LAYOUT.values(), *GPT_LAYOUT.values()]:
            for r in read_records(smoke_dir / path):
                assert r.rank == resolve(r.response_ids, r.annotations)

    def test_gpt_variant_has_same_prompts_and_responses(self, smoke_dir):
        """The GPT benchmark variant holds the same prompts and responses as the human one."""
        for sub in ("open", "human"):
            human = read_records(smoke_dir / f"cheems_bench/{sub}.jsonl")
            gpt = read_records(smoke_dir / f"cheems_bench_gpt/{sub}.jsonl")
            assert [(r.id, r.responses) for r in human] == [(r.id, r.responses) for r in gpt]

    def test_benchmark_protocols(self, smoke_dir):
        """Humans: 5 rounds x 3 pairs with ties; GPT: all C(5,2) pairs once, no ties."""
        human = read_records(smoke_dir / "cheems_bench/open.jsonl")
        gpt = read_records(smoke_dir / "cheems_bench_gpt/open.jsonl")
        assert all(len(r.annotations) == 15 for r in human)
        assert any(p == "0" for r in human for *_, p in r.annotations)
        assert all(len({frozenset(a[:2]) for a in r.annotations}) == 10 == len(r.annotations) for r in gpt)
        assert not any(p == "0" for r in gpt for *_, p in r.annotations)

    def test_text_is_chinese(self, smoke_dir):
        """Simulated prompts are mostly Chinese characters."""
        recs = read_records(smoke_dir / "cheems_bench/human.jsonl")
        han = sum(1 for r in recs for ch in r.prompt if "\u4e00" <= ch <= "\u9fff")
        assert han / sum(len(r.prompt) for r in recs) > 0.5


class TestDeterminism:
    def test_same_seed_same_bytes(self, smoke_dir, tmp_path):
        """The same seed writes byte-identical files."""
        write_world(build_world(WorldConfig(size="smoke", seed=3)), tmp_path)
        assert _digest(tmp_path) == _digest(smoke_dir)

    def test_other_seed_other_bytes(self, smoke_dir, tmp_path):
        """Another seed writes other files."""
        write_world(build_world(WorldConfig(size="smoke", seed=4)), tmp_path)
        assert _digest(tmp_path) != _digest(smoke_dir)


class TestQualityIsVisible:
    def test_traits_change_the_text(self):
        """Right vs wrong answer, refusal vs compliance, truncation: a reader sees the difference."""
        rng = np.random.default_rng(0)
        math = make_task("数学", rng)
        right = render_response(math, Traits(correct=True), np.random.default_rng(1))
        wrong = render_response(math, Traits(correct=False), np.random.default_rng(1))
        assert f"答案是{math.answer}" in right and f"答案是{math.wrong}" in wrong
        unsafe = make_task("安全", rng)
        assert "不能" in render_response(unsafe, Traits(), rng)
        assert "步骤" in unsafe.prompt and "第一步" in render_response(unsafe, Traits(harmful=True), rng)

    def test_utility_orders_the_3h_dimensions(self):
        """Severe errors < flawed < clean; a right answer beats a wrong one (Table 7)."""
        assert utility(Traits(harmful=True)) < utility(Traits(correct=False)) < utility(Traits()) <= 5
        assert utility(Traits(truncated=True)) < utility(Traits())
        assert utility(Traits(highlight=True, detail=4)) > utility(Traits())

    def test_categories_have_glosses(self):
        """The eight top-level categories each have an English gloss."""
        assert len(CATEGORIES) == 8 and all(CATEGORIES.values())


@pytest.fixture(scope="module")
def calibration_world():
    """Full benchmark counts (Table 5's ratios are per prompt), a reduced preference set."""
    return build_world(WorldConfig(size="default", seed=0, counts={"pref_gpt": 1024, "pref_human": 120}))


class TestCalibration:
    def test_every_target_is_met(self, calibration_world):
        """Conflict ratios (Table 5), position shares, Table 1 lengths, length baseline, learnability."""
        w = calibration_world
        truth = {(t["prompt_id"], t["response_id"]): t["utility"] for t in w.truth}
        failed = [c for c in checks(w.files, length_scale=SIZES["default"]["length_scale"], truth=truth) if not c["ok"]]
        assert not failed, failed

    def test_tables_have_the_papers_shape(self, calibration_world):
        """Tables 1 and 5 of a world have the paper's columns and rows."""
        t1 = table1(calibration_world.files)
        assert list(t1.columns) == list(TABLE1_COLUMNS)
        assert len(table5(calibration_world.files)) == 4

    def test_load_world_reports_missing_layout(self, tmp_path):
        """load_world on an empty folder says to run cheems simulate."""
        with pytest.raises(FileNotFoundError, match="cheems simulate"):
            load_world(tmp_path)


def _cli(argv, capsys):
    """Run ``cheems`` in-process like the console script: (exit code, stderr lines)."""
    from cheems_lib.cli import main

    try:
        rc = main(argv)
    except SystemExit as e:  # a message exits 1, as the interpreter does with sys.exit("...")
        rc = e.code if isinstance(e.code, int) or e.code is None else 1
        if not isinstance(e.code, int) and e.code is not None:
            print(e.code, file=__import__("sys").stderr)
    return rc or 0, capsys.readouterr().err.strip().splitlines()


def _hidden(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


class TestWritingSafely:
    def test_new_world_replaces_an_old_one(self, smoke_dir, tmp_path, capsys):
        """A second run over a world swaps in the complete new one (same bytes as a fresh run), no leftovers."""
        out = tmp_path / "w"
        assert _cli(["simulate", "--size", "smoke", "--seed", "1", "-o", str(out)], capsys)[0] == 0
        assert _cli(["simulate", "--size", "smoke", "--seed", "3", "-o", str(out)], capsys)[0] == 0
        assert _digest(out) == _digest(smoke_dir) and _hidden(tmp_path) == []

    def test_swap_without_atomic_exchange(self, smoke_dir, tmp_path, monkeypatch):
        """Where renameat2 is missing, rename-aside-then-rename gives the same result and no leftovers."""
        from cheems_lib import simulation

        monkeypatch.setattr(simulation, "_exchange", lambda a, b: False)
        write_world(build_world(WorldConfig(size="smoke", seed=1)), tmp_path / "w")
        write_world(build_world(WorldConfig(size="smoke", seed=3)), tmp_path / "w")
        assert _digest(tmp_path / "w") == _digest(smoke_dir) and _hidden(tmp_path) == []

    def test_a_world_set_aside_by_a_killed_run_is_restored(self, smoke_dir, tmp_path):
        """Killed between the two renames: the next run puts the old world back, then replaces it; ours only."""
        import shutil

        aside = tmp_path / ".w.old-4194305-deadbeef"  # pid above Linux's pid_max: a dead process
        shutil.copytree(smoke_dir, aside)
        (tmp_path / ".w.tmp-4194305-0badc0de").mkdir()
        (tmp_path / ".w.old-mine").mkdir()  # not our naming: left alone
        from cheems_lib import simulation

        simulation._recover(tmp_path / "w")
        assert _digest(tmp_path / "w") == _digest(smoke_dir) and _hidden(tmp_path) == [".w.old-mine"]

    @pytest.mark.parametrize("case", ["file", "foreign folder", "world with extra file", "negative seed"])
    def test_bad_arguments_exit_2_and_write_nothing(self, case, smoke_dir, tmp_path, capsys):
        """A file, a folder that is not a world, a world holding other files, or --seed -1: one line, exit 2."""
        import shutil

        out, seed = tmp_path / "out", "0"
        if case == "file":
            out.write_text("keep me\n")
        elif case == "foreign folder":
            out.mkdir()
            (out / "notes.txt").write_text("keep me\n")
        elif case == "world with extra file":
            shutil.copytree(smoke_dir, out)
            (out / "cheems_bench" / "scores.jsonl").write_text("keep me\n")
        else:
            seed = "-1"
        before = _digest(tmp_path)
        rc, err = _cli(["simulate", "--size", "smoke", "--seed", seed, "-o", str(out)], capsys)
        assert rc == 2 and len(err) == 1 and err[0].startswith("cheems: ") and "(fix: " in err[0], err
        assert _digest(tmp_path) == before and _hidden(tmp_path) == []

    def test_full_disk_keeps_the_old_world(self, smoke_dir, tmp_path, capsys, monkeypatch):
        """A write that fails (ENOSPC) half-way: exit 1, one line with path and reason, old world intact."""
        import errno
        import shutil

        from cheems_lib import simulation

        out = tmp_path / "w"
        shutil.copytree(smoke_dir, out)
        calls, write = [], simulation.write_records

        def full(records, path):
            calls.append(path)
            if len(calls) == 3:
                with open(path, "wb") as fh:
                    fh.write(b'{"half')
                raise OSError(errno.ENOSPC, "No space left on device", str(path))
            return write(records, path)

        monkeypatch.setattr(simulation, "write_records", full)
        rc, err = _cli(["simulate", "--size", "smoke", "--seed", "5", "-o", str(out)], capsys)
        assert rc == 1 and len(err) == 1 and "No space left on device" in err[0] and str(tmp_path) in err[0], err
        assert _digest(out) == _digest(smoke_dir) and _hidden(tmp_path) == []

    def test_output_under_a_file_is_one_line(self, tmp_path, capsys):
        """-o below a file (like /dev/full/x): exit 1 with the path and the reason, no traceback."""
        (tmp_path / "f").write_text("")
        rc, err = _cli(["simulate", "--size", "smoke", "-o", str(tmp_path / "f" / "x")], capsys)
        assert rc == 1 and err == [f"cheems: {tmp_path / 'f'}: Not a directory"]


def _written_since(folder, t0_ns) -> bool:
    """Whether anything under ``folder`` was created or changed after ``t0_ns``."""
    for p in folder.rglob("*"):
        try:
            if p.stat().st_mtime_ns > t0_ns:
                return True
        except FileNotFoundError:  # renamed or removed while we looked
            return True
    return False


def _run_killed(args, sig, when, watch, cwd=None):
    """Start ``cheems ARGS`` in its own session and send ``sig`` to it: ``when = ("start", seconds)``
    after the start, or ``("writing", seconds)`` after anything under ``watch`` starts to change."""
    import os
    import subprocess
    import sys
    import time

    t0 = time.time_ns()
    proc = subprocess.Popen([sys.executable, "-m", "cheems_lib.cli", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True, cwd=cwd)
    if when[0] == "writing":
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline and not _written_since(watch, t0):
            time.sleep(0.001)
    time.sleep(when[1])
    if proc.poll() is None:
        os.killpg(proc.pid, sig)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err.decode(errors="replace")


class TestInterrupts:
    @pytest.mark.parametrize("old", [False, True], ids=["fresh", "over-old-world"])
    def test_killed_simulate_leaves_old_or_complete_new_world(self, old, smoke_dir, tmp_path):
        """SIGINT/SIGKILL at seeded random points: DIR is absent/the old world or equals an uninterrupted run,
        SIGINT exits 130 and cleans up, and the next run repairs what a SIGKILL left."""
        import random
        import shutil
        import signal

        new = _digest(smoke_dir)  # seed 3, uninterrupted
        old_world = tmp_path / "old"
        write_world(build_world(WorldConfig(size="smoke", seed=1)), old_world)
        rng = random.Random(20250217 + old)
        for sig in (signal.SIGINT, signal.SIGKILL):
            for when in (("start", rng.uniform(0.1, 0.7)), ("writing", rng.uniform(0, 0.06))):
                out = tmp_path / "w"
                shutil.rmtree(out, ignore_errors=True)
                if old:
                    shutil.copytree(old_world, out)
                rc, err = _run_killed(["simulate", "--size", "smoke", "--seed", "3", "-o", str(out)],
                                         sig, when, tmp_path)
                got = _digest(out) if out.exists() else None
                before = _digest(old_world) if old else None
                assert got in (before, new), (sig, when, rc, err)
                if sig == signal.SIGKILL:
                    assert rc in (0, -signal.SIGKILL), (when, rc, err)
                else:  # 0: done before the signal; -SIGINT: it came in start-up or shut-down, outside main()
                    assert rc in (0, 130) or (rc == -signal.SIGINT and (when[0] == "start" or got == new)), (when, rc)
                    # a signal outside main() (interpreter start-up) is Python's own traceback; inside main: none
                    assert rc == -signal.SIGINT or "Traceback" not in err
                    assert [p for p in _hidden(tmp_path) if p.startswith(".w.")] == []
                # the next run repairs whatever a kill left and writes the complete world
                write_world(build_world(WorldConfig(size="smoke", seed=3)), out)
                assert _digest(out) == new and [p for p in _hidden(tmp_path) if p.startswith(".w.")] == []


class TestResponseCounts:
    @pytest.mark.parametrize("mean, sd", [(5.07, 3.55), (5.29, 3.05), (4.0, 1.9)])
    def test_pmf_has_the_requested_moments(self, mean, sd):
        """The beta-binomial response-count distribution has exactly the mean and spread asked for."""
        from cheems_lib.simulation import response_count_pmf

        pmf = response_count_pmf(mean, sd)
        m = sum(k * p for k, p in pmf.items())
        var = sum(k * k * p for k, p in pmf.items()) - m * m
        assert sum(pmf.values()) == pytest.approx(1) and m == pytest.approx(mean) and var == pytest.approx(sd * sd)
        assert min(pmf) == 2 and max(pmf) == len(__import__("cheems_lib.simulation").simulation.MODELS)

    def test_impossible_spread_is_refused(self):
        """A spread beyond the two-point distribution on the bounds is an error naming the allowed range."""
        from cheems_lib.simulation import response_count_pmf

        with pytest.raises(ValueError, match="must lie between"):
            response_count_pmf(5.07, 4.5)

    def test_files_are_prefix_stable_in_their_prompt_count(self):
        """Simulating fewer prompts of a file gives the first prompts of the larger file (sweeps rely on it)."""
        full = build_world(WorldConfig(size="smoke", seed=2)).files["cheems_preference/gpt.jsonl"]
        part = build_world(WorldConfig(size="smoke", seed=2, counts={"pref_gpt": 20})).files["cheems_preference/gpt.jsonl"]
        assert part == full[:20]

    def test_tie_margin_multiplier_lowers_comparisons(self):
        """A wider human tie margin on a benchmark file gives fewer comparisons there and leaves the other file alone."""
        from dataclasses import replace

        from cheems_lib import simulation

        base = table1(build_world(WorldConfig(size="smoke", seed=0)).files)
        spec = simulation.SUBSETS["bench_open"]
        try:
            simulation.SUBSETS["bench_open"] = replace(spec, human_tie=spec.human_tie * 2)
            wide = table1(build_world(WorldConfig(size="smoke", seed=0)).files)
        finally:
            simulation.SUBSETS["bench_open"] = spec
        col = "comparisons_excluding_ties"
        assert wide.loc[col, "cheemsbench_open_prompt"] < base.loc[col, "cheemsbench_open_prompt"]
        assert wide.loc[col, "cheemsbench_human_instruction"] == base.loc[col, "cheemsbench_human_instruction"]
