"""Publishing: figure files at stable paths, CSV tables with links, chapter header and footer."""
from __future__ import annotations

import hashlib
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from cheems_lib.publishing import provenance, publish
from conftest import shell_words  # noqa: E402

SIM = "simulated world (size smoke, seed 0, simulator 1.0)"


@pytest.fixture(autouse=True)
def chapter_source():
    """Each test starts as a chapter that called set_source, and leaves no default behind."""
    publish.set_source(SIM)
    yield
    publish.set_source(None)


def _figure():
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([0, 1], [1, 0])
    ax.set_xlabel("x")
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
    saved = pd.read_csv(tmp_path / "book/_extra/tables/tab-test-acc.csv")
    assert list(saved.columns) == ["model", "acc", "source"] and (saved["source"] == SIM).all()
    assert saved.drop(columns="source").equals(df)
    html = styler.to_html()
    assert "Ours &amp; theirs" in html and 'href="../tables/tab-test-acc.csv"' in html
    named = pd.DataFrame({"x": [1]}, index=pd.Index(["r"], name="row"))
    publish.table(named, "paper-table9", root=tmp_path)
    assert (tmp_path / "book/_extra/tables/simulated-table9.csv").read_text().splitlines()[0] == "row,x,source"


def test_per_item_results_are_a_gzip_download_with_their_protocol(tmp_path):
    """publish.items: the rows as gzip JSONL (the same rows, the same bytes), the protocol beside them with the
    source, a provenance sidecar that puts the file in tables/index.csv, and the two links."""
    import gzip

    rows = [{"model": "m", "prompt_id": "p1", "correct": 1}, {"model": "m", "prompt_id": "p2", "correct": 0}]
    line = publish.items(rows, "tab-test-items", {"protocol": {"tie_rule": "wrong"}}, root=tmp_path).data
    folder = tmp_path / "book/_extra/tables"
    data = (folder / "tab-test-items.jsonl.gz").read_bytes()
    assert [json.loads(x) for x in gzip.decompress(data).decode("utf-8").splitlines()] == rows
    protocol = json.loads((folder / "tab-test-items.jsonl.gz.cheems.json").read_text(encoding="utf-8"))
    assert protocol == {"protocol": {"tie_rule": "wrong"}, "source": SIM}
    assert 'href="../tables/tab-test-items.jsonl.gz"' in line and "2 rows" in line
    publish.items(rows, "tab-test-items", {"protocol": {}}, root=tmp_path)
    assert (folder / "tab-test-items.jsonl.gz").read_bytes() == data
    index = provenance.write_index(tmp_path)["tables"].read_text(encoding="utf-8")
    assert "tab-test-items.jsonl.gz" in index


class TestDownloadNames:
    def test_a_paper_label_is_saved_under_whose_numbers_it_holds(self, tmp_path):
        """A ``paper-*`` table or figure is downloaded as simulated-*, data-<folder>-* or published-*, never paper-*;
        the page label stays, and the paper's artefact is in the sidecar and the PNG's title."""
        from PIL import Image

        styler = publish.table(pd.DataFrame({"x": [1.5]}), "paper-table2", root=tmp_path)
        tables = tmp_path / "book/_extra/tables"
        assert sorted(p.name for p in tables.iterdir()) == ["simulated-table2.csv", "simulated-table2.meta.json"]
        assert 'href="../tables/simulated-table2.csv"' in styler.to_html() and "<code>paper-table2</code>" in styler.to_html()
        meta = json.loads((tables / "simulated-table2.meta.json").read_text(encoding="utf-8"))
        assert meta["label"] == "paper-table2" and meta["artefact"] == "Table 2"
        paths = publish.figure(_figure(), "paper-fig5", root=tmp_path)
        assert paths["png"].name == "simulated-fig5.png"
        assert 'href="../figures/simulated-fig5.png"' in publish.downloads("paper-fig5").data
        title = Image.open(paths["png"]).text["Title"]
        assert "Fig. 5" in title and "not the paper's numbers" in title

    def test_each_source_names_its_prefix(self):
        """The first word of the source decides the prefix; labels of our own tables keep their name."""
        assert publish.download_name("paper-table8", publish.paper_source("table8_reward_models")) == "published-table8"
        assert publish.download_name("paper-fig5", "data: data/real (cheems_bench/open.jsonl sha256 0123)") == "data-real-fig5"
        assert publish.download_name("paper-fig5", "data: x/wpb-zh (a.jsonl sha256 0123)") == "data-wpb-zh-fig5"
        # a made-up example folder is not called real: the folder's name says whose files they are
        assert publish.download_name("paper-table1", "data: data/examples/release (f sha256 0)") == "data-release-table1"
        assert publish.download_name("paper-table1", SIM + "; column paper: paper, Table 1 (x)") == "simulated-table1"
        assert publish.download_name("tab-evaluation-claims", SIM) == "tab-evaluation-claims"
        assert not any(publish.download_name(f"paper-{a}", s).startswith("paper-") for a in ("table2", "fig5", "alg1")
                       for s in (SIM, "data: d (f sha256 0)", publish.paper_source("table8_reward_models")))

    def test_a_rerun_on_another_source_leaves_one_download(self, tmp_path):
        """Publishing a label again from another source (or over a file of the old name) replaces its download."""
        tables = tmp_path / "book/_extra/tables"
        tables.mkdir(parents=True)
        (tables / "paper-table2.csv").write_text("x\n")
        (tables / "paper-table2.meta.json").write_text(json.dumps({"label": "paper-table2", "source": SIM}))
        publish.table(pd.DataFrame({"x": [1]}), "paper-table2", root=tmp_path)
        publish.table(pd.DataFrame({"x": [1]}), "paper-table2", root=tmp_path, source="data: d/real (f sha256 0)")
        assert sorted(p.name for p in tables.iterdir()) == ["data-real-table2.csv", "data-real-table2.meta.json"]
        assert publish.download_of("paper-table2", root=tmp_path) == tables / "data-real-table2.csv"
        with pytest.raises(FileNotFoundError, match="paper-table9"):
            publish.download_of("paper-table9", root=tmp_path)


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


_RERUN_VALUES = {"size": "smoke", "data_path": "my data/it's.jsonl", "number_text": "1", "bool_text": "True",
                 "none_text": "None", "empty": "", "seed": 3, "margin": 0.5, "flag": False,
                 "sizes": ["tiny-xs", "tiny"], "ratios": [], "weights": [0.25, 1]}
_RERUN_TYPES = {"size": "str", "data_path": "str", "number_text": "str", "bool_text": "str", "none_text": "str",
                "empty": "str", "seed": "int", "margin": "float", "flag": "bool", "sizes": "list[str]",
                "ratios": "list[float]", "weights": "list[float]"}


def test_rerun_commands_give_back_exactly_the_values(monkeypatch):
    """Both rerun commands, read by their own programs, give every parameter its exact value and type: the
    ``cheems book`` one through the CLI's parser and :func:`cheems_lib.publishing.chapters.coerce`, the papermill one through
    papermill's command line (a string that papermill would read as a number, boolean or None, a list, a quote),
    with the commands broken into continued lines as the page shows them and split into words by bash."""
    from click.testing import CliRunner
    import papermill.cli

    from cheems_lib.publishing.chapters import coerce
    from cheems_lib.cli import build_parser

    cheems, pm = map(shell_words, publish.rerun_commands("conflicts", "smoke", _RERUN_VALUES, width=40))
    assert cheems[0] == ".venv/bin/cheems" and pm[0] == ".venv/bin/papermill"  # run as printed, environment inactive
    args = build_parser().parse_args(cheems[1:])
    assert args.profile == "smoke" and args.chapter == ["conflicts"]
    assert {k: coerce(v, _RERUN_TYPES[k]) for k, v in args.param} == _RERUN_VALUES
    seen = {}
    monkeypatch.setattr(papermill.cli, "execute_notebook", lambda *a, **kw: seen.update(kw))  # parse, do not run
    result = CliRunner().invoke(papermill.cli.papermill, pm[1:])
    assert result.exit_code == 0, result.output
    assert seen["input_path"] == "conflicts.ipynb" and seen["parameters"] == _RERUN_VALUES
    assert all(type(seen["parameters"][k]) is type(v) for k, v in _RERUN_VALUES.items())


def test_header_shows_the_exact_rerun_commands_outside_the_dropdown():
    """With a chapter name, the header opens with both commands, in code blocks before the collapsed parameters
    box, with the chapter's name and values (no ``<name>`` placeholder), and a download link to its notebook."""
    declared = {"size": {"default": '"default"', "help": "world size"}, "seed": {"default": "0", "help": "seed"}}
    text = publish.header("smoke", {"size": "smoke", "seed": 2}, declared, "build/worlds/smoke", chapter="data")
    before_box = text.split(":::{admonition}")[0]
    assert "```bash\n.venv/bin/cheems book --profile smoke --chapter data -p size smoke \\\n    -p seed 2\n```" in before_box
    assert "```bash\n.venv/bin/papermill data.ipynb out.ipynb -p size smoke -p seed 2\n```" in before_box
    assert "{download}`data.ipynb <data.ipynb>`" in before_box and "<name>" not in text


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


@pytest.mark.parametrize("value", _EVIL + ["```", "a\n```\n<b>x</b>"])
def test_rerun_commands_are_shown_verbatim(value):
    """A value holding HTML, backticks or a fence is shown in the rerun commands' code blocks as text: each block
    holds exactly its command and nothing renders as markup."""
    from markdown_it import MarkdownIt

    declared = {"world_dir": {"default": '""', "help": "folder"}}
    text = publish.header("smoke", {"world_dir": value}, declared, value, chapter="data")
    before_box = text.split(":::{admonition}")[0]
    html, _ = _render(before_box)
    assert "<b>" not in html and "<img" not in html and "<script" not in html
    blocks = [t.content.rstrip("\n") for t in MarkdownIt().parse(before_box) if t.type == "fence"]
    assert blocks == list(publish.rerun_commands("data", "smoke", {"world_dir": value}, declared, width=publish._WIDTH))


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
    assert sorted(p.name for p in csv.parent.iterdir()) == [csv.name, "tab-test-old.meta.json"]


def test_table_source_override_and_paper_columns(tmp_path):
    """source= overrides the chapter's default; paper_columns names the paper's columns after the source."""
    df = pd.DataFrame({"dataset": ["a"], "open_acc": [0.7]})
    publish.table(df, "tab-test-paper", root=tmp_path, source=publish.paper_source("table3_datasets"))
    side = pd.DataFrame({"paper": [0.1], "ours": [0.2]})
    publish.table(side, "tab-test-side", root=tmp_path, paper_columns={"table5_conflict_ratio": "paper"})
    tables = tmp_path / "book/_extra/tables"
    assert pd.read_csv(tables / "tab-test-paper.csv")["source"].tolist() == [
        "paper, Table 3 (data/paper/table3_datasets.csv)"]
    assert pd.read_csv(tables / "tab-test-side.csv")["source"].tolist() == [
        f"{SIM}; column paper: paper, Table 5 (data/paper/table5_conflict_ratio.csv)"]
    with pytest.raises(ValueError, match="'paper ours', which is not a column of the table"):
        publish.table(side, "tab-test-side", root=tmp_path, paper_columns={"table5_conflict_ratio": "paper ours"})


def test_table_without_source_is_refused(tmp_path):
    """No default and no source=, a source of an unknown kind, or a frame with its own 'source' column: refused,
    nothing written."""
    publish.set_source(None)
    df = pd.DataFrame({"x": [1]})
    with pytest.raises(ValueError, match=r"tab-test-none: no source .*fix: call publish.set_source"):
        publish.table(df, "tab-test-none", root=tmp_path)
    with pytest.raises(ValueError, match="does not start with paper, simulated or data"):
        publish.table(df, "tab-test-none", root=tmp_path, source="our numbers")
    with pytest.raises(ValueError, match="no source"):
        publish.figure(_figure(), "fig-test-none", root=tmp_path)
    with pytest.raises(ValueError, match="already has a column named 'source'"):
        publish.table(pd.DataFrame({"source": ["x"]}), "tab-test-none", root=tmp_path, source=SIM)
    assert not list(tmp_path.rglob("*.csv")) and not list(tmp_path.rglob("*.svg"))


def _pdf_info(data: bytes, key: str) -> str:
    """A literal string of a PDF's Info dictionary (matplotlib writes it uncompressed), unescaped."""
    import re

    m = re.search(rb"/" + key.encode() + rb" \(((?:\\.|[^\\)])*)\)", data)
    return re.sub(rb"\\(.)", rb"\1", m.group(1)).decode("latin-1")


def test_figure_carries_its_source(tmp_path):
    """The source is drawn under the figure (inside the tight crop) and written into PNG, SVG and PDF metadata."""
    import io
    import re

    import numpy as np
    from PIL import Image

    text = publish.footer_text(SIM)
    assert text == f"Source: {SIM} · Cheems companion · not the paper's numbers"
    plain = io.BytesIO()
    _figure().savefig(plain, format="png", dpi=150, bbox_inches="tight")
    paths = publish.figure(_figure(), "fig-test-line", root=tmp_path)
    png = Image.open(paths["png"])
    assert png.text["Description"] == text.replace(" · ", " | ")
    # the footer adds rows at the bottom, and they hold ink (a footer drawn outside the crop would leave them blank)
    height = Image.open(plain).size[1]
    pixels = np.asarray(png.convert("L"))
    assert pixels.shape[0] > height + 10 and (pixels[height:] < 200).sum() > 50
    svg = paths["svg"].read_text(encoding="utf-8")
    assert f"<dc:description>{text.replace(' · ', ' | ')}</dc:description>" in svg
    group = svg.split('<g id="cheems-source">', 1)[1].split("</g>\n  </g>", 1)[0]
    assert " ".join(" ".join(re.findall(r"<!-- (.*?) -->", group)).split()) == text
    pdf = paths["pdf"].read_bytes()
    assert _pdf_info(pdf, "Subject") == text.replace(" · ", " | ") and _pdf_info(pdf, "Keywords") == SIM
    meta = (tmp_path / "book/_extra/figures/fig-test-line.meta.json").read_text(encoding="utf-8")
    assert SIM in meta


def test_figure_footer_says_whose_numbers(tmp_path):
    """The footer tells the paper's numbers, a mix, and ours apart; a second save replaces the footer."""
    assert publish.footer_text("paper, Table 5 (x)").endswith("· the paper's numbers")
    mixed = provenance.with_paper_columns(SIM, {"table5_conflict_ratio": "paper"})
    assert publish.footer_text(mixed).endswith("only what is marked paper holds the paper's numbers")
    fig = _figure()
    publish._add_footer(fig, "Source: a")
    publish._add_footer(fig, "Source: b")
    assert [t.get_text() for t in fig.texts] == ["Source: b"]
    plt.close(fig)


# ---- pages that follow the world's files ------------------------------------------------------------

def _nb(*cells):
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = list(cells)
    return nb


def test_apply_conditions_removes_cells_by_tag():
    """`if-X` cells go when X is false, `unless-X` cells when X is true; untagged cells stay."""
    import nbformat

    from cheems_lib.publishing.publish import CONDITIONS_MIME, apply_conditions

    emit = nbformat.v4.new_code_cell(outputs=[nbformat.v4.new_output("display_data", data={
        CONDITIONS_MIME: {"simulated": False, "pref-split": True}})])
    sim = nbformat.v4.new_markdown_cell("## How the world is simulated", metadata={"tags": ["if-simulated"]})
    real = nbformat.v4.new_markdown_cell("real files", metadata={"tags": ["unless-simulated"]})
    split = nbformat.v4.new_markdown_cell("Table 4", metadata={"tags": ["if-pref-split"]})
    plain = nbformat.v4.new_markdown_cell("always")
    nb = _nb(emit, sim, real, split, plain)
    apply_conditions(nb)
    assert ["remove-cell" in c.metadata.get("tags", []) for c in nb.cells] == [False, True, False, False, False]


def test_apply_conditions_rejects_an_unknown_condition():
    """A tag naming a condition the chapter never emitted is an error naming the cell and tag."""
    import nbformat

    from cheems_lib.publishing.publish import apply_conditions

    nb = _nb(nbformat.v4.new_markdown_cell("x", metadata={"tags": ["if-simulted"]}))
    with pytest.raises(ValueError, match="if-simulted"):
        apply_conditions(nb)


def test_unresolved_glue_lists_keys_no_cell_glued():
    """Glue keys used in kept Markdown but never glued are listed; removed cells are not checked."""
    import nbformat

    from cheems_lib.publishing.publish import unresolved_glue

    glued = nbformat.v4.new_code_cell(outputs=[nbformat.v4.new_output(
        "display_data", data={"text/plain": "'x'"}, metadata={"scrapbook": {"name": "ok", "mime_prefix": ""}})])
    nb = _nb(glued, nbformat.v4.new_markdown_cell("{glue:text}`ok` {glue:text}`gone`\n\n```{glue:figure} fig-x\n```"),
             nbformat.v4.new_markdown_cell("{glue:text}`dropped`", metadata={"tags": ["remove-cell"]}))
    assert unresolved_glue(nb) == ["fig-x", "gone"]


def test_interactive_table_keeps_the_plain_table_csv_and_caption(tmp_path, monkeypatch):
    """interactive=True: the CSV and caption link as before; the HTML holds the plain table (every cell, the
    caption) for readers without JavaScript and the itables table under the stable id T_<label>, with unique
    ids. The first such table of a kernel carries DataTables (offline, no URL, no noscript notice), so the
    downloaded notebook loads its tables; the page gets it from the hook only when its body holds a table but
    not the bundle."""
    import re

    from cheems_lib.publishing import interactive

    monkeypatch.setattr(interactive, "_carried", False)  # a fresh kernel

    df = pd.DataFrame({"model": ["a", "b"], "acc": [0.5, 0.75]})
    out = publish.table(df.style.set_caption("Ours").format(precision=3), "tab-test-acc", root=tmp_path, interactive=True)
    assert (tmp_path / "book/_extra/tables/tab-test-acc.csv").exists()
    html = out.data
    plain = html.split('<div id="T_tab-test-acc_fallback">', 1)[1].split("</div>", 1)[0]
    assert all(f">{v}</td>" in plain for v in ("a", "b", "0.500", "0.750")), plain
    assert 'href="../tables/tab-test-acc.csv"' in plain and "Ours" in plain
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert ids.count("T_tab-test-acc") == 1 and len(ids) == len(set(ids))
    assert out.data.count('data-key-column="acc"') >= 2  # the table DataTables fills and the plain copy
    bundle = interactive.bundle()
    assert len(bundle) > 100_000 and "http" not in bundle and "<noscript>" not in bundle
    assert html.startswith(bundle) and html.count(bundle) == 1
    second = interactive.datatable(df.style, "tab-test-other").data
    assert bundle not in second and "T_tab-test-other" in second  # once per kernel
    assert interactive.page_script("<p>no table</p>") == ""
    assert interactive.page_script(html) == ""  # the notebook's output carries it
    assert interactive.page_script(second) == bundle


def test_key_first_moves_the_key_column_next_to_the_name():
    """key_first puts the key column right after the name column (first without one), the others in order."""
    frame = pd.DataFrame(columns=["section", "model", "kind", "acc", "Overall"])
    assert list(publish.key_first(frame, "Overall").columns) == ["section", "model", "Overall", "kind", "acc"]
    assert list(publish.key_first(frame.drop(columns="model"), "Overall").columns) == ["Overall", "section", "kind", "acc"]
    assert publish.key_first(frame, "missing") is frame


def test_interactive_table_sorts_within_its_sections():
    """A table whose first column is `section` (Table 2: reward models, then the null controls) keeps its sections
    in their order when sorted (DataTables' orderFixed, in the direction that gives the table's order); a table
    without the column, or whose sections no fixed direction keeps, fixes nothing."""
    from cheems_lib.publishing import interactive

    two = pd.DataFrame({"section": ["reward models", "reward models", "null controls"], "Overall": [0.3, 0.2, 0.5]})
    assert interactive._sections(two) == {"orderFixed": {"pre": [[0, "desc"]]}, "orderDescReverse": False}
    assert interactive._sections(two.iloc[::-1]) == {"orderFixed": {"pre": [[0, "asc"]]}}
    assert interactive._sections(two[["Overall"]]) == {}
    assert interactive._sections(pd.DataFrame({"section": ["b", "a", "c"]})) == {}
    assert '"orderFixed": {"pre": [[0, "desc"]]}' in interactive.datatable(two.style, "paper-table2").data
