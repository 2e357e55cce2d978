"""How the book shows a table: counts as integers, the key column marked, the caption in view.

:func:`cheems_lib.publishing.publish.table` passes every table it returns through :func:`integers_shown` and
:func:`in_view`. A count stored as a float (a column with a missing value, a sum) shows ``101``, not
``101.000000``. Each table carries ``data-key-column``, the header of the column a reader looks for first
(:func:`key_column`: Overall where there is one, else the first column after the row label); the chapters put that
column right after the row label (:func:`cheems_lib.publishing.publish.key_first`), so at a 1280 px window it is
in view while the page's output box scrolls the rest sideways, and the book's browser test checks it on every table.
A caption stays at the box's left edge, its lines no longer than the text column, so it is never cut off.
"""
from __future__ import annotations

import html
import re

__all__ = ["integer_columns", "integers_shown", "key_column", "in_view"]

_COUNT_NAME = re.compile(r"(^|[ _])(n|count|counts|prompts|responses|comparisons|pairs|records|seeds|models|"
                         r"annotations|annotators|size|rows|cycles|conflicts|tokens|characters|files)($|[ _])", re.I)


def integer_columns(data) -> list:
    """The columns of ``data`` that hold counts stored as floats (a column with a missing value, or a sum, is float):
    every value a whole number, and either named like a count (``prompts``, ``n``, ``seeds`` ...) or holding a
    value above 1 (so a column of accuracies that happen to be 0.0 and 1.0 keeps its decimals)."""
    import numpy as np
    import pandas as pd

    found = []
    for col in data.columns:
        values = data[col]
        if isinstance(values, pd.DataFrame) or values.dtype == bool:
            continue
        if values.dtype == object:
            if not all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
                       for v in values.dropna()):
                continue
            values = pd.to_numeric(values, errors="coerce")
        if not pd.api.types.is_float_dtype(values):
            continue
        finite = values[np.isfinite(values.astype(float))]
        if not len(finite) or not (finite == finite.round()).all():
            continue
        name = " ".join(map(str, col)) if isinstance(col, tuple) else str(col)
        if _COUNT_NAME.search(name) or (finite.abs() > 1).any():
            found.append(col)
    return found


def integers_shown(styler):
    """``styler`` with its counts stored as floats (:func:`integer_columns`) shown as integers (``101``, not
    ``101.000000``); a missing value shows ``-``."""
    import pandas as pd

    cols = integer_columns(styler.data)
    if not cols:
        return styler
    return styler.format(lambda v: "-" if pd.isna(v) else f"{int(round(float(v)))}", subset=cols)


def _visible_columns(styler) -> list:
    hidden = {int(i) for i in getattr(styler, "hidden_columns", ())}  # a list or an array, by how it was hidden
    return [c for i, c in enumerate(styler.data.columns) if i not in hidden]


def _header_text(col) -> str:
    return str(col[-1] if isinstance(col, tuple) else col)


def key_column(styler) -> str:
    """The header of the column a reader of ``styler``'s table looks for first (its key): a column named Overall
    (any case) where there is one, else the first visible column after the row label (the index where it is
    shown, else the first column; a first column ``section`` only groups the rows). ``""`` for a table without
    such a column.

    >>> import pandas as pd
    >>> key_column(pd.DataFrame({"model": ["a"], "kind": ["x"], "Overall": [0.5]}).style.hide(axis="index"))
    'Overall'
    >>> key_column(pd.DataFrame({"section": ["s"], "model": ["a"], "acc": [0.5]}).style.hide(axis="index"))
    'acc'
    """
    cols = _visible_columns(styler)
    for col in cols:
        if _header_text(col).strip().lower() == "overall":
            return _header_text(col)
    import pandas as pd

    plain = isinstance(styler.data.index, pd.RangeIndex) and styler.data.index.name is None  # 0, 1, ...: no label
    index_shown = not plain and not all(getattr(styler, "hide_index_", [False]))
    rest = cols if index_shown else [c for c in cols if _header_text(c) != "section"][1:]
    return _header_text(rest[0]) if rest else ""


# the page's output box scrolls a wide table sideways; its caption stays at the box's left edge, its lines no longer
# than the text column at 1280 px (about 42rem), so no caption is cut off at the box's right edge
_CAPTION = [("position", "sticky"), ("left", "0"), ("text-align", "left"), ("max-width", "min(100%, 40rem)"),
            ("white-space", "normal")]
_IN_VIEW_STYLES = [{"selector": "caption", "props": _CAPTION}]


def in_view(styler, key: str):
    """``styler`` marked with its key column (``data-key-column``), its caption kept in view (:data:`_CAPTION`)."""
    attrs = (styler.table_attributes or "").strip()
    if key:
        attrs = f'{attrs} data-key-column="{html.escape(key, quote=True)}"'.strip()
    return styler.set_table_attributes(attrs).set_table_styles(_IN_VIEW_STYLES, overwrite=False)
