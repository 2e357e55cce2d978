"""Score evaluation: one model's score file against ranked data files, what ``cheems evaluate`` reports for it.

Each data file is a subset keyed by its name (:func:`data_name`), evaluated with
:func:`cheems_lib.metrics.evaluate_subset` (accuracy, exact match, per category, with ``n_boot`` bootstrap
intervals); two or more give ``overall`` too, with its interval or the note that says why there is none.
With ``--skip-invalid`` (:func:`matched_scores` with a ``skipped`` list) scores of records not in the data
are dropped, and so are the prompts that miss a score of a ranked response, each one counted as skipped.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from ..input_files import DataError, show
from ..records import file_and_line, Record, strict_pairs

__all__ = ["data_name", "matched_scores", "evaluate_scores"]


def data_name(path: Path) -> str:
    """The name a data file keys the output by: its file name without ``.jsonl`` and a compression suffix
    (``open.jsonl.xz`` -> ``open``)."""
    name = path.name
    for suffix in (".xz", ".gz", ".bz2"):
        name = name.removesuffix(suffix)
    return Path(name).stem


def matched_scores(files: Mapping[Path, list[Record]], path, *, skipped: list | None = None) -> tuple:
    """``(scores, subsets)``: the score file ``path`` and the records of each data file (``{data_name: records}``)
    to evaluate it on. With ``skipped`` (a list), a score of a prompt/response not in the data (or skipped as
    invalid) is dropped and a prompt missing a score of a ranked response is left out, each appended there."""
    from ..score_file import read_scores

    scores = read_scores(path, skipped=skipped)
    subsets = {data_name(p): recs for p, recs in files.items()}
    if skipped is not None:
        known = {(rec.id, r.id) for recs in files.values() for rec in recs for r in rec.responses}
        for k in [k for k in scores if k not in known]:
            skipped.append(DataError(path, scores.lines[k], f"score for prompt/response {show(k[0])}/{show(k[1])} "
                                     "that is not in the data (or was skipped)"))
            del scores[k]
        subsets = {data_name(p): _scored_only(recs, scores, path, skipped) for p, recs in files.items()}
    return scores, subsets


def _scored_only(records, scores, path, skipped: list) -> list:
    """``records`` without the prompts that miss a score of a ranked response (its line was invalid,
    or absent): each left-out prompt is appended to ``skipped``."""
    kept = []
    for rec in records:
        missing = [rid for rid in rec.rank if (rec.id, rid) not in scores]
        if not missing:
            kept.append(rec)
            continue
        skipped.append(DataError(*file_and_line(rec), f"prompt {show(rec.id)} left out: {path} has no valid score "
                                 f"for its response {show(missing[0])}"))
    return kept


def evaluate_scores(files: Mapping[Path, list[Record]], subsets: Mapping[str, list[Record]], scores, path, *,
                    view: str, n_boot: int, seed: int) -> dict:
    """Per data file :meth:`cheems_lib.metrics.SubsetResult.to_json`, and with two or more ``overall`` and
    ``overall_ci`` (or ``overall_ci_note``): ``scores`` (of the file ``path``) on ``subsets``
    (:func:`matched_scores`). A data file none of whose prompts with a comparison is left is a
    :class:`cheems_lib.input_files.DataError`: nothing would be evaluated."""
    from ..metrics import evaluate_subset, overall, overall_ci, overall_ci_note
    from ..score_file import check_scores_known

    for p, recs in files.items():
        kept = subsets[data_name(p)]
        if recs and not any(strict_pairs(r.rank, r.response_ids) for r in kept):
            raise DataError(path, None, f"no prompt of {p} with a comparison has a valid score for every ranked "
                            f"response ({len(recs) - len(kept)} left out)", "score the data again with `cheems score`")
    check_scores_known(scores, [r for recs in files.values() for r in recs])
    results = {stem: evaluate_subset(recs, scores, view=view, n_boot=n_boot, seed=seed, scores_path=str(path))
               for stem, recs in subsets.items()}
    out = {stem: res.to_json() for stem, res in results.items()}
    if len(results) >= 2:
        done = list(results.values())
        out["overall"] = overall(done)
        ci = overall_ci(done)
        note = None if ci else overall_ci_note(done)  # too few prompts, or no width: not an interval
        if ci:
            out["overall_ci"] = ci
        elif note:
            out["overall_ci_note"] = note
    return out
