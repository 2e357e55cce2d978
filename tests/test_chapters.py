"""The chapter registry agrees with _toc.yml and with each chapter's parameters cell."""
from __future__ import annotations

import re

import pytest

from cheems_lib.publishing.chapters import (CHAPTERS, PROFILES, BookInputError, Chapter, base_profile, check_parameters,
                                            check_value, coerce, parameters_of, toc_yaml)
from conftest import ROOT


def test_toc_is_generated_from_registry():
    """_toc.yml equals what the registry implies (regenerate with chapters.toc_yaml())."""
    assert (ROOT / "_toc.yml").read_text(encoding="utf-8") == toc_yaml()


@pytest.mark.parametrize("ch", CHAPTERS, ids=lambda c: c.name)
def test_parameters_cell(ch):
    """Every parameter is `name: type = default  # help`, with help, a seed, and profile values it declares."""
    declared = parameters_of(ROOT / "notebooks" / f"{ch.name}.md")
    if ch.labels and not ch.after_all:  # chapters that compute results; "Reproduce" and "Claims" draw nothing random
        assert "seed" in declared
    assert all(p["help"] for p in declared.values())
    for profile in PROFILES:
        assert set(ch.parameters(profile)) <= set(declared)


@pytest.mark.parametrize("ch", CHAPTERS, ids=lambda c: c.name)
def test_papermill_reads_every_parameter(ch):
    """`papermill --help-notebook` shows every parameter with its type and help."""
    import jupytext
    from papermill.translators import PythonTranslator

    nb = jupytext.read(ROOT / "notebooks" / f"{ch.name}.md")
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    seen = {p.name: p for p in PythonTranslator.inspect(cell)}
    declared = parameters_of(ROOT / "notebooks" / f"{ch.name}.md")
    assert set(seen) == set(declared)
    assert all(seen[n].help == declared[n]["help"] for n in declared)


def _shared_defaults() -> dict[tuple[str, str], object]:
    """(chapter, parameter) -> the library constant its default must equal; chapter "*": any chapter."""
    from cheems_lib.analyses.experiments import GPT_PROMPTS
    from cheems_lib.analyses.transfer import TABLE3_PROMPTS

    return {("*", "gpt_prompts"): GPT_PROMPTS, ("*", "transfer_prompts"): TABLE3_PROMPTS,
            ("transfer", "prompts"): TABLE3_PROMPTS}


def test_shared_defaults_equal_their_library_home():
    """A parameters cell keeps its literal default (papermill shows it), but the GPT-subset size (gpt_prompts)
    and the Table 3 prompt count (transfer_prompts, the transfer chapter's prompts) must equal their one home,
    experiments.GPT_PROMPTS and transfer.TABLE3_PROMPTS: the zoo shares models only while the copies agree."""
    import ast

    homes, seen = _shared_defaults(), set()
    for ch in CHAPTERS:
        for name, spec in parameters_of(ROOT / "notebooks" / f"{ch.name}.md").items():
            key = next((k for k in ((ch.name, name), ("*", name)) if k in homes), None)
            if key is not None:
                seen.add(key)
                assert ast.literal_eval(spec["default"]) == homes[key], (
                    f"notebooks/{ch.name}.md: {name} defaults to {spec['default']}, its library home says {homes[key]}")
    assert seen == set(homes)  # a renamed parameter would escape the check


@pytest.mark.parametrize("ch", CHAPTERS, ids=lambda c: c.name)
def test_chapter_carries_its_stable_labels(ch):
    """Each paper artefact id appears as a MyST label or a figure name in the chapter source."""
    text = (ROOT / "notebooks" / f"{ch.name}.md").read_text(encoding="utf-8")
    for label in ch.labels:
        assert f"({label})=" in text or f":name: {label}" in text, label


@pytest.mark.parametrize("ch", CHAPTERS, ids=lambda c: c.name)
def test_every_parameter_declares_what_it_allows(ch):
    """Every numeric parameter (lists too) declares a range, every `*_path` is a file and every `*_dir` a folder,
    `size` declares its choices; the defaults and every profile's values are allowed."""
    import ast

    declared = parameters_of(ROOT / "notebooks" / f"{ch.name}.md")
    for name, spec in declared.items():
        check = spec["check"] or {}
        if spec["type"] in ("int", "float", "list[int]", "list[float]"):
            assert "range" in check and check["range"][0] <= check["range"][1], (name, spec)
        if name.endswith("_path"):
            assert check.get("path") == "file", name
        if name.endswith("_dir"):
            assert check.get("path") in ("folder", "world folder"), name
        if name == "size":
            assert check.get("choices") == [p for p in PROFILES if p == base_profile(p) and not p.startswith("real")], name  # simulated sizes
        assert check_value(ast.literal_eval(spec["default"]), spec, ROOT) is None, (name, spec["default"])
    for profile in PROFILES:
        for name, value in ch.parameters(profile).items():
            assert check_value(value, declared[name], ROOT) is None, (profile, name, value)


def test_check_value_covers_each_kind():
    """Ranges (NaN and booleans refused), list elements one by one, choices and types each give a problem and a fix."""
    count = {"type": "int", "default": "3", "check": {"text": "in [1, 10]", "range": (1, 10)}}
    noise = {"type": "list[float]", "default": "[0.0]", "check": {"text": "in [0, 10]", "range": (0, 10)}}
    size = {"type": "str", "default": '"default"', "check": {"text": "one of smoke|default|paper",
                                                           "choices": ["smoke", "default", "paper"]}}
    names = {"type": "list[str]", "default": "[]", "check": None}
    assert check_value(3, count, ROOT) is None and check_value([0.5, 10], noise, ROOT) is None
    assert check_value(0, count, ROOT) == ("must be in [1, 10]", "pass a value in [1, 10]")
    assert check_value(True, count, ROOT)[0] == "not an int" and check_value(2.0, count, ROOT)[0] == "not an int"
    assert check_value(float("nan"), {**noise, "type": "float"}, ROOT)[0] == "must be in [0, 10]"
    assert check_value([0.5, -1], noise, ROOT)[0] == "element 1 (-1) must be in [0, 10]"
    assert check_value(0.5, noise, ROOT)[0] == "not a list[float]"
    assert check_value("huge", size, ROOT) == ("must be one of smoke|default|paper",
                                               "pass one of smoke, default, paper")
    assert check_value(["tiny", 3], names, ROOT)[0] == "not a list[str]" and check_value(["a"], names, ROOT) is None


@pytest.mark.parametrize("ch", CHAPTERS, ids=lambda c: c.name)
def test_chapter_checks_its_parameters_in_its_kernel(ch):
    """The first cell after the parameters cell calls open_chapter (which calls check_parameters first), so a plain
    papermill run refuses what `cheems book` refuses."""
    import jupytext

    cells = jupytext.read(ROOT / "notebooks" / f"{ch.name}.md").cells
    at = next(i for i, c in enumerate(cells) if "parameters" in c.metadata.get("tags", []))
    first = next(c for c in cells[at + 1:] if c.cell_type == "code")
    assert f'open_chapter("{ch.name}", globals()' in first.source


def test_check_parameters_refuses_in_the_kernel(monkeypatch):
    """check_parameters (what a chapter's kernel runs) raises one line naming the parameter, value and range."""
    import ast

    monkeypatch.chdir(ROOT)
    values = {n: ast.literal_eval(s["default"]) for n, s in parameters_of(ROOT / "notebooks/downstream.md").items()}
    check_parameters("downstream", values)
    with pytest.raises(BookInputError, match=r"^parameter train_seeds = 0: must be in \[1, 10\] \(fix: pass a value "
                                              r"in \[1, 10\]; see the parameters cell of notebooks/downstream.md\)$"):
        check_parameters("downstream", {**values, "train_seeds": 0})


def test_coerce():
    """coerce turns command-line strings into each parameter type of a chapter."""
    assert coerce("3", "int") == 3 and coerce("0.5", "float") == 0.5 and coerce("no", "bool") is False
    assert coerce('["a", "b"]', "list[str]") == ["a", "b"] and coerce("x.jsonl", "str") == "x.jsonl"


def test_api_page_documents_every_module():
    """book/api.md has an automodule for each cheems_lib module, those of the sub-packages too, so the API page is
    complete."""
    import re

    listed = set(re.findall(r"automodule:: cheems_lib\.([\w.]+)", (ROOT / "book/api.md").read_text(encoding="utf-8")))
    package = ROOT / "cheems_lib"
    modules = {".".join(p.relative_to(package).with_suffix("").parts) for p in package.rglob("*.py")
               if p.stem != "__init__"}
    assert listed == modules, (sorted(modules - listed), sorted(listed - modules))


def test_contributing_says_where_every_module_lives():
    """CONTRIBUTING.md's "Where things live" table names every cheems_lib module (a top-level one by its path, a
    wing's in its wing's row), so a concept can be found from it."""
    import re

    guide = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = guide.split("## Where things live", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"cheems_lib/(\w+)\.py", section))
    for row in re.findall(r"^\| `cheems_lib/(\w+)/` \|(.*)$", section, flags=re.M):  # a wing's row names its modules
        listed |= {f"{row[0]}.{name}" for name in re.findall(r"`(\w+)`", row[1])}
    package = ROOT / "cheems_lib"
    modules = {".".join(p.relative_to(package).with_suffix("").parts) for p in package.rglob("*.py")
               if p.stem != "__init__"}
    assert modules <= listed, sorted(modules - listed)


def test_every_figure_has_a_stable_label_and_caption():
    """Each glued figure's key and name are stable ids (spec §7) and it has a caption and download links."""
    import re

    from cheems_lib.publishing.publish import LABEL

    for ch in CHAPTERS:
        text = (ROOT / "notebooks" / f"{ch.name}.md").read_text(encoding="utf-8")
        for key, name, caption in re.findall(r"```\{glue:figure\} (\S+)\n:name: (\S+)\n\n(.*?)```", text, flags=re.S):
            assert LABEL.match(key) and LABEL.match(name), (ch.name, key, name)
            assert caption.strip(), (ch.name, key)
            assert f'publish.downloads("{key}")' in text and f'publish.figure(' in text
        assert text.count("{glue:figure}") == len(re.findall(r"\{glue:figure\} \S+\n:name: ", text)), ch.name


def _targets(text: str) -> set[str]:
    """The MyST targets a source defines: ``(label)=`` lines and figures' ``:name:``."""
    return set(re.findall(r"^\(([\w-]+)\)=\s*$", text, flags=re.M)) | set(re.findall(r"^:name:\s*(\S+)", text, flags=re.M))


def _references(text: str) -> set[str]:
    """The targets a source refers to by label: ``[text](label)``, ``{ref}`` and ``{numref}``."""
    return ({m for m in re.findall(r"\]\(([\w-]+)\)", text)}
            | set(re.findall(r"\{(?:ref|numref)\}`(?:[^`<]*<)?([\w-]+)>?`", text)))


def test_no_chapter_refers_to_a_section_of_another_page():
    """A chapter links another chapter's page ({doc}), never one of its sections or figures: that page may be a
    placeholder (never executed in this checkout) or may have run on real files, which leaves its simulated-only
    sections out, and a dangling target fails the book (``--warningiserror``)."""
    sources = {p.stem: p.read_text(encoding="utf-8") for p in (ROOT / "notebooks").glob("*.md")}
    owner = {t: name for name, text in sources.items() for t in _targets(text)}
    assert owner["sensitivity-ratio"] == "sensitivity"  # the reader finds labels (the case that once failed)
    assert _references("[x](sensitivity-ratio) {ref}`y <fig-a>`") == {"sensitivity-ratio", "fig-a"}
    crossing = [(name, t, owner[t]) for name, text in sources.items() for t in _references(text)
                if t in owner and owner[t] != name]
    assert not crossing, f"cross-page references to sections (fix: link the page with {{doc}}): {crossing}"


# ---- the data contract ships with the project (book/own_data.md) ------------------------------------

def _docs():
    """The Markdown a reader of the repository sees: the READMEs, the book's pages and the chapters' sources."""
    return [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "data").glob("*/README.md")),
            *sorted((ROOT / "book").glob("*.md")),
            *sorted((ROOT / "notebooks").glob("*.md"))]


def test_docs_point_inside_the_repository():
    """No README, book page or chapter sends the reader to the workspace's spec (``../shared``, ``shared/spec``),
    which a clone does not have; relative links of the README and CONTRIBUTING.md name files that exist."""
    import re

    for path in _docs():
        text = path.read_text(encoding="utf-8")
        assert "../shared" not in text and "shared/spec" not in text, path
    for name in ("README.md", "CONTRIBUTING.md"):
        for target in re.findall(r"\]\((?!https?:|#)([^)#\s]+)", (ROOT / name).read_text(encoding="utf-8")):
            assert (ROOT / target).exists(), (name, target)


# ---- the README is a front page; the reference lives in the book and CONTRIBUTING.md --------------

README_TIMES = ("1 min 13 s", "23 min 22 s", "| 3 s |", "17 min 8 s", "2 min 53 s")
"""The measured times README's first screen gives: install, cold default book, rebuild, full test run, cold smoke
book (as measured; update them with a new measurement, with its machine and date)."""


def test_readme_is_a_front_page():
    """README.md has at most 200 lines, and its first 40 say that the world is simulated, give the two commands and
    the smoke path with their measured times, and start the reader on their own files with the command line."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, len(lines)
    first = "\n".join(lines[:40])
    for needed in ("simulated", "Git-LFS", "data/real", "make book", "make test", "make book PROFILE=smoke",
                   "2 cores", "cheems resolve", "cheems evaluate", *README_TIMES):
        assert needed in first, needed


def test_readme_links_the_reference_pages():
    """README links the pages its reference moved to: how to read the book, the command line, the data formats
    and the contributors' guide; and every ``make`` variable it uses exists in the Makefile."""
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for target in ("book/reading.md", "book/cli.md", "book/own_data.md", "book/cite.md", "CONTRIBUTING.md"):
        assert f"]({target})" in readme, target
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for variable in re.findall(r"make \w+ (\w+)=", readme):
        assert re.search(rf"^{variable} \?=", makefile, flags=re.M), variable


def test_reference_pages_are_in_the_book():
    """The pages the README points to are registered (and so in _toc.yml); the command-line page renders every
    subcommand's help (a bare ``{cheems-cli}``), and the reading page states the library's thresholds."""
    from cheems_lib.metrics import MIN_STRATUM, MIN_UNITS

    toc = toc_yaml()
    for page in ("book/reading", "book/cli", "book/own_data", "book/cite"):
        assert f"file: {page}\n" in toc or f"root: {page}\n" in toc, page
        assert (ROOT / f"{page}.md").exists(), page
    assert "```{cheems-cli}\n```" in (ROOT / "book/cli.md").read_text(encoding="utf-8")
    reading = (ROOT / "book/reading.md").read_text(encoding="utf-8")
    assert f"fewer than {MIN_UNITS} independent units (`metrics.MIN_UNITS`" in reading
    assert f"fewer than {MIN_STRATUM} prompts (`metrics.MIN_STRATUM`)" in reading
    assert "{ref}`reading`" in (ROOT / "book/intro.md").read_text(encoding="utf-8")


def test_own_data_page_is_linked_and_lists_the_layouts():
    """The "Use your own data" page is in the table of contents, linked from the README and the front page,
    generates its category table from the library, and names every file of both folder layouts, every
    manifest field and the chapters' world_dir/human_ids parameters."""
    from cheems_lib.world_files import RELEASE_FILES, SIMULATED_FILES

    page = (ROOT / "book/own_data.md").read_text(encoding="utf-8")
    assert "book/own_data" in toc_yaml()
    assert "book/own_data.md" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert "{ref}`own-data`" in (ROOT / "book/intro.md").read_text(encoding="utf-8")
    assert "```{cheems-categories}\n```" in page  # generated at render time, never a typed copy
    for rel in [*SIMULATED_FILES.values(), *RELEASE_FILES.values()]:
        assert f"`{rel}`" in page or f"`[data/]{rel}`" in page, rel
    for field in ("name", "labels", "files", "source", "commit", "licence", "sha256", "prompts"):
        assert f"`{field}`" in page, field
    for label in ('"1"', '"2"', '"0"'):
        assert f"`{label}`" in page, label
    assert "-p world_dir DIR" in page and "-p human_ids" in page and '"subset": "human"' in page


def test_own_data_page_names_the_chapters_without_world_dir():
    """The page says every chapter but Reproduce and Claims takes world_dir: true of the parameters cells."""
    from cheems_lib.publishing.chapters import chapter

    page = (ROOT / "book/own_data.md").read_text(encoding="utf-8")
    without = [c for c in CHAPTERS if "world_dir" not in parameters_of(ROOT / "notebooks" / f"{c.name}.md")]
    assert sorted(c.name for c in without) == ["claims", "reproduce"]
    for name in ("reproduce", "claims"):
        assert f"*{chapter(name).title}*" in page


def test_paper_profile_refuses_to_simulate_the_world(monkeypatch, capsys):
    """`cheems book --profile paper` runs on the official files: without -p world_dir (or with an empty one) it exits
    2 with one line naming the fix, before any kernel starts; with a world folder it plans every chapter on it, and a
    selection of chapters that read no world (Reproduce, Claims) needs none."""
    from cheems_lib.cli import main
    from cheems_lib.publishing import build as builder

    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(builder, "execute_chapter", lambda *a, **k: pytest.fail("no kernel may start"))
    for extra in (["--chapter", "scaling", "-p", "world_dir", ""], []):
        with pytest.raises(SystemExit) as e:
            main(["book", "--profile", "paper", "--no-html", *extra])
        err = capsys.readouterr().err.strip().splitlines()
        assert e.value.code == 2 and len(err) == 1, err
        assert err[0].startswith("cheems: --profile paper: ") and "(fix: pass -p world_dir DIR" in err[0], err
    assert "data, conflicts, biases" in err[0] and "real" not in err[0].split(" would ")[0]  # data/real is no simulation
    plans = dict(builder._plans("paper", None, {"world_dir": "data/examples/release"}, ROOT, 0))
    assert all(p.get("world_dir") == "data/examples/release" for n, p in plans.items() if n not in ("reproduce", "claims"))
    assert [n for n, _ in builder._plans("paper", ["reproduce"], {}, ROOT, 0)] == ["reproduce", "claims"]


def test_every_published_table_is_shown():
    """``publish.table`` and ``publish.downloads`` return what Jupyter shows only as a cell's last top-level
    value: one followed by another statement, or inside an ``if``/``for`` block, must be wrapped in
    ``display(...)``, or the page silently loses the table (its CSV is still written) or the download line."""
    import ast

    import jupytext

    hidden = []
    for ch in CHAPTERS:
        for i, cell in enumerate(jupytext.read(ROOT / "notebooks" / f"{ch.name}.md").cells):
            if cell.cell_type != "code":
                continue
            tree = ast.parse(cell.source)
            last = tree.body[-1] if tree.body else None
            for node in ast.walk(tree):
                call = node.value if isinstance(node, ast.Expr) else None
                if (node is not last and isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                        and call.func.attr in ("table", "downloads") and getattr(call.func.value, "id", "") == "publish"):
                    hidden.append((ch.name, i, ast.get_source_segment(cell.source, node)[:60]))
    assert hidden == []


def test_real_profiles_point_every_world_chapter_at_data_real():
    """``real`` and ``real-smoke`` set world_dir to data/real for exactly the chapters whose parameters
    cell has it, drop the simulated size, and otherwise keep the default / smoke settings; real-smoke
    trains one seed in exactly the chapters whose parameters cell has ``train_seeds``."""
    from cheems_lib.publishing.chapters import REAL_DIR, REAL_SMOKE

    for ch in CHAPTERS:
        declared = parameters_of(ROOT / "notebooks" / f"{ch.name}.md")
        takes = "world_dir" in declared
        trains = "train_seeds" in declared
        assert ch.declared(ROOT) == declared and ch.parameters("real", declared) == ch.parameters("real")
        for profile, base in (("real", "default"), ("real-smoke", "smoke")):
            params = ch.parameters(profile)
            assert params.get("world_dir") == (REAL_DIR if takes else None), (ch.name, profile)
            assert "size" not in params
            expected = {k: v for k, v in ch.parameters(base).items() if k != "size"}
            expected |= (REAL_SMOKE if profile == "real-smoke" and trains else {}) | ch.params.get(profile, {})
            assert {k: v for k, v in params.items() if k != "world_dir"} == expected
            if profile == "real-smoke" and trains:
                assert params["train_seeds"] == 1, ch.name
    assert (ROOT / REAL_DIR / "manifest.json").is_file()


def test_real_profiles_read_what_a_chapter_declares(tmp_path):
    """Whether a chapter trains (gets REAL_SMOKE's one training seed) and takes a world (gets data/real) is read from
    its parameters cell, never typed in the registry a second time: a new chapter declaring ``train_seeds`` and
    ``world_dir`` gets both with no flag set, one declaring neither gets neither."""
    from cheems_lib.publishing.chapters import REAL_DIR

    (tmp_path / "_toc.yml").write_text("format: jb-book\n", encoding="utf-8")
    (tmp_path / "notebooks").mkdir()
    head = (ROOT / "notebooks/conflicts.md").read_text(encoding="utf-8").split("---\n")[1].join(["---\n", "---\n"])
    cell = "```{{code-cell}} ipython3\n:tags: [parameters]\n{}\n```\n"
    (tmp_path / "notebooks/trainer.md").write_text(head + "# T\n\n" + cell.format(
        'train_seeds: int = 3  # in [1, 10]: seeds\nworld_dir: str = ""  # world folder or missing: files'), encoding="utf-8")
    (tmp_path / "notebooks/reader.md").write_text(head + "# R\n\n" + cell.format("n_boot: int = 1000  # in [100, 100000]: draws"),
                                                  encoding="utf-8")
    smoke = {"smoke": {"size": "smoke", "n_boot": 100}}
    trainer, reader = Chapter("trainer", "T", (), params=smoke), Chapter("reader", "R", (), params=smoke)
    assert trainer.parameters("real-smoke", trainer.declared(tmp_path)) == {"n_boot": 100, "train_seeds": 1,
                                                                             "world_dir": REAL_DIR}
    assert reader.parameters("real-smoke", reader.declared(tmp_path)) == {"n_boot": 100}


def test_full_profiles_are_default_and_smoke_plus_replicates():
    """``full`` and ``full-smoke`` give every chapter the default / smoke settings; only the Claims page gets the
    replicate seeds, and only they replicate; the replicated chapters all take a simulated world and its seed."""
    from cheems_lib.publishing.chapters import REPLICATE_SEEDS, replicate_seeds

    for ch in CHAPTERS:
        for profile, base in (("full", "default"), ("full-smoke", "smoke")):
            extra = {"replicate_seeds": list(REPLICATE_SEEDS)} if ch.name == "claims" else {}
            assert ch.parameters(profile) == ch.parameters(base) | extra, (ch.name, profile)
        if ch.replicated:
            declared = parameters_of(ROOT / "notebooks" / f"{ch.name}.md")
            assert {"seed", "size"} <= set(declared) and "world_dir" in declared, ch.name
    assert [p for p in PROFILES if replicate_seeds(p)] == ["full", "full-smoke"]
    assert len(REPLICATE_SEEDS) >= 2 and 0 not in REPLICATE_SEEDS  # at least two worlds beside the book's own


# ---- the data chapter on real folders: Table 1 against hand counts, the paper's side only where comparable ----

def _hand_count(path):
    """(prompts, mean responses per prompt) of a records file, counted with json alone."""
    import json

    rows = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    return len(rows), sum(len(r["responses"]) for r in rows) / len(rows)


def _table1_csv(root):
    """``{(file, statistic): (paper, ours)}`` of the data chapter's published Table 1 (NaN: no paper value)."""
    import pandas as pd

    from cheems_lib.publishing import publish

    t = pd.read_csv(publish.download_of("paper-table1", root=root))
    return {(r.file, r.statistic): (r.paper, r.ours) for r in t.itertuples()}


def _build_data(tmp_path, world):
    import shutil

    from cheems_lib.publishing.build import build
    from conftest import copy_repo

    (tmp_path / "book").mkdir()
    root = copy_repo(tmp_path / "book")
    build("smoke", ["data"], {"world_dir": str(world)}, root=root, html=False, log=lambda s: None)
    assert not (root / "book/data.failed.ipynb").exists()
    shutil.copy(root / "book/data.ipynb", tmp_path / "data.ipynb")
    return root


def test_data_chapter_on_the_shipped_real_data(tmp_path):
    """On a copy of data/real (manifest: "comparable": false), Table 1's `ours` prompts and responses per prompt
    are the hand counts, the paper's side is empty, the unsplit preference file has its own column, and the page
    says in a generated sentence, naming what the file holds, that the paper's numbers are not comparable."""
    import math
    import shutil

    world = tmp_path / "real"
    shutil.copytree(ROOT / "data/real", world)
    root = _build_data(tmp_path, world)
    table = _table1_csv(root)
    for row, rel in [("cheemsbench_open_prompt", "cheems_bench/open.jsonl"), ("cheemspreference", "cheems_preference.jsonl")]:
        prompts, per_prompt = _hand_count(world / rel)
        assert table[(row, "prompts")][1] == prompts and table[(row, "responses_per_prompt")][1] == pytest.approx(per_prompt)
        assert math.isnan(table[(row, "prompts")][0]), row  # other data: no paper number beside ours
    assert not any(k[0] == "cheemsbench_human_instruction" for k in table)
    shown = open(root / "book/data.ipynb", encoding="utf-8").read()
    assert "not comparable with it" in shown and "LLMZoo zh answer set review\\\\_zh" in shown
    assert "the human and GPT subsets of `cheems_preference.jsonl`" in shown


def test_data_chapter_on_a_release_folder_without_a_manifest(smoke_dir, tmp_path):
    """A release folder with no manifest (it may be the paper's own) and an unsplit preference file: both
    benchmark rows equal a hand count beside the paper's numbers, and the whole preference file is a column."""
    from conftest import release_folder

    world = release_folder(smoke_dir, tmp_path / "release", subset=False)
    table = _table1_csv(_build_data(tmp_path, world))
    for row, rel in [("cheemsbench_open_prompt", "cheems_bench/open.jsonl"),
                     ("cheemsbench_human_instruction", "cheems_bench/human.jsonl"),
                     ("cheemspreference", "cheems_preference.jsonl")]:
        prompts, per_prompt = _hand_count(world / rel)
        assert table[(row, "prompts")][1] == prompts and table[(row, "responses_per_prompt")][1] == pytest.approx(per_prompt)
    assert table[("cheemsbench_open_prompt", "prompts")][0] == 1146  # the paper's, comparable


def test_scaling_runs_on_the_one_benchmark_subset_present(smoke_dir, tmp_path):
    """A release folder with only cheems_bench/open.jsonl and an unsplit preference file: the scaling chapter
    runs both sweeps on the Open Prompt subset (its claims are tested, not untestable) and says in one sentence
    that the Human Instruction subset is missing and which file it needs."""
    import json

    from cheems_lib.publishing.build import build
    from conftest import copy_repo, release_folder

    world = release_folder(smoke_dir, tmp_path / "release", files=("open", "preference"), subset=False)
    (tmp_path / "book").mkdir()
    root = copy_repo(tmp_path / "book")
    params = {"world_dir": str(world), "train_seeds": "1", "points": "2", "sizes": '["tiny-xs", "tiny-s"]',
              "train_epochs": "1", "n_boot": "100"}
    build("smoke", ["scaling"], params, root=root, html=False, log=lambda s: None)
    saved = json.loads((root / "book/_extra/claims/scaling.json").read_text(encoding="utf-8"))["claims"]
    kinds = {c["id"]: c["kind"] for c in saved}
    assert kinds["fig6-data-scaling"] != "untestable" and kinds["fig7-model-scaling"] != "untestable"
    shown = (root / "book/scaling.ipynb").read_text(encoding="utf-8")
    assert "Figs. 6 and 7 on the Human Instruction subset" in shown and "needs `cheems_bench/human.jsonl`" in shown


def test_biases_names_the_model_that_labelled_the_shipped_benchmark(tmp_path):
    """On a copy of data/real the biases chapter names gpt-3.5-turbo as the benchmark's annotators, never
    'Humans made', and the claims about human annotators are untestable with that reason."""
    import json
    import shutil

    from cheems_lib.publishing.build import build
    from conftest import copy_repo

    world = tmp_path / "real"
    shutil.copytree(ROOT / "data/real", world)
    (tmp_path / "book").mkdir()
    root = copy_repo(tmp_path / "book")
    build("smoke", ["biases"], {"world_dir": str(world)}, root=root, html=False, log=lambda s: None)
    saved = json.loads((root / "book/_extra/claims/biases.json").read_text(encoding="utf-8"))["claims"]
    human = [c for c in saved if c["id"] in ("fig15-human-no-position", "fig15-length", "fig15-human-shorter-at-large")]
    assert len(human) == 3 and all(c["kind"] == "untestable" for c in human)
    assert all("the benchmark's labels are gpt-3.5-turbo's, not human" in c["reason"] for c in human)
    page = (root / "book/biases.ipynb").read_text(encoding="utf-8")
    assert "The annotators of cheems_bench/ (gpt-3.5-turbo)" in page and "'Humans'" not in page


# ---- no typed direction --------------------------------------------------------------------------------------------

_DIRECTION = re.compile(
    r"\bwe (?:find|found|show|confirm)\b|\bour\b[^.;]*\b(?:is|are)\b[^.;]*\b(?:higher|lower|better|worse)\b"
    r"|\b(?:confirms|confirmed|reproduces|replicates|replicated)\b|\bnot decided by construction\b"
    r"|\b(?:outperforms?|underperforms?)\b"
    r"|\b(?:higher|lower|better|worse|stronger|weaker|more accurate|less accurate) than\b", re.I)
# a verdict named as a result, unless a glued (computed) value comes first or it defines the rule ("supported when")
_VERDICT = re.compile(r"^(?:(?!⟨glued⟩).)*?\b(?:supported|contradicted)\b(?! when)", re.I)
_ATTRIBUTED = re.compile(r"[\"“”]|\bthe paper\b|\bpaper's\b|§", re.I)  # a quote, or said to be the paper's
_QUESTION = re.compile(r"\bwhether\b|\?$", re.I)  # a question states no result


def _prose_sentences(text: str):
    """The sentences of a chapter's Markdown cells: no front matter, code cells, maths, inline code or
    references; glued values become ``⟨glued⟩``; the verdicts' italic names (the rule's vocabulary) are dropped."""
    text = re.sub(r"^---\n.*?\n---\n", " ", text, flags=re.S)
    text = re.sub(r"```\{code-cell\}.*?```", " ", text, flags=re.S)
    text = re.sub(r"\$\$.*?\$\$|\$[^$\n]+\$", " ", text, flags=re.S)
    text = re.sub(r"\{glue(?::[a-z]+)?\}`[^`]*`", "⟨glued⟩", text)
    text = re.sub(r"\{[a-z:]+\}`[^`]*`|`[^`]*`|\*(?:supported|contradicted|inconclusive|insufficient data)\*", " ", text)
    lines = [ln for ln in text.splitlines() if not re.match(r"\s*(```|:[a-z]+:|\+\+\+|\(.*\)=$)", ln)]
    for para in re.split(r"\n\s*\n", "\n".join(lines)):
        yield from re.split(r"(?<=[.!?])\s+(?=[A-Z*(])", " ".join(para.split()))


def typed_directions(text: str) -> list[str]:
    """Sentences of chapter prose that state a direction or a verdict about our results without being glued
    from the computation or attributed to the paper."""
    return [s for s in _prose_sentences(text) if (_DIRECTION.search(s) or _VERDICT.search(s))
            and not _ATTRIBUTED.search(s) and not _QUESTION.search(s)]


def test_no_chapter_types_a_direction_of_our_results():
    """Every sentence of chapter prose that names a direction or a verdict ("we find", "higher than",
    "supported", "confirms", "not decided by construction") is glued from the computation or attributed to the
    paper (a quote, "the paper", "§"): a typed one can contradict the build it sits in."""
    found = {p.name: typed_directions(p.read_text(encoding="utf-8")) for p in sorted((ROOT / "notebooks").glob("*.md"))}
    assert {name: s for name, s in found.items() if s} == {}


def test_the_direction_guard_catches_the_old_sentences():
    """The guard flags sentences of the kind once typed into chapters, and passes them once attributed or
    glued."""
    old = ["{glue:text}`claim-fig5-cheemsbench-best` The comparators share no prompts with CheemsBench, so the "
           "answer is not decided by construction.",
           "This chapter asks, for the claim that rests on them most (Table 4: the GPT-annotated subset alone "
           "underperforms the human-annotated subset), over which range it holds.",
           "We find that the human subset is supported here.",
           "Our human-annotated model is better than the GPT one."]
    assert all(typed_directions(s) for s in old), [s for s in old if not typed_directions(s)]
    fixed = ["The paper's Table 4 claim is that the GPT-annotated subset alone underperforms the human one.",
             "On this run {glue:text}`n` of the claims are supported.", "A claim is *supported* when its interval "
             "lies above zero.", "It is supported when the interval lies above zero."]
    assert not any(typed_directions(s) for s in fixed), [s for s in fixed if typed_directions(s)]
