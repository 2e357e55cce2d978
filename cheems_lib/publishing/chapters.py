"""The chapter registry: which chapters the book has and their parameters per profile.

One entry per chapter, in reading order. ``_toc.yml`` lists the same chapters (a test
checks that :func:`toc_yaml` equals the file), so the two cannot drift apart.

Profiles:

- ``smoke``: every chapter in seconds; used by the tests.
- ``default``: what ``make book`` builds on a CPU from the simulated world.
- ``paper``: the paper's settings, for GPU users with real models and data files.
- ``real``: every chapter on the real Chinese data shipped in ``data/real/`` (``world_dir``),
  with the default profile's settings; ``real-smoke``: the same at the smoke profile's settings
  (what the tests build).
- ``full``: the default profile plus its world replicates: every chapter marked ``replicated``
  runs again on the simulated worlds of :data:`REPLICATE_SEEDS` (:mod:`cheems_lib.publishing.replicates`), and
  the Claims page shows each finding's spread across the worlds and any verdict that flips;
  ``full-smoke``: the same at the smoke profile's settings. The replicates triple the cost of the
  chapters they repeat, so the default book (15 minutes on 2 cores) leaves them out.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["PROFILES", "REAL_DIR", "REAL_SMOKE", "REPLICATE_SEEDS", "Chapter", "CHAPTERS", "chapter", "base_profile",
           "replicate_seeds", "toc_yaml"]

PROFILES = ("smoke", "default", "paper", "real", "real-smoke", "full", "full-smoke")
REAL_DIR = "data/real"
"""The folder the ``real`` profiles point every chapter's ``world_dir`` at."""
REAL_SMOKE = {"train_seeds": 1}
"""What ``real-smoke`` changes beyond the smoke settings in every chapter that trains: one training
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
    cost: int = 1  # relative execution time; parallel builds start the costliest chapters first
    takes_world: bool = True  # it has a world_dir parameter (the real profiles set it)
    trains: bool = False  # it trains reward models (a train_seeds parameter; real-smoke sets REAL_SMOKE)
    # it tests claims of kind finding or question on the simulated world: the full profiles rerun it on other world
    # seeds (cheems_lib.publishing.replicates); a chapter whose claims are all calibrated, structural or sweeps is not rerun
    replicated: bool = False

    def parameters(self, profile: str) -> dict[str, Any]:
        """The registry's parameters of this chapter in ``profile``. The real profiles are the default
        and smoke ones with ``world_dir`` set to :data:`REAL_DIR` (chapters that take it, see
        ``takes_world``), the simulated world's size dropped, and the chapter's own entries for the
        real profile on top. The full profiles are the default and smoke ones with the chapter's own entries
        for the full profile on top."""
        if profile not in PROFILES:
            raise ValueError(f"unknown profile {profile!r}; choose one of {PROFILES}")
        if profile in _FULL:
            return self.parameters(_FULL[profile]) | self.params.get(profile, {})
        if profile.startswith("real"):
            base = self.parameters("smoke" if profile == "real-smoke" else "default")
            base.pop("size", None)
            if profile == "real-smoke" and self.trains:
                base |= REAL_SMOKE
            return base | self.params.get(profile, {}) | ({"world_dir": REAL_DIR} if self.takes_world else {})
        return dict(self.params.get(profile, {}))


_WORLD = {"smoke": {"size": "smoke", "n_boot": 100}, "default": {"size": "default"}, "paper": {"size": "paper"}}

CHAPTERS: list[Chapter] = [
    Chapter("data", "The data", ("paper-table1",), params=_WORLD, replicated=True),
    Chapter(
        "conflicts", "Resolving conflicting annotations", ("paper-alg1", "paper-table5"),
        params={"smoke": {"n_random_graphs": 50, "size": "smoke", "n_boot": 100}, "default": {"n_random_graphs": 2000, "size": "default"},
                "paper": {"n_random_graphs": 2000, "size": "paper"}},
    ),
    Chapter("biases", "Annotator biases", ("paper-fig15",), params=_WORLD),
    Chapter(
        "evaluation", "Evaluating reward models on CheemsBench", ("paper-table2", "paper-fig4"), cost=4, trains=True, replicated=True,
        params={"smoke": {"size": "smoke", "train_epochs": 1, "judge_pairs": 40, "judge_prompts": 10, "n_boot": 100,
                          "gpt_prompts": 0, "train_seeds": 2, "rewardbench_pairs": 60},
                "default": {"size": "default"},
                # real models for GPU users (pass -p world_dir with the real CheemsBench files)
                "paper": {"size": "paper", "judge_prompts": 1346, "batch_size": 8, "gpt_prompts": 0,
                          "models": ["Skywork/Skywork-Reward-Gemma-2-27B-v0.2", "Skywork/Skywork-Reward-Llama-3.1-8B-v0.2"],
                          "judges": ["Qwen/Qwen2.5-7B-Instruct"]}},
    ),
    Chapter(
        "transfer", "Which preference data transfers?", ("paper-table3",), cost=3, trains=True, replicated=True,
        params={"smoke": {"size": "smoke", "prompts": 0, "train_epochs": 1, "n_boot": 100, "train_seeds": 2},
                "default": {"size": "default"},
                "paper": {"size": "paper", "prompts": 0}},
    ),
    Chapter(
        "preference", "Building CheemsPreference", ("paper-table4",), cost=4, trains=True, replicated=True,
        params={"smoke": {"size": "smoke", "gpt_prompts": 0, "train_epochs": 1, "n_boot": 100, "train_seeds": 2},
                "default": {"size": "default"},
                "paper": {"size": "paper", "gpt_prompts": 0}},
    ),
    Chapter(
        "scaling", "Scaling trends", ("paper-fig6", "paper-fig7"), cost=3, trains=True, replicated=True,
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
        "downstream", "Does the benchmark predict downstream quality?", ("paper-fig5",), cost=5, trains=True, replicated=True,
        params={"smoke": {"size": "smoke", "gpt_prompts": 0, "transfer_prompts": 0, "train_epochs": 1, "n_boot": 100,
                          "points": 4, "bon_prompts": 12, "mt_prompts": 12, "bon_n": 8, "sizes": ["tiny-xs", "tiny", "tiny-xl"],
                          "train_seeds": 2, "rewardbench_pairs": 60, "rmb_prompts": 25, "shared_noise": [0.0, 0.8]},
                "default": {"size": "default"},
                # the win rate keeps its 500 prompts (the paper's 87 cannot rank the population: issue 26)
                "paper": {"size": "paper", "gpt_prompts": 0, "transfer_prompts": 0}},
    ),
    Chapter(  # replicated for its one finding, Table 4's comparison at the paper's GPT : human ratio
        "sensitivity", "Sensitivity to the simulator's assumptions", (), cost=2, trains=True, replicated=True,
        params={"smoke": {"size": "smoke", "train_epochs": 1, "n_boot": 100, "shared_noise": [0.0, 0.8], "ratios": [],
                          "gpt_prompts": 0},
                "default": {"size": "default"},
                "paper": {"size": "paper", "gpt_prompts": 0}},
    ),
    Chapter(
        "real", "Real Chinese data: what model labels show", (), cost=2, trains=True,
        # one training seed at smoke size: its model on data/real (long texts, 766 prompts) is the costliest
        # of the smoke book, and the real-smoke book reuses it (REAL_SMOKE)
        params={"smoke": {"train_epochs": 1, "n_boot": 100, "train_seeds": 1}},
    ),
    Chapter("reproduce", "Reproduce with real models", (), takes_world=False),
    Chapter("claims", "Claims", ("claims",), after_all=True, takes_world=False,
            params={"full": {"replicate_seeds": list(REPLICATE_SEEDS)}, "full-smoke": {"replicate_seeds": list(REPLICATE_SEEDS)}}),
]


def chapter(name: str) -> Chapter:
    for ch in CHAPTERS:
        if ch.name == name:
            return ch
    raise KeyError(f"no chapter {name!r}; chapters are {[c.name for c in CHAPTERS]}")


# Pages that are plain text, not executed chapters.
_STATIC_FRONT = ["book/intro"]
# book/build_stats is generated before every render (cheems_lib.publishing.build_stats), not tracked
_STATIC_BACK: list[str] = ["book/build_stats", "book/own_data", "book/cite", "book/api"]


def toc_yaml() -> str:
    """The ``_toc.yml`` this registry implies."""
    lines = ["# Generated from cheems_lib/publishing/chapters.py; tests/test_chapters.py checks they agree.",
             "format: jb-book", f"root: {_STATIC_FRONT[0]}", "chapters:"]
    lines += [f"  - file: {p}" for p in _STATIC_FRONT[1:]]
    lines += [f"  - file: book/{c.name}" for c in CHAPTERS]
    lines += [f"  - file: {p}" for p in _STATIC_BACK]
    return "\n".join(lines) + "\n"
