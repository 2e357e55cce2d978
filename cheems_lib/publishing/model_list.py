"""The models file: which reward models, zoo models, baselines and judges a leaderboard shows.

RewardBench users keep the models they evaluate in one YAML file; the evaluation chapter reads such a
file with ``-p models_file FILE`` (example: ``configs/models.yaml``)::

    models:                                        # reward models, one leaderboard row each
      - Skywork/Skywork-Reward-Llama-3.1-8B-v0.2   # a hub name or a local folder (from_pretrained)
      - path: runs/my-reward-model                 # the same, with a row name of its own
        name: my reward model
      - zoo: tiny · human subset                   # a tiny model of the embedded zoo, trained here
      - baseline:longest                           # a baseline: shown among the null controls
    judges:                                        # causal LMs evaluated as judges
      - Qwen/Qwen2.5-7B-Instruct

An entry is a string (its path, also its row name) or a mapping with ``path`` or ``zoo`` and an optional
``name``. Row names are unique; a path starting with ``/``, ``.`` or ``~`` must exist. Reward models and judges are loaded with ``from_pretrained`` by the
library's loading code (:func:`cheems_lib.models.reward_model.load`, :mod:`cheems_lib.models.judging`).

How the file combines with the chapter's ``models`` and ``judges`` lists (:func:`choose`): the file
*adds* its reward models after ``models`` and its judges after ``judges`` (the same path twice is one
row). The embedded zoo is trained when no reward model is named anywhere, as without a file; ``zoo:``
entries pick zoo models by name beside the others. The baselines are shown in every table as null
controls (:data:`cheems_lib.baselines.CONTROLS`), so a ``baseline:`` entry is allowed and adds no row.
With no judge named anywhere the chapter trains its tiny judge, as without a file.

Bad files stop with one line, ``FILE:LINE: problem (fix: ...)`` (:class:`cheems_lib.input_files.DataError`);
``cheems book`` checks the file before any chapter runs (exit 2).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ..baselines import NAMES
from ..input_files import DataError, read_text, show

__all__ = ["ZOO_NAMES", "ModelsFile", "read_models_file", "Chosen", "choose", "read_checkpoints_file"]

ZOO_NAMES = ("tiny · human subset", "tiny-xs · human subset", "tiny · GPT subset", "tiny · preference set",
             "tiny-xs · preference set")
"""The embedded zoo's models by row name (:func:`cheems_lib.analyses.experiments.leaderboard_family`, which names its
sets by them in this order: tiny and tiny-xs on the human subset, tiny on the GPT subset, tiny and tiny-xs on an
unsplit preference set); which of them a world can train depends on its preference files."""
_KEYS = {"models": ("path", "zoo", "name"), "judges": ("path", "name")}
_FIX = "see the example configs/models.yaml"


@dataclass
class ModelsFile:
    """A models file, read: row name -> path for reward models and judges, zoo and baseline names in file order."""

    path: str
    models: dict[str, str] = field(default_factory=dict)
    zoo: list[str] = field(default_factory=list)
    baselines: list[str] = field(default_factory=list)
    judges: dict[str, str] = field(default_factory=dict)


def _compose(path: Path, what: str = "models file", fix: str = _FIX):
    import yaml  # lazily: `cheems --help` and `cheems resolve` never need it

    try:
        text = read_text(path)
    except OSError as e:
        raise DataError(path, None, f"cannot read the {what}: {e.strerror or e}", "pass a UTF-8 YAML file") from None
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except RecursionError:
        raise DataError(path, None, f"not a {what}: nested too deeply", fix) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise DataError(path, mark.line + 1 if mark else None, f"not valid YAML ({getattr(e, 'problem', e)})",
                        f"fix the YAML syntax; {fix}") from None


def _entry(path: Path, section: str, i: int, node) -> tuple[str, str, str]:
    """One entry as (kind, name, target): kind ``path``, ``zoo`` or ``baseline``."""
    import yaml

    line, where = node.start_mark.line + 1, f"{section} entry {i + 1}"
    if isinstance(node, yaml.ScalarNode) and node.tag.endswith(":str") and node.value.strip():
        fields = {"path": node.value.strip()}
    elif isinstance(node, yaml.MappingNode):
        fields = {}
        for key, value in node.value:
            if key.value not in _KEYS[section]:
                raise DataError(path, key.start_mark.line + 1, f"{where}: unknown key {show(key.value)}",
                                f"use {', '.join(_KEYS[section])}; {_FIX}")
            if not isinstance(value, yaml.ScalarNode) or not value.value.strip():
                raise DataError(path, value.start_mark.line + 1, f"{where}: {key.value} must be a non-empty string",
                                f"write {key.value}: TEXT; {_FIX}")
            fields[key.value] = value.value.strip()
    else:
        raise DataError(path, line, f"{where}: not a path or a mapping", f"write a hub name, a folder or "
                        f"`path: ...`; {_FIX}")
    kinds = [k for k in ("path", "zoo") if k in fields]
    if len(kinds) != 1:
        raise DataError(path, line, f"{where}: needs exactly one of {' or '.join(_KEYS[section][:-1])}",
                        f"give the model's path{' or its zoo name' if section == 'models' else ''}; {_FIX}")
    kind, target = kinds[0], fields[kinds[0]]
    if kind == "zoo" and target not in ZOO_NAMES:
        raise DataError(path, line, f"{where}: no zoo model {show(target)}", f"use one of {', '.join(ZOO_NAMES)}")
    if kind == "path" and target.startswith(("/", "./", "../", "~")) and not Path(target).expanduser().exists():
        raise DataError(path, line, f"{where}: no such folder {show(target)}",
                        "check the path (a relative one starts at the working directory) or give a hub name")
    if target.startswith("baseline:"):
        if section == "judges" or target not in NAMES:
            raise DataError(path, line, f"{where}: {show(target)} is not a {section[:-1]}",
                            f"use one of {', '.join(NAMES)} under models")
        kind = "baseline"
    return kind, fields.get("name", target), target


def read_models_file(path: str | Path) -> ModelsFile:
    """Read and check a models file (module docstring); raises :class:`cheems_lib.input_files.DataError` (one line,
    naming the file, the line, the entry and the fix) for a file that is not one."""
    import yaml

    path = Path(path)
    root = _compose(path)
    if not isinstance(root, yaml.MappingNode) or not root.value:
        raise DataError(path, root.start_mark.line + 1 if root is not None else None, "not a mapping with `models:` "
                        "and/or `judges:`", f"start the file with `models:` and list them below; {_FIX}")
    out, seen = ModelsFile(str(path)), {}
    for key, items in root.value:
        if key.value not in _KEYS:
            raise DataError(path, key.start_mark.line + 1, f"unknown section {show(key.value)}",
                            f"use models and judges; {_FIX}")
        if not isinstance(items, yaml.SequenceNode):
            raise DataError(path, items.start_mark.line + 1, f"{key.value}: not a list",
                            f"write one entry per line, each starting with `- `; {_FIX}")
        for i, node in enumerate(items.value):
            kind, name, target = _entry(path, key.value, i, node)
            line = node.start_mark.line + 1
            if name in seen:
                raise DataError(path, line, f"{key.value} entry {i + 1}: the name {show(name)} repeats line {seen[name]}",
                                "give one of them another `name:`")
            seen[name] = line
            if kind == "zoo":
                out.zoo.append(target)
            elif kind == "baseline":
                out.baselines.append(target)
            else:
                (out.models if key.value == "models" else out.judges)[name] = target
    return out


@dataclass
class Chosen:
    """What a leaderboard evaluates (:func:`choose`): reward models and judges by row name -> path; ``zoo`` the
    zoo models to train (None: all of the world's when no reward model is named, else none)."""

    models: dict[str, str]
    zoo: list[str] | None
    judges: dict[str, str]


def choose(models: Sequence[str] = (), judges: Sequence[str] = (), models_file: str | Path = "") -> Chosen:
    """Combine the ``models`` and ``judges`` lists with a models file (empty: none): the file's entries follow
    the lists' (module docstring); a name given twice for two different paths is an error."""
    chosen = Chosen({m: m for m in models}, None, {j: j for j in judges})
    if not models_file:
        return chosen
    read = read_models_file(models_file)
    for mine, theirs in ((chosen.models, read.models), (chosen.judges, read.judges)):
        for name, target in theirs.items():
            if mine.get(name, target) != target:
                raise DataError(models_file, None, f"the name {show(name)} is also a path given in the chapter's "
                                "parameters", "give the file's entry another `name:`")
            if target not in mine.values():
                mine[name] = target
    chosen.zoo = read.zoo or None
    return chosen


def read_checkpoints_file(path: str | Path, base: str | Path | None = None) -> dict[str, list[str]]:
    """Read a checkpoints file: model names mapped to the folders ``cheems train --output`` wrote for them, one
    folder or a list of them (one per training seed, in seed order), in YAML (or JSON)::

        Qwen/Qwen2.5-32B-Instruct: runs/rm-32b
        Qwen/Qwen2.5-72B-Instruct: runs/rm-72b

    The scaling chapter's ``-p checkpoints_file`` scores these models as they are instead of training them (sizes too
    large for one device are trained with ``accelerate launch``). Every folder must hold a finished run
    (``cheems_train.json``); a relative one starts at ``base`` (default: the working directory). Returns
    ``{name: [folder, ...]}``; a bad file raises :class:`cheems_lib.input_files.DataError` (one line, with the fix)."""
    import yaml

    path = Path(path)
    fix = "write one `MODEL: FOLDER` line per model, FOLDER written by `cheems train --output`"
    root = _compose(path, "checkpoints file", fix)
    if not isinstance(root, yaml.MappingNode) or not root.value:
        raise DataError(path, root.start_mark.line + 1 if root is not None else None,
                        "not a mapping of model names to checkpoint folders", fix)
    out: dict[str, list[str]] = {}
    for key, value in root.value:
        line = key.start_mark.line + 1
        if not isinstance(key, yaml.ScalarNode) or not key.value.strip() or key.value in out:
            raise DataError(path, line, f"{show(getattr(key, 'value', None))} is not a new model name", fix)
        nodes = value.value if isinstance(value, yaml.SequenceNode) else [value]
        if not nodes or not all(isinstance(n, yaml.ScalarNode) and n.value.strip() for n in nodes):
            raise DataError(path, line, f"{key.value}: not a folder or a list of folders", fix)
        for n in nodes:
            folder = Path(n.value.strip()).expanduser()
            folder = folder if folder.is_absolute() or base is None else Path(base) / folder
            if not (folder / "cheems_train.json").is_file():
                raise DataError(path, n.start_mark.line + 1, f"{key.value}: {show(n.value.strip())} holds no finished "
                                "`cheems train` run (no cheems_train.json)", "check the path, or finish the run with "
                                "`cheems train ... --output FOLDER --resume`")
        out[key.value] = [n.value.strip() for n in nodes]
    return out
