"""Compare two smoke ledgers (tests/data/smoke_ledger.json form) by the rule for changes that move floats.

A change may move the floats of existing results when, on ledgers built on the same machine before and after,
every verdict is unchanged, claims without an estimate (untestable, insufficient data) are identical, and every
estimate moves by less than a quarter of its interval's half-width, or 1e-4 when that is larger. Prints each
claim that moved (largest first), the largest move per claim kind, and PASS or FAIL; exit 1 on FAIL.

Usage: python benchmarks/compare_ledgers.py BEFORE.json AFTER.json
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

FLOOR = 1e-4
"""The smallest allowed move of an estimate, for claims whose interval is narrower than 4e-4."""


def _number(text: str) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def compare(before: dict, after: dict) -> tuple[list[str], list[tuple[float, str, str]]]:
    """``(problems, moves)``: what breaks the rule, and ``(share of the allowed move, claim, line)`` per moved claim."""
    problems, moves = [], []
    for name in sorted(set(before) | set(after)):
        if name not in before or name not in after:
            problems.append(f"{name}: only in the {'after' if name in after else 'before'} ledger")
            continue
        a, b = before[name], after[name]
        if a.get("verdict") != b.get("verdict"):
            problems.append(f"{name}: verdict {a.get('verdict')} -> {b.get('verdict')}")
            continue
        x, y = _number(a.get("estimate")), _number(b.get("estimate"))
        if x is None or y is None:
            if a != b:
                problems.append(f"{name}: a claim without an estimate changed ({a} -> {b})")
            continue
        low, high = _number(a.get("ci_low")), _number(a.get("ci_high"))
        allowed = max((high - low) / 8 if low is not None and high is not None else 0.0, FLOOR)
        move = abs(y - x)
        if move:
            moves.append((move / allowed, name, f"{name}: {x:.6g} -> {y:.6g} (move {move:.2e}, allowed {allowed:.2e})"))
        if move >= allowed:
            problems.append(f"{name}: estimate moved {move:.2e}, allowed {allowed:.2e}")
    return problems, sorted(moves, reverse=True)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    before, after = (json.loads(Path(p).read_text(encoding="utf-8")) for p in argv)
    if before.get("machine") != after.get("machine"):
        print(f"note: recorded on other machines ({before.get('machine')} / {after.get('machine')}); "
              "the rule is for ledgers of one machine")
    problems, moves = compare(before["claims"], after["claims"])
    kinds: dict[str, float] = {}
    for share, name, line in moves:
        print(line)
        kind = name.split("/")[-1].split("-")[0]
        kinds[kind] = max(kinds.get(kind, 0.0), share)
    print(f"{len(moves)} of {len(after['claims'])} estimates moved; largest share of the allowed move per claim kind: "
          + (", ".join(f"{k} {v:.2f}" for k, v in sorted(kinds.items())) or "none"))
    for p in problems:
        print(f"FAIL {p}")
    print("PASS" if not problems else f"FAIL ({len(problems)} claims break the rule)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
