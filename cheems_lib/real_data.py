"""Real data: the shared machinery that imports public Chinese preference data into ``data/real/`` (spec §6b).

Three public, openly licensed sources can be fetched where the official CheemsBench and
CheemsPreference files cannot; ``data/real/`` ships them converted (``cheems import real``).
Each source has its reader, in the module named after it:

- LLMZoo's zh reviews (:func:`cheems_lib.llmzoo.read_llmzoo_set`), **model labels**: gpt-3.5-turbo's
  rankings of 4 answers, the two answer sets becoming ``cheems_bench/open.jsonl`` and
  ``llmzoo/review_output.jsonl``;
- DPO-zh (:func:`cheems_lib.dpo_zh.read_dpo_zh`), **model labels**: chosen/rejected pairs, becoming
  ``cheems_preference.jsonl``;
- WritingPreferenceBench zh (:func:`cheems_lib.writingpref.read_writingpref`), **human scores**: shipped
  as :data:`WRITINGPREF_FILE`, outside the release layout (``cheems import writingpref`` alone).

This module holds what the imports share: where each input comes from (:data:`UPSTREAM`), the
release-shaped layout written (:data:`RELEASE_FILES`), the manifest with each file's provenance,
licence and counts, and the atomic write of the whole folder (:func:`import_real`,
:func:`import_writingpref`).

Inputs are checked against the SHA-256 of the copies the project was built from
(:data:`KNOWN_SHA256`) for information only: a newer upstream file imports too, and the
summary and manifest then say it is not the known copy (and give no commit).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Iterable

from .dpo_zh import read_dpo_zh
from .input_files import DataError
from .llmzoo import LLMZOO_SETS, read_llmzoo_set
from .outputs import atomic_open
from .records import Record, write_records
from .writingpref import read_writingpref, WRITINGPREF_LABELS

__all__ = ["IMPORT_SOURCES", "KNOWN_SHA256", "UPSTREAM", "write_xz_records", "input_info", "import_real", "import_writingpref",
           "RELEASE_FILES", "WRITINGPREF_FILE", "output_files", "import_source"]

#: SHA-256 of the copies the shipped files were converted from (named in ``data/real/README.md``).
KNOWN_SHA256 = {
    "03d19b829de4e1b5ece9baf956b6b3e92ebd8341fe2d18ab5fce51cf9d7cda16": "dpo-zh/dpo_zh_500.jsonl",
    "9ea7206bc1a45df8b7811d1fc02d5555c65379d05905f343da88f221ff145376": "dpo-zh/dpo_zh_demo.json",
    "e603c00ea67e0ed6d1ac85a010b49d8a3e1a6da327c6f564da98aaf2c6a7ddec": "llmzoo-zh/questions-zh.jsonl",
    "5bb8c0d8ee46a6a467132b99152822a595f112253b301ea9f1a8bc4e3713cf61": "llmzoo-zh/review_output/coherence.jsonl",
    "ca3a19ab84e16b0e437ee83fd467c817fb1ad62474268ae00a8e7e8bc77290ea": "llmzoo-zh/review_output/diversity.jsonl",
    "173afb4797cde57f35d6562a7a2563d4d84cf110fdd2497353068f4566549dc1": "llmzoo-zh/review_output/general.jsonl",
    "88da6bdad09802cab5ee7bfc7b7df116a82e626a42c031762bce9075e4d3f536": "llmzoo-zh/review_output/immersion.jsonl",
    "fd9c90741f95575defcbe3db96897f8525c9c1d709a1cbfa9048e49a78e0d03a": "llmzoo-zh/review_output/relevance.jsonl",
    "c9a238cb0dd8cb528a519e1c2e1eda99bc2b11aa46a00317ead1b98eb8fdc21a": "llmzoo-zh/review_zh/coherence.jsonl",
    "e730157ebf6c293b8301dda99abe00cb86487d587c4a1afae3a8720705c17e47": "llmzoo-zh/review_zh/diversity.jsonl",
    "077a7d94e140746a117eb722ee37857099a9f0d2f575f4ea93d6b9dca917ecc8": "llmzoo-zh/review_zh/general.jsonl",
    "6abb3ee5403ce5e584cc3669f57650d9b6dc53d82a640ebf1d4fca96e23e2109": "llmzoo-zh/review_zh/immersion.jsonl",
    "0b5af63f87c724fe7994589d4b25bfe14ccc0ba96d39bed56818fa412d2c9763": "llmzoo-zh/review_zh/relevance.jsonl",
    "0c762fad3a54c0980742b0d40e19f823c1f25328cd1da28b4133f6d8b6b0ac43": "writingpref-zh/responses/claude-4-opus-nothinking.json",
    "43167896799da9d0eef0d4a2434abfa0522aeb48df48ebadc33f198ef68a9aaa": "writingpref-zh/scores/claude-4-opus-nothinking.json",
    "1a377c5b31fb0ebba69a6554f99a8ccbcee970ce93f8cdf8f2c2cf9ada4d2b34": "writingpref-zh/responses/claude-4-opus-thinking.json",
    "e732c1da59f976c4443bd205e88756d9348e398b54cf0130f6e5373277d88129": "writingpref-zh/scores/claude-4-opus-thinking.json",
    "697e62adf4337741dff7b60f97a343ddbd2945c17849e6a515ba953834a58add": "writingpref-zh/responses/claude-4-sonnet-nothinking.json",
    "db91cf8159429fab51b230e090f1489ccf959347668ff8fd9c11c4a7b8dca31c": "writingpref-zh/scores/claude-4-sonnet-nothinking.json",
    "5e5b168e2c7700da1f5661946d6c3165b62d45d44e75ee793e6b7f1940c662c1": "writingpref-zh/responses/claude-4-sonnet-thinking.json",
    "a2749b323de0fd66f568fe2bdcbb483e01b3674c215640b45ac753bb8c79a8c0": "writingpref-zh/scores/claude-4-sonnet-thinking.json",
    "cfff238fbbc655a07dbdd6e69835401bb8080f5524e0b05bf8cb1ecab53be288": "writingpref-zh/responses/deepseek-r1-0528.json",
    "f08c1526beebd09c7376cf5f56601d2809fd4595dd2747514cf499cbbf1cb5cb": "writingpref-zh/scores/deepseek-r1-0528.json",
    "7886cafcc97de8e89e2de5baf243fcfe83dc6ff91eaa13f1585d4a39917735d6": "writingpref-zh/responses/doubao-1.5-lite.json",
    "88dd8e1d76333ab3ffa5208fac2442a7741959c9764badcaf7086c6f77644515": "writingpref-zh/scores/doubao-1.5-lite.json",
    "21725d7d2f1d01414b89c886b10cfae4912e584fc92473f2a389aeff6a46c015": "writingpref-zh/responses/doubao-1.5-pro.json",
    "05bd8527aad72ab0a968f181835917f34f52db9fbae4466cc83eae638d968f00": "writingpref-zh/scores/doubao-1.5-pro.json",
    "223eff4935dabc9901fef5fcf3262d59fd04f2c7be7b184f49dc437179fd6081": "writingpref-zh/rescored/doubao-1.5-pro.shawn.json",
    "25d6986a6cab589df25d0b232eb475e25d72601724bc867b672d1bdc828e1a88": "writingpref-zh/responses/doubao-1.5-pro-thinking.json",
    "1e44f53437a749d5c826cb3528e009fb192645ea4e38f49444af8b7c9a6db626": "writingpref-zh/scores/doubao-1.5-pro-thinking.json",
    "4c6b1f07883a559b08b17e50b6089be02f9f7cd541509ba272d6ae78531cd022": "writingpref-zh/responses/gemini-2.0-flash.json",
    "59c5e5fa845472baa3001ae501d67bc7146f3b018e165c40c6a8332f5bec909b": "writingpref-zh/scores/gemini-2.0-flash.json",
    "7f274a066d71ae5c7750c181bb7d93101f900abb0c32b8e736d9ee92d1116ae6": "writingpref-zh/rescored/gemini-2.0-flash.unnamed.json",
    "8da9f58d16148edc09ca274a3197196b1488558789c66abaec49af702a5238f0": "writingpref-zh/responses/gemini-2.5-flash-nothinking.json",
    "89ad01b48329d433675f0d8ebba857cddfcad7836d73edb067a9fb6e58cead7b": "writingpref-zh/scores/gemini-2.5-flash-nothinking.json",
    "f271defc4be8da1f5b46f5653e67453af80d20d9a1a19d38a1a016f8a00650ec": "writingpref-zh/rescored/gemini-2.5-flash-nothinking.letian.json",
    "30b42960d68d839dd21693c04f1524227be7ceb52161830fca11b86d7eda9f09": "writingpref-zh/responses/gemini-2.5-pro.json",
    "9f5fc7c59af1cb9c2d722d611cdea7b9b872ebac12f5ba2a7a03ae2abd94344c": "writingpref-zh/scores/gemini-2.5-pro.json",
    "6d86092062ff5ce840e4e18813f24437b42822bcd6b84bd2d7432b0cfb826062": "writingpref-zh/responses/huggingface-model.json",
    "c32ab7d7efd64370146b228a2b3191eed1673ceb86fba964fc479f643d5a52da": "writingpref-zh/scores/huggingface-model.json",
    "dcf886c9d43874a1ad0366e82ab61d0f09356f4927b276535eba3f5221b85cc6": "writingpref-zh/responses/gpt-4.1.json",
    "75cc8d73cadbc6767868c1152e5d1f7f14f5fe7ee9d0980c98a5bd3e71a64dd3": "writingpref-zh/scores/gpt-4.1.json",
    "f4f9f4e0bd57f0a4cf33edbfe405dd18c5fb86cb36005cf0a6e3b95e590c6e01": "writingpref-zh/responses/gpt-4.1-mini.json",
    "6130bd3dbdcb80918b0ffb8ccc11892798ec028a93ae8f2155682c6dfc2e8a84": "writingpref-zh/scores/gpt-4.1-mini.json",
    "9402fca5e5adfc48d8aacd4e1ec1f79d4a91c27af82596a675740ded6e89a9e1": "writingpref-zh/rescored/gpt-4.1-mini.shawn.json",
    "5d5dbb2fbae7b16e70abf2bc61622a048010b6913993aa27ad4a02011a4a235b": "writingpref-zh/responses/o1.json",
    "1aae30c4376003a4dc743b1035c143bf91d6d88e230b8d69f4d370469005b062": "writingpref-zh/scores/o1.json",
    "492df069b94b3ff2c6601f4e9eb2c34d77efe5eeb87b42ec54a1eab3d87378ee": "writingpref-zh/responses/o3.json",
    "3e4cc67a1d04f830f9617ace976284f837b89ee05d4610e9f3e00729db927368": "writingpref-zh/scores/o3.json",
    "8040f3af175ed9140c28ee094d31edc19cfa9f1f369c8e7c8e0f52e9a209811c": "writingpref-zh/responses/o3-mini.json",
    "d41f9dcbc4946fe2cb88dbff478e3771ce0e29d710cf2db1597c6a55b4743c34": "writingpref-zh/scores/o3-mini.json",
    "a3299b7c5bdaef60360b550a0b4f8eee947136c92cc53ce91aaa563e86a166e8": "writingpref-zh/responses/o4-mini.json",
    "d039668da1ba51bce5dfe5a5a8abed48a65026d57be85bfb4aab357cf086f137": "writingpref-zh/scores/o4-mini.json",
    "42048682cef339682ade2c41f5cfbcb9d8b53e5a27fa3b33bf5f33a845c169cb": "writingpref-zh/rescored/o4-mini.letian.json",
    "168a09de955a7600ea64bfcfebb21113f091014d03e4d7cb23eb495c5f8a40c8": "writingpref-zh/responses/qwen-plus-latest.json",
    "ad577c434f5f1b96b9e93a9ab3b67e3a80f6996699380ceeb587ac71548abb1e": "writingpref-zh/scores/qwen-plus-latest.json",
}
_LLMZOO = {"repo": "FreedomIntelligence/LLMZoo", "commit": "cf70d9cd7a34808681ebe58e652f697420d7b055",
           "licence": "CC BY-NC 4.0", "licence_file": "LICENSES/LLMZoo-DATA_LICENSE",
           "attribution": 'Chen et al., "Phoenix: Democratizing ChatGPT across Languages" (2023), LLM Zoo'}
#: Where each input of ``cheems import real`` comes from (its key is the path under the source folder ``SRC``).
UPSTREAM = {
    "llmzoo-zh": {**_LLMZOO, "paths": "llmzoo/eval/reviews/{set}/zh/<aspect>/review.jsonl, "
                                      "llmzoo/eval/questions/questions-zh.jsonl"},
    "dpo-zh/dpo_zh_demo.json": {"repo": "hiyouga/LLaMA-Factory", "commit": "ff6d4d12eeb035d6ce06805a5733dd7b29f2ac30",
                                "paths": "data/dpo_zh_demo.json", "licence": "Apache-2.0",
                                "licence_file": "LICENSES/LICENSE-LLaMA-Factory"},
    "dpo-zh/dpo_zh_500.jsonl": {"repo": "shibing624/MedicalGPT", "commit": "2f1008cfa49cbba69ff6f138c3b5e2fb0646bdc7",
                                "paths": "data/reward/dpo_zh_500.jsonl", "licence": "Apache-2.0",
                                "licence_file": "LICENSES/LICENSE-MedicalGPT"},
    "writingpref-zh": {"repo": "WritingPreferenceBench/Writing-Preference-Bench",
                       "commit": "c6ac5821582e77fb34d27f6b54aac937904ee112",
                       "paths": "model results/<model run>/writer#v1.json (answers), model results/score/*.json "
                                "(human scores), model results/<model run>/*annotated_by_<annotator>*.json "
                                "(second scorings); README.md (licence)",
                       "licence": "ODC-BY", "licence_file": "LICENSES/WritingPreferenceBench-README.md",
                       "attribution": 'Ying et al., "Beyond Correctness: Evaluating Subjective Writing Preferences '
                                      'Across Cultures", arXiv 2510.14616 (2025)'},
}
#: The release-shaped folder (spec §6b) that ``cheems import real`` writes: output path -> what it holds.
RELEASE_FILES = {
    "cheems_bench/open.jsonl": "review_zh",
    "llmzoo/review_output.jsonl": "review_output",
    "cheems_preference.jsonl": "dpo-zh",
}
#: Where ``cheems import`` writes WritingPreferenceBench zh: xz-compressed JSONL, outside the release layout.
WRITINGPREF_FILE = "writingpref/writingpref_zh.jsonl.xz"
_XZ_PRESET = 9  # fixed, so the same records give the same bytes (the xz format stores no timestamp)
_LICENCES = {"llmzoo-zh/DATA_LICENSE": "LICENSES/LLMZoo-DATA_LICENSE",
             "dpo-zh/LICENSE-LLaMA-Factory": "LICENSES/LICENSE-LLaMA-Factory",
             "dpo-zh/LICENSE-MedicalGPT": "LICENSES/LICENSE-MedicalGPT",
             "writingpref-zh/UPSTREAM_README.md": "LICENSES/WritingPreferenceBench-README.md"}


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def input_info(path: str | Path) -> dict[str, Any]:
    """``{"sha256", "known_copy"}``: whether the file is the copy the shipped data was made from (information only)."""
    digest = sha256_file(path)
    return {"sha256": digest, "known_copy": KNOWN_SHA256.get(digest)}


def write_xz_records(records: Iterable[Record], path: str | Path) -> int:
    """Records as xz-compressed JSONL (``records.read_records`` reads it), atomically and deterministically."""
    import lzma

    import orjson

    lines = [orjson.dumps(r.to_json()) + b"\n" for r in records]
    data = lzma.compress(b"".join(lines), format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64, preset=_XZ_PRESET)
    with atomic_open(path, "wb") as fh:
        fh.write(data)
    return len(lines)


# ---- the shipped folder ------------------------------------------------------------------------

def _required(src: Path, rel: str) -> Path:
    path = src / rel
    if not path.is_file():
        raise DataError(path, None, "missing", f"pass the folder holding {rel.split('/')[0]}/ as laid out in "
                        "data/real/README.md")
    return path


def _convert_all(src: Path) -> tuple[dict[str, list[Record]], dict[str, dict], dict]:
    """Every output's records and its manifest entry (without the output's own sha256); the DPO report."""
    zoo, questions = src / "llmzoo-zh", _required(src, "llmzoo-zh/questions-zh.jsonl")
    out, entries = {}, {}
    for rel, what in RELEASE_FILES.items():
        if what in LLMZOO_SETS:
            _required(src, f"llmzoo-zh/{what}/general.jsonl")
            out[rel] = read_llmzoo_set(zoo / what, questions=questions, source=f"llmzoo/{what}")
            inputs = [questions, *sorted((zoo / what).glob("*.jsonl"))]
            entries[rel] = _entry(src, inputs, UPSTREAM["llmzoo-zh"], out[rel], labels="gpt-3.5-turbo",
                                  content=_llmzoo_content(what, out[rel]))
            entries[rel]["source"] = entries[rel]["source"].replace("{set}", what)
    dpo_inputs = [_required(src, p) for p in ("dpo-zh/dpo_zh_demo.json", "dpo-zh/dpo_zh_500.jsonl")]
    records, report = read_dpo_zh(dpo_inputs)
    out["cheems_preference.jsonl"] = records
    entry = _entry(src, dpo_inputs, None, records, labels="model-generated",
                   content="DPO-zh chosen/rejected pairs (DPO-En-Zh-20k lineage) from two files, merged by dialogue; "
                           "not CheemsPreference; no human/GPT subset field")
    entry.update({k: report[k] for k in ("duplicate_rows", "system_prompts", "multi_turn")})
    entries["cheems_preference.jsonl"] = entry
    return out, entries, report


def _llmzoo_content(what: str, records: list[Record]) -> str:
    models = ", ".join(records[0].extra["models"]) if records else ""
    return (f"LLMZoo zh answer set {what}: {len(records)} Chinese questions x 4 answers ({models}, position order) "
            "ranked by gpt-3.5-turbo (general aspect = rank; other aspects under 'aspects'); "
            "not CheemsBench's Open Prompt subset")


def _entry(src: Path, inputs: list[Path], upstream: dict | None, records: list[Record], *, labels: str,
           content: str, under: str = "") -> dict:
    """A manifest entry: provenance from UPSTREAM (per input file for DPO), counts, each input's sha256 (named
    by its path below ``src``, after ``under``), and ``"comparable": false`` (not the paper's data:
    :meth:`cheems_lib.world_files.Layout.comparable`)."""
    info = {under + p.relative_to(src).as_posix(): input_info(p) for p in inputs}
    known = all(v["known_copy"] == k for k, v in info.items())
    ups = [upstream] if upstream else [UPSTREAM[p.relative_to(src).as_posix()] for p in inputs]
    # other data than the paper's: the chapters show these files' numbers without the paper's beside them
    return {"content": content, "labels": labels, "comparable": False,
            "source": "; ".join(f"{u['repo']}: {u['paths']}" for u in ups),
            "commit": "; ".join(u["commit"] for u in ups) if known else None,
            "licence": "; ".join(dict.fromkeys(u["licence"] for u in ups)),
            "licence_files": list(dict.fromkeys(u["licence_file"] for u in ups)),
            **({"attribution": upstream["attribution"]} if upstream and "attribution" in upstream else {}),
            "prompts": len(records), "responses": sum(len(r.responses) for r in records),
            "annotations": sum(len(r.annotations) for r in records),
            "inputs": {k: {"sha256": v["sha256"], "known_copy": v["known_copy"] == k} for k, v in info.items()}}


def _writingpref_entry(folder: Path, records: list[Record], report: dict) -> dict:
    """The manifest entry of the writingpref file (without its own sha256); inputs named writingpref-zh/..."""
    inputs = sorted(p for sub in ("responses", "scores", "rescored") for p in (folder / sub).glob("*.json"))
    up = UPSTREAM["writingpref-zh"]
    entry = _entry(folder, inputs, up, records, labels=WRITINGPREF_LABELS, under="writingpref-zh/",
                   content=f"WritingPreferenceBench, Chinese writing prompts: {report['prompts']} prompts, each "
                           f"answered by up to {report['models']} models (response id = model name), every answer "
                           "scored 0-3 by trained human annotators (rank = those scores as dense ranks, highest = "
                           "round 0, ties equal; raw scores in 'human_scores', a second annotator's for 5 models in "
                           "'second_scores'); not CheemsBench")
    entry.update({
        "dropped_prompts": report["dropped_prompts"], "missing_answers": report["missing_answers"],
        "second_annotators": report["second_annotators"], "strict_pairs": report["strict_pairs"],
        "higher_score_longer": report["higher_score_longer"], "scores": report["scores"], "score_scale": "0-3",
        "genre_tags": report["genre_tags"],
        "category_note": f"category is the upstream genre tag ({report['genre_tags']} tags, at most "
                         f"{report['max_prompts_per_tag']} prompts each): for display only; intervals must never be "
                         "stratified on it (resample prompts)",
        "changes": "converted to the record format; the score comments and the responses files' other fields "
                   "(their score/won fields are not the human scores) are not carried"})
    return entry


def _manifest(files: dict[str, dict], licences: list[str]) -> dict:
    """The whole manifest: ``name`` and ``labels`` say who labelled which of ``files``."""
    model = [rel for rel, e in files.items() if e.get("labels") != WRITINGPREF_LABELS]
    human = [rel for rel in files if rel not in model]
    names, labels = [], []
    if any(rel in files for rel in RELEASE_FILES):
        names.append("LLMZoo zh reviews (benchmark) and DPO-zh (preference)")
        labels.append("model labels, not human labels: gpt-3.5-turbo rankings (cheems_bench/open.jsonl, "
                      "llmzoo/review_output.jsonl); model-generated chosen/rejected (cheems_preference.jsonl)")
    if human:
        names.append("WritingPreferenceBench zh (human scores)")
        labels.append(f"{WRITINGPREF_LABELS}: {', '.join(human)}")
    regenerate = ("cheems import real SRC -o DIR (SRC: the folder holding llmzoo-zh/, dpo-zh/ and writingpref-zh/); "
                  "cheems import writingpref SRC/writingpref-zh -o DIR (that file alone)")
    return {"name": "Real Chinese preference data: " + "; ".join(names), "labels": "; ".join(labels),
            "regenerate": regenerate, "files": {rel: dict(sorted(e.items())) for rel, e in files.items()},
            "licences": sorted(licences)}


def _write_all(out: Path, files: dict[str, list[Record]], entries: dict[str, dict], licences: dict[str, bytes],
               manifest_files: dict[str, dict], licence_names: list[str]) -> dict:
    """Write the records files, licences and, last, the manifest; returns the manifest."""
    for rel, records in files.items():
        (write_xz_records if rel.endswith(".xz") else write_records)(records, out / rel)
        entries[rel]["sha256"] = sha256_file(out / rel)
    for dst, data in licences.items():
        with atomic_open(out / dst, "wb") as fh:
            fh.write(data)
    manifest = _manifest({**manifest_files, **entries}, licence_names)
    with atomic_open(out / "manifest.json", "w", encoding="utf-8") as fh:
        fh.write(json.dumps(manifest, ensure_ascii=False, indent=2) + "\n")
    return manifest


def import_real(src: str | Path, out: str | Path) -> dict:
    """Convert the source folder (``llmzoo-zh/``, ``dpo-zh/``, ``writingpref-zh/``) into the folder ``out``:
    the release-shaped files (spec §6b), ``llmzoo/review_output.jsonl``, :data:`WRITINGPREF_FILE`, the
    licences and ``manifest.json``.

    Everything is read and checked before anything is written; each file is then written
    atomically, ``manifest.json`` last (its sha256 values tell whether the files beside it
    are the ones it describes). Files that the folder's earlier manifest lists and this import
    does not write (an older layout's) are removed first, so the folder ends as an import into a
    new one would; other files in ``out`` (its README) are left alone. Returns the manifest.
    """
    src, out = Path(src), Path(out)
    files, entries, _ = _convert_all(src)
    folder = src / "writingpref-zh"
    _required(src, "writingpref-zh/UPSTREAM_README.md")
    records, report = read_writingpref(folder)
    files[WRITINGPREF_FILE] = records
    entries[WRITINGPREF_FILE] = _writingpref_entry(folder, records, report)
    licences = {dst: _required(src, rel).read_bytes() for rel, dst in _LICENCES.items()}
    _remove_unlisted(out, output_files("real"))
    return _write_all(out, files, entries, licences, {}, list(licences))


def output_files(source: str) -> list[str]:
    """The files ``cheems import SOURCE -o DIR`` writes in ``DIR`` (relative paths, ``manifest.json`` last);
    none for the imports whose output is one file (llmzoo, dpo-zh)."""
    if source == "real":
        return [*RELEASE_FILES, WRITINGPREF_FILE, *_LICENCES.values(), "manifest.json"]
    if source == "writingpref":
        return [WRITINGPREF_FILE, _LICENCES["writingpref-zh/UPSTREAM_README.md"], "manifest.json"]
    return []


def _remove_unlisted(out: Path, written: list[str]) -> list[str]:
    """Remove the regular files that ``out/manifest.json`` (an earlier import's) lists, as a file or a licence,
    and that are not in ``written``, with the folders that leaves empty; returns them. Nothing outside
    ``out`` is touched, and nothing the manifest does not list; a manifest that an import did not write (an
    entry without the ``inputs`` an import records, e.g. one written by hand) removes nothing."""
    try:
        old = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return []
    if not isinstance(old, dict) or not isinstance(old.get("files"), dict) or not all(
            isinstance(e, dict) and isinstance(e.get("inputs"), dict) for e in old["files"].values()):
        return []
    listed = [*(old.get("files") if isinstance(old.get("files"), dict) else {}),
              *(old.get("licences") if isinstance(old.get("licences"), list) else [])]
    root, removed = out.resolve(), []
    for rel in listed:
        path = out / rel if isinstance(rel, str) and rel not in written else None
        if path is None or path.is_symlink() or not path.is_file() or not path.resolve().is_relative_to(root):
            continue
        path.unlink()
        removed.append(rel)
        for folder in path.parents:
            if folder.resolve() == root or not folder.resolve().is_relative_to(root):
                break
            try:
                folder.rmdir()
            except OSError:  # not empty
                break
    return removed


def import_writingpref(folder: str | Path, out: str | Path) -> tuple[dict, dict]:
    """Convert the writingpref-zh ``folder`` into ``out`` (:data:`WRITINGPREF_FILE` and its licence) and
    add or replace its entry in ``out/manifest.json``, keeping the other entries. Returns the manifest
    and the report of :func:`cheems_lib.writingpref.read_writingpref`."""
    folder, out = Path(folder), Path(out)
    licence_src = folder / "UPSTREAM_README.md"
    if not licence_src.is_file():
        raise DataError(licence_src, None, "missing (the upstream README is the licence statement)",
                        "pass the writingpref-zh folder as laid out in data/real/README.md")
    records, report = read_writingpref(folder)
    entry = _writingpref_entry(folder, records, report)
    old = {}
    if (out / "manifest.json").is_file():
        try:
            old = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise DataError(out / "manifest.json", None, f"not a JSON manifest ({e})",
                            "regenerate the folder with cheems import real, or pass another -o") from None
        if not isinstance(old, dict) or not isinstance(old.get("files", {}), dict):
            raise DataError(out / "manifest.json", None, "not a manifest (no 'files' object)",
                            "regenerate the folder with cheems import real, or pass another -o")
    dst = _LICENCES["writingpref-zh/UPSTREAM_README.md"]
    names = sorted(set(old.get("licences") or []) | {dst})
    manifest = _write_all(out, {WRITINGPREF_FILE: records}, {WRITINGPREF_FILE: entry},
                          {dst: licence_src.read_bytes()}, old.get("files") or {}, names)
    return manifest, report


IMPORT_SOURCES = ("real", "llmzoo", "dpo-zh", "writingpref")
"""What ``cheems import`` converts (:func:`import_source`)."""


def import_source(source: str, inputs: list[str | Path], out: str | Path, *,
                  questions: str | Path | None = None) -> tuple[dict, dict[str, bool]]:
    """What ``cheems import SOURCE INPUTS -o OUT`` does, checked usage aside: convert and write, then return its
    JSON summary and, per input file, whether it is the copy the shipped data was made from (the command notes
    the others on stderr).

    ``real`` (one source folder) and ``writingpref`` (the writingpref-zh folder) write a folder
    (:func:`import_real`, :func:`import_writingpref`); ``llmzoo`` (one answer set, its question file as
    ``questions``) and ``dpo-zh`` (one or more files, merged) write one records file.
    """
    if source not in IMPORT_SOURCES:
        raise ValueError(f"unknown source {source!r}: use one of {', '.join(IMPORT_SOURCES)}")
    out = Path(out)
    if source == "writingpref":
        manifest, report = import_writingpref(inputs[0], out)
        entry = manifest["files"][WRITINGPREF_FILE]
        return ({"output": str(out / WRITINGPREF_FILE), **report, "labels": entry["labels"], "sha256": entry["sha256"],
                 "inputs_known_copies": all(v["known_copy"] for v in entry["inputs"].values())},
                {k: v["known_copy"] for k, v in entry["inputs"].items()})
    if source == "real":
        manifest = import_real(inputs[0], out)
        files = {k: v for e in manifest["files"].values() for k, v in e["inputs"].items()}
        return ({"output": str(out), "files": {rel: {k: e[k] for k in ("prompts", "responses", "annotations", "labels",
                                                                       "sha256")} for rel, e in manifest["files"].items()},
                 "inputs_known_copies": all(v["known_copy"] for v in files.values())},
                {k: v["known_copy"] for k, v in files.items()})
    if source == "llmzoo":
        records = read_llmzoo_set(inputs[0], questions=questions)
        report = {"prompts": len(records), "responses": sum(len(r.responses) for r in records),
                  "annotations": sum(len(r.annotations) for r in records),
                  "aspects": sorted({a for r in records for a in r.extra["aspects"]})}
        paths = [p for p in Path(inputs[0]).rglob("*.jsonl")] + ([questions] if questions else [])
    else:
        records, report = read_dpo_zh(inputs)
        paths = inputs
    write_records(records, out)  # atomic
    infos = {str(p): input_info(p) for p in sorted(map(str, paths))}
    return {"output": str(out), **report, "inputs": infos}, {k: v["known_copy"] is not None for k, v in infos.items()}
