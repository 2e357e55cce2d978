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
from ..metrics import evaluate_subset, overall, overall_ci, overall_ci_note, overall_micro
from ..records import file_and_line, Record, strict_pairs
from ..score_file import check_scores_known, read_scores
from .leaderboard import leaderboard_text, paired_text
from .length_strata import controls_by_category, stratified
from .model_comparison import model_estimate, paired_differences, rank_intervals, ranking_metric

__all__ = ["RESERVED", "check_stems", "compare_models", "add_breakdowns", "data_name", "matched_scores", "evaluate_results", "summary_json", "evaluate_scores"]


def data_name(path: Path) -> str:
    """The name a data file keys the output by: its file name without ``.jsonl`` and a compression suffix
    (``open.jsonl.xz`` -> ``open``)."""
    name = path.name
    for suffix in (".xz", ".gz", ".bz2"):
        name = name.removesuffix(suffix)
    return Path(name).stem


RESERVED = ("overall", "overall_ci", "overall_ci_note", "overall_micro", "overall_micro_ci", "overall_micro_ci_note",
            "rank", "rank_ci", "tied_with_first", "vs_baseline",
            "skipped_invalid", "resolved_on_read", "skipped_labels", "unranked_responses")
"""Keys ``cheems evaluate`` prints beside the data files' in one model's object: no data file may be named so."""


def check_stems(files: Mapping[Path, list[Record]]) -> str | None:
    """What keeps ``files`` from keying ``cheems evaluate``'s output (two sharing a :func:`data_name`, or one named
    as a key of :data:`RESERVED`), with its fix, else None. A file none of whose prompts has a comparison is a
    :class:`cheems_lib.input_files.DataError`: an accuracy of NaN is no result."""
    for path, recs in files.items():
        if not any(strict_pairs(r.rank, r.response_ids) for r in recs):
            raise DataError(path, None, f"no prompt of its {len(recs):,} has a comparison (each ranking is empty, or "
                            "ties every response)", "evaluate on records that rank responses differently")
    stems = [data_name(p) for p in files]
    if dup := next((x for x in stems if stems.count(x) > 1), None):
        return f"two --data files share the stem {show(dup)}, which keys the output (fix: rename one)"
    if clash := next((x for x in stems if x in RESERVED), None):
        return f"a --data file's stem {show(clash)} is a key of the output itself (fix: rename the file)"
    return None


def matched_scores(files: Mapping[Path, list[Record]], path, *, skipped: list | None = None) -> tuple:
    """``(scores, subsets)``: the score file ``path`` and the records of each data file (``{data_name: records}``)
    to evaluate it on. With ``skipped`` (a list), a score of a prompt/response not in the data (or skipped as
    invalid) is dropped and a prompt missing a score of a ranked response is left out, each appended there."""
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


def evaluate_results(files: Mapping[Path, list[Record]], subsets: Mapping[str, list[Record]], scores, path, *,
                     view: str, n_boot: int, seed: int) -> dict:
    """Per data file its :class:`cheems_lib.metrics.SubsetResult` (``{data_name: result}``): ``scores`` (of the file
    ``path``) on ``subsets`` (:func:`matched_scores`), bootstrapped with ``seed``, so every model's results are paired.
    A data file none of whose prompts with a comparison is left is a :class:`cheems_lib.input_files.DataError`:
    nothing would be evaluated."""
    for p, recs in files.items():
        kept = subsets[data_name(p)]
        if recs and not any(strict_pairs(r.rank, r.response_ids) for r in kept):
            raise DataError(path, None, f"no prompt of {p} with a comparison has a valid score for every ranked "
                            f"response ({len(recs) - len(kept)} left out)", "score the data again with `cheems score`")
    check_scores_known(scores, [r for recs in files.values() for r in recs])
    return {stem: evaluate_subset(recs, scores, view=view, n_boot=n_boot, seed=seed, scores_path=str(path))
            for stem, recs in subsets.items()}


def summary_json(results: Mapping[str, object]) -> dict:
    """Per data file :meth:`cheems_lib.metrics.SubsetResult.to_json`, and with two or more ``overall`` and
    ``overall_ci`` (or ``overall_ci_note``) of :func:`evaluate_results`' ``results``, and the micro counterparts
    ``overall_micro`` and ``overall_micro_ci`` (or ``overall_micro_ci_note``: :func:`cheems_lib.metrics.overall_micro`)."""
    out = {stem: res.to_json() for stem, res in results.items()}
    if len(results) >= 2:
        done = list(results.values())
        out["overall"], out["overall_micro"] = overall(done), overall_micro(done)
        for key, micro in (("overall", False), ("overall_micro", True)):
            ci = overall_ci(done, micro=micro)
            note = None if ci else overall_ci_note(done, micro=micro)  # too few prompts, or no width: not an interval
            if ci:
                out[f"{key}_ci"] = ci
            elif note:
                out[f"{key}_ci_note"] = note
    return out


def evaluate_scores(files: Mapping[Path, list[Record]], subsets: Mapping[str, list[Record]], scores, path, *,
                    view: str, n_boot: int, seed: int) -> dict:
    """:func:`summary_json` of :func:`evaluate_results`: what ``cheems evaluate`` prints for one score file."""
    return summary_json(evaluate_results(files, subsets, scores, path, view=view, n_boot=n_boot, seed=seed))


def compare_models(per_model: dict[str, dict], results: Mapping[str, Mapping[str, object]], *, baseline: str | None,
                   seed: int) -> str:
    """The leaderboard of several score files: adds to each model's object of ``per_model`` (:func:`summary_json`)
    its ``rank``, ``rank_ci`` and ``tied_with_first`` (:func:`cheems_lib.analyses.model_comparison.rank_intervals` of
    the ranking metric; the interval only with bootstrap replicates) and, with ``baseline``, ``vs_baseline``
    (:func:`~cheems_lib.analyses.model_comparison.paired_differences`: a ValueError when a model was evaluated on
    other prompts than the baseline); returns the plain-text tables for stderr."""
    subsets = list(next(iter(results.values())))
    metric = ranking_metric(subsets)
    ranks = rank_intervals({n: model_estimate([r], metric) for n, r in results.items()}, seed=seed,
                           groups={n: {s: x.prompt_ids for s, x in r.items()} for n, r in results.items()})
    for name, cell in ranks.items():
        per_model[name].update(cell)
    text = leaderboard_text(per_model, subsets)
    if baseline is not None:
        paired = paired_differences({n: [r] for n, r in results.items()}, baseline, seed=seed)
        for name, row in paired.items():
            per_model[name]["vs_baseline"] = row
        text += "\n\n" + paired_text(paired, subsets)
    return text


def add_breakdowns(out: dict, subsets: Mapping[str, list[Record]], scores, path, *, lengths: Mapping | None,
                   unit: str, margin: float, view: str, n_boot: int, seed: int) -> dict:
    """Add to each data file's object of ``out`` (:func:`summary_json` of the score file ``path``) ``by_length``: the
    accuracy on the comparisons whose preferred answer is longer, of similar length (within ``margin``) or shorter
    (:func:`cheems_lib.analyses.length_strata.stratified`, by ``lengths`` in ``unit``; characters when None), with
    its ``controls`` (pick-longest, pick-shortest, random and chance on the same strata), for the file and in each
    category of ``by_category``; and, for a judge's score file with its verdicts beside it, ``position_flips``
    (:func:`cheems_lib.models.judging.flip_summary`, whose verdicts must give the scores of the file)."""
    from ..models.judging import flip_summary  # no torch: judging imports it only where a model runs

    for stem, recs in subsets.items():
        cell = stratified(recs, scores, margin=margin, lengths=lengths, view=view, n_boot=n_boot, seed=seed,
                          scores_path=str(path), unit=unit)
        cell["controls"], per_category = controls_by_category(recs, margin=margin, lengths=lengths, view=view,
                                                              seed=seed)
        for cat, cells in cell["by_category"].items():
            cells["controls"] = per_category[cat]
        out[stem]["by_length"] = cell
        flips = flip_summary(path, recs, scores)
        if flips is not None:
            out[stem]["position_flips"] = flips
    return out
