"""Provenance: source strings of paper tables, simulated worlds and data files; the download index."""
from __future__ import annotations

import csv
import hashlib
import json
import os
import subprocess
import sys

import pytest

from cheems_lib.publishing import provenance
from conftest import ROOT


@pytest.fixture(autouse=True)
def no_default():
    """No test sees another test's set_source."""
    provenance.set_source(None)
    yield
    provenance.set_source(None)


def test_paper_source_names_table_and_file():
    """A paper table's source names its artefact and CSV; unknown tables are refused."""
    assert provenance.paper_source("table1_statistics") == "paper, Table 1 (data/paper/table1_statistics.csv)"
    assert provenance.paper_source("table8_reward_models") == "paper, Table 8 (data/paper/table8_reward_models.csv)"
    with pytest.raises(ValueError, match="unknown .*table1_statistics"):
        provenance.paper_source("table2")


def test_world_source_simulated_and_real(tmp_path):
    """A simulated world is named by size, seed and simulator; a real folder by its files' SHA-256 prefixes."""
    sim = tmp_path / "sim"
    sim.mkdir()
    (sim / "summary.json").write_text(json.dumps({"simulator_version": "1.0", "size": "smoke", "seed": 3}))
    assert provenance.world_source(sim) == "simulated world (size smoke, seed 3, simulator 1.0)"
    assert provenance.world_source(sim, note="training seeds 3-4") == \
        "simulated world (size smoke, seed 3, simulator 1.0; training seeds 3-4)"
    real = tmp_path / "real"
    (real / "cheems_bench").mkdir(parents=True)
    (real / "cheems_bench/open.jsonl").write_bytes(b"a\n")
    (real / "cheems_bench/human.jsonl").write_bytes(b"b\n")
    (real / "notes.txt").write_text("not data")
    sha = {k: hashlib.sha256(v).hexdigest()[:12] for k, v in {"open": b"a\n", "human": b"b\n"}.items()}
    assert provenance.world_source(real) == (f"data: {real.as_posix()} (cheems_bench/open.jsonl sha256 {sha['open']}, "
                                             f"cheems_bench/human.jsonl sha256 {sha['human']})")
    assert provenance.world_source(tmp_path / "empty") == f"data: {(tmp_path / 'empty').as_posix()} (no file of the spec layout found)"


def test_file_source_is_relative_and_hashed(monkeypatch):
    """A data file inside the working directory is named relative to it, with its SHA-256 prefix."""
    monkeypatch.chdir(ROOT)
    path = ROOT / "data/examples/annotations.jsonl"
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    assert provenance.file_source(path) == f"data: data/examples/annotations.jsonl sha256 {digest}"
    with pytest.raises(ValueError, match="at least one file"):
        provenance.file_source()


@pytest.mark.parametrize("bad", ["ours", "papers", "", "simulated\nworld", None, "Simulated world"])
def test_invalid_sources_are_refused(bad):
    """A source must be one line starting with the word paper, simulated or data."""
    with pytest.raises(ValueError, match="does not start with paper, simulated or data"):
        provenance.set_source(bad) if bad is not None else provenance.check_source(bad)


def test_resolve_uses_default_and_refuses_none():
    """Without source= the default applies; without either, the error names the download and the fix."""
    with pytest.raises(ValueError, match=r"^tab-x-y: no source .*publish\.set_source"):
        provenance.resolve_source("tab-x-y")
    provenance.set_source("data: a.jsonl sha256 0123456789ab")
    assert provenance.resolve_source("tab-x-y") == "data: a.jsonl sha256 0123456789ab"
    assert provenance.resolve_source("tab-x-y", "paper, Table 9 (x)") == "paper, Table 9 (x)"
    assert provenance.resolve_source("tab-x-y", paper_columns={"table4_ablation": ["p1", "p2"]}) == (
        "data: a.jsonl sha256 0123456789ab; columns p1, p2: paper, Table 4 (data/paper/table4_ablation.csv)")


def _sidecar(folder, label, source, caption=None, ext="csv", stem=None, artefact=""):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{stem or label}.{ext}").write_text("x\n")
    (folder / f"{stem or label}.meta.json").write_text(provenance.sidecar_json(label, source, caption, artefact=artefact),
                                                      encoding="utf-8")


def test_write_index_from_sidecars(tmp_path):
    """index.csv lists every download with a sidecar: its page label, its file (named after whose numbers it holds),
    the paper's artefact, caption, source and chapter; orphans are left out."""
    tables, figures = tmp_path / "book/_extra/tables", tmp_path / "book/_extra/figures"
    _sidecar(tables, "tab-b-one", "simulated world (size smoke, seed 0)", "Caption, with \"quotes\"")
    _sidecar(tables, "paper-table1", "paper, Table 1 (data/paper/table1_statistics.csv)", "", stem="published-table1",
             artefact="Table 1")
    (tables / "tab-gone-x.meta.json").write_text(provenance.sidecar_json("tab-gone-x", "data: x"))
    _sidecar(figures, "fig-b-plot", "data: x.jsonl sha256 0123456789ab", ext="svg")
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks/b.md").write_text('publish.table(t, "tab-b-one")\npublish.figure(f, "fig-b-plot")\n')
    paths = provenance.write_index(tmp_path)
    rows = list(csv.DictReader(paths["tables"].open(encoding="utf-8")))
    assert rows == [{"label": "paper-table1", "file": "published-table1.csv", "artefact": "Table 1", "caption": "",
                     "source": "paper, Table 1 (data/paper/table1_statistics.csv)", "chapter": ""},
                    {"label": "tab-b-one", "file": "tab-b-one.csv", "artefact": "", "caption": "Caption, with \"quotes\"",
                     "source": "simulated world (size smoke, seed 0)", "chapter": "b"}]
    assert list(csv.DictReader(paths["figures"].open(encoding="utf-8"))) == [
        {"label": "fig-b-plot", "file": "fig-b-plot.svg", "artefact": "", "source": "data: x.jsonl sha256 0123456789ab",
         "chapter": "b"}]
    (tables / "tab-b-one.meta.json").write_text('{"label": "tab-b-one", "source": "ours"}')
    with pytest.raises(ValueError, match=r"tab-b-one\.meta\.json: not a provenance sidecar .*fix: delete it"):
        provenance.write_index(tmp_path)


def test_parallel_chapters_lose_no_rows(tmp_path):
    """Two processes publishing tables at once into one folder: the index holds every table of both."""
    script = ("import sys, pandas as pd; from cheems_lib.publishing import publish\n"
              "publish.set_source('simulated world (size smoke, seed ' + sys.argv[1] + ')')\n"
              "for i in range(30):\n"
              "    publish.table(pd.DataFrame({'x': [i]}).style.set_caption(f'run {sys.argv[1]} table {i}'),"
              " f'tab-p{sys.argv[1]}-t{i}', root=sys.argv[2])\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    procs = [subprocess.Popen([sys.executable, "-c", script, str(k), str(tmp_path)], cwd=ROOT, env=env) for k in (1, 2)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    rows = list(csv.DictReader(provenance.write_index(tmp_path)["tables"].open(encoding="utf-8")))
    assert sorted(r["label"] for r in rows) == sorted(f"tab-p{k}-t{i}" for k in (1, 2) for i in range(30))
    assert all(r["source"] == f"simulated world (size smoke, seed {r['label'][5]})" for r in rows)


def test_world_source_of_a_release_folder_under_data(tmp_path):
    """The release layout (one preference file, under data/) is hashed too, named by its path in the folder."""
    real = tmp_path / "real"
    (real / "data" / "cheems_bench").mkdir(parents=True)
    (real / "data/cheems_bench/open.jsonl").write_bytes(b"a\n")
    (real / "data/cheems_preference.jsonl").write_bytes(b"p\n")
    sha = {k: hashlib.sha256(v).hexdigest()[:12] for k, v in {"open": b"a\n", "pref": b"p\n"}.items()}
    assert provenance.world_source(real) == (f"data: {real.as_posix()} (data/cheems_bench/open.jsonl sha256 "
                                             f"{sha['open']}, data/cheems_preference.jsonl sha256 {sha['pref']})")
