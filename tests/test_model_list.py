"""The models file: parsed entries, one-line errors naming file, line, entry and fix, and how it combines with
the chapter's `models` and `judges` lists."""
from __future__ import annotations

import pytest

from cheems_lib.publishing.model_list import ZOO_NAMES, choose, read_models_file
from cheems_lib.input_files import DataError
from conftest import ROOT


def write(tmp_path, text: str):
    path = tmp_path / "models.yaml"
    path.write_text(text, encoding="utf-8")
    return path


class TestReadModelsFile:
    def test_every_kind_of_entry(self, tmp_path):
        """A string is a path named after itself; `name:` renames; zoo and baseline entries are kept apart."""
        read = read_models_file(write(tmp_path, "models:\n  - org/rm\n  - path: runs/rm\n    name: mine\n"
                                                "  - zoo: tiny · human subset\n  - baseline:longest\n"
                                                "judges:\n  - path: org/judge\n"))
        assert read.models == {"org/rm": "org/rm", "mine": "runs/rm"}
        assert read.zoo == ["tiny · human subset"] and read.baselines == ["baseline:longest"]
        assert read.judges == {"org/judge": "org/judge"}

    def test_the_shipped_example_reads(self):
        """configs/models.yaml, the command-line page's example, is a valid models file."""
        read = read_models_file(ROOT / "configs" / "models.yaml")
        assert read.models and read.zoo and read.baselines and read.judges

    @pytest.mark.parametrize("text, line, says, fix", [
        ("models:\n  - pth: org/rm\n", 2, 'models entry 1: unknown key "pth"', "use path, zoo, name"),
        ("models:\n  - org/a\n  - zoo: tiny\n", 3, 'models entry 2: no zoo model "tiny"', "use one of " + ZOO_NAMES[0]),
        ("models:\n  - baseline:longer\n", 2, 'models entry 1: "baseline:longer" is not a model', "baseline:random"),
        ("judges:\n  - baseline:random\n", 2, 'judges entry 1: "baseline:random" is not a judge', "under models"),
        ("models:\n  - org/a\n  - path: org/b\n    name: org/a\n", 3, 'the name "org/a" repeats line 2', "name:"),
        ("models:\n  - path: a\n    zoo: tiny · human subset\n", 2, "needs exactly one of path or zoo", "zoo name"),
        ("models: org/rm\n", 1, "models: not a list", "`- `"),
        ("judge:\n  - org/j\n", 1, 'unknown section "judge"', "use models and judges"),
        ("models:\n  - [a, b]\n", 2, "models entry 1: not a path or a mapping", "hub name"),
        ("models:\n  - path: [a]\n", 2, "models entry 1: path must be a non-empty string", "path: TEXT"),
        ("models:\n  - a\n - b\n", 3, "not valid YAML", "YAML syntax"),
        ("", None, "not a mapping with `models:`", "start the file with `models:`"),
        ("judges:\n  - ./no/such/judge\n", 2, 'judges entry 1: no such folder "./no/such/judge"', "hub name"),
    ])
    def test_bad_files_give_one_line(self, tmp_path, text, line, says, fix):
        """Each mistake stops with one line: the file, the line, the entry, what is wrong and the fix."""
        path = write(tmp_path, text)
        with pytest.raises(DataError) as e:
            read_models_file(path)
        msg = str(e.value)
        assert "\n" not in msg and msg.startswith(f"{path}:{line}: " if line else f"{path}: ")
        assert says in msg and fix in msg.split("(fix: ", 1)[1]


class TestChoose:
    def test_without_a_file_the_lists_decide(self):
        """No file: `models` and `judges` as they are, and the zoo (None) trained only when no model is named."""
        c = choose(["org/rm"], [], "")
        assert c.models == {"org/rm": "org/rm"} and c.zoo is None and c.judges == {}

    def test_the_file_adds_after_the_lists(self, tmp_path):
        """The file's models and judges follow the lists'; a path given twice is one row; zoo entries pick zoo models."""
        path = write(tmp_path, "models:\n  - org/rm\n  - path: runs/rm\n    name: mine\n  - zoo: tiny · GPT subset\n"
                               "judges:\n  - org/judge\n")
        c = choose(["org/rm", "org/other"], ["org/j0"], path)
        assert list(c.models.items()) == [("org/rm", "org/rm"), ("org/other", "org/other"), ("mine", "runs/rm")]
        assert c.zoo == ["tiny · GPT subset"] and list(c.judges) == ["org/j0", "org/judge"]

    def test_a_name_for_two_paths_is_refused(self, tmp_path):
        """A file's row name that the lists use for another path is an error naming the file."""
        path = write(tmp_path, "models:\n  - path: runs/rm\n    name: org/rm\n")
        with pytest.raises(DataError, match=rf"^{path}: the name \"org/rm\""):
            choose(["org/rm"], [], path)
