"""Every tracked text file reads as the project's own: no tracker numbers, no word about the circumstances a
change was made in (who or what wrote it, in which working period), and no path of one particular machine.

:func:`offences` is the scanner; it is tested on planted strings first, so the test over the repository cannot
pass by matching nothing. The planted strings are built from pieces so that this file passes its own scan.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

TEXT_SUFFIXES = {".md", ".py", ".ipynb", ".yml", ".yaml", ".toml", ".cfg", ".ini", ".txt", ".json", ".cff", ".sh",
                 ".css", ".gitignore", ".bib"}
TEXT_NAMES = {"Makefile"}
TEXT_FOLDERS = (".ci/",)
"""What the scan reads: text by suffix, by name, or by folder (the CI scripts have no suffix). Data files
(.jsonl, .csv) hold the paper's and the upstream projects' texts, which are not ours to word."""

THIRD_PARTY = {"data/real/LICENSES/", "tests/data/cff-1.2.0.schema.json"}
"""Files copied verbatim from other projects (licences, upstream READMEs, the CFF schema): not ours to reword."""

EXEMPT = {("tests/test_chapters.py", "machine path")}
"""(file, rule) pairs the scan skips: the docs test that keeps readers away from the workspace beside a clone
has to name that folder."""

URL = re.compile(r"https?://\S+")
"""A full address is kept whole: an upstream project's issue link says where a fact comes from."""

_S = "sess" + "ion"  # the word, assembled so that this file's own text passes the scan

RULES: list[tuple[str, re.Pattern, re.Pattern | None]] = [
    # (rule, what it flags, what it allows on the same line, removed before matching)
    ("tracker number",
     re.compile(r"\b(?:issues?|tickets?|pull requests?|(?-i:PRs?))[ _-]?#?\d+|\b[\w.-]+/[\w.-]+#\d+", re.I),
     None),
    (_S,
     re.compile(rf"\b{_S}s?\b", re.I),
     re.compile(rf"""scope\s*=\s*["']{_S}["']|start_new_{_S}|\w\.{_S}\b|\b(?:py)?test {_S}s?\b|\bper {_S}\b"""
                rf"|\b(?:its|their) own (?:process )?{_S}\b", re.I)),
    ("AI tooling",
     re.compile(r"\bsub-?agents?\b|\btool[ ]library\b|\b(?:AI|coding|LLM) (?:assistants?|agents?|helpers?)\b"
                r"|\bhelpers? (?:began|begin|begins|started|ran|runs|worked|wrote|measured|found|reported|edited)\b"
                r"|\bby (?:a|an|another|one) helper\b(?! (?:function|method|module|class|script|file))"
                r"|\b(?:two|three|four|five|several) helpers\b(?! (?:functions|methods|modules|classes|scripts))"
                r"|\bclaude[ ]code\b|\b(?:written|generated|edited) (?:by|with) (?:an? )?(?:AI|Claude|ChatGPT|Copilot)\b",
                re.I),
     None),
    ("machine path",
     re.compile(r"(?<![\w.~-])/(?:wor" r"k|home|Users|root)/|\bC:\\\\?Users\b|\.\./shar" r"ed(?!/real)", re.I),
     None),
]


def offences(text: str) -> list[tuple[int, str, str]]:
    """``(line number, rule, line)`` for each line of ``text`` that breaks a rule, in line order; a line that
    breaks two rules is listed once per rule. Full addresses are removed first, then each rule's allowed uses."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        bare = URL.sub(" ", line)
        for rule, pattern, allowed in RULES:
            probe = allowed.sub(" ", bare) if allowed else bare
            if pattern.search(probe):
                found.append((number, rule, line.strip()))
    return found


def text_files() -> list[str]:
    """The files the scan reads, relative to the repository root: tracked ones, and new ones git does not ignore
    (so a file is checked before its first commit)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout
    paths = sorted({p for p in listed.decode().split("\0") if p})
    return [p for p in paths
            if (Path(p).suffix in TEXT_SUFFIXES or Path(p).name in TEXT_NAMES or Path(p).name == ".gitignore"
                or p.startswith(TEXT_FOLDERS))
            and not any(p.startswith(t) for t in THIRD_PARTY) and (ROOT / p).is_file()]


# ---- the scanner on planted strings ------------------------------------------------------------------------------

ISSUE = "iss" + "ue"


class TestOffences:
    @pytest.mark.parametrize("line", [
        f"the conflicts page names its prompt ({ISSUE} 27)",
        f"{ISSUE.title()} 29: the claims ledger is sortable",
        f"measured for {ISSUE}s 12 and 13",
        f"see {ISSUE} #12",
        f"{ISSUE.upper()}_14_IDS = (",
        f"{ISSUE.title()} 4's quality bar",
        "pytest 9.2 drops the group (pytest-dev/pytest-xdist" + "#1386)",
    ])
    def test_tracker_numbers_are_caught(self, line):
        """Each written form of a tracker number is flagged, whatever its case."""
        assert [rule for _, rule, _ in offences(line)] == ["tracker number"]

    @pytest.mark.parametrize("line", [
        f"see https://github.com/huggingface/trl/{ISSUE}s/1234 for the upstream bug",
        "the tissue 3 sample", "an issue-date field", "Table 12 and Fig. 13",
        "the issue's corrections: HH-RLHF is human",
    ])
    def test_tracker_rule_passes_clean_lines(self, line):
        """Full upstream addresses, words ending in the letters, and tracker words without a number pass."""
        assert offences(line) == []

    @pytest.mark.parametrize("line", [f"measured in this {_S}", f"two {_S}s ago", f"{_S.title()} notes"])
    def test_the_word_is_caught(self, line):
        """The word, in any case and in the plural, is flagged outside pytest's and POSIX's uses of it."""
        assert [rule for _, rule, _ in offences(line)] == [_S]

    @pytest.mark.parametrize("line", [
        f'@pytest.fixture(scope="{_S}")', f"@pytest.fixture(scope='{_S}')", f"def pytest_{_S}start({_S}start):",
        f"subprocess.run(cmd, start_new_{_S}=True)", f"request.{_S}.config", f"a smoke book, built once per {_S}",
        f"in a long test {_S}, kernels may differ", f"they run in their own {_S}, so Ctrl-C does not reach them",
    ])
    def test_pytest_and_posix_uses_pass(self, line):
        """pytest's scope, hook names and test run, and a process's own POSIX group, are allowed."""
        assert offences(line) == []

    @pytest.mark.parametrize("line", [
        "measured by a " + "helper while the machine was shared", "two help" + "ers began work during it",
        "the tool " + "library says", "handed to a sub" + "agent", "an AI " + "assistant wrote this",
        "written by " + "Claude",
    ])
    def test_ai_tooling_is_caught(self, line):
        """Words about assistants, agents or helpers doing the work are flagged."""
        assert [rule for _, rule, _ in offences(line)] == ["AI tooling"]

    @pytest.mark.parametrize("line", [
        "a helper function for the bootstrap", "class TestChapterHelpers:", "the assistant turn of the template",
        '{"role": "assistant", "content": response}', "responses generated by GPT-4 and Claude-4",
        "the judge prompt's assistant letter",
    ])
    def test_ai_rule_passes_the_domain(self, line):
        """Chat roles, code helpers and the models the data talks about pass."""
        assert offences(line) == []

    @pytest.mark.parametrize("line", [
        "/wor" + "k/main/.venv/bin/python", "cd /ho" + "me/alice/cheems", "open /Us" + "ers/bob/data.csv",
        "copied to /ro" + "ot/cache", r"C:\Us" + r"ers\carol\cheems", "see ../shar" + "ed/spec/README.md",
    ])
    def test_machine_paths_are_caught(self, line):
        """Home folders, the workspace and the spec beside a clone are flagged."""
        assert [rule for _, rule, _ in offences(line)] == ["machine path"]

    @pytest.mark.parametrize("line", [
        "cheems import real ../shar" + "ed/real -o data/real", "git archive OLD | tar -x -C /tmp/old",
        "root / 'build' / 'zoo'", "~/.cache/cheems/file_hashes.json", "the framework/home/ page",
    ])
    def test_machine_path_rule_passes_clean_lines(self, line):
        """The importers' default source, temporary folders, relative paths and the user cache pass."""
        assert offences(line) == []

    def test_line_numbers_and_rules_are_reported(self):
        """Each offending line is reported once per rule, with its 1-based number."""
        text = f"clean\n{ISSUE} 3 in this {_S}\nclean\n/ho" + "me/x/"
        assert offences(text) == [(2, "tracker number", f"{ISSUE} 3 in this {_S}"),
                                  (2, _S, f"{ISSUE} 3 in this {_S}"), (4, "machine path", "/ho" + "me/x/")]


def test_text_files_cover_the_repository():
    """The scan reads the code, the docs, the configs and the CI script, and no data file."""
    files = set(text_files())
    for expected in ("README.md", "Makefile", "pyproject.toml", ".ci/run", "cheems_lib/metrics.py",
                     "tests/test_repository_text.py", "benchmarks/README.md", "configs/models.yaml",
                     "book/references.bib", "notebooks/data.md", "cheems_lib/publishing/static/cheems.css"):
        assert expected in files, expected
    assert not [p for p in files if p.endswith((".jsonl", ".csv", ".xz", ".png"))]


# ---- the repository ----------------------------------------------------------------------------------------------

def test_tracked_text_names_no_tracker_circumstance_or_machine():
    """No tracked text file carries a tracker number, the s-word outside pytest's and POSIX's uses, words about
    AI tooling doing the work, or a path of one machine. Fix: say what is true of the project instead."""
    problems = []
    for path in text_files():
        text = (ROOT / path).read_text(encoding="utf-8", errors="replace")
        problems += [f"{path}:{n}: [{rule}] {line[:140]}" for n, rule, line in offences(text)
                     if (path, rule) not in EXEMPT]
    assert not problems, f"{len(problems)} lines to reword:\n" + "\n".join(problems)
