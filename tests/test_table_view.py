"""How the book shows a table: counts as integers, the key column marked and in view."""
from __future__ import annotations

import pandas as pd
import pytest

from cheems_lib.publishing import publish, table_view


@pytest.fixture(autouse=True)
def chapter_source():
    """publish.table needs a chapter's source; each test sets one and leaves none behind."""
    publish.set_source("simulated world (size smoke, seed 0, simulator 1.0)")
    yield
    publish.set_source(None)


def test_counts_show_as_integers():
    """Whole-number float columns named like counts, or above 1, show as integers; fractions keep decimals."""
    df = pd.DataFrame({"category": ["a", "b"], "prompts": [101.0, float("nan")], "open": [3.0, 9.0],
                       "acc": [1.0, 0.0], "mean": [0.5, 2.0]})
    html = table_view.integers_shown(df.style.format(precision=3)).to_html()
    assert ">101<" in html and ">-<" in html and ">9<" in html and "101.0" not in html
    assert ">1.000<" in html and ">0.500<" in html

def test_key_column_is_marked(tmp_path):
    """Every table names its key column (Overall, else the first after the row label) in ``data-key-column``."""
    df = pd.DataFrame({"section": ["s"], "model": ["m"], "kind": ["k"], "Overall": [0.5]})
    html = publish.table(df.style.hide(axis="index"), "tab-test-key", root=tmp_path).to_html()
    assert 'data-key-column="Overall"' in html
    html = publish.table(df.drop(columns="Overall").style.hide(axis="index"), "tab-test-key", root=tmp_path).to_html()
    assert 'data-key-column="kind"' in html
    html = publish.table(df, "tab-test-key", root=tmp_path, key="model").to_html()
    assert 'data-key-column="model"' in html and "position: sticky" in html


def test_key_column_skips_hidden_columns_however_they_were_hidden():
    """A styler keeps its hidden columns as an array of positions once hidden by label; the key is the first
    column in view after the row label either way."""
    df = pd.DataFrame({"model": ["m"], "spread": [0.1], "width": [0.2], "flips": ["no"]})
    assert table_view.key_column(df.style.hide(axis="index")) == "spread"
    assert table_view.key_column(df.style.hide(axis="index").hide(["spread", "width"], axis="columns")) == "flips"


def test_counts_are_written_to_the_csv_as_integers(tmp_path):
    """The CSV download holds a count stored as a float as the integer the page shows (an empty cell where
    missing); fractions keep their decimals."""
    df = pd.DataFrame({"category": ["a", "b"], "n": [40.0, float("nan")], "acc": [0.5, 1.0]})
    publish.table(df, "tab-test-counts", root=tmp_path)
    text = (tmp_path / "book/_extra/tables/tab-test-counts.csv").read_text(encoding="utf-8").splitlines()
    assert text[1].startswith("a,40,0.5,") and text[2].startswith("b,,1.0,")
