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
    everything = [r for recs in data.values() for r in recs]
    per_model = {}
    for path in args.scores:
        scores = read_scores(path)
        check_scores_known(scores, everything)
        results = {stem: evaluate_subset(recs, scores, view=args.view, n_boot=args.bootstrap,
                                         seed=args.seed, scores_path=str(path))
                   for stem, recs in data.items()}
        out = {stem: res.to_json() for stem, res in results.items()}
        if len(results) >= 2:
            out["overall"] = overall(list(results.values()))
            ci = overall_ci(list(results.values()))
            if ci:
                out["overall_ci"] = ci
        per_model[Path(path).stem] = out
    if len(per_model) == 1:
        _print_json(next(iter(per_model.values())))
        return
    if len(set(per_model)) != len(args.scores):
        raise SystemExit("cheems: two score files share a stem (fix: rename one; the stem names the model)")
    print(_leaderboard(per_model, list(data)), file=sys.stderr)
    _print_json(per_model)


def _leaderboard(per_model: dict, subsets: list[str]) -> str:
    """A plain-text leaderboard, sorted by overall (or the first subset's accuracy)."""
    key = (lambda kv: kv[1].get("overall", 0)) if len(subsets) >= 2 else (lambda kv: kv[1][subsets[0]]["accuracy"])
    head = ["model"] + [f"{s} {m}" for s in subsets for m in ("acc", "exact")] + (["overall"] if len(subsets) >= 2 else [])
    rows = [[name] + [f"{res[s][m]:.3f}" for s in subsets for m in ("accuracy", "exact_match")]
            + ([f"{res['overall']:.3f}"] if len(subsets) >= 2 else [])
            for name, res in sorted(per_model.items(), key=key, reverse=True)]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    fmt = lambda row: "  ".join(str(x).ljust(w) for x, w in zip(row, widths))
    return "\n".join([fmt(head), fmt(["-" * w for w in widths]), *map(fmt, rows)])


def cmd_simulate(args) -> None:
    """Bad arguments exit 2 before anything is written; a failed write (full disk) exits 1
    and leaves -o as it was (see simulation.write_world)."""
    from .records import DataError
    from .simulation import WorldConfig, build_world, check_output, write_world

    if args.seed < 0:
        raise DataError(f"--seed {args.seed}", None, "the seed must be an integer >= 0", "pass --seed 0 or another N >= 0")
    try:
        check_output(args.output)  # refuse before minutes of simulation, not after
        world = build_world(WorldConfig(size=args.size, seed=args.seed), progress=sys.stderr.isatty())
        summary = write_world(world, args.output)
    except OSError as e:
        raise SystemExit(f"cheems: {e.filename or args.output}: {e.strerror or e}") from None
    _print_json({"output": str(args.output), "size": summary["size"], "seed": summary["seed"],
                 "simulator_version": summary["simulator_version"], "length_scale": summary["length_scale"],
                 "files": {p: {k: v[k] for k in ("prompts", "annotations", "conflict_ratio", "responses_per_prompt",
                                                 "position_second_share")}
                           for p, v in summary["files"].items()},
                 "responses": len(world.truth)})


def cmd_train(args) -> None:
    from dataclasses import fields

    from .records import read_records
    from .training import TrainConfig, TrainError, train
    from .zoo import data_fingerprint

    records = [r for path in args.data for r in read_records(path)]
    base = TrainConfig.paper(model=args.model) if args.preset == "paper" else TrainConfig(model=args.model)
    overrides = {f.name: getattr(args, f.name) for f in fields(TrainConfig) if getattr(args, f.name, None) is not None}
    cfg = TrainConfig(**{**base.__dict__, **overrides, "model": args.model})
    try:
        summary = train(records, cfg, args.output, resume=args.resume, progress=sys.stderr.isatty(),
                        data_fingerprint=data_fingerprint(records))
    except TrainError as e:
        raise SystemExit(f"cheems: {e}") from None
    if summary.get("final") is not None:
        _print_json({"output": str(args.output), "data": summary["data"], "steps": summary["steps"],
                     "padding_fraction": summary["padding_fraction"], "final": summary["final"]})


def _clean_tail(path: Path) -> None:
    """Drop a half-written last line left by a killed run, so the file can be resumed."""
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        path.write_bytes(data[: data.rfind(b"\n") + 1])


def cmd_score(args) -> None:
    from accelerate import PartialState

    from .records import read_records, read_scores, write_scores

    state = PartialState(cpu=_no_cuda())
    records = [r for path in args.data for r in read_records(path)]
    out = Path(args.output)
    done = set()
    if out.exists():
        if state.is_main_process:
            _clean_tail(out)
        state.wait_for_everyone()
        done = set(read_scores(out))
    todo = [r for r in records if not all((r.id, x.id) in done for x in r.responses)]
    mine = todo[state.process_index::state.num_processes]
    dtype = None if args.dtype == "auto" else args.dtype
    extra = {}
    if args.model.startswith("baseline:"):
        from .baselines import length_scores, random_scores

        kind = args.model.split(":", 1)[1]
        if kind not in ("random", "longest", "shortest"):
            raise SystemExit(f"cheems: --model {args.model}: baselines are baseline:random, baseline:longest, baseline:shortest")
        scores = (random_scores(mine, seed=args.seed) if kind == "random"
                  else length_scores(mine, prefer="longer" if kind == "longest" else "shorter"))
        scores = {k: v for k, v in scores.items() if k not in done}
        report = {"scored": len(scores), "skipped": len(done)}
    elif args.judge:
        from .judging import judge_records, judge_scores, load_judge, position_consistency

        model, tok = load_judge(args.model, dtype=dtype)
        model.to(state.device)
        verdicts = judge_records(model, tok, mine, batch_size=args.batch_size, max_length=args.max_length,
                                 progress=sys.stderr.isatty() and state.is_main_process)
        scores = judge_scores(verdicts)
        report = {"scored": len(scores), "skipped": len(done)}
        extra["position_consistency"] = position_consistency(verdicts)
        extra["pairs_judged"] = len(verdicts)
    else:
        from .reward_model import load
        from .scoring import score_records

        model, tok = load(args.model, dtype=dtype)
        model.to(state.device)
        scores, report = score_records(model, tok, mine, batch_size=args.batch_size, max_length=args.max_length,
                                       progress=sys.stderr.isatty() and state.is_main_process, skip=done)
    report["skipped"] = sum((r.id, x.id) in done for r in records for x in r.responses)  # already in the file
    part = out.with_name(out.name + f".part{state.process_index}") if state.num_processes > 1 else out
    order = [(r.id, x.id) for r in mine for x in r.responses if (r.id, x.id) in scores]
    write_scores(((p, q, scores[(p, q)]) for p, q in order), part, append=part == out)
    state.wait_for_everyone()
    if state.num_processes > 1 and state.is_main_process:  # merge the shards in record order
        with open(out, "ab") as fh:
            for k in range(state.num_processes):
                shard = out.with_name(out.name + f".part{k}")
                fh.write(shard.read_bytes())
                shard.unlink()
    if state.is_main_process:
        _print_json({"output": str(out), "model": args.model, "judge": args.judge, "processes": state.num_processes,
                     **report, **extra})


def _no_cuda() -> bool:
    import torch

    return not torch.cuda.is_available()


def cmd_preference(args) -> None:
    from .distant_supervision import build_preference
    from .records import read_records, read_scores, write_records

    human = read_records(args.human)
    gpt = read_records(args.gpt)
    if args.scores:
        scores = read_scores(args.scores)
        rm_path = None
    else:
        from .reward_model import load
        from .scoring import score_records
        from .training import TrainConfig
        from .zoo import train_or_load

        rm_path = args.rm or train_or_load(human, TrainConfig(seed=args.seed), progress=sys.stderr.isatty())
        model, tok = load(rm_path)
        scores, _ = score_records(model, tok, gpt, progress=sys.stderr.isatty())
    records, report = build_preference(human, gpt, scores, margin=args.margin, debias=not args.no_debias, seed=args.seed)
    write_records(records, args.output)
    _print_json({"output": str(args.output), "reward_model": str(rm_path) if rm_path else None,
                 "records": len(records), **report})


def cmd_book(args) -> None:
    """Bad arguments exit 2 before anything runs; failed chapters (one line each) or a failed
    render exit 1 after the other chapters ran and the book was rendered."""
    from .book import BookError, BookInputError, build

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
        raise SystemExit(f"cheems: {e.filename or 'book'}: {e.strerror or e}") from None


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
    e.add_argument("--scores", type=Path, action="append", required=True,
                   help="score JSONL: prompt_id, response_id, score (repeat: one file per model gives a leaderboard)")
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

    t = sub.add_parser("train", help="Bradley-Terry reward-model training on ranked records (paper §5)")
    t.add_argument("--data", type=Path, action="append", required=True, help="JSONL records with 'rank' (repeat)")
    t.add_argument("--model", default="tiny", help="tiny | tiny-xs ... tiny-xl | hub name | local checkpoint")
    t.add_argument("--output", type=Path, required=True, help="checkpoint folder (loadable with from_pretrained)")
    t.add_argument("--preset", choices=["tiny", "paper"], default="tiny", help="defaults: CPU tiny model, or Table 9")
    t.add_argument("--seed", type=int, help="seed (default 0)")
    t.add_argument("--epochs", type=int, help="passes over the data")
    t.add_argument("--learning-rate", dest="learning_rate", type=float, help="peak learning rate")
    t.add_argument("--max-length", dest="max_length", type=int, help="tokens per sequence")
    t.add_argument("--max-tokens-per-batch", dest="max_tokens_per_batch", type=int, help="padded tokens per micro-batch")
    t.add_argument("--grad-accum", dest="grad_accum", type=int, help="micro-batches per step and process")
    t.add_argument("--reg-coef", dest="reg_coef", type=float, help="Gaussian prior weight (Table 9: 0.1)")
    t.add_argument("--mixed-precision", dest="mixed_precision", choices=["no", "bf16", "fp16"], help="accelerate precision")
    t.add_argument("--save-every", dest="save_every", type=int, help="checkpoint every N steps")
    t.add_argument("--max-steps", dest="max_steps", type=int, help="stop after N steps (a quick check of a setup)")
    t.add_argument("--resume", action="store_true", help="continue from the last checkpoint in --output")
    t.set_defaults(func=cmd_train)

    c = sub.add_parser("score", help="one score per response with a reward model or an LLM judge (paper §6.1)")
    c.add_argument("--model", required=True, help="reward model (with --judge: causal LM), hub name or path; "
                   "or baseline:random, baseline:longest, baseline:shortest")
    c.add_argument("--seed", type=int, default=0, help="seed of baseline:random")
    c.add_argument("--data", type=Path, action="append", required=True, help="JSONL records to score (repeat)")
    c.add_argument("-o", "--output", type=Path, required=True, help="score JSONL; an existing file is resumed")
    c.add_argument("--batch-size", type=int, default=16, help="sequences per forward pass (scores do not depend on it)")
    c.add_argument("--max-length", type=int, help="cut longer sequences (counted in the output)")
    c.add_argument("--judge", action="store_true", help="the model is a generative judge: compare pairs in both orders")
    c.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"], help="weights dtype")
    c.set_defaults(func=cmd_score)

    f = sub.add_parser("preference", help="build CheemsPreference: distant supervision + length debiasing (paper §4.2)")
    f.add_argument("--human", type=Path, required=True, help="golden human-annotated subset (records with annotations/rank)")
    f.add_argument("--gpt", type=Path, required=True, help="GPT-annotated subset (records with annotations)")
    f.add_argument("-o", "--output", type=Path, required=True, help="where to write the combined preference set")
    f.add_argument("--rm", help="reward model that filters (default: a tiny model trained on --human, cached)")
    f.add_argument("--scores", type=Path, help="use these reward scores of the GPT subset instead of a model")
    f.add_argument("--margin", type=float, default=0.0, help="keep a comparison only if r(chosen) - r(rejected) > margin")
    f.add_argument("--no-debias", action="store_true", help="skip length debiasing")
    f.add_argument("--seed", type=int, default=0, help="seed of debiasing (and of the default reward model)")
    f.set_defaults(func=cmd_preference)

    b = sub.add_parser("book", help="run chapters with papermill and build the Jupyter Book")
    b.add_argument("--profile", choices=["smoke", "default", "paper"], default="default",
                   help="smoke: seconds; default: CPU book; paper: the paper's settings (GPU, real data)")
    b.add_argument("--chapter", action="append", metavar="NAME", help="only these chapters (repeat)")
    b.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"),
                   help="override a chapter parameter (repeat)")
    b.add_argument("--force", action="store_true", help="re-execute chapters even if cached")
    b.add_argument("--no-html", action="store_true", help="execute chapters only, skip jupyter-book build")
    b.add_argument("--jobs", type=int, default=0,
                   help="chapters executed at once (0: 2 on a CPU machine with 2+ cores for smoke/default, else 1)")
    b.set_defaults(func=cmd_book)
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from .records import DataError
    from .reward_model import ModelError  # both modules import torch lazily, so this stays cheap
    from .training import TrainError

    try:
        args.func(args)
    except (DataError, ModelError, TrainError) as e:
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
