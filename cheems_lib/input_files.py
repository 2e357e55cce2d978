"""Input files: how every file the project reads is opened, decoded and refused.

Every line-based input (JSON Lines records, score files, id lists) is split by :func:`text_lines`, and every
whole document by :func:`read_text` / :func:`read_json` / :func:`json_rows`, so that a file saved on any system reads the same: UTF-8
with or without a byte order mark, any line ending, compressed (``.xz``, ``.gz``, ``.bz2``) or not. What goes
wrong is a :class:`DataError`, whose message is one line naming the file, the line and the fix; values in it are
shown as the user wrote them, as JSON (:func:`show`). Before a command reads anything, :func:`check_not_input`
refuses an output that would overwrite one of its inputs and :func:`distinct_files` one file given twice.
"""
from __future__ import annotations

import ast
import json
import os
import stat
from pathlib import Path
from typing import Any, Iterator

import orjson

from .outputs import LOOP, classify_output

__all__ = ["DataError", "show", "open_text_file", "text_lines", "read_text", "read_json", "json_lines",
           "json_rows", "text_list",
           "check_not_input", "distinct_files"]


class DataError(ValueError):
    """Bad input: ``file:line: what is wrong (fix: what to do)``, always one line."""

    def __init__(self, path: str | Path | None, line: int | None, message: str, fix: str = ""):
        self.path, self.line, self.problem, self.fix = path, line, message, fix
        where = f"{path}:{line}" if line else str(path or "<input>")
        super().__init__(f"{where}: {message}" + (f" (fix: {fix})" if fix else ""))


def show(value: Any) -> str:
    """A value as JSON, for messages: ``true``, ``null``, ``"a"``, ``[1, 2]``, not Python's ``True``, ``None``, ``'a'``.

    The values in messages come from JSON files, so they are shown as the user wrote them.

    >>> show(True), show(None), show("是"), show(["a", 1])
    ('true', 'null', '"是"', '["a", 1]')
    """
    return json.dumps(value, ensure_ascii=False, default=str)


def _not_utf8(path, line: int | None, data: bytes, e: UnicodeDecodeError) -> DataError:
    return DataError(path, line, f"not UTF-8 text (byte 0x{data[e.start]:02x} at byte {e.start + 1:,} of the "
                     f"{'line' if line else 'file'})", "save the file as UTF-8")


def _decode(raw: bytes, path, n: int) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as u:
            raise _not_utf8(path, n, raw, u) from None
        try:  # NaN/Infinity: valid for Python's json, reported later as a bad value
            obj = json.loads(raw)
        except RecursionError:  # deeper than orjson's limit and Python's stack: no record is nested like this
            raise DataError(path, n, f"malformed JSON ({e.msg}): nested too deeply",
                            "one flat JSON object per line") from None
        except ValueError:
            raise DataError(path, n, f"malformed JSON ({e.msg})", "one JSON object per line") from None
        try:  # a lone surrogate escape (\ud800) decodes in Python but is no Unicode text: nothing could write it
            orjson.dumps(obj)
        except TypeError:
            raise DataError(path, n, "a string holds a lone UTF-16 surrogate escape such as \\ud800",
                            "remove the escape or pair it with its other half") from None
        return obj


_COMPRESSED = {".xz": "lzma", ".gz": "gzip", ".bz2": "bz2"}


def open_text_file(path: str | Path):
    """``path`` opened for reading bytes, decompressed on the fly when it ends in ``.xz``, ``.gz`` or ``.bz2``.

    Large real files ship compressed (``data/real``); every reader takes them as they are.
    """
    module = _COMPRESSED.get(Path(path).suffix.lower())
    if module is None:
        return open(path, "rb")
    import importlib

    if Path(path).is_dir():
        raise IsADirectoryError(path)
    return importlib.import_module(module).open(path, "rb")


_UTF8_BOM = b"\xef\xbb\xbf"
_OTHER_BOMS = ((b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe\x00\x00", "UTF-32"), (b"\xfe\xff", "UTF-16"),
               (b"\xff\xfe", "UTF-16"))


def _other_encoding(path, head: bytes) -> None:
    for bom, name in _OTHER_BOMS:
        if head.startswith(bom):
            raise DataError(path, 1, f"is {name} text (it starts with a {name} byte order mark)", "save the file as UTF-8")


def _open_input(path, what: str = "file"):
    try:
        return open_text_file(path)
    except IsADirectoryError:
        raise DataError(path, None, f"is a folder, not a {what}", "pass the file inside it") from None
    except OSError as e:
        raise DataError(path, None, f"cannot open: {e.strerror}") from None


def text_lines(path: str | Path) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes without the line ending) of every line of a text file: how every line-based input is
    split (JSON Lines records, score files, id lists).

    Decoded the way Python's text mode decodes (so that a file saved on any system reads the same): a UTF-8
    byte order mark is dropped, ``\\r\\n``, ``\\n`` and a lone ``\\r`` all end a line (JSON text cannot hold a raw
    carriage return, so no record is split). A UTF-16 or UTF-32 file is refused with the fix. Compressed files
    are read through :func:`open_text_file`.
    """
    with _open_input(path) as fh:
        n = 0
        for k, raw in enumerate(fh):
            if k == 0:
                _other_encoding(path, raw)
                raw = raw.removeprefix(_UTF8_BOM)
            body = raw.removesuffix(b"\n").removesuffix(b"\r")
            for part in body.split(b"\r") if b"\r" in body else (body,):
                n += 1
                yield n, part


def read_text(path: str | Path, *, newlines: bool = True) -> str:
    """A whole text file as a string, decoded as :func:`text_lines` splits lines: UTF-8 (a byte order mark
    dropped), every line ending read as ``\\n`` (``newlines=False`` keeps them, for a CSV reader, whose quoted cells
    may hold a line break that belongs to the text); bytes that are not UTF-8 are a :class:`DataError` naming the
    line."""
    with _open_input(path) as fh:
        data = fh.read()
    _other_encoding(path, data[:4])
    try:
        text = data.removeprefix(_UTF8_BOM).decode("utf-8")
    except UnicodeDecodeError as e:
        before = data[:e.start]
        start = max(before.rfind(b"\n"), before.rfind(b"\r")) + 1
        line = before.count(b"\n") + before.count(b"\r") - before.count(b"\r\n") + 1  # \r\n, \n and \r end a line
        raise _not_utf8(path, line, data[start:], UnicodeDecodeError(
            e.encoding, e.object, e.start - start, e.end - start, e.reason)) from None
    return text.replace("\r\n", "\n").replace("\r", "\n") if newlines else text


def read_json(path: str | Path, fix: str = "fix the file, or remove it") -> Any:
    """One JSON document (a manifest, a summary) read with :func:`read_text`; malformed JSON is a one-line
    :class:`DataError` naming the line."""
    text = read_text(path)
    try:
        return json.loads(text)
    except RecursionError:
        raise DataError(path, None, "malformed JSON: nested too deeply", fix) from None
    except json.JSONDecodeError as e:
        raise DataError(path, e.lineno, f"malformed JSON ({e.msg})", fix) from None


def json_lines(path: Path, skipped: list | None = None) -> Iterator[tuple[int, Any]]:
    """Yield (line number, decoded object) for each non-blank line (:func:`text_lines`); bad lines go to
    ``skipped`` if given."""
    if Path(path).is_dir():
        raise DataError(path, None, "is a folder, not a JSONL file", "pass the .jsonl file inside it")
    for n, raw in text_lines(path):
        if not raw.strip():
            continue
        try:
            obj = _decode(raw, path, n)
        except DataError as e:
            if skipped is None:
                raise
            skipped.append(e)
            continue
        yield n, obj


def json_rows(path: Path) -> Iterator[tuple[int, Any]]:
    """(line, object) of a JSON array file (line where each element starts) or of a JSON Lines file."""
    text = read_text(path)
    if not text.lstrip().startswith("["):
        yield from json_lines(path)
        return
    decoder, pos = json.JSONDecoder(), text.index("[") + 1
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos < len(text) and text[pos] == "]":
            return
        line = text.count("\n", 0, pos) + 1
        try:
            obj, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            raise DataError(path, e.lineno, f"malformed JSON ({e.msg})", "one JSON array of objects") from None
        except RecursionError:
            raise DataError(path, line, "malformed JSON: nested too deeply", "one JSON array of flat objects") from None
        yield line, obj


def text_list(value: Any) -> Any:
    """A field that upstream files store as a JSON list or as the text of a Python list (LLMZoo's ``answers`` and
    ``model_ids`` in some versions, WritingPreferenceBench's genre tags), as a list; any other value unchanged.

    >>> text_list("['a', 'b']"), text_list(["a"]), text_list("[not a list")
    (['a', 'b'], ['a'], '[not a list')
    """
    if isinstance(value, str) and value.startswith("["):
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return value
    return value


def distinct_files(paths: list[Path]) -> None:
    """Refuse one file given twice (also under two names: a link, ``./a`` and ``a``)."""
    seen: dict[object, Path] = {}
    for p in paths:
        try:
            st = os.stat(p)
            key: object = (st.st_dev, st.st_ino)
        except OSError:  # missing: read_records names it
            key = p.resolve()
        if key in seen:
            also = "" if str(seen[key]) == str(p) else f" (also as {seen[key]})"
            raise DataError(p, None, f"the same file is given twice{also}", "pass each file once")
        seen[key] = p


def _identity(path: str | Path) -> tuple[int, int] | None:
    """``(st_dev, st_ino)`` of the regular file or folder ``path`` names after symbolic links; None for
    anything else (absent, a device, a pipe, a loop)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode) else None


def _inside(path: str | Path, folder: tuple[int, int]) -> bool:
    """Whether ``path`` (after symbolic links), or a folder above it, is the folder whose identity is ``folder``."""
    p = Path(os.path.realpath(path))
    return any(_identity(q) == folder for q in (p, *p.parents))


def check_not_input(output: str | Path | None, inputs, *, folder: bool = False, flag: str = "-o") -> None:
    """Refuse an output that would overwrite what the same command reads, before anything is read or written:
    a :class:`DataError` (the command line's one line, exit 2) when

    * ``output`` is one of ``inputs``: the same file or folder, compared by ``(st_dev, st_ino)`` after
      symbolic links, so a link or a hard link to an input is that input;
    * ``output`` lies inside an input that is a folder (a folder input is read whole, so what is written
      into it would be read by the next run);
    * with ``folder`` (a folder output that a run replaces whole: ``train --output``), an input lies inside
      ``output``.

    ``inputs`` are ``(flag, path)`` pairs (the flag names the input in the message, "" for a positional
    argument; a path of None is skipped). An output that is absent, a device, a pipe or a link loop can overwrite no input here (the
    writer refuses a loop itself); ``flag`` names the output option in the fix.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()); (d / "in.jsonl").write_text("{}")
    2
    >>> (d / "same.jsonl").hardlink_to(d / "in.jsonl")
    >>> check_not_input(d / "same.jsonl", [("--gpt", d / "in.jsonl")])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    cheems_lib.input_files.DataError: ...same.jsonl: is also a --gpt input (...in.jsonl, the same file); ...
    """
    if output is None or classify_output(output).kind == LOOP:
        return
    mine = _identity(output)
    for name, path in inputs:
        theirs = None if path is None else _identity(path)
        if theirs is None:
            continue
        what = f"a {name} input" if name else "an input"
        if theirs == mine:
            same = "" if os.path.abspath(path) == os.path.abspath(output) else f" ({path}, the same file)"
            raise DataError(output, None, f"is also {what}{same}; writing it would overwrite what the command reads, "
                            "so nothing was written", f"write to another path ({flag} ...)")
        if os.path.isdir(path) and _inside(output, theirs):
            raise DataError(output, None, f"lies inside {what}, the folder {path}, which the command reads whole; "
                            "nothing was written", f"write outside that folder ({flag} ...)")
        if folder and mine is not None and _inside(path, mine):
            raise DataError(output, None, f"holds {what}, {path}, which the run would replace with its output; "
                            f"nothing was written", f"move the input out of the folder, or pass another {flag}")
