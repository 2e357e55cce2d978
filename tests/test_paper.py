"""cheems_lib.paper: the paper's tables read from data/paper/ hold the paper's numbers, however they are read."""
from __future__ import annotations

import shutil

import pytest

from cheems_lib import paper

# Reference values, copied by hand from the paper (arXiv 2502.17173); Table 5's are also in its text.
TABLE1_PROMPTS = {"cheemsbench_open_prompt": 1146, "cheemsbench_human_instruction": 1346,
                  "cheemspreference_gpt": 27861, "cheemspreference_human": 3260}
TABLE5 = {("open_prompt", "human"): 0.1999, ("human_instruction", "human"): 0.2161,
          ("open_prompt", "gpt"): 0.2593, ("human_instruction", "gpt"): 0.3170}
TABLE9 = {"max_sequence_length": "2048", "epochs": "2", "global_batch_size": "256", "learning_rate": "5e-6"}
ROWS = {"table1_statistics": 6, "table3_datasets": 13, "table4_ablation": 8, "table5_conflict_ratio": 4,
        "table8_reward_models": 37, "table9_hyperparameters": 9}


KEYED = [name for name in ROWS if name != "table5_conflict_ratio"]  # Table 5's first column repeats


def test_every_table_has_its_file_and_its_rows():
    """Each of TABLES is a CSV in data_dir() with the paper's number of rows (a lost or doubled row shows)."""
    assert set(paper.TABLES) == set(ROWS)
    for name, n in ROWS.items():
        assert (paper.data_dir() / f"{name}.csv").is_file(), name
        assert len(paper.table(name)) == n, name
        if name in KEYED:
            assert len(paper.rows(name)) == n, name


def test_rows_refuses_a_first_column_that_repeats():
    """rows() keys rows by the first column: on Table 5 (each subset twice, once per annotator) it says so
    instead of keeping the last row of each subset and losing the others."""
    with pytest.raises(ValueError, match=r"table5_conflict_ratio.csv: line 4 repeats subset 'open_prompt'"):
        paper.rows("table5_conflict_ratio")


def test_table1_and_table5_hold_the_papers_numbers():
    """Table 1's prompt counts and comparisons, and Table 5's four conflict ratios, are the paper's."""
    t1 = paper.rows("table1_statistics")
    assert {col: int(t1["prompts"][col]) for col in TABLE1_PROMPTS} == TABLE1_PROMPTS
    assert t1["comparisons_excluding_ties"]["cheemspreference_gpt"] == "332370"
    assert t1["responses_per_prompt"]["cheemspreference_human"] == "5.07"
    t5 = paper.table("table5_conflict_ratio")
    assert {(r.subset, r.annotator): r.conflict_ratio for r in t5.itertuples()} == TABLE5


def test_table9_holds_the_training_settings():
    """Table 9's hyperparameters are the paper's, as strings (rows keeps the CSV's text: 5e-6 stays 5e-6)."""
    t9 = paper.rows("table9_hyperparameters")
    assert {k: t9[k]["value"] for k in TABLE9} == TABLE9


@pytest.mark.parametrize("name", ["table4_ablation", "table8_reward_models"])
def test_overall_is_the_mean_of_the_four_benchmark_numbers(name):
    """Each row's Overall is the mean of its Open/Human accuracy and exact match, to the paper's rounding,
    except Table 8's GPT4o row, whose printed Overall belongs to Table 2's values (data/paper/README.md)."""
    t = paper.table(name)
    mean = t[["open_acc", "open_exact", "human_acc", "human_exact"]].mean(axis=1)
    off = t[(mean - t["overall"]).abs() > 0.0005 + 1e-9].iloc[:, 0].tolist()
    assert off == ([] if name == "table4_ablation" else ["GPT4o"])


def test_table_and_rows_agree():
    """pandas (table) and the csv module (rows, for the CLI's start-up) read the same cells, empty ones too."""
    for name in KEYED:
        frame, by_key = paper.table(name), paper.rows(name)
        key = frame.columns[0]
        assert list(by_key) == [str(v) for v in frame[key]]
        for _, row in frame.iterrows():
            text = by_key[str(row[key])]
            for col in frame.columns[1:]:
                cell, want = row[col], text[col]
                if isinstance(cell, float):  # an empty cell (Table 8's missing RewardBench scores) is NaN
                    assert (want == "" and cell != cell) or float(want) == cell, (name, col)
                else:
                    assert want == str(cell), (name, col)


def test_unknown_table_names_the_known_ones():
    """A misspelt table name is a KeyError that lists the tables there are, from both readers."""
    for read in (paper.table, paper.rows):
        with pytest.raises(KeyError, match="table1_statistics"):
            read("table1")


def test_cheems_paper_data_points_elsewhere(tmp_path, monkeypatch):
    """$CHEEMS_PAPER_DATA replaces data/paper: a changed copy is what the readers see."""
    shutil.copytree(paper.data_dir(), tmp_path / "paper")
    path = tmp_path / "paper" / "table1_statistics.csv"
    path.write_text(path.read_text(encoding="utf-8").replace("1146", "99"), encoding="utf-8")
    monkeypatch.setenv("CHEEMS_PAPER_DATA", str(tmp_path / "paper"))
    assert paper.data_dir() == tmp_path / "paper"
    assert paper.rows("table1_statistics")["prompts"]["cheemsbench_open_prompt"] == "99"
    assert paper.table("table1_statistics").loc[0, "cheemsbench_open_prompt"] == 99
