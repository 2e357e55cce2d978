"""The paper's numbers, read from ``data/paper/*.csv`` (never typed into code or prose).

>>> table("table5_conflict_ratio").shape
(4, 3)
>>> rows("table1_statistics")["prompts"]["cheemsbench_open_prompt"]
'1146'
"""
from __future__ import annotations

import csv
import os
from pathlib import Path

__all__ = ["data_dir", "table", "rows", "TABLES"]

TABLES = {
    "table1_statistics": "Table 1: statistics of CheemsBench and CheemsPreference",
    "table3_datasets": "Table 3: RMs trained on open preference datasets, scored on CheemsBench",
    "table4_ablation": "Table 4: ablation of the CheemsPreference construction strategies",
    "table5_conflict_ratio": "Table 5: conflict ratio of human vs GPT-4o annotations",
    "table8_reward_models": "Table 8 (superset of Table 2): open RMs and LLM judges on CheemsBench",
    "table9_hyperparameters": "Table 9: training hyperparameters",
}


def data_dir() -> Path:
    """``$CHEEMS_PAPER_DATA``, else ``data/paper`` of the repository this package sits in, else of the cwd."""
    if os.environ.get("CHEEMS_PAPER_DATA"):
        return Path(os.environ["CHEEMS_PAPER_DATA"])
    for base in (Path(__file__).resolve().parents[1], Path.cwd()):
        if (base / "data" / "paper").is_dir():
            return base / "data" / "paper"
    raise FileNotFoundError("data/paper not found (fix: run from the repository root or set CHEEMS_PAPER_DATA)")


def table(name: str):
    """One of :data:`TABLES` as a pandas DataFrame."""
    import pandas as pd

    if name not in TABLES:
        raise KeyError(f"unknown paper table {name!r}; known: {sorted(TABLES)}")
    return pd.read_csv(data_dir() / f"{name}.csv")


def rows(name: str) -> dict[str, dict[str, str]]:
    """One of :data:`TABLES` as ``{first column's value: row}``, cells as the CSV's strings.

    Read with the csv module, not pandas, for modules the CLI imports at startup. A table whose first
    column repeats a value (Table 5: a subset per annotator) is a ValueError, never a row silently lost:
    read it with :func:`table`."""
    if name not in TABLES:
        raise KeyError(f"unknown paper table {name!r}; known: {sorted(TABLES)}")
    path = data_dir() / f"{name}.csv"
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        key, out = reader.fieldnames[0], {}
        for row in reader:
            if row[key] in out:
                raise ValueError(f"{path}: line {reader.line_num} repeats {key} {row[key]!r}, so rows() would "
                                 f"lose a row (fix: read {name} with paper.table())")
            out[row[key]] = row
        return out
