"""The chapter registry: which chapters the book has and their parameters per profile.

One entry per chapter, in reading order. ``_toc.yml`` lists the same chapters (a test
checks that :func:`toc_yaml` equals the file), so the two cannot drift apart.

Profiles:

- ``smoke``: every chapter at the smallest settings, used by the tests: a cold build takes about 3 minutes on
  2 cores (2 min 53 s measured).
- ``default``: what ``make book`` builds on a CPU from the simulated world.
- ``paper``: the paper's settings on the official files, for GPU users with real models: ``cheems book``
  refuses it without ``-p world_dir DIR`` (it never simulates a world), and the scaling chapter takes the
  sizes one device cannot train from ``-p checkpoints_file`` (trained with ``accelerate launch``).
- ``real``: every chapter on the real Chinese data shipped in ``data/real/`` (``world_dir``),
  with the default profile's settings; ``real-smoke``: the same at the smoke profile's settings
  (what the tests build).
- ``full``: the default profile plus its world replicates: every chapter marked ``replicated``
  runs again on the simulated worlds of :data:`REPLICATE_SEEDS` (:mod:`cheems_lib.publishing.replicates`), and
  the Claims page shows each finding's spread across the worlds and any verdict that flips;
  ``full-smoke``: the same at the smoke profile's settings. The replicates triple the cost of the
  chapters they repeat, so the default book (over 20 minutes cold on 2 cores) leaves them out.

Each chapter declares its parameters in its source's ``parameters`` cell (:func:`parameters_of`), one line
per parameter, valid Python that papermill reads too::

    name: type = default  # CONSTRAINT: help

where the help may start with a declared constraint, followed by a colon:

- ``in [LO, HI]``: a number (``int``, ``float``, or each element of ``list[int]``/``list[float]``)
  from LO to HI inclusive; every numeric parameter declares one.
- ``one of a|b|c``: a string (or each element of a ``list[str]``) among these.
- ``models file``: a file that :func:`cheems_lib.publishing.model_list.read_models_file` accepts (its entries are
  checked too).
- ``checkpoints file``: a file that :func:`cheems_lib.publishing.model_list.read_checkpoints_file` accepts (models
  mapped to finished ``cheems train`` folders, each checked; their weights are part of the cache key).
- ``file``, ``folder``, ``world folder`` (holding records files of the spec §6/§6b layout): a path,
  relative to the repository root, that must exist and be of that kind; ``... or missing``: the
  path (or a world folder's files) may be missing, the chapter reports what it found. An empty
  value is allowed where the default is empty (e.g. ``world_dir``: simulate). By convention
  ``*_path`` parameters are files and ``*_dir`` parameters folders. Only the files a chapter can
  read are hashed for its cache key (:func:`cheems_lib.publishing.execute.input_files`); no folder is walked.

``cheems book`` checks every value (types, list elements, ranges, choices, paths: :func:`check_value`) before
any kernel starts; each chapter's first cell calls :func:`check_parameters`, so a plain papermill run
refuses the same values. The declarations are also what the registry reads of a chapter: the real
profiles set ``world_dir`` in the chapters that declare it and :data:`REAL_SMOKE` in those that declare
``train_seeds``.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..input_files import DataError
from ..world_files import WORLD_PATHS, layout_files
from .model_list import read_checkpoints_file, read_models_file

__all__ = ["PROFILES", "REAL_DIR", "REAL_SMOKE", "REPLICATE_SEEDS", "Chapter", "CHAPTERS", "chapter", "base_profile",
           "replicate_seeds", "toc_yaml", "BookError", "BookInputError", "find_root", "parameters_of", "coerce",
           "check_value", "check_parameters"]

PROFILES = ("smoke", "default", "paper", "real", "real-smoke", "full", "full-smoke")
REAL_DIR = "data/real"
"""The folder the ``real`` profiles point every chapter's ``world_dir`` at."""
REAL_SMOKE = {"train_seeds": 1}
"""What ``real-smoke`` changes beyond the smoke settings in every chapter that trains (declares ``train_seeds``): one training
seed, seed 0, whose models the smoke book's real chapter has already trained on data/real (the
zoo shares them), so that ``make test``'s real build stays cheap."""
REPLICATE_SEEDS = (1, 2)
"""The world seeds of the ``full`` profiles' replicates, beside the book's own world (seed 0 unless ``-p seed``)."""
_FULL = {"full": "default", "full-smoke": "smoke"}  # profile with replicates -> the profile whose settings it uses


def base_profile(profile: str) -> str:
    """The profile whose settings ``profile`` uses: ``default`` for ``full``, ``smoke`` for ``full-smoke``, else itself."""
    return _FULL.get(profile, profile)


def replicate_seeds(profile: str) -> tuple[int, ...]:
    """The world seeds ``profile`` replicates the ``replicated`` chapters on (none outside the ``full`` profiles)."""
    return REPLICATE_SEEDS if profile in _FULL else ()


@dataclass(frozen=True)
class Chapter:
    """A chapter: its source ``notebooks/<name>.md`` is executed into ``book/<name>.ipynb``."""

    name: str
    title: str
    labels: tuple[str, ...]  # the stable ids of the paper artefacts it reproduces (spec §7)
    params: dict[str, dict[str, Any]] = field(default_factory=dict)  # profile -> overrides
    after_all: bool = False  # executed after every other selected chapter (it reads what they saved)
    # seconds the chapter took in a cold default build, two chapters at a time on 2 cores (bench_book.py, the
    # "before" column of benchmarks/README.md's book table, rounded): parallel builds start the costliest first
    # (build.start_order), so measured seconds, not a rough rank, decide which chapters fill the second worker while
    # the longest runs. They order the build, they do not predict it: a chapter whose models another chapter
    # trained first takes less
    cost: float = 1.0
    # it tests claims of kind finding or question on the simulated world: the full profiles rerun it on other world
    # seeds (cheems_lib.publishing.replicates); a chapter whose claims are all calibrated, structural or sweeps is not rerun
    replicated: bool = False

    def parameters(self, profile: str, declared: dict[str, dict] | None = None) -> dict[str, Any]:
        """The registry's parameters of this chapter in ``profile``. The real profiles are the default
        and smoke ones with ``world_dir`` set to :data:`REAL_DIR` (in chapters that declare it), the simulated
        world's size dropped, :data:`REAL_SMOKE` in ``real-smoke`` (in chapters that declare ``train_seeds``),
        and the chapter's own entries for the real profile on top. The full profiles are the default and smoke
        ones with the chapter's own entries for the full profile on top. ``declared``: the chapter's parameters
        cell (:meth:`declared`), read from the checkout when the real profiles need it and it is not given."""
        if profile not in PROFILES:
            raise ValueError(f"unknown profile {profile!r}; choose one of {PROFILES}")
        if profile in _FULL:
            return self.parameters(_FULL[profile]) | self.params.get(profile, {})
        if profile.startswith("real"):
            declared = self.declared() if declared is None else declared
            base = self.parameters("smoke" if profile == "real-smoke" else "default")
            base.pop("size", None)
            if profile == "real-smoke":
                base |= {k: v for k, v in REAL_SMOKE.items() if k in declared}
            return base | self.params.get(profile, {}) | ({"world_dir": REAL_DIR} if "world_dir" in declared else {})
        return dict(self.params.get(profile, {}))

    def declared(self, root: Path | None = None) -> dict[str, dict[str, Any]]:
        """The parameters cell of ``notebooks/<name>.md`` in the checkout ``root`` (default: :func:`find_root`),
        as :func:`parameters_of` reads it."""
        return parameters_of(find_root(root) / "notebooks" / f"{self.name}.md")


_WORLD = {"smoke": {"size": "smoke", "n_boot": 100}, "default": {"size": "default"}, "paper": {"size": "paper"}}

CHAPTERS: list[Chapter] = [
    Chapter("data", "The data", ("paper-table1",), params=_WORLD, cost=14, replicated=True),
    Chapter(
        "conflicts", "Resolving conflicting annotations", ("paper-alg1", "paper-table5"), cost=6,
        params={"smoke": {"n_random_graphs": 50, "size": "smoke", "n_boot": 100}, "default": {"n_random_graphs": 2000, "size": "default"},
                "paper": {"n_random_graphs": 2000, "size": "paper"}},
    ),
    Chapter("biases", "Annotator biases", ("paper-fig15",), params=_WORLD, cost=6),
    Chapter(
        "evaluation", "Evaluating reward models on CheemsBench", ("paper-table2", "paper-fig4"), cost=168, replicated=True,
        params={"smoke": {"size": "smoke", "train_epochs": 1, "judge_pairs": 40, "judge_prompts": 10, "n_boot": 100,
                          "gpt_prompts": 0, "train_seeds": 2, "rewardbench_pairs": 60},
                "default": {"size": "default"},
                # real models for GPU users (pass -p world_dir with the real CheemsBench files)
                "paper": {"size": "paper", "judge_prompts": 1346, "batch_size": 8, "gpt_prompts": 0,
                          "models": ["Skywork/Skywork-Reward-Gemma-2-27B-v0.2", "Skywork/Skywork-Reward-Llama-3.1-8B-v0.2"],
                          "judges": ["Qwen/Qwen2.5-7B-Instruct"]}},
    ),
    Chapter(
        "transfer", "Which preference data transfers?", ("paper-table3",), cost=82, replicated=True,
        params={"smoke": {"size": "smoke", "prompts": 0, "train_epochs": 1, "n_boot": 100, "train_seeds": 2},
                "default": {"size": "default"},
                "paper": {"size": "paper", "prompts": 0}},
    ),
    Chapter(
        "preference", "Building CheemsPreference", ("paper-table4",), cost=180, replicated=True,
        params={"smoke": {"size": "smoke", "gpt_prompts": 0, "train_epochs": 1, "n_boot": 100, "train_seeds": 2},
                "default": {"size": "default"},
                "paper": {"size": "paper", "gpt_prompts": 0}},
    ),
    Chapter(
        "scaling", "Scaling trends", ("paper-fig6", "paper-fig7"), cost=83, replicated=True,
        params={"smoke": {"size": "smoke", "gpt_prompts": 0, "train_epochs": 1, "n_boot": 100,
                          "sizes": ["tiny-xs", "tiny", "tiny-xl"], "points": 4, "train_seeds": 2},
                # data/real's 766 preference prompts train longer than the smoke world's human subset: the sizes and the
                # ladder's top point are the evaluation chapter's models (one zoo entry), one point below is new
                "real-smoke": {"sizes": ["tiny-xs", "tiny"], "points": 2},
                "default": {"size": "default"},
                # real Qwen2.5 bases with the paper's Table 9 settings, for GPU users
                # one training seed per size: seven Qwen2.5 sizes up to 72B, as the paper (a single run each)
                "paper": {"size": "paper", "gpt_prompts": 0, "train_seeds": 1,
                          "sizes": [f"Qwen/Qwen2.5-{b}-Instruct" for b in ("0.5B", "1.5B", "3B", "7B", "14B", "32B", "72B")]}},
    ),
    Chapter(
        # it trains every other chapter's models (skipping those in training elsewhere), so starting it
        # first keeps both workers busy to the end
        "downstream", "Does the benchmark predict downstream quality?", ("paper-fig5",), cost=761, replicated=True,
        params={"smoke": {"size": "smoke", "gpt_prompts": 0, "transfer_prompts": 0, "train_epochs": 1, "n_boot": 100,
                          "points": 4, "bon_prompts": 12, "mt_prompts": 12, "bon_n": 8, "sizes": ["tiny-xs", "tiny", "tiny-xl"],
                          "train_seeds": 2, "rewardbench_pairs": 60, "rmb_prompts": 25, "shared_noise": [0.0, 0.8]},
                "default": {"size": "default"},
                # the win rate keeps its 500 prompts (the paper's 87 cannot rank the population)
                "paper": {"size": "paper", "gpt_prompts": 0, "transfer_prompts": 0}},
    ),
    Chapter(  # replicated for its one finding, Table 4's comparison at the paper's GPT : human ratio
        "sensitivity", "Sensitivity to the simulator's assumptions", (), cost=129, replicated=True,
        params={"smoke": {"size": "smoke", "train_epochs": 1, "n_boot": 100, "shared_noise": [0.0, 0.8], "ratios": [],
                          "gpt_prompts": 0},
                "default": {"size": "default"},
                "paper": {"size": "paper", "gpt_prompts": 0}},
    ),
    Chapter(
        "real", "Real Chinese data: what model labels show", (), cost=152,
        # one training seed at smoke size: its model on data/real (long texts, 766 prompts) is the costliest
        # of the smoke book, and the real-smoke book reuses it (REAL_SMOKE)
        params={"smoke": {"train_epochs": 1, "n_boot": 100, "train_seeds": 1}},
    ),
    Chapter(
        "human_labels", "Real Chinese data: what human scores show", (), cost=107,
        # smoke: one seed and the smallest size on a slice of the prompts: three models, the fewest a correlation takes
        params={"smoke": {"train_epochs": 1, "n_boot": 100, "train_seeds": 1, "prompts": 60, "sizes": ["tiny-xs"]}},
    ),
    Chapter("reproduce", "Reproduce with real models", (), cost=1),
    Chapter("claims", "Claims", ("claims",), after_all=True,
            params={"full": {"replicate_seeds": list(REPLICATE_SEEDS)}, "full-smoke": {"replicate_seeds": list(REPLICATE_SEEDS)}}),
]


def chapter(name: str) -> Chapter:
    for ch in CHAPTERS:
        if ch.name == name:
            return ch
    raise KeyError(f"no chapter {name!r}; chapters are {[c.name for c in CHAPTERS]}")


# Pages that are plain text, not executed chapters.
_STATIC_FRONT = ["book/intro", "book/reading"]
# book/build_stats is generated before every render (cheems_lib.publishing.build_stats), not tracked
_STATIC_BACK: list[str] = ["book/build_stats", "book/own_data", "book/cli", "book/cite", "book/references", "book/api"]


def toc_yaml() -> str:
    """The ``_toc.yml`` this registry implies."""
    lines = ["# Generated from cheems_lib/publishing/chapters.py; tests/test_chapters.py checks they agree.",
             "format: jb-book", f"root: {_STATIC_FRONT[0]}", "chapters:"]
    lines += [f"  - file: {p}" for p in _STATIC_FRONT[1:]]
    lines += [f"  - file: book/{c.name}" for c in CHAPTERS]
    lines += [f"  - file: {p}" for p in _STATIC_BACK]
    return "\n".join(lines) + "\n"


# `name: type = default  # help`, one parameter per line (papermill reads the same form)
_PARAM = re.compile(r"^(?P<name>[A-Za-z_]\w*)\s*:\s*(?P<type>[^=]+?)\s*=\s*(?P<default>.+?)\s*(?:#\s*(?P<help>.*))?$")
# the constraint a help may start with (see the module docstring), then ": " and the text
_NUM = r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
_CHECK = re.compile(rf"^(?:in \[(?P<lo>{_NUM}), (?P<hi>{_NUM})\]|one of (?P<choices>[\w.-]+(?:\|[\w.-]+)+)"
                    rf"|(?P<path>models file|checkpoints file|file|folder|world folder)(?P<missing> or missing)?)(?::\s|$)")



class BookError(RuntimeError):
    """A chapter failed or the build is misconfigured; the message says which and where."""


class BookInputError(BookError):
    """A bad argument (chapter name, ``-p`` name or value, jobs); nothing was run."""


def find_root(start: Path | None = None) -> Path:
    """The repository root: the nearest folder upwards holding ``_toc.yml``."""
    here = (start or Path.cwd()).resolve()
    for p in (here, *here.parents):
        if (p / "_toc.yml").exists() and (p / "notebooks").is_dir():
            return p
    raise BookInputError(f"{here}: no _toc.yml found here or above (fix: run from the repository root)")


def _check_of(help_text: str) -> dict | None:
    """The constraint a parameter's help starts with: ``{"text", "range": (lo, hi)}``, ``{"text", "choices"}``
    or ``{"text", "path": kind, "missing": bool}``; None when it declares none."""
    m = _CHECK.match(help_text)
    if not m:
        return None
    text = help_text[:m.end()].rstrip().rstrip(":")
    if m["lo"] is not None:
        return {"text": text, "range": (json.loads(m["lo"]), json.loads(m["hi"]))}
    if m["choices"]:
        return {"text": text, "choices": m["choices"].split("|")}
    return {"text": text, "path": m["path"], "missing": bool(m["missing"])}


def parameters_of(source: Path) -> dict[str, dict[str, Any]]:
    """Parse a chapter's ``parameters`` cell into ``{name: {"type", "default", "help", "check"}}``;
    ``check`` is the constraint the help starts with (module docstring), or None."""
    import jupytext

    nb = jupytext.read(source)
    for cell in nb.cells:
        if "parameters" in cell.metadata.get("tags", []):
            out = {}
            for n, line in enumerate(cell.source.splitlines(), 1):
                if not line.strip() or line.lstrip().startswith("#"):
                    continue
                m = _PARAM.match(line.strip())
                if not m:
                    raise BookError(f"{source}: parameters cell line {n} is not `name: type = default  # help`: {line!r}")
                out[m["name"]] = {"type": m["type"], "default": m["default"], "help": m["help"] or "",
                                  "check": _check_of(m["help"] or "")}
            return out
    raise BookError(f"{source}: no cell tagged 'parameters' (fix: tag the first code cell)")


def coerce(value: Any, type_name: str) -> Any:
    """Turn a command-line string into the parameter's declared type."""
    if not isinstance(value, str) or type_name == "str":
        return value
    if type_name == "int":
        return int(value)
    if type_name == "float":
        return float(value)
    if type_name == "bool":
        if value.lower() in ("1", "true", "yes", "on"):
            return True
        if value.lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"{value!r} is not a boolean")
    return json.loads(value)  # lists, dicts, optional values


_IS = {"int": lambda v: isinstance(v, int) and not isinstance(v, bool),
       "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
       "str": lambda v: isinstance(v, str), "bool": lambda v: isinstance(v, bool)}


def _elements(value: Any, type_name: str) -> list | None:
    """The values to check one by one (a list's elements for ``list[T]``); None if ``value`` is not of the type."""
    m = re.fullmatch(r"list\[(\w+)\]", type_name.replace(" ", ""))
    items = value if m else [value]
    inner = m[1] if m else type_name
    if m and not isinstance(value, list) or not all(_IS.get(inner, lambda v: True)(v) for v in items):
        return None
    return items


def _path_problem(value: str, check: dict, default: str, root: Path) -> tuple[str, str] | None:
    """Why the path ``value`` does not fit a ``file``/``folder``/``world folder`` parameter; looks up
    names only, never walks a folder."""
    if value == "" and default in ('""', "''"):
        return None  # the documented "none" (e.g. world_dir: simulate the world)
    kind, path = check["path"], root / value
    if not path.exists():
        if check["missing"]:
            return None
        return f"no such {'file' if kind.endswith('file') else 'folder'}", f"check the path (relative paths start at {root})"
    if kind.endswith("file") and not path.is_file():
        return "is a folder, not a file", "pass the file itself, not a folder"
    if kind == "models file":  # its entries too, so a bad file is refused before any kernel starts
        try:
            read_models_file(path)
        except DataError as e:
            return e.problem if not e.line else f"line {e.line}: {e.problem}", e.fix
        return None
    if kind == "checkpoints file":
        try:
            read_checkpoints_file(path, root)
        except DataError as e:
            return e.problem if not e.line else f"line {e.line}: {e.problem}", e.fix
        return None
    if not kind.endswith("file") and not path.is_dir():
        return "is a file, not a folder", "pass the folder that holds the files"
    if kind == "world folder" and not check["missing"] and not any(
            str(f.relative_to(path)) in WORLD_PATHS for f in layout_files(path)):
        return ("is not a world folder (none of the spec §6 records files, e.g. cheems_bench/open.jsonl, is in it)",
                "pass a folder written by `cheems simulate -o DIR` or holding the official files in that layout")
    return None


def check_value(value: Any, spec: dict[str, Any], root: Path) -> tuple[str, str] | None:
    """Why ``value`` is not allowed for the parameter ``spec`` (from :func:`parameters_of`), as (problem,
    fix); None if it is. Checks the type (a list's elements too) and the declared constraint."""
    items = _elements(value, spec["type"])
    if items is None:
        a = "an" if spec["type"][:1] in "aeiou" else "a"
        return f"not {a} {spec['type']}", f"pass {a} {spec['type']} like the default {spec['default']}"
    check = spec.get("check") or {}
    for i, v in enumerate(items):
        at = f"element {i} ({json.dumps(v)}) " if items is value else ""  # a list's element
        if "range" in check and not check["range"][0] <= v <= check["range"][1]:  # NaN fails too
            return f"{at}must be {check['text']}", f"pass a value {check['text']}"
        if "choices" in check and v not in check["choices"]:
            return f"{at}must be {check['text']}", f"pass one of {', '.join(check['choices'])}"
        if "path" in check and isinstance(v, str):
            problem = _path_problem(v, check, spec["default"], root)
            if problem:
                return problem
    return None


def check_parameters(name: str, namespace: dict[str, Any]) -> None:
    """Refuse, in a chapter's kernel, parameter values outside their declarations (the chapter's first
    cell calls ``check_parameters("<chapter>", globals())``), so a plain papermill run checks what
    ``cheems book`` checks. Paths are relative to the working directory, the repository root.
    Raises :class:`BookInputError` (one line)."""
    source = find_root() / "notebooks" / f"{name}.md"
    for param, spec in parameters_of(source).items():
        problem = check_value(namespace.get(param), spec, Path.cwd())
        if problem:
            raise BookInputError(f"parameter {param} = {json.dumps(namespace.get(param), default=str)}: {problem[0]} "
                                 f"(fix: {problem[1]}; see the parameters cell of notebooks/{name}.md)")
