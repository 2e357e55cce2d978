"""GGUF checkpoints converted into Hugging Face folders, never into an existing one."""
from __future__ import annotations

import pytest

from cheems_lib.models import gguf


def test_convert_gguf_refuses_an_existing_folder(tmp_path):
    """convert_gguf never writes into an existing folder: it raises and leaves the folder as it was."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="already exists"):
        gguf.convert_gguf(tmp_path / "missing.gguf", out)
    assert [p.name for p in out.iterdir()] == ["keep.txt"] and list(tmp_path.iterdir()) == [out]
