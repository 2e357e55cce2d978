"""Write data/examples/release/: a made-up example folder in the official release layout.

It is cut from the simulated smoke world (seed 0): the shortest prompts of each top-level
category, so the folder stays small (about 100 KB) and every chapter runs on it in seconds:

    cheems_bench/open.jsonl, cheems_bench/human.jsonl   benchmark subsets (ranked, raw annotations)
    cheems_preference.jsonl                            one preference file, each record with "subset"
    human_ids.txt                                      the same split as a -p human_ids FILE
    manifest.json                                      name, labels and, per file, source, sha256, prompts

Run from the repository root: ``.venv/bin/python data/examples/make_release.py [OUT]`` (OUT: another folder to write,
e.g. to compare). The output depends only
on the simulator (same version, same bytes). The text is simulated Chinese, the labels come from
simulated annotators: an example of the format, not data to draw conclusions from.
"""
from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from cheems_lib.world.simulation import VERSION as SIMULATOR_VERSION, WorldConfig, build_world  # noqa: E402
from cheems_lib.world_files import write_world  # noqa: E402

OUT = ROOT / "data" / "examples" / "release"
SEED = 0
# (source file in the simulated layout, prompts kept per category, subset field or None)
PARTS = {
    "cheems_bench/open.jsonl": [("cheems_bench/open.jsonl", 1, None)],
    "cheems_bench/human.jsonl": [("cheems_bench/human.jsonl", 1, None)],
    "cheems_preference.jsonl": [("cheems_preference/human.jsonl", 2, "human"),
                                ("cheems_preference/gpt.jsonl", 4, "gpt")],
}


def shortest_per_category(path: Path, keep: int) -> list[dict]:
    """The ``keep`` shortest records (in bytes) of each top-level category, in file order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    by_cat: dict[str, list[tuple[int, int]]] = {}
    for i, line in enumerate(lines):
        by_cat.setdefault(json.loads(line)["category"][0], []).append((len(line.encode()), i))
    kept = sorted(i for rows in by_cat.values() for _, i in sorted(rows)[:keep])
    return [json.loads(lines[i]) for i in kept]


def main(out: Path = OUT) -> None:
    """Write the example folder to ``out`` (default: the shipped ``data/examples/release``)."""
    with tempfile.TemporaryDirectory() as tmp:
        world = Path(tmp) / "world"
        write_world(build_world(WorldConfig(size="smoke", seed=SEED)), world)
        files: dict[str, list[dict]] = {}
        for rel, parts in PARTS.items():
            files[rel] = []
            for src, keep, subset in parts:
                for rec in shortest_per_category(world / src, keep):
                    files[rel].append({**rec, "subset": subset} if subset else rec)
    manifest = {
        "name": "Made-up example in the release layout (not CheemsBench, not CheemsPreference)",
        "labels": "simulated annotators (made up: no human or model labelled these)",
        "regenerate": "python data/examples/make_release.py",
        "files": {},
    }
    for rel, recs in files.items():
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs)
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(text, encoding="utf-8")
        manifest["files"][rel] = {
            "source": f"cheems simulate --size smoke --seed {SEED} (simulator {SIMULATOR_VERSION}), "
                      "the shortest prompts of each category",
            "commit": None, "licence": "Apache-2.0 (this project)", "sha256": hashlib.sha256(text.encode()).hexdigest(),
            "prompts": len(recs)}
    human = [r["id"] for r in files["cheems_preference.jsonl"] if r["subset"] == "human"]
    (out / "human_ids.txt").write_text("".join(i + "\n" for i in human), encoding="utf-8")
    (out / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({rel: len(recs) for rel, recs in files.items()}))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
