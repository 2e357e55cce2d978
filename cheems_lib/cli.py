"""The ``cheems`` command line (spec ``formats.md`` §5).

Each subcommand imports what it needs inside its handler, so ``cheems --help``,
``cheems resolve`` and ``cheems evaluate`` never import torch. Bad input ends with exit
code 2 and one line ``cheems: file:line: problem (fix: ...)`` instead of a traceback.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

__all__ = ["main"]


def _print_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2) + "\n")


def cmd_resolve(args) -> None:
    from .conflicts import resolve_records
    from .records import read_records, write_records

    records = read_records(args.input)
    stats = resolve_records(records)
    write_records(records, args.output)
    _print_json({"input": str(args.input), "output": str(args.output), **stats})


def cmd_evaluate(args) -> None:
    from .metrics import evaluate_subset, overall, overall_ci
    from .records import check_scores_known, read_records, read_scores

    data = {}
    for path in args.data:
        stem = Path(path).stem
        if stem in data:
            raise SystemExit(f"cheems: {path}: two data files share the stem {stem!r} (fix: rename one)")
        data[stem] = read_records(path)
    scores = read_scores(args.scores)
    check_scores_known(scores, [r for recs in data.values() for r in recs])
    results = {stem: evaluate_subset(recs, scores, view=args.view, n_boot=args.bootstrap,
                                     seed=args.seed, scores_path=str(args.scores))
               for stem, recs in data.items()}
    out = {stem: res.to_json() for stem, res in results.items()}
    if len(results) >= 2:
        out["overall"] = overall(list(results.values()))
        ci = overall_ci(list(results.values()))
        if ci:
            out["overall_ci"] = ci
    _print_json(out)


def cmd_simulate(args) -> None:
    from .simulation import WorldConfig, build_world, write_world

    world = build_world(WorldConfig(size=args.size, seed=args.seed), progress=sys.stderr.isatty())
    summary = write_world(world, args.output)
    _print_json({"output": str(args.output), "size": summary["size"], "seed": summary["seed"],
                 "simulator_version": summary["simulator_version"], "length_scale": summary["length_scale"],
                 "files": {p: {k: v[k] for k in ("prompts", "annotations", "conflict_ratio", "responses_per_prompt",
                                                 "position_second_share")}
                           for p, v in summary["files"].items()},
                 "responses": len(world.truth)})


def cmd_book(args) -> None:
    from .book import BookError, build

    try:
        build(profile=args.profile, chapters=args.chapter or None, overrides=dict(args.param or []),
              force=args.force, html=not args.no_html)
    except (BookError, KeyError) as e:
        raise SystemExit(f"cheems: {e}") from None


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cheems", description="Companion to the Cheems paper: "
                                "resolve annotations, evaluate reward models, build the book.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    r = sub.add_parser("resolve", help="Algorithm 1: rank every record from its annotations")
    r.add_argument("input", type=Path, help="JSONL records with 'annotations' (grouped or official pairwise form)")
    r.add_argument("-o", "--output", type=Path, required=True, help="where to write the records with 'rank'")
    r.set_defaults(func=cmd_resolve)

    e = sub.add_parser("evaluate", help="accuracy / exact match / overall of one score file (paper §3.3)")
    e.add_argument("--data", type=Path, action="append", required=True, help="benchmark subset JSONL with 'rank' (repeat)")
    e.add_argument("--scores", type=Path, required=True, help="score JSONL: prompt_id, response_id, score")
    e.add_argument("--view", choices=["layers", "implied"], default="layers",
                   help="pairs compared: all rank layers (paper) or only annotation-implied pairs")
    e.add_argument("--bootstrap", type=int, default=1000, metavar="N", help="bootstrap replicates for 95%% intervals (0: none)")
    e.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    e.set_defaults(func=cmd_evaluate)

    s = sub.add_parser("simulate", help="write the simulated Cheems world (spec §6 layout)")
    s.add_argument("-o", "--output", type=Path, required=True, help="output directory")
    s.add_argument("--size", choices=["smoke", "default", "paper"], default="default",
                   help="smoke: seconds; default: the book; paper: Table 1's full counts")
    s.add_argument("--seed", type=int, default=0, help="seed of every random draw (same seed, same bytes)")
    s.set_defaults(func=cmd_simulate)

    b = sub.add_parser("book", help="run chapters with papermill and build the Jupyter Book")
    b.add_argument("--profile", choices=["smoke", "default", "paper"], default="default",
                   help="smoke: seconds; default: CPU book; paper: the paper's settings (GPU, real data)")
    b.add_argument("--chapter", action="append", metavar="NAME", help="only these chapters (repeat)")
    b.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"),
                   help="override a chapter parameter (repeat)")
    b.add_argument("--force", action="store_true", help="re-execute chapters even if cached")
    b.add_argument("--no-html", action="store_true", help="execute chapters only, skip jupyter-book build")
    b.set_defaults(func=cmd_book)
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from .records import DataError

    try:
        args.func(args)
    except DataError as e:
        print(f"cheems: {e}", file=sys.stderr)
        return 2
    except (FileNotFoundError, IsADirectoryError, PermissionError) as e:
        print(f"cheems: {e.filename}: {e.strerror}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
