"""The ``cheems`` command line (the formats it reads: the book's page "Use your own data", ``book/own_data.md``).

Each subcommand imports what it needs inside its handler, so ``cheems --help``,
``cheems resolve`` and ``cheems evaluate`` never import torch.

Exit codes, the same for every subcommand:

* 0: success (with ``--skip-invalid``, also when rows were skipped: each is printed; a file
  with no valid row left is still exit 2);
* 1: a runtime failure (a full disk, an I/O error, a chapter that failed);
* 2: bad input or usage: one line ``cheems: file:line: problem (fix: ...)``, nothing written
  (a symbolic link loop as a path, ELOOP, included; an output that is one of the command's inputs, and an
  output another process is writing, too: :func:`_writes`);
* 130: interrupted (Ctrl-C, SIGINT); 143: terminated (SIGTERM). Outputs are then the old
  complete file or none (:mod:`cheems_lib.outputs`); ``score`` and ``train`` resume.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path

__all__ = ["main", "build_parser"]


SKIP_HELP = ("keep every valid row; print each invalid one (or repeated prompt id) as file:line: reason, with the "
             "total, and exit 0 (2 if a file has no valid row)")


def _print_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2) + "\n")


class UsageError(ValueError):
    """A bad combination of arguments; the message says which and the fix."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``cheems score: argument --batch-size: ... (fix: ...)``, exit 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: {message} (fix: see `{self.prog} --help`)\n")


def _int_at_least(low: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {value}")
        return value
    return parse


def _int_between(low: int, high: int, why: str):
    """An integer flag in ``[low, high]``; ``why`` (in the message) says what the upper bound protects."""
    at_least = _int_at_least(low)

    def parse(text: str) -> int:
        value = at_least(text)
        if value > high:
            raise argparse.ArgumentTypeError(f"must be <= {high:,}, got {value:,} ({why})")
        return value
    return parse


def _margin(text: str) -> float:
    """A length margin: a number in [0, 1) (the share of the longer answer's length two answers may differ by)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), got {text}")
    return value


# 100,000 replicates put the Monte Carlo error of a 95% interval's ends far below the interval's
# width; the draws take replicates x prompts x 8 bytes (about 1 GB for a 1,100-prompt subset there).
MAX_BOOTSTRAP = 100_000


class _Version(argparse.Action):
    """``--version``: ``cheems <version>`` from the installed package's metadata (imports nothing heavy)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from importlib import metadata

        try:
            version = metadata.version("cheems-lib")
        except metadata.PackageNotFoundError:
            version = "(unknown: the cheems-lib package is not installed; pip install -e .)"
        sys.stdout.write(f"cheems {version}\n")
        parser.exit(0)


def _finite_float(text: str) -> float:
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
    return value


def _read(paths, args, *, need_rank: bool = False) -> dict[Path, list]:
    """Records of each path (:func:`cheems_lib.records.read_files`: prompt ids distinct across all
    of them); with ``--skip-invalid`` bad rows are printed as ``file:line: reason`` and counted,
    also when a file turns out to have no valid row (exit 2).

    Every form of the release files is read (flat pairs, records with ``rank``, records with raw
    ``annotations`` only). With ``need_rank`` (evaluate, train, preference) a record without ``rank``
    is ranked from its annotations on read with Algorithm 1, as ``cheems resolve`` would: one line on
    stderr says how many records and how many of them have a conflict. Flat pairs skipped for a label
    other than 1, 2 or 0 get a line too. Both are counted in the JSON output (:func:`_skip_report`)."""
    from .read_report import ReadReport
    from .records import read_files
    from .world_files import read_ranked_files

    skipped = [] if getattr(args, "skip_invalid", False) else None
    report = ReadReport()
    try:
        read = read_ranked_files if need_rank else read_files
        files = read(paths, skipped=skipped, report=report)
    finally:
        _report_skipped(skipped, args)
    for line in report.sentences():
        print(f"cheems: {line}", file=sys.stderr)
    before = getattr(args, "read_report", None)
    args.read_report = before.add(report) if before is not None else report
    return files


def _report_skipped(skipped, args) -> None:
    if skipped is None:
        return
    for e in skipped:
        print(f"cheems: skipped {e}", file=sys.stderr)
    args.skipped_invalid = getattr(args, "skipped_invalid", 0) + len(skipped)
    if skipped:
        files = sorted({str(e.path) for e in skipped})
        print(f"cheems: skipped {len(skipped)} invalid row(s) in {', '.join(files)} (--skip-invalid)", file=sys.stderr)


def _skip_report(args) -> dict:
    """What reading skipped or changed, for the JSON output: ``skipped_invalid`` (with ``--skip-invalid``), and
    ``resolved_on_read`` / ``skipped_labels`` when reading ranked records or skipped flat pairs (:func:`_read`)."""
    out = {"skipped_invalid": args.skipped_invalid} if getattr(args, "skip_invalid", False) else {}
    report = getattr(args, "read_report", None)
    return {**out, **report.to_json()} if report is not None else out


def _writes(io, *, lock: bool = True, flag: str = "-o", beside: tuple[str, ...] = (".lock",)):
    """Decorate the handler of a command that writes an output. ``io(args)`` is ``(outputs, inputs, folder)``:
    the output path first (None: none given), then paths written inside an output folder; the ``(flag, path)``
    pairs of what the command reads; whether the output is a folder replaced whole. Before the handler runs,
    an output that is an input, lies in an input folder or (``folder``) holds an input is refused
    (:func:`cheems_lib.input_files.check_not_input`: one line, exit 2, nothing read or written), and with
    ``lock`` the output's lock (:func:`cheems_lib.outputs.output_lock`) is held until it returns. ``score``
    and ``train`` take their lock themselves: once per ``accelerate launch``, in the main process. The files
    a command writes beside its output (``beside``: the lock ``OUT.lock``; ``score``'s ``OUT.partial``,
    ``OUT.cheems.json`` and a judge's ``OUT.verdicts.jsonl`` too) may not be inputs either."""
    import contextlib
    import functools

    def wrap(cmd):
        @functools.wraps(cmd)
        def run(args):
            from .outputs import output_lock
            from .input_files import check_not_input

            outputs, inputs, folder = io(args)
            for out in outputs:
                check_not_input(out, inputs, folder=folder, flag=flag)
            for suffix in beside if outputs[0] is not None else ():
                check_not_input(Path(f"{outputs[0]}{suffix}"), inputs, flag=flag)
            held = output_lock(outputs[0]) if lock and outputs[0] is not None else contextlib.nullcontext()
            with held:
                return cmd(args)
        return run
    return wrap


def _model_files(model) -> list:
    """The files of a local checkpoint folder that a command reads (none for a hub name or a baseline)."""
    if not model or not Path(model).is_dir():
        return []
    from .models.score_output import checkpoint_files

    return checkpoint_files(model)


@_writes(lambda a: ([a.output], [("", a.input)], False))
def cmd_resolve(args) -> None:
    from .conflicts import resolve_records
    from .records import write_records

    records = _read([args.input], args)[args.input]  # a record with no annotation stays, counted (unannotated_prompts)
    stats = resolve_records(records)
    write_records(records, args.output)  # atomic; never the input (refused by _writes)
    if stats["unranked_responses"]:  # said as every reader that ranks says it; after the write, so a failed one is one line
        from .read_report import ReadReport

        report = ReadReport()
        report.count_unranked(args.input, stats["unranked_responses"])
        print(*(f"cheems: {line}" for line in report.sentences()), sep="\n", file=sys.stderr)
    _print_json({"input": str(args.input), "output": str(args.output), **stats, **_skip_report(args)})


@_writes(lambda a: ([a.per_item], [*(("--data", p) for p in a.data), *(("--scores", p) for p in a.scores)], False),
         flag="--per-item", beside=(".lock", ".cheems.json"))
def cmd_evaluate(args) -> None:
    """Per data file, :meth:`cheems_lib.metrics.SubsetResult.to_json` (``accuracy``, ``exact_match``, their micro
    averages, ``by_category``, ...; with ``--bootstrap`` ``accuracy_ci`` and ``exact_match_ci``, each only when it is a
    real 95% interval, else ``ci_note`` says why, e.g. fewer than 10 prompts with a comparison; and
    ``pooled_categories``); with two or more files ``overall``, and ``overall_ci`` or ``overall_ci_note``
    likewise. One score file prints that object, several a ``{model: object}`` leaderboard. ``--per-item FILE``
    also writes one row per (model, prompt) and the protocol beside it (:mod:`cheems_lib.per_item`)."""
    from .analyses.score_evaluation import add_breakdowns, check_stems, evaluate_results, matched_scores, summary_json

    files = _read(args.data, args, need_rank=True)  # before the stems: one file given twice is named as such
    if why := check_stems(files):
        raise UsageError(why)
    names = _model_names(args.scores)
    if args.baseline is not None and (len(names) < 2 or args.baseline not in names):
        raise UsageError(f"--baseline {args.baseline}: " + ("compares models, and one --scores file gives one" if
                         len(names) < 2 else f"not a model here (the models are {', '.join(names)})") +
                         " (fix: name one of two or more --scores files by its stem)")
    per_model, results, items = {}, {}, []
    data_skipped = getattr(args, "skipped_invalid", 0)
    lengths, unit = _response_lengths(files, args.tokenizer)
    for path, name in zip(args.scores, names):
        skipped = [] if args.skip_invalid else None
        scores, subsets = matched_scores(files, path, skipped=skipped)  # with skipped: scores of skipped rows left out
        args.skipped_invalid = data_skipped
        _report_skipped(skipped, args)
        results[name] = evaluate_results(files, subsets, scores, path, view=args.view, n_boot=args.bootstrap,
                                         seed=args.seed)
        per_model[name] = {**add_breakdowns(summary_json(results[name]), subsets, scores, path, lengths=lengths,
                                            unit=unit, margin=args.length_margin, view=args.view,
                                            n_boot=args.bootstrap, seed=args.seed), **_skip_report(args)}
        if args.per_item:
            from .analyses.per_item import rows

            items += [row for stem, recs in subsets.items()
                      for row in rows(name, stem, recs, scores, view=args.view, scores_path=str(path))]
    if args.per_item:
        from .analyses.per_item import protocol, write

        write(args.per_item, items, protocol(list(files), dict(zip(names, args.scores)), view=args.view))
    if len(per_model) == 1:
        _print_json(next(iter(per_model.values())))
        return
    from .analyses.score_evaluation import compare_models

    try:
        text = compare_models(per_model, results, baseline=args.baseline, seed=args.seed)
    except ValueError as e:  # --skip-invalid left a model other prompts than the baseline's: nothing to pair
        if args.baseline is None:
            raise
        raise UsageError(f"--baseline {args.baseline}: {e} (fix: score every prompt, or drop --baseline)") from None
    print(text, file=sys.stderr)
    _print_json(per_model)


def _response_lengths(files, tokenizer: str | None) -> tuple[dict | None, str]:
    """The answers' lengths for ``by_length`` and their unit: characters (None: the default), or the tokens of
    ``--tokenizer`` (a hub name or folder, loaded with transformers only when given)."""
    if tokenizer is None:
        return None, "characters"
    from transformers import AutoTokenizer

    from .analyses.length_strata import lengths, unit_name

    try:
        tok = AutoTokenizer.from_pretrained(tokenizer)
    except (OSError, ValueError) as e:
        raise UsageError(f"--tokenizer {tokenizer}: cannot load it ({str(e).splitlines()[0]}) (fix: pass a hub name "
                         "or a folder with a tokenizer)") from None
    return lengths([r for recs in files.values() for r in recs], tok), unit_name(tok)


def _model_names(paths) -> list[str]:
    """The stem names a model; files with the same stem are named by as much of their path as tells them apart."""
    names = [Path(p).stem for p in paths]
    if len(set(names)) == len(names):
        return names
    full = [str(Path(p).with_suffix("")) for p in paths]
    if len(set(full)) != len(full):
        raise UsageError("the same --scores file is given twice (fix: pass each score file once)")
    return full


def cmd_simulate(args) -> None:
    """Bad arguments exit 2 before anything is written; a failed write (full disk) exits 1
    and leaves -o as it was (see world_files.write_world)."""
    import errno

    from .outputs import output_lock
    from .input_files import DataError
    from .world.simulation import WorldConfig, build_world
    from .world_files import check_output, write_world

    if args.seed < 0:
        raise DataError(f"--seed {args.seed}", None, "the seed must be an integer >= 0", "pass --seed 0 or another N >= 0")
    try:
        check_output(args.output)  # refuse before minutes of simulation, not after
        with output_lock(args.output):  # a second writer is refused now, not after its simulation
            world = build_world(WorldConfig(size=args.size, seed=args.seed), progress=sys.stderr.isatty())
            summary = write_world(world, args.output)
    except OSError as e:
        if e.errno in (errno.ENOSPC, errno.ELOOP):  # with the fix (a full disk) or as bad input (a link loop)
            raise
        raise SystemExit(f"cheems: {e.filename or args.output}: {e.strerror or e}") from None
    _print_json({"output": str(args.output), "size": summary["size"], "seed": summary["seed"],
                 "simulator_version": summary["simulator_version"], "length_scale": summary["length_scale"],
                 "files": {p: {k: v[k] for k in ("prompts", "annotations", "conflict_ratio", "responses_per_prompt",
                                                 "position_second_share")}
                           for p, v in summary["files"].items()},
                 "responses": len(world.truth)})


@_writes(lambda a: ([a.output], [*(("--data", p) for p in a.data), *(("--model", f) for f in _model_files(a.model))],
                   True), lock=False, flag="--output")  # the lock: training.train, once per launch
def cmd_train(args) -> None:
    """Validate everything, choose the preset by model kind, then train (see :func:`cheems_lib.models.training.train`)."""
    import os

    from .models.training import train
    from .models.training_config import TrainConfig, check_learning_rate, choose_preset
    from .outputs import LockedError
    from .records import data_fingerprint

    name, reason = choose_preset(args.model, args.preset)
    cfg = TrainConfig.from_flags(args.model, name, vars(args)).validate()  # before anything is read or written
    check_learning_rate(cfg, force=args.force_lr)
    records = [r for recs in _read(args.data, args, need_rank=True).values() for r in recs]
    say = lambda line: print(line, file=sys.stderr, flush=True)
    try:
        summary = train(records, cfg, args.output, resume=args.resume, overwrite=args.overwrite,
                        progress=sys.stderr.isatty(), data_fingerprint=data_fingerprint(records),
                        preset={"name": name, "reason": reason}, say=say, extra=_skip_report(args))
    except LockedError:
        if os.environ.get("RANK", "0") != "0":  # under accelerate launch: one message, from the main process
            raise SystemExit(2) from None
        raise
    except KeyboardInterrupt:
        if os.environ.get("RANK", "0") != "0":  # under accelerate launch: one message, from the main process
            raise
        kept = " the previous model in it is untouched;" if args.overwrite else ""
        again = " --overwrite --resume" if args.overwrite else " --resume"
        say(f"cheems: interrupted; {args.output} is not finished;{kept} continue with the same command plus{again}")
        raise
    if summary.get("final") is not None:
        _print_json({"output": str(args.output), "data": summary["data"], "steps": summary["steps"],
                     "padding_fraction": summary["padding_fraction"], "final": summary["final"],
                     "effective": summary.get("effective"), **_skip_report(args)})


@_writes(lambda a: ([a.output], [*(("--data", p) for p in a.data), *(("--model", f) for f in _model_files(a.model))],
                   False), lock=False,  # the lock: score_to_file, once per launch
         beside=(".lock", ".partial", ".cheems.json", ".verdicts.jsonl", ".verdicts.jsonl.partial"))
def cmd_score(args) -> None:
    """Check the model name, read the data, then score into -o (see :func:`cheems_lib.models.score_output.score_to_file`)."""
    from .baselines import NAMES
    from .models.score_output import score_settings, score_to_file
    from .models.scoring import make_scorer

    if args.model.startswith("baseline:") and args.model not in NAMES:
        raise UsageError(f"--model {args.model}: not a baseline (fix: use baseline:random, baseline:longest "
                         "or baseline:shortest)")
    if args.judge and args.reward_head != "auto":
        raise UsageError(f"--reward-head {args.reward_head} reads a reward model, and --judge makes the model a judge "
                         "(fix: drop one of them)")
    if args.reward_token is not None and args.reward_head != "logit":
        raise UsageError(f"--reward-token {args.reward_token} names the token whose logit is the reward, which only "
                         "--reward-head logit reads (fix: add --reward-head logit, or drop --reward-token)")
    records = [r for recs in _read(args.data, args).values() for r in recs]
    settings = score_settings(args.model, judge=args.judge, dtype=args.dtype, max_length=args.max_length,
                              seed=args.seed, reward_head=args.reward_head, reward_token=args.reward_token,
                              trust_remote_code=args.trust_remote_code)
    make = lambda state: make_scorer(args.model, state, judge=args.judge, batch_size=args.batch_size,
                                     dtype=None if args.dtype == "auto" else args.dtype,
                                     max_length=args.max_length, seed=args.seed, trust_head=args.trust_head,
                                     device_map=args.device_map, trust_remote_code=args.trust_remote_code,
                                     reward_head=args.reward_head, reward_token=args.reward_token or 0,
                                     max_tokens_per_batch=args.max_tokens_per_batch)
    result = score_to_file(records, args.output, settings, make, inputs=args.data)
    if result is not None:  # the main process
        _print_json({"output": str(args.output), "model": args.model, "judge": args.judge, **result,
                     **_skip_report(args)})


@_writes(lambda a: ([a.output], [("--human", a.human), ("--gpt", a.gpt), ("--scores", a.scores),
                                 *(("--rm", f) for f in ([] if a.scores else _model_files(a.rm)))], False))
def cmd_preference(args) -> None:
    from .distant_supervision import build_preference
    from .records import write_records
    from .score_file import read_scores

    human, gpt = _read([args.human, args.gpt], args, need_rank=True).values()
    if args.margin < 0:
        raise UsageError(f"--margin must be >= 0, got {args.margin} (fix: a margin of 0 keeps every agreeing comparison)")
    if args.scores:
        scores = read_scores(args.scores)
        rm_path = None
    else:
        from .models.zoo import scores_of_reward_model

        rm_path, scores = scores_of_reward_model(gpt, args.rm, trained_on=human, seed=args.seed,
                                                 progress=sys.stderr.isatty())
    records, report = build_preference(human, gpt, scores, margin=args.margin, debias=not args.no_debias, seed=args.seed)
    write_records(records, args.output)  # atomic
    _print_json({"output": str(args.output), "reward_model": str(rm_path) if rm_path else None,
                 "records": len(records), **report, **_skip_report(args)})


def _import_io(args):
    """What ``cheems import`` writes (the output, and for a folder the files it writes there) and reads."""
    from .real_data import output_files

    inputs = [("", p) for p in args.inputs] + [("--questions", args.questions)]
    out = args.output
    inside = [] if out is None else [out / rel for rel in output_files(args.source)]
    return [out, *inside], inputs, False


@_writes(_import_io)
def cmd_import(args) -> None:
    """Convert public real data into records (:func:`cheems_lib.real_data.import_source`); one JSON summary on stdout.

    Inputs whose SHA-256 differs from the known copies import too, with a note on stderr."""
    from .real_data import import_source

    if args.source != "dpo-zh" and len(args.inputs) != 1:
        raise UsageError(f"cheems import {args.source} takes one folder, got {len(args.inputs)} inputs "
                         "(fix: pass one folder; only dpo-zh merges several files)")
    if args.questions and args.source != "llmzoo":
        raise UsageError("--questions is for cheems import llmzoo (fix: drop it)")
    if args.output is None:  # never a default folder: it would be relative to wherever the command runs
        raise UsageError(f"cheems import {args.source} needs -o (fix: pass -o OUT)")
    summary, known = import_source(args.source, args.inputs, args.output, questions=args.questions)
    _note_unknown(known)
    _print_json(summary)


def _note_unknown(known: dict) -> None:
    for path, ok in known.items():
        if not ok:
            print(f"cheems: note: {path} is not the copy data/real was made from (sha256 differs); "
                  "imported anyway", file=sys.stderr)


def cmd_book(args) -> None:
    """Bad arguments exit 2 before anything runs; failed chapters (one line each) or a failed
    render exit 1 after the other chapters ran and the book was rendered."""
    import errno

    from .publishing.build import build
    from .publishing.chapters import BookError, BookInputError

    try:
        build(profile=args.profile, chapters=args.chapter or None, overrides=dict(args.param or []),
              force=args.force, html=not args.no_html, jobs=args.jobs)
    except BookInputError as e:
        print(f"cheems: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    except BookError as e:
        print("\n".join(f"cheems: {line}" for line in str(e).splitlines()), file=sys.stderr)
        raise SystemExit(1) from None
    except OSError as e:  # e.g. a full disk while writing book/
        if e.errno in (errno.ENOSPC, errno.ELOOP):
            raise
        raise SystemExit(f"cheems: {e.filename or 'book'}: {e.strerror or e}") from None


def build_parser() -> argparse.ArgumentParser:
    """The ``cheems`` argument parser (every subcommand); building it imports no torch."""
    p = _Parser(prog="cheems", description="Companion to the Cheems paper: "
                                "resolve annotations, evaluate reward models, build the book.")
    p.add_argument("--version", action=_Version, help="print `cheems VERSION` and exit")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (_add_resolve, _add_evaluate, _add_simulate, _add_train, _add_score, _add_preference, _add_import,
                _add_book):
        add(sub)
    return p


def _add_resolve(sub) -> None:
    r = sub.add_parser("resolve", help="Algorithm 1: rank every record from its annotations")
    r.add_argument("input", type=Path, help="JSONL records with 'annotations' (grouped or official pairwise form)")
    r.add_argument("-o", "--output", type=Path, required=True,
                   help="where to write the records with 'rank' (written atomically; not the input itself)")
    r.add_argument("--skip-invalid", action="store_true", help=SKIP_HELP)
    r.set_defaults(func=cmd_resolve)


def _add_evaluate(sub) -> None:
    e = sub.add_parser("evaluate", help="accuracy / exact match / overall of one score file (paper §3.3)")
    e.add_argument("--data", type=Path, action="append", required=True,
                   help="benchmark subset JSONL: records with 'rank', or with 'annotations' only, or flat pairs "
                   "(records without 'rank' are ranked on read with Algorithm 1) (repeat)")
    e.add_argument("--scores", type=Path, action="append", required=True,
                   help="score JSONL: prompt_id, response_id, score (repeat: one file per model gives a leaderboard)")
    e.add_argument("--view", choices=["layers", "implied"], default="layers",
                   help="pairs compared: all rank layers (paper) or only annotation-implied pairs")
    e.add_argument("--bootstrap", type=_int_between(0, MAX_BOOTSTRAP, "more replicates change the intervals by "
                                                    "less than their Monte Carlo error and take memory for each"),
                   default=1000, metavar="N", help=f"bootstrap replicates for 95%% intervals (0: none; at most "
                   f"{MAX_BOOTSTRAP:,})")
    e.add_argument("--seed", type=_int_at_least(0), default=0, help="bootstrap seed")
    e.add_argument("--skip-invalid", action="store_true", help=SKIP_HELP)
    e.add_argument("--length-margin", type=_margin, default=0.1, metavar="M",
                   help="by_length: a compared pair is of similar length when the two answers' lengths differ by at "
                   "most M times the longer's (default 0.1); else the preferred answer is longer or shorter")
    e.add_argument("--tokenizer", metavar="NAME_OR_PATH",
                   help="by_length: count lengths in this tokenizer's tokens (default: characters)")
    e.add_argument("--baseline", metavar="NAME",
                   help="with two or more --scores files: each model's paired difference from NAME (a score file's "
                   "stem, as the leaderboard names models) overall, per data file and per category, with 95%% "
                   "intervals and p-values, Holm-adjusted over categories")
    e.add_argument("--per-item", type=Path, metavar="FILE",
                   help="also write one JSONL row per (model, prompt): comparisons, correct, exact match, tied gold "
                   "pairs, tied score pairs, each response's rank and score; the protocol (tie rule, view, macro "
                   "and micro, data SHA-256, model fingerprint) goes to FILE.cheems.json")
    e.set_defaults(func=cmd_evaluate)


def _add_simulate(sub) -> None:
    s = sub.add_parser("simulate", help="write the simulated Cheems world (spec §6 layout)")
    s.add_argument("-o", "--output", type=Path, required=True, help="output directory")
    s.add_argument("--size", choices=["smoke", "default", "paper"], default="default",
                   help="smoke: seconds; default: the book; paper: Table 1's full counts")
    s.add_argument("--seed", type=int, default=0, help="seed of every random draw (same seed, same bytes)")
    s.set_defaults(func=cmd_simulate)


def _add_train(sub) -> None:
    t = sub.add_parser("train", help="Bradley-Terry reward-model training on ranked records (paper §5)")
    t.add_argument("--data", type=Path, action="append", required=True,
                   help="JSONL records with 'rank', or with 'annotations' only, or flat pairs (records without "
                   "'rank' are ranked on read with Algorithm 1) (repeat)")
    t.add_argument("--model", default="tiny", help="tiny | tiny-xs ... tiny-xl | hub name | local checkpoint")
    t.add_argument("--output", type=Path, required=True, help="checkpoint folder (loadable with from_pretrained)")
    t.add_argument("--preset", choices=["tiny", "paper"],
                   help="defaults to use (default: tiny for the tiny family, paper = Table 9 for anything else)")
    _add_config_flags(t)
    t.add_argument("--force-lr", dest="force_lr", action="store_true",
                   help="allow a learning rate above 1e-4 on a pretrained checkpoint")
    t.add_argument("--skip-invalid", action="store_true", help=SKIP_HELP)
    t.add_argument("--resume", action="store_true", help="continue from the last checkpoint in --output "
                   "(refused if it was trained with other settings or data)")
    t.add_argument("--overwrite", action="store_true", help="replace a finished --output: train beside it and "
                   "swap the new model in only when complete")
    t.set_defaults(func=cmd_train)


_FLAG_TYPES = {"int": int, "float": float, "str": str}
_FLAG_CHOICES = {"mixed_precision": ["no", "bf16", "fp16"], "save_dtype": ["auto", "float32", "bfloat16", "float16"],
                 "gradient_checkpointing": ["auto", "on", "off"]}


def _add_config_flags(parser) -> None:
    """One flag per :class:`~cheems_lib.models.training_config.TrainConfig` field but ``model`` (``max_length``:
    ``--max-length``), its help the field's docstring. Each defaults to None: the preset decides."""
    from dataclasses import fields

    from .models.training_config import field_docs, TrainConfig  # imports no torch

    docs = field_docs(TrainConfig)
    for f in fields(TrainConfig):
        if f.name == "model":
            continue
        doc = docs.get(f.name, "").replace("%", "%%")
        parser.add_argument("--" + f.name.replace("_", "-"), dest=f.name, type=_FLAG_TYPES[f.type],
                            choices=_FLAG_CHOICES.get(f.name), help=f"{doc} (tiny preset: {f.default})")


def _add_score(sub) -> None:
    c = sub.add_parser("score", help="one score per response with a reward model or an LLM judge (paper §6.1)")
    c.add_argument("--model", required=True, help="reward model (with --judge: causal LM), hub name or path; "
                   "or baseline:random, baseline:longest, baseline:shortest")
    c.add_argument("--seed", type=_int_at_least(0), default=0, help="seed of baseline:random")
    c.add_argument("--data", type=Path, action="append", required=True, help="JSONL records to score (repeat)")
    c.add_argument("-o", "--output", type=Path, required=True,
                   help="score JSONL, written when complete; an interrupted run resumes from OUT.partial")
    c.add_argument("--batch-size", type=_int_at_least(1), default=16,
                   help="sequences per forward pass (scores do not depend on it)")
    c.add_argument("--max-tokens-per-batch", type=_int_at_least(1),
                   help="padded tokens per forward pass (default 16384 for models outside the tiny family, whose "
                        "batches are bounded by tokens and --batch-size; scores do not depend on it)")
    c.add_argument("--max-length", type=_int_at_least(1), help="cut longer sequences (counted in the output)")
    c.add_argument("--judge", action="store_true", help="the model is a generative judge: compare pairs in both orders")
    c.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"], help="weights dtype")
    c.add_argument("--device-map", choices=["auto", "balanced", "balanced_low_0", "sequential"],
                   help="spread one model over every GPU as it loads (one process; for a model too large for one "
                        "GPU); without it the model loads straight onto each process's device")
    c.add_argument("--trust-remote-code", action="store_true",
                   help="run the checkpoint's own code (auto_map in its config.json: InternLM2, ArmoRM, ...)")
    c.add_argument("--reward-head", default="auto", choices=["auto", "classifier", "custom", "logit"],
                   help="how the reward is read: a sequence classifier's logit; a custom model's returned score "
                        "(needs --trust-remote-code); a causal LM's logit of --reward-token at the last token "
                        "(Nemotron style); auto: custom for custom code with --trust-remote-code, else classifier")
    c.add_argument("--reward-token", type=_int_at_least(0),
                   help="with --reward-head logit: the token id whose logit is the reward (default 0)")
    c.add_argument("--trust-head", action="store_true",
                   help="score even if the reward head looks like a random initialisation")
    c.add_argument("--skip-invalid", action="store_true", help=SKIP_HELP)
    c.set_defaults(func=cmd_score)


def _add_preference(sub) -> None:
    f = sub.add_parser("preference", help="build CheemsPreference: distant supervision + length debiasing (paper §4.2)")
    f.add_argument("--human", type=Path, required=True, help="golden human-annotated subset (records with annotations/rank)")
    f.add_argument("--gpt", type=Path, required=True, help="GPT-annotated subset (records with annotations)")
    f.add_argument("-o", "--output", type=Path, required=True, help="where to write the combined preference set")
    f.add_argument("--rm", help="reward model that filters (default: a tiny model trained on --human, cached)")
    f.add_argument("--scores", type=Path, help="use these reward scores of the GPT subset instead of a model")
    f.add_argument("--margin", type=_finite_float, default=0.0, help="keep a comparison only if r(chosen) - r(rejected) > margin")
    f.add_argument("--no-debias", action="store_true", help="skip length debiasing")
    f.add_argument("--seed", type=_int_between(0, 2**32 - 1, "it also seeds the default reward model's training, "
                                                "whose numpy seed has 32 bits"),
                   default=0, help="seed of debiasing (and of the default reward model)")
    f.set_defaults(func=cmd_preference)


def _add_import(sub) -> None:
    i = sub.add_parser("import", help="convert public real Chinese preference data (LLMZoo zh, DPO-zh, "
                       "WritingPreferenceBench zh) to records",
                       description="real SRC -o DIR: the whole data/real folder (spec 6b layout, manifest, licences) "
                       "from SRC/llmzoo-zh, SRC/dpo-zh and SRC/writingpref-zh; llmzoo SET_DIR -o OUT.jsonl: one LLMZoo answer set; "
                       "dpo-zh FILE [FILE ...] -o OUT.jsonl: chosen/rejected files merged into one ranked file; "
                       "writingpref SRC/writingpref-zh -o DIR: WritingPreferenceBench zh (human scores) into "
                       "DIR/writingpref/ and DIR/manifest.json (e.g. -o data/real)")
    i.add_argument("source", choices=["real", "llmzoo", "dpo-zh", "writingpref"], help="what to import")
    i.add_argument("inputs", type=Path, nargs="+", metavar="INPUT",
                   help="real: the source folder; llmzoo: an answer set's folder of aspect reviews; dpo-zh: files; "
                        "writingpref: the writingpref-zh folder")
    i.add_argument("-o", "--output", type=Path,
                   help="real, writingpref: output folder; else the output JSONL "
                        "(written atomically)")
    i.add_argument("--questions", type=Path, help="llmzoo: questions-zh.jsonl (orders the records, checks texts)")
    i.set_defaults(func=cmd_import)


def _add_book(sub) -> None:
    b = sub.add_parser("book", help="run chapters with papermill and build the Jupyter Book")
    from .publishing.chapters import PROFILES

    b.add_argument("--profile", choices=list(PROFILES), default="default",
                   help="smoke: tiny sizes, about 3 min on 2 cores; default: CPU book; paper: the paper's settings (GPU, real data); "
                        "real: every chapter on data/real (real-smoke: at smoke settings); "
                        "full: default plus every finding rebuilt on two more simulated worlds (full-smoke: at smoke settings)")
    b.add_argument("--chapter", action="append", metavar="NAME", help="only these chapters (repeat)")
    b.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"),
                   help="override a chapter parameter (repeat)")
    b.add_argument("--force", action="store_true", help="re-execute chapters even if cached")
    b.add_argument("--no-html", action="store_true", help="execute chapters only, skip jupyter-book build")
    b.add_argument("--jobs", type=int, default=0,
                   help="chapters executed at once (0: 2 on a CPU machine with 2+ cores for smoke/default, else 1)")
    b.set_defaults(func=cmd_book)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if argv is not None:  # called from Python (tests, notebooks): leave the caller's signal handlers alone
        return _run(args)
    from .outputs import exit_on_sigterm

    exit_on_sigterm()
    try:
        return _run(args)
    finally:  # the work is done (or cleaned up): a late signal must not print a traceback at interpreter exit
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)


def _run(args) -> int:
    from .outputs import LockedError
    from .input_files import DataError
    from .models.reward_model import ModelError
    from .models.training_config import TrainError

    try:
        args.func(args)
    except DataError as e:
        row = e.line and not e.problem.startswith("is UTF-")  # a bad row, which skipping would get past
        hint = " (or pass --skip-invalid to skip invalid rows)" if row and getattr(args, "skip_invalid", True) is False else ""
        print(f"cheems: {e}{hint}", file=sys.stderr)
        return 2
    except (ModelError, TrainError, UsageError, LockedError) as e:
        print(f"cheems: {e}", file=sys.stderr)
        return 2
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError) as e:
        print(f"cheems: {e.filename}: {e.strerror} (fix: check the path)", file=sys.stderr)
        return 2
    except OSError as e:  # a full disk, an I/O error: the outputs are the old complete ones
        return _os_error(e, args)
    except KeyboardInterrupt as e:
        return 143 if "signal 15" in str(e) else 130
    return 0


def _os_error(e: OSError, args) -> int:
    """One line for an OSError that is not a missing path: a link loop is bad input (2), the rest runtime (1)."""
    import errno

    if e.errno == errno.ELOOP:
        where = e.filename or getattr(args, "output", None) or "path"
        print(f"cheems: {where}: {e.strerror} (fix: point the symbolic link at a file or folder, or pass another path)",
              file=sys.stderr)
        return 2
    if e.errno == errno.ENOSPC:  # the output the user named, not the temporary file that was being written
        where = getattr(args, "output", None) or e.filename or "output"
        print(f"cheems: {where}: {e.strerror} (fix: free space or write elsewhere; the previous output is "
              "unchanged)", file=sys.stderr)
        return 1
    where = e.filename or getattr(args, "output", None) or "output"
    print(f"cheems: {where}: {e.strerror or e} (fix: free space or write elsewhere; "
          "the previous output, if any, is unchanged)", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
