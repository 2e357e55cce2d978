"""Publishing: figure files at stable paths, CSV tables with links, chapter header and footer."""
from __future__ import annotations

import hashlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from cheems_lib import publish  # noqa: E402


def _figure():
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([0, 1], [1, 0])
    return fig


def test_figure_files_are_stable(tmp_path):
    paths = publish.figure(_figure(), "fig-test-line", root=tmp_path)
    assert {p.suffix for p in paths.values()} == {".png", ".svg", ".pdf"}
    first = {k: hashlib.sha256(p.read_bytes()).hexdigest() for k, p in paths.items()}
    publish.figure(_figure(), "fig-test-line", root=tmp_path)
    assert first == {k: hashlib.sha256(p.read_bytes()).hexdigest() for k, p in paths.items()}
    assert paths["svg"] == tmp_path / "book/_extra/figures/fig-test-line.svg"
    assert 'href="../figures/fig-test-line.pdf"' in publish.downloads("fig-test-line").data
    with pytest.raises(ValueError, match="not a stable id"):
        publish.figure(_figure(), "My Figure", root=tmp_path)


def test_table_csv_and_link(tmp_path):
    df = pd.DataFrame({"model": ["a", "b"], "acc": [0.5, 0.75]})
    styler = publish.table(df.style.set_caption("Ours & theirs"), "tab-test-acc", root=tmp_path)
    assert pd.read_csv(tmp_path / "book/_extra/tables/tab-test-acc.csv").equals(df)
    html = styler.to_html()
    assert "Ours &amp; theirs" in html and 'href="../tables/tab-test-acc.csv"' in html
    named = pd.DataFrame({"x": [1]}, index=pd.Index(["r"], name="row"))
    publish.table(named, "paper-table9", root=tmp_path)
    assert (tmp_path / "book/_extra/tables/paper-table9.csv").read_text().splitlines()[0] == "row,x"


def test_header_lists_every_parameter():
    declared = {"size": {"default": '"default"', "help": "world size"}, "seed": {"default": "0", "help": "seed"}}
    text = publish.header("smoke", {"size": "smoke"}, declared, "build/worlds/smoke")
    assert "Profile **smoke**" in text and "`build/worlds/smoke`" in text
    assert "| `size` | `smoke` (set) |" in text and "| `seed` | `0` |" in text


def test_footer_hashes_files_and_names_versions(tmp_path):
    f = tmp_path / "x.jsonl"
    f.write_bytes(b"abc\n")
    text = publish.footer(tmp_path, [f], 12.34)
    assert hashlib.sha256(b"abc\n").hexdigest() in text and "12.3 s" in text
    assert "torch " in text and "transformers " in text and "Git commit" in text
