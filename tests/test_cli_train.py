"""`cheems train` from the command line: strict flags, safe output folders, interrupts, presets by model kind."""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys

import pytest

from cheems_lib.records import write_records
from cheems_lib.world.simulation import WorldConfig, build_world

CHEEMS = [sys.executable, "-m", "cheems_lib.cli", "train"]
# a tiny, fast run: 24 prompts, one epoch of about 20 steps, a checkpoint every 3
FAST = ["--model", "tiny-xs", "--epochs", "1", "--max-tokens-per-batch", "256", "--max-length", "128",
        "--save-every", "3"]


def run(*args):
    return subprocess.run([*CHEEMS, *map(str, args)], capture_output=True, text=True, timeout=600)


def start(*args):
    return subprocess.Popen([*CHEEMS, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def weights(path):
    from safetensors.torch import load_file
    return load_file(str(path / "model.safetensors"))


def same_weights(a, b) -> bool:
    wa, wb = weights(a), weights(b)
    return wa.keys() == wb.keys() and all((wa[k] == wb[k]).all() for k in wa)


def log_lines(path):
    return [{k: v for k, v in json.loads(l).items() if k != "tokens_per_s"}
            for l in (path / "train_log.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("data") / "d.jsonl"
    write_records(build_world(WorldConfig(size="smoke", seed=0)).files["cheems_preference/gpt.jsonl"][:24], d)
    return d


@pytest.fixture(scope="module")
def reference(data, tmp_path_factory):
    """An uninterrupted run with FAST settings (seed 0)."""
    out = tmp_path_factory.mktemp("ref") / "rm"
    done = run("--data", data, *FAST, "--output", out)
    assert done.returncode == 0, done.stderr[-2000:]
    return out


BAD_FLAGS = [("--epochs", "0"), ("--epochs", "-1"), ("--learning-rate", "nan"), ("--learning-rate", "0"),
             ("--learning-rate", "inf"), ("--max-length", "0"), ("--max-tokens-per-batch", "0"), ("--grad-accum", "0"),
             ("--reg-coef", "-0.1"), ("--reg-coef", "nan"), ("--warmup-ratio", "1.5"), ("--weight-decay", "-1"),
             ("--max-grad-norm", "-1"), ("--seed", "-1"), ("--max-steps", "-1"), ("--save-every", "-2"),
             ("--log-every", "0")]


@pytest.mark.parametrize("flag,value", BAD_FLAGS, ids=[f"{f}={v}" for f, v in BAD_FLAGS])
def test_out_of_range_flag_is_one_line_and_writes_nothing(data, tmp_path, flag, value):
    """Every numeric flag out of range: exit 2, one line naming flag, value and range, no output folder."""
    out = tmp_path / "rm"
    done = run("--data", data, *FAST, flag, value, "--output", out)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"cheems: {flag} ") and "must be" in lines[0] and "fix:" in lines[0]
    assert not out.exists()


def test_finished_output_is_refused_without_overwrite(data, reference, tmp_path):
    """Retraining into a finished folder: exit 2, one line with the fix, the folder byte-identical."""
    out = tmp_path / "rm"
    shutil.copytree(reference, out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    done = run("--data", data, *FAST, "--seed", "1", "--output", out)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "already holds a finished model" in done.stderr and "--overwrite" in done.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_foreign_folder_is_refused_even_with_overwrite(data, tmp_path):
    """A non-empty folder that is not a training folder is never written into."""
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    for extra in ([], ["--overwrite"]):
        done = run("--data", data, *FAST, "--output", out, *extra)
        assert done.returncode == 2 and "not a cheems training folder" in done.stderr, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    assert not any(p.name.startswith(".mine") for p in tmp_path.iterdir())


def test_resume_of_a_finished_run_with_other_settings_names_them(data, reference, tmp_path):
    """--resume against a finished run trained with another seed and learning rate: both fields, both values."""
    done = run("--data", data, *FAST, "--seed", "3", "--learning-rate", "0.001", "--resume", "--output", reference)
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip()
    assert "seed 3 now vs 0 recorded" in line and "learning_rate 0.001 now vs 0.002 recorded" in line


def test_overwrite_replaces_a_finished_model(data, reference, tmp_path):
    """--overwrite trains beside the old model and swaps the new one in; no sibling folder is left."""
    out = tmp_path / "rm"
    shutil.copytree(reference, out)
    done = run("--data", data, *FAST, "--seed", "1", "--overwrite", "--output", out)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads((out / "cheems_train.json").read_text())["config"]["seed"] == 1
    assert not same_weights(out, reference) and not (out / "checkpoints").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rm"]


def interrupted(*args, at, sig):
    """Run ``cheems train ARGS`` in its own session; it sends itself ``sig`` at the point ``at`` (``NAME=N``,
    see cheems_lib.outputs.interrupt_point). Asserts the signal ended it: -9 for SIGKILL, 130 for SIGINT."""
    env = {**os.environ, "CHEEMS_TEST_INTERRUPT": f"{at}:{sig.name}"}
    done = subprocess.run([*CHEEMS, *map(str, args)], capture_output=True, text=True, timeout=600, env=env,
                          start_new_session=True)
    assert done.returncode == (-signal.SIGKILL if sig == signal.SIGKILL else 130), (at, done.stderr[-2000:])
    return done


def _point(at: str, steps: int) -> str:
    """``train.step=mid``: a seeded step strictly inside the run."""
    name, n = at.split("=")
    n = str(random.Random(24).randint(2, steps - 1)) if n == "mid" else n
    return f"{name}={n}"


# every kind of moment: after a step (before its checkpoint), inside and after a checkpoint's save, while the
# final folder is staged, staged complete, and swapped in (SIGINT there is held until the swap is done)
INTERRUPTS = [("train.step=1", signal.SIGINT), ("train.step=mid", signal.SIGKILL),
              ("checkpoint.written=2", signal.SIGKILL), ("checkpoint.saved=1", signal.SIGINT),
              ("publish.staging=1", signal.SIGKILL), ("publish.staged=1", signal.SIGINT),
              ("publish.swapped=1", signal.SIGINT)]


@pytest.mark.parametrize("at,sig", INTERRUPTS, ids=[f"{a}-{s.name}" for a, s in INTERRUPTS])
def test_interrupt_at_each_kind_of_point_leaves_resumable_or_finished(data, reference, tmp_path, at, sig):
    """A real signal at a step, a checkpoint or a moment of the final save: an unfinished folder (no weights)
    whose --resume ends identical to an uninterrupted run, or, once swapped in, the finished folder itself;
    SIGINT exits 130 saying "interrupted"."""
    steps = json.loads((reference / "cheems_train.json").read_text())["steps"]
    out = tmp_path / "rm"
    args = ["--data", data, *FAST, "--output", out]
    done = interrupted(*args, at=_point(at, steps), sig=sig)
    finished = (out / "cheems_train.json").exists()
    assert finished == at.startswith("publish.swapped")
    if sig == signal.SIGINT:
        assert "interrupted" in done.stderr.strip().splitlines()[-1]
    if not finished:
        assert not (out / "model.safetensors").exists()  # no half-finished output
    if at.startswith("checkpoint."):  # the interrupted checkpoint counts only once renamed
        kept = 3 * (int(at.split("=")[1]) - (at.startswith("checkpoint.written")))
        assert (out / "checkpoints/latest").read_text() == f"step-{kept:07d}"
    resumed = run(*args, "--resume")  # finished: "nothing to resume", and stale staging folders are removed
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert finished == ("already finished" in resumed.stderr)
    assert same_weights(out, reference) and log_lines(out) == log_lines(reference)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rm"]  # no staging folder left


@pytest.mark.parametrize("at", ["checkpoint.saved=2", "publish.staged=1", "publish.swapped=1"])
def test_kill_during_overwrite_keeps_the_old_model(data, reference, tmp_path, at):
    """kill -9 during an --overwrite run: the complete old model until the swap, the complete new one after it;
    --overwrite --resume then ends with the new model and no sibling folder."""
    out = tmp_path / "rm"
    shutil.copytree(reference, out)
    interrupted("--data", data, *FAST, "--seed", "1", "--overwrite", "--output", out, at=at, sig=signal.SIGKILL)
    summary = json.loads((out / "cheems_train.json").read_text())
    assert {"config.json", "model.safetensors", "tokenizer.json", "train_log.jsonl"} <= {p.name for p in out.iterdir()}
    if at != "publish.swapped=1":
        assert summary["config"]["seed"] == 0 and same_weights(out, reference)  # the old model, untouched
        assert all((out / p.name).read_bytes() == p.read_bytes() for p in reference.iterdir())
    else:
        assert summary["config"]["seed"] == 1
        from cheems_lib.models.reward_model import load
        load(out)  # the new model, complete
    resumed = run("--data", data, *FAST, "--seed", "1", "--overwrite", "--resume", "--output", out)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert json.loads((out / "cheems_train.json").read_text())["config"]["seed"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rm"]


def test_resume_without_checkpoint_starts_fresh_with_one_line(data, reference, tmp_path):
    """--resume into a new folder says so on stderr and trains the same model as a plain run."""
    out = tmp_path / "rm"
    done = run("--data", data, *FAST, "--resume", "--output", out)
    assert done.returncode == 0, done.stderr[-2000:]
    assert sum("no checkpoint to resume; starting fresh" in l for l in done.stderr.splitlines()) == 1
    assert same_weights(out, reference)


@pytest.fixture(scope="module")
def pretrained(data, tmp_path_factory):
    """A non-tiny local checkpoint: a tiny model saved with save_pretrained (loaded with from_pretrained)."""
    from cheems_lib.records import read_records
    from cheems_lib.models.reward_model import build_tiny, train_tokenizer

    recs = read_records(data)
    tok = train_tokenizer((t for r in recs for t in [r.prompt, *(x.content for x in r.responses)]), vocab_size=500)
    path = tmp_path_factory.mktemp("pre") / "my-base"
    build_tiny("tiny-xs", tok, seed=0, max_length=128).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def test_pretrained_checkpoint_gets_table9_by_default(data, pretrained, tmp_path):
    """No --preset: a from_pretrained model trains with Table 9's learning rate and max length; the start line says so."""
    from cheems_lib.paper import table

    t9 = dict(table("table9_hyperparameters").values)
    out = tmp_path / "rm"
    done = run("--data", data, "--model", pretrained, "--max-steps", "1", "--output", out)
    assert done.returncode == 0, done.stderr[-2000:]
    s = json.loads((out / "cheems_train.json").read_text())
    assert s["config"]["learning_rate"] == float(t9["learning_rate"]) and s["effective"]["preset"] == "paper"
    assert s["config"]["max_length"] == int(t9["max_sequence_length"]) and "pretrained" in s["effective"]["preset_reason"]
    start_lines = [l for l in done.stderr.splitlines() if l.startswith("cheems: training ")]
    assert len(start_lines) == 1
    for part in ("preset paper", f"learning rate {float(t9['learning_rate']):g}", "epochs 2", "max length 2048",
                 "token budget", f"global batch {int(t9['global_batch_size'])} sequences", "1 process"):
        assert part in start_lines[0]


def test_high_learning_rate_on_pretrained_needs_force_lr(data, pretrained, tmp_path):
    """--learning-rate 2e-3 on a pretrained checkpoint: refused naming the value and Table 9's; --force-lr accepts it."""
    out = tmp_path / "rm"
    done = run("--data", data, "--model", pretrained, "--learning-rate", "2e-3", "--max-steps", "1", "--output", out)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "0.002" in done.stderr and "5e-06" in done.stderr and "--force-lr" in done.stderr
    assert not out.exists()
    done = run("--data", data, "--model", pretrained, "--learning-rate", "2e-3", "--force-lr", "--max-steps", "1",
               "--output", out)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads((out / "cheems_train.json").read_text())["config"]["learning_rate"] == 0.002


def test_tiny_model_keeps_the_tiny_preset_and_flags_win(data, tmp_path):
    """A tiny-family name gets the tiny preset; an explicit flag beats the preset."""
    out = tmp_path / "rm"
    done = run("--data", data, *FAST, "--max-steps", "1", "--learning-rate", "0.01", "--output", out)
    assert done.returncode == 0, done.stderr[-2000:]
    eff = json.loads((out / "cheems_train.json").read_text())["effective"]
    assert eff["preset"] == "tiny" and eff["learning_rate"] == 0.01 and eff["max_length"] == 128


def test_train_skip_invalid_keeps_the_valid_records(tmp_path):
    """A bad line, a record with neither rank nor annotations (nothing ranks it) or a repeated id stops `train`
    (naming --skip-invalid); with the flag the rest trains, and the skips are reported on stderr, in the JSON output
    and in cheems_train.json."""
    import orjson

    from cheems_lib.records import write_records
    from cheems_lib.world.simulation import WorldConfig, build_world

    data = tmp_path / "d.jsonl"
    recs = build_world(WorldConfig(size="smoke", seed=0)).files["cheems_preference/human.jsonl"][:12]
    write_records(recs, data)
    unranked = {**recs[0].to_json(), "id": "unranked"}
    del unranked["rank"], unranked["annotations"]  # with its annotations it would be ranked on read
    with open(data, "ab") as fh:
        fh.write(b'{"input": "q", "responses": [{"id": "a", "content": "x"}], "rank": {"zz": 0}}\n')
        fh.write(orjson.dumps(unranked) + b"\n" + orjson.dumps(recs[1].to_json()) + b"\n")  # lines 14, 15
    args = ["train", "--data", data, "--model", "tiny-xs", "--epochs", "1", "--max-length", "64",
            "--output", tmp_path / "rm"]
    strict = subprocess.run([sys.executable, "-m", "cheems_lib.cli", *map(str, args)], capture_output=True, text=True)
    assert strict.returncode == 2 and f"{data}:13:" in strict.stderr and "--skip-invalid" in strict.stderr
    res = subprocess.run([sys.executable, "-m", "cheems_lib.cli", *map(str, args), "--skip-invalid"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-1000:]
    assert f"skipped {data}:13: 'rank' names unknown response id \"zz\"" in res.stderr
    assert f"skipped {data}:14: prompt \"unranked\" has no 'rank'" in res.stderr
    assert f"skipped {data}:15: prompt id \"{recs[1].id}\" repeats the record at {data}:2" in res.stderr
    out = json.loads(res.stdout)
    assert out["skipped_invalid"] == 3
    assert json.loads((tmp_path / "rm/cheems_train.json").read_text())["skipped_invalid"] == 3
    # every valid record is used or counted (a record whose responses all tie has no pair to train on)
    assert out["data"]["prompts"] + out["data"]["prompts_without_pairs"] == 12 and out["data"]["prompts"] > 0


def test_a_full_disk_while_saving_is_one_line_and_leaves_no_half_checkpoint(tmp_path):
    """A file-size limit (EFBIG, like a full disk) during the checkpoint save: exit 1, one line, no temp folder."""
    import resource

    from cheems_lib.records import write_records
    from cheems_lib.world.simulation import WorldConfig, build_world

    data = tmp_path / "d.jsonl"
    write_records(build_world(WorldConfig(size="smoke", seed=0)).files["cheems_preference/human.jsonl"][:12], data)
    limit = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (150_000, 150_000))  # the weights are larger
    res = subprocess.run([sys.executable, "-m", "cheems_lib.cli", "train", "--data", str(data), "--model", "tiny-xs",
                          "--epochs", "1", "--max-length", "64", "--output", str(tmp_path / "rm")],
                         capture_output=True, text=True, preexec_fn=limit)
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr[-2000:]
    assert res.stderr.strip().splitlines()[-1].startswith("cheems: ") and "fix:" in res.stderr
    assert not list((tmp_path / "rm").rglob(".step-*.tmp")) and not (tmp_path / "rm/cheems_train.json").exists()


def test_every_config_field_has_a_flag():
    """Each TrainConfig field but model is a `cheems train` flag (help from its docstring, default None: the preset's)."""
    from dataclasses import fields

    from cheems_lib.cli import build_parser
    from cheems_lib.models.training_config import TrainConfig

    names = [f.name for f in fields(TrainConfig) if f.name != "model"]
    args = build_parser().parse_args(["train", "--data", "d", "--output", "o"])
    assert all(getattr(args, n) is None for n in names)
    args = build_parser().parse_args(["train", "--data", "d", "--output", "o", "--tokenizer-vocab", "500",
                                 "--warmup-ratio", "0.2", "--mixed-precision", "bf16"])
    assert (args.tokenizer_vocab, args.warmup_ratio, args.mixed_precision) == (500, 0.2, "bf16")
    helps = {a.dest: a.help for a in build_parser()._subparsers._group_actions[0].choices["train"]._actions}
    assert helps["tokenizer_vocab"].startswith("Vocabulary of the tokenizer") and set(names) <= set(helps)


def _digests(folder):
    import hashlib

    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def _check_full_disk_outcome(rc, err, out, before):
    """Exit 1, the last line the full-disk message with its fix, no traceback, no hidden folder, old model intact."""
    assert rc == 1 and "Traceback" not in err, err[-2000:]
    assert err.strip().splitlines()[-1] == (f"cheems: {out}: No space left on device (fix: free space or write "
                                            "elsewhere; the previous output is unchanged)")
    assert sorted(p.name for p in out.parent.iterdir()) == ["rm"] and _digests(out) == before


def test_torch_failing_on_a_full_disk_is_one_line_and_keeps_the_old_model(data, reference, tmp_path, monkeypatch,
                                                                          capsys):
    """torch.save's RuntimeError ("unexpected pos") on a nearly full disk during --overwrite is ENOSPC: exit 1,
    one line, no .rm.cheems-overwrite or .rm.cheems-final left, the old model untouched."""
    import torch

    from cheems_lib import outputs
    from cheems_lib.cli import main

    def full_save(obj, f, *args, **kwargs):
        with open(f, "wb") as fh:
            fh.write(b"PK\x03\x04")  # what torch's zip writer had written when the disk filled
        raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 64 vs 0")

    out = tmp_path / "rm"
    shutil.copytree(reference, out)
    before = _digests(out)
    monkeypatch.setattr(torch, "save", full_save)
    monkeypatch.setattr(outputs, "_free_bytes", lambda path: 0)
    rc = main(["train", "--data", str(data), *FAST, "--overwrite", "--output", str(out)])
    _check_full_disk_outcome(rc, capsys.readouterr().err, out, before)


@pytest.mark.parametrize("free_kib", [300, 900])
def test_a_real_full_disk_during_overwrite_keeps_the_old_model(data, reference, tmp_path, free_kib):
    """On a small tmpfs (root only) the disk fills during the checkpoint (300 KiB free) or later (900 KiB):
    exit 1 with one line, no hidden folder, the old model untouched."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    size = sum(p.stat().st_size for p in reference.iterdir()) // 1024 + 64 + free_kib
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}k", "tmpfs", str(mnt)],
                                           capture_output=True).returncode != 0:
        pytest.skip("mounting a small tmpfs needs root")
    try:
        out = mnt / "rm"
        shutil.copytree(reference, out)
        before = _digests(out)
        res = run("--data", data, *FAST, "--overwrite", "--output", out)
        _check_full_disk_outcome(res.returncode, res.stderr, out, before)
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)


# --- one lock per training folder; no output is an input; a rerun leaves what a fresh run does ---

def _tree(folder):
    """Every file under ``folder`` (by relative path) with its bytes; timings left out of the summary and the log."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if not p.is_file():
            continue
        if p.name == "cheems_train.json":
            summary = {k: v for k, v in json.loads(p.read_text()).items() if k != "wall_time_s"}
            summary["final"] = {k: v for k, v in summary["final"].items() if k != "tokens_per_s"}
            out[p.name] = summary
        elif p.name == "train_log.jsonl":
            out[p.name] = log_lines(folder)
        else:
            out[p.relative_to(folder).as_posix()] = p.read_bytes()
    return out


@pytest.mark.parametrize("finished", [False, True], ids=["new", "finished"])
def test_a_train_into_a_folder_another_process_writes_is_refused_and_the_folder_untouched(data, reference, tmp_path,
                                                                                        finished):
    """Two `cheems train` into one --output: while one holds the folder's lock (here the test process), the other
    stops before anything is written, with the score lock's line (exit 2): no second model, no mixed log, no
    hidden sibling, and a finished model (even with --overwrite) byte-identical."""
    from cheems_lib.outputs import OutputLock

    out = tmp_path / "rm"
    if finished:
        shutil.copytree(reference, out)
    before = _digests(out) if finished else None
    with OutputLock(out):
        done = run("--data", data, *FAST, "--seed", "1", "--output", out, *(["--overwrite"] if finished else []))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.stderr == (f"cheems: {out}: another process (pid {os.getpid()}) is writing this output (fix: wait for "
                           "it to finish, or choose another output path)\n")
    assert (_digests(out) if finished else out.exists()) == (before if finished else False)
    assert sorted(p.name for p in tmp_path.iterdir()) == (["rm"] if finished else [])


def test_a_launch_into_a_locked_folder_stops_on_every_process_with_one_line(data, reference, tmp_path):
    """`accelerate launch` (2 processes) into a folder another process writes: the main process alone asks for the
    lock and every process stops at once (no hang at a barrier, no traceback of cheems or torch in the processes),
    the lock's line printed once; the folder untouched. (The launcher adds its own report of the failed workers.)"""
    from cheems_lib.outputs import OutputLock
    from conftest import launch_two

    out = tmp_path / "rm"
    shutil.copytree(reference, out)
    before = _digests(out)
    with OutputLock(out):
        done = launch_two("train", "--data", data, *FAST, "--seed", "1", "--overwrite", "--output", out, timeout=240)
    line = (f"cheems: {out}: another process (pid {os.getpid()}) is writing this output (fix: wait for it to finish, "
            "or choose another output path)")
    assert done.returncode != 0 and done.stderr.splitlines().count(line) == 1, done.stderr[-3000:]
    worker_errors = ("/cheems_lib/", "RuntimeError", "DistBackendError", "Connection closed", "Timeout")
    assert not any(e in done.stderr for e in worker_errors), done.stderr[-3000:]
    assert _digests(out) == before and sorted(p.name for p in tmp_path.iterdir()) == ["rm"]


@pytest.mark.parametrize("where", ["--data", "--model"])
def test_overwrite_of_a_folder_holding_an_input_is_refused_and_the_input_kept(data, reference, tmp_path, where):
    """--overwrite would swap the folder out and delete it: a --data file inside it, or --model naming the folder
    itself (its weights would be replaced while read), is refused before anything is read, exit 2, one line."""
    out = tmp_path / "rm"
    shutil.copytree(reference, out)
    shutil.copy(data, out / "d.jsonl")
    before = _digests(out)
    if where == "--data":
        args = ["--data", out / "d.jsonl", *FAST]
    else:
        args = ["--data", data, *FAST, "--model", out, "--force-lr"]
    done = run(*args, "--overwrite", "--output", out)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.stderr.startswith(f"cheems: {out}: holds a {where} input, ") and "(fix: " in done.stderr
    assert _digests(out) == before and sorted(p.name for p in tmp_path.iterdir()) == ["rm"]


@pytest.mark.parametrize("earlier", ["finished, --overwrite", "killed before a checkpoint"])
def test_a_rerun_into_a_training_folder_leaves_what_a_fresh_run_does(data, reference, tmp_path, earlier):
    """A finished folder retrained with another seed (--overwrite), or a folder whose run was killed before its first
    checkpoint trained again without --resume: every file is what a run into a new folder writes (timings aside),
    and nothing of the earlier run stays beside it."""
    out, fresh = tmp_path / "rm", tmp_path / "fresh"
    if earlier.startswith("finished"):
        shutil.copytree(reference, out)
    else:
        interrupted("--data", data, *FAST, "--output", out, at="train.step=1", sig=signal.SIGKILL)
        assert (out / "train_log.jsonl").exists() and not (out / "checkpoints").exists()
    extra = ["--overwrite"] if earlier.startswith("finished") else []
    for path in (out, fresh):
        done = run("--data", data, *FAST, "--seed", "1", "--output", path, *(extra if path == out else []))
        assert done.returncode == 0, done.stderr[-2000:]
    assert _tree(out) == _tree(fresh)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh", "rm"]
