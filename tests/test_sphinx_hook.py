"""The book's Sphinx extension (cheems_lib.publishing.sphinx_hook)."""
from __future__ import annotations

from cheems_lib.publishing.sphinx_hook import category_table
from cheems_lib.world.corpus import CATEGORIES, DETERMINISTIC


def test_category_table_is_the_librarys():
    """The ``{cheems-categories}`` table of the "Use your own data" page has one row per library category, in
    order, with its English name, and marks exactly the library's deterministic ones."""
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in category_table().splitlines()[2:]]
    assert [(name, english) for name, english, _ in rows] == list(CATEGORIES.items())
    assert sorted(name for name, _, det in rows if det == "yes") == sorted(DETERMINISTIC)
    assert {det for *_, det in rows} == {"yes", "no"}
