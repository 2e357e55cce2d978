"""The files of a world on disk (spec §6): interrupt-safe writing, recovery after a kill, loading."""
from __future__ import annotations


import pytest

from cheems_lib.world.simulation import WorldConfig, build_world
from cheems_lib.world_files import load_world, write_world
from conftest import digest, release_folder


def test_load_world_reports_missing_layout(tmp_path):
    """load_world on an empty folder says to run cheems simulate."""
    from cheems_lib.input_files import DataError

    with pytest.raises(DataError, match="cheems simulate"):
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
        assert digest(out) == digest(smoke_dir) and _hidden(tmp_path) == []

    def test_swap_without_atomic_exchange(self, smoke_dir, tmp_path, monkeypatch):
        """Where renameat2 is missing, rename-aside-then-rename gives the same result and no leftovers."""
        from cheems_lib import world_files

        monkeypatch.setattr(world_files, "_exchange", lambda a, b: False)
        write_world(build_world(WorldConfig(size="smoke", seed=1)), tmp_path / "w")
        write_world(build_world(WorldConfig(size="smoke", seed=3)), tmp_path / "w")
        assert digest(tmp_path / "w") == digest(smoke_dir) and _hidden(tmp_path) == []

    def test_a_world_set_aside_by_a_killed_run_is_restored(self, smoke_dir, tmp_path):
        """Killed between the two renames: the next run puts the old world back, then replaces it; ours only."""
        import shutil

        aside = tmp_path / ".w.old-4194305-deadbeef"  # pid above Linux's pid_max: a dead process
        shutil.copytree(smoke_dir, aside)
        (tmp_path / ".w.tmp-4194305-0badc0de").mkdir()
        (tmp_path / ".w.old-mine").mkdir()  # not our naming: left alone
        from cheems_lib import world_files

        world_files._recover(tmp_path / "w")
        assert digest(tmp_path / "w") == digest(smoke_dir) and _hidden(tmp_path) == [".w.old-mine"]

    @pytest.mark.parametrize("case", ["file", "foreign folder", "world with extra file", "negative seed", "link loop",
                                      "link to a pipe"])
    def test_bad_arguments_exit_2_and_write_nothing(self, case, smoke_dir, tmp_path, capsys):
        """A file, a folder that is not a world, a world holding other files, --seed -1, a link to itself or to a
        named pipe: one line, exit 2, and a link stays a link."""
        import os
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
        elif case == "link loop":
            out.symlink_to("out")
        elif case == "link to a pipe":
            os.mkfifo(tmp_path / "p")
            out.symlink_to("p")
        else:
            seed = "-1"
        before = digest(tmp_path)
        rc, err = _cli(["simulate", "--size", "smoke", "--seed", seed, "-o", str(out)], capsys)
        assert rc == 2 and len(err) == 1 and err[0].startswith("cheems: ") and "(fix: " in err[0], err
        assert digest(tmp_path) == before and _hidden(tmp_path) == [] and out.is_symlink() == case.startswith("link")

    def test_a_link_to_a_folder_gets_the_world_where_it_points(self, smoke_dir, tmp_path, capsys):
        """-o a link to a world folder elsewhere: the new world is swapped in there and the link stays a link."""
        import os

        write_world(build_world(WorldConfig(size="smoke", seed=1)), tmp_path / "real")
        (tmp_path / "w").symlink_to("real")
        assert _cli(["simulate", "--size", "smoke", "--seed", "3", "-o", str(tmp_path / "w")], capsys)[0] == 0
        assert os.readlink(tmp_path / "w") == "real" and digest(tmp_path / "real") == digest(smoke_dir)
        assert _hidden(tmp_path) == []

    def test_full_disk_keeps_the_old_world(self, smoke_dir, tmp_path, capsys, monkeypatch):
        """A write that fails (ENOSPC) half-way: exit 1, one line with path and reason, old world intact."""
        import errno
        import shutil

        from cheems_lib import world_files

        out = tmp_path / "w"
        shutil.copytree(smoke_dir, out)
        calls, write = [], world_files.write_records

        def full(records, path):
            calls.append(path)
            if len(calls) == 3:
                with open(path, "wb") as fh:
                    fh.write(b'{"half')
                raise OSError(errno.ENOSPC, "No space left on device", str(path))
            return write(records, path)

        monkeypatch.setattr(world_files, "write_records", full)
        rc, err = _cli(["simulate", "--size", "smoke", "--seed", "5", "-o", str(out)], capsys)
        assert rc == 1 and len(err) == 1 and "No space left on device" in err[0] and str(tmp_path) in err[0], err
        assert digest(out) == digest(smoke_dir) and _hidden(tmp_path) == []

    def test_output_under_a_file_is_one_line(self, tmp_path, capsys):
        """-o below a file (like /dev/full/x): exit 1 with the path and the reason, no traceback."""
        (tmp_path / "f").write_text("")
        rc, err = _cli(["simulate", "--size", "smoke", "-o", str(tmp_path / "f" / "x")], capsys)
        assert rc == 1 and err == [f"cheems: {tmp_path / 'f'}: Not a directory"]


def _run_killed(args, sig, point, cwd=None):
    """Run ``cheems ARGS`` in its own session; it sends itself ``sig`` at ``point`` (``NAME=N``, see
    cheems_lib.outputs.interrupt_point). Returns (exit code, stderr)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "CHEEMS_TEST_INTERRUPT": f"{point}:{sig.name}"}
    proc = subprocess.run([sys.executable, "-m", "cheems_lib.cli", *args], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, start_new_session=True, cwd=cwd, env=env, timeout=300)
    return proc.returncode, proc.stderr.decode(errors="replace")


# the first file, a middle one and the last one (summary.json) written, the staged folder, the swapped-in folder
POINTS = ["world.file=1", "world.file=4", "world.file=8", "world.staged=1", "world.swapped=1"]


class TestInterrupts:
    @pytest.mark.parametrize("old", [False, True], ids=["fresh", "over-old-world"])
    @pytest.mark.parametrize("sig_name", ["SIGINT", "SIGKILL"])
    def test_killed_simulate_leaves_old_or_complete_new_world(self, old, sig_name, smoke_dir, tmp_path):
        """A real SIGINT/SIGKILL while each file is written, when the world is staged, and after the swap:
        DIR is absent/the old world until the swap and the new one after it, SIGINT exits 130 with no
        traceback and no hidden folder, and the next run repairs what a SIGKILL left."""
        import shutil
        import signal

        sig = getattr(signal, sig_name)
        new = digest(smoke_dir)  # seed 3, uninterrupted
        old_world = tmp_path / "old"
        write_world(build_world(WorldConfig(size="smoke", seed=1)), old_world)
        before = digest(old_world) if old else None
        for point in POINTS:
            out = tmp_path / "w"
            shutil.rmtree(out, ignore_errors=True)
            if old:
                shutil.copytree(old_world, out)
            rc, err = _run_killed(["simulate", "--size", "smoke", "--seed", "3", "-o", str(out)], sig, point)
            got = digest(out) if out.exists() else None
            assert got == (new if point.startswith("world.swapped") else before), (point, rc, err)
            if sig == signal.SIGKILL:
                assert rc == -signal.SIGKILL, (point, rc, err)
            else:
                assert rc == 130 and "Traceback" not in err, (point, rc, err)
                assert [p for p in _hidden(tmp_path) if p.startswith(".w.")] == []
            # the next run repairs whatever a kill left and writes the complete world
            write_world(build_world(WorldConfig(size="smoke", seed=3)), out)
            assert digest(out) == new and [p for p in _hidden(tmp_path) if p.startswith(".w.")] == []


# ---- detecting the layout (spec §6b) ---------------------------------------------------------------

class TestDetectLayout:
    def test_simulated_layout(self, smoke_dir):
        """A cheems simulate folder: kind simulated, every §6 file found, simulated, unknown labels."""
        from cheems_lib.world_files import detect_layout

        lay = detect_layout(smoke_dir)
        assert lay.kind == "simulated" and lay.simulated and lay.labels == "unknown labels"
        assert lay.found == ("open", "human", "open_gpt", "human_gpt", "preference_human", "preference_gpt",
                             "truth", "summary")
        assert lay.paths["preference_gpt"] == smoke_dir / "cheems_preference/gpt.jsonl"

    @pytest.mark.parametrize("data_level", [False, True])
    def test_release_layout_with_and_without_data_level(self, smoke_dir, tmp_path, data_level):
        """The official release, with or without data/: kind release, not simulated, paths under data/."""
        from cheems_lib.world_files import detect_layout

        lay = detect_layout(release_folder(smoke_dir, tmp_path / "r", data_level=data_level))
        assert lay.kind == "release" and not lay.simulated and lay.found == ("open", "human", "preference")
        base = tmp_path / "r" / ("data" if data_level else "")
        assert lay.paths["preference"] == base / "cheems_preference.jsonl"

    def test_subsets_and_manifest_labels(self, smoke_dir, tmp_path):
        """Any subset of the files is a world; labels come from manifest.json (a list is joined)."""
        from cheems_lib.world_files import detect_layout

        lay = detect_layout(release_folder(smoke_dir, tmp_path / "r", files=("open",),
                                     manifest={"name": "x", "labels": ["human", "gpt-4o"]}))
        assert lay.found == ("open", "manifest") and lay.labels == "human, gpt-4o" and lay.manifest["name"] == "x"
        assert lay.has("open") and not lay.has("open", "human")
        (tmp_path / "s" / "cheems_bench_gpt").mkdir(parents=True)
        (tmp_path / "s" / "cheems_bench_gpt" / "open.jsonl").write_bytes(
            (smoke_dir / "cheems_bench_gpt/open.jsonl").read_bytes())
        lay = detect_layout(tmp_path / "s")
        assert lay.found == ("open_gpt",) and lay.kind == "simulated" and not lay.simulated

    def test_nothing_known_names_what_it_expects(self, tmp_path):
        """A folder with no known file: one DataError listing the expected files and the fix."""
        from cheems_lib.input_files import DataError
        from cheems_lib.world_files import detect_layout

        (tmp_path / "notes.txt").write_text("x")
        with pytest.raises(DataError, match=r"expected any of .*cheems_bench/open\.jsonl.*cheems_preference\.jsonl"):
            detect_layout(tmp_path)
        with pytest.raises(DataError, match="is not a folder"):
            detect_layout(tmp_path / "absent")

    def test_one_file_twice_is_an_error(self, smoke_dir, tmp_path):
        """The same file at the root and under data/: ambiguous, so a DataError naming both."""
        import shutil

        from cheems_lib.input_files import DataError
        from cheems_lib.world_files import detect_layout

        out = release_folder(smoke_dir, tmp_path / "r", data_level=True, files=("open",))
        shutil.copytree(out / "data" / "cheems_bench", out / "cheems_bench")
        with pytest.raises(DataError, match="both cheems_bench/open.jsonl and data/cheems_bench/open.jsonl"):
            detect_layout(out)


class TestSplitPreference:
    def test_split_by_subset_field(self, smoke_dir, tmp_path):
        """One preference file with a subset field loads as the §6 human and GPT subsets."""
        from cheems_lib.records import read_records

        files = load_world(release_folder(smoke_dir, tmp_path / "r"))
        for sub in ("human", "gpt"):
            want = [r.id for r in read_records(smoke_dir / f"cheems_preference/{sub}.jsonl")]
            assert [r.id for r in files[f"cheems_preference/{sub}.jsonl"]] == want
        assert "cheems_preference.jsonl" not in files

    def test_split_by_ids_file_and_unsplit(self, smoke_dir, tmp_path):
        """Without a subset field: a human_ids file splits it; without one it stays whole."""
        from cheems_lib.records import read_records

        out = release_folder(smoke_dir, tmp_path / "r", subset=False)
        human = [r.id for r in read_records(smoke_dir / "cheems_preference/human.jsonl")]
        ids = tmp_path / "ids.txt"
        ids.write_text("# golden subset\n" + "\n".join(human) + "\n\n", encoding="utf-8")
        files = load_world(out, human_ids=ids)
        assert [r.id for r in files["cheems_preference/human.jsonl"]] == human
        assert len(files["cheems_preference/gpt.jsonl"]) == len(read_records(smoke_dir / "cheems_preference/gpt.jsonl"))
        whole = load_world(out)
        assert "cheems_preference/human.jsonl" not in whole and len(whole["cheems_preference.jsonl"]) == len(human) + len(
            files["cheems_preference/gpt.jsonl"])

    def test_partial_subset_field_is_an_error(self, smoke_dir, tmp_path):
        """Some records with a subset and some without: a DataError with the file and line, not a silent split."""
        import json

        from cheems_lib.input_files import DataError

        out = release_folder(smoke_dir, tmp_path / "r")
        lines = (out / "cheems_preference.jsonl").read_text(encoding="utf-8").splitlines()
        rec = json.loads(lines[1])
        del rec["subset"]
        lines[1] = json.dumps(rec, ensure_ascii=False)
        (out / "cheems_preference.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        with pytest.raises(DataError, match=r"cheems_preference\.jsonl:2: .*has subset null"):
            load_world(out)


def test_missing_sentence_names_the_file():
    """The one generated sentence of a skipped section names what it needs."""
    from cheems_lib.world_files import missing_sentence

    assert missing_sentence("Table 5's GPT column", "cheems_bench_gpt/open.jsonl") == (
        "*Skipped: Table 5's GPT column; it needs `cheems_bench_gpt/open.jsonl`, which this folder does not hold.*")


def test_example_release_folder_is_a_complete_release():
    """data/examples/release (the book's "Use your own data" example) is detected as the complete release layout
    with its manifest's labels, its records load with prompt ids distinct across the files, the subset field and
    human_ids.txt split the preference file alike, and the manifest's sha256 and prompt counts are the files'."""
    import hashlib
    import json

    from cheems_lib.records import read_files
    from cheems_lib.world_files import detect_layout
    from conftest import ROOT

    folder = ROOT / "data" / "examples" / "release"
    lay = detect_layout(folder)
    assert lay.kind == "release" and not lay.simulated
    assert lay.found == ("open", "human", "preference", "manifest")
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    assert lay.labels == manifest["labels"] and "made-up" in manifest["name"].lower()
    by_subset = load_world(folder)
    by_ids = load_world(folder, human_ids=folder / "human_ids.txt")
    assert set(by_subset) == {"cheems_bench/open.jsonl", "cheems_bench/human.jsonl", "cheems_preference/human.jsonl",
                              "cheems_preference/gpt.jsonl"}
    assert {k: [r.id for r in v] for k, v in by_subset.items()} == {k: [r.id for r in v] for k, v in by_ids.items()}
    assert all(len(v) >= 5 for v in by_subset.values())
    read_files([lay.paths[n] for n in ("open", "human", "preference")])  # DataError on a repeated prompt id
    for rel, entry in manifest["files"].items():
        data = (folder / rel).read_bytes()
        assert entry["sha256"] == hashlib.sha256(data).hexdigest() and entry["prompts"] == data.count(b"\n"), rel
        assert any("\u4e00" <= ch <= "\u9fff" for ch in data.decode("utf-8")), rel  # Chinese text
    assert sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) < 200_000


def test_comparable_labels_and_content_come_from_the_manifest(smoke_dir, tmp_path):
    """The one rule: a file is comparable with the paper unless its manifest entry (or the manifest) says
    "comparable": false; the split preference subsets answer for the release's one file; per-file labels and
    content win over the top-level ones; model labels are recognised by model names and words."""
    from cheems_lib.world_files import detect_layout, model_labels

    plain = detect_layout(release_folder(smoke_dir, tmp_path / "a"))
    assert plain.comparable("cheems_bench/open.jsonl") and plain.content("cheems_bench/open.jsonl") is None
    manifest = {"name": "mine", "labels": "people", "files": {
        "cheems_bench/open.jsonl": {"comparable": False, "content": "other prompts", "labels": "gpt-3.5-turbo"},
        "data/cheems_preference.jsonl": {"comparable": False}}}
    lay = detect_layout(release_folder(smoke_dir, tmp_path / "b", data_level=True, manifest=manifest))
    assert not lay.comparable("cheems_bench/open.jsonl") and lay.comparable("cheems_bench/human.jsonl")
    assert not lay.comparable("cheems_preference/human.jsonl") and not lay.comparable("cheems_preference.jsonl")
    assert lay.content("cheems_bench/open.jsonl") == "other prompts" and lay.content("cheems_bench/human.jsonl") == "mine"
    assert lay.file_labels("cheems_bench/open.jsonl") == "gpt-3.5-turbo" and lay.file_labels("cheems_bench/human.jsonl") == "people"
    top = detect_layout(release_folder(smoke_dir, tmp_path / "c", manifest={"comparable": False}))
    assert not top.comparable("cheems_bench/human.jsonl")
    assert [model_labels(t) for t in ("gpt-3.5-turbo", "Qwen2.5-72B", "model-generated", "model labels, not human labels",
                                      "human annotators", "unknown labels", "people")] == [True] * 4 + [False] * 3


def _with_stray_response(path, prompt_id="stray"):
    """Append a record whose third response no annotation mentions to the records file ``path``."""
    import json

    rec = {"id": prompt_id, "input": "哪个更好？", "category": ["理解"],
           "responses": [{"id": "a", "content": "短"}, {"id": "b", "content": "较长的回答"},
                         {"id": "c", "content": "从未被比较过的最长的回答"}],
           "annotations": [["a", "b", "1"]]}
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(rec, ensure_ascii=False) + "\n")


def test_a_never_compared_response_is_counted_per_file_and_not_ranked(smoke_dir, tmp_path):
    """A response that no annotation mentions is left out of the ranking (never tied with the best) and every page
    says how many of which file."""
    from cheems_lib.analyses.world_folder import open_world
    from cheems_lib.records import strict_pairs

    out = release_folder(smoke_dir, tmp_path / "r", bench="annotations")
    _with_stray_response(out / "cheems_bench/open.jsonl")
    world = open_world(str(out))
    stray = next(r for r in world.bench["open"] if r.id == "stray")
    assert stray.rank == {"a": 0, "b": 1} and strict_pairs(stray.rank, stray.response_ids) == [("a", "b")]
    assert world.reading["cheems_bench/open.jsonl"].unranked == 1 and world.read_report.unranked == 1
    assert "1 response of `cheems_bench/open.jsonl` is not ranked" in world.about


@pytest.mark.parametrize("how", ["human_ids names none", "human_ids names all", "an empty benchmark file"])
def test_an_empty_subset_is_absent_and_said_once(smoke_dir, tmp_path, how):
    """A subset left empty (a human_ids file naming no prompt, or every one; an empty file) is an absent file, which
    each chapter skips in one sentence, and the page says why, instead of a chapter ending in ZeroDivisionError."""
    from cheems_lib.analyses.world_folder import open_world
    from cheems_lib.records import read_records

    out = release_folder(smoke_dir, tmp_path / "r", subset=False)
    ids = tmp_path / "ids.txt"
    if how == "human_ids names none":
        ids.write_text("no-such-prompt\n", encoding="utf-8")
    else:
        ids.write_text("".join(r.id + "\n" for r in read_records(out / "cheems_preference.jsonl")), encoding="utf-8")
    if how == "an empty benchmark file":
        (out / "cheems_bench/open.jsonl").write_text("", encoding="utf-8")
    world = open_world(str(out), human_ids=str(ids))
    absent = {"human_ids names none": "cheems_preference/human.jsonl", "human_ids names all": "cheems_preference/gpt.jsonl",
              "an empty benchmark file": "cheems_bench/open.jsonl"}[how]
    assert absent not in world.files and all(world.files.values())
    said = {"human_ids names none": "The human subset of `cheems_preference.jsonl` is empty (the human_ids file ids.txt "
                                    "lists none of its",
            "human_ids names all": "The GPT subset of `cheems_preference.jsonl` is empty (the human_ids file ids.txt "
                                   "lists all of its",
            "an empty benchmark file": "cheems_bench/open.jsonl holds no record, so what needs it is skipped."}[how]
    assert said.replace("`", "") in world.about.replace("`", "")
