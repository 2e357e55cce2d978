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
    """Same figure, same bytes, at the stable path; bad labels are refused."""
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
    """A table is saved as CSV and its caption links it (escaped)."""
    df = pd.DataFrame({"model": ["a", "b"], "acc": [0.5, 0.75]})
    styler = publish.table(df.style.set_caption("Ours & theirs"), "tab-test-acc", root=tmp_path)
    assert pd.read_csv(tmp_path / "book/_extra/tables/tab-test-acc.csv").equals(df)
    html = styler.to_html()
    assert "Ours &amp; theirs" in html and 'href="../tables/tab-test-acc.csv"' in html
    named = pd.DataFrame({"x": [1]}, index=pd.Index(["r"], name="row"))
    publish.table(named, "paper-table9", root=tmp_path)
    assert (tmp_path / "book/_extra/tables/paper-table9.csv").read_text().splitlines()[0] == "row,x"


def test_header_lists_every_parameter():
    """Every declared parameter appears with its value, default and help."""
    declared = {"size": {"default": '"default"', "help": "world size"}, "seed": {"default": "0", "help": "seed"}}
    text = publish.header("smoke", {"size": "smoke"}, declared, "build/worlds/smoke")
    assert "Profile **smoke**" in text and "`build/worlds/smoke`" in text
    assert "| `size` | `smoke` (set) |" in text and "| `seed` | `0` |" in text


def test_footer_hashes_files_and_names_versions(tmp_path):
    """The footer names the data files' SHA-256, the wall time and package versions."""
    f = tmp_path / "x.jsonl"
    f.write_bytes(b"abc\n")
    text = publish.footer(tmp_path, [f], 12.34)
    assert hashlib.sha256(b"abc\n").hexdigest() in text and "12.3 s" in text
    assert "torch " in text and "transformers " in text and "Git commit" in text


_EVIL = ["data/<img src=x onerror=alert(1)>", "a`<img src=x onerror=alert(1)>`", "a\n<img src=x onerror=alert(1)>",
         "a|<img src=x onerror=alert(1)>", "a\\|<b>", "`", " x ", "``a``", "<script>alert(1)</script>"]


def _render(markdown: str) -> tuple[str, list[str]]:
    """HTML and the code spans of MyST's Markdown parser (the one the book uses)."""
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    md = create_md_parser(MdParserConfig(enable_extensions={"colon_fence", "dollarmath", "amsmath", "deflist",
                                                            "substitution"}), RendererHTML)
    tokens = md.parse(markdown)
    codes = [c.content for t in tokens if t.type == "inline" for c in t.children if c.type == "code_inline"]
    return md.render(markdown), codes


@pytest.mark.parametrize("value", _EVIL)
def test_header_escapes_values_paths_and_help(value):
    """A parameter value, data path or help text holding HTML is shown as text, never rendered as markup."""
    declared = {"world_dir": {"default": '"<i>d</i>"', "help": f"folder {value}"},
                "seed": {"default": "0", "help": "seed with `code|x` & *stars*"}}
    text = publish.header("smoke", {"world_dir": value}, declared, value)
    body = "\n".join(text.splitlines()[2:-1])  # inside the admonition fence, which MyST parses the same way
    html, codes = _render(body)
    for tag in ("<img", "<script", "<b>", "<i>"):
        assert tag not in html, (tag, html)
    shown = value.replace("\n", "\\n")
    assert codes[0] == shown and shown in codes  # the data line and the value cell, verbatim
    assert html.count("<tr>") == 3  # the table kept its shape: header and two rows
    assert "code|x" in codes and "seed with" in html and "&amp;" in html and "*stars*" in html


def test_footer_escapes_file_names(tmp_path):
    """A data file whose name holds HTML appears as text in the footer."""
    f = tmp_path / "a`<img src=x onerror=alert(1)>`.jsonl"
    f.write_bytes(b"x\n")
    html, codes = _render(publish.footer(tmp_path, [f], 1.0))
    assert "<img" not in html and f.name in codes


def test_writes_replace_atomically(tmp_path, monkeypatch):
    """A figure or table whose writing fails leaves the previous file intact and no temporary file."""
    publish.table(pd.DataFrame({"x": [1]}), "tab-test-old", root=tmp_path)
    csv = tmp_path / "book/_extra/tables/tab-test-old.csv"
    before = csv.read_bytes()

    def broken(self, path, **kw):
        with open(path, "w") as fh:
            fh.write("x\n")  # a partial file, then the disk is full
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(pd.DataFrame, "to_csv", broken)
    with pytest.raises(OSError, match="No space"):
        publish.table(pd.DataFrame({"x": [2]}), "tab-test-old", root=tmp_path)
    assert csv.read_bytes() == before
    assert sorted(p.name for p in csv.parent.iterdir()) == [csv.name]
