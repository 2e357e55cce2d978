"""Records: the official CheemsRM file formats, read, validated and written.

One JSON Lines record per prompt (spec §1: the book's page "Use your own data", ``book/own_data.md``)::

    {"id": "p1", "input": "你好", "category": ["理解"],
     "responses": [{"id": "a", "content": "..."}, {"id": "b", "content": "..."}],
     "annotations": [["a", "b", "1"]], "rank": {"a": 0, "b": 1}}

The official pairwise form ``{"input", "answer1", "answer2", "preference"}`` is grouped
by prompt text into the same records (response ids = md5 of content). Score files
(spec §4) are read and written by :mod:`cheems_lib.score_file`.

Every problem raises :class:`DataError`, whose message is one line naming the file,
the line and the fix; nothing is dropped silently. Readers take ``skipped=[]`` to keep
every valid row instead: each invalid row's :class:`DataError` is appended to that list
(the command line's ``--skip-invalid`` prints them and their total). :func:`read_files` is
what every command reads its input files with: prompt ids distinct within and across the
files, one file never given twice, and a file with no valid row an error even when skipping.
Values in messages are shown as JSON (:func:`show`).
"""
from __future__ import annotations

import csv
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

import orjson
from .outputs import atomic_open

__all__ = [
    "DataError", "Response", "Record", "md5", "read_records", "write_records",
    "parse_record", "from_pairwise", "read_pairwise_table", "strict_pairs", "to_pairs",
    "data_fingerprint", "unique_records", "read_files", "preference", "json_lines", "show", "TIE", "FIRST", "SECOND",
]

TIE, FIRST, SECOND = "0", "1", "2"
_PREFERENCE = {  # accepted spellings of a preference, normalised to the official strings
    "0": TIE, 0: TIE, "tie": TIE, "=": TIE,
    "1": FIRST, 1: FIRST, "a": FIRST, "A": FIRST,
    "2": SECOND, 2: SECOND, "b": SECOND, "B": SECOND,
}


def preference(p: Any) -> str | None:
    """The official preference string of ``p``, or None when ``p`` is not a preference.

    Booleans are refused: ``False == 0`` in Python, so a dictionary lookup would read
    ``false`` as a tie.
    """
    if isinstance(p, bool) or not isinstance(p, (str, int)):
        return None
    return _PREFERENCE.get(p)


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


def md5(text: str) -> str:
    """Hex md5 of UTF-8 text: the official id of prompts and responses.

    >>> md5("你好")
    '7eca689f0d3389d9dea66ae112e5cfd7'
    """
    return hashlib.md5(text.encode("utf-8")).hexdigest()


@dataclass(slots=True)
class Response:
    """One candidate response."""

    id: str
    content: str


@dataclass(slots=True)
class Record:
    """One prompt with its responses, raw annotations and resolved ranking.

    ``annotations`` holds ``(id_a, id_b, p)`` triples in presentation order (``a`` shown
    first), ``p`` in ``{"1", "2", "0"}``; ``rank`` maps response id to round (lower is
    better, equal is a tie). ``extra`` keeps unknown fields so they are written back.
    """

    prompt: str
    responses: list[Response]
    id: str = ""
    annotations: list[tuple[str, str, str]] = field(default_factory=list)
    rank: dict[str, int] | None = None
    category: list[str] | None = None
    sys_prompt: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    origin: str = field(default="", compare=False)  # "file:line" it was read from, for error messages

    def __post_init__(self):
        if not self.id:
            self.id = md5(self.prompt)

    @property
    def top_category(self) -> str:
        """First element of the taxonomy path, used for macro-averaging."""
        return self.category[0] if self.category else "uncategorized"

    @property
    def response_ids(self) -> list[str]:
        return [r.id for r in self.responses]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "input": self.prompt}
        if self.sys_prompt is not None:
            out["sys_prompt"] = self.sys_prompt
        if self.category is not None:
            out["category"] = self.category
        out["responses"] = [{"id": r.id, "content": r.content} for r in self.responses]
        if self.annotations:
            out["annotations"] = [list(a) for a in self.annotations]
        if self.rank is not None:
            out["rank"] = self.rank
        out.update(self.extra)
        return out


def strict_pairs(rank: Mapping[str, int], ids: Iterable[str] | None = None) -> list[tuple[str, str]]:
    """The strictly ordered ``(better, worse)`` pairs of a ranking: ``rank[better] < rank[worse]``.

    This is the paper's central object: the Bradley-Terry training pairs, the comparisons
    of the accuracy metric (Eq. 1) and Table 1's "comparisons excluding ties". Ties give
    no pair. Pairs come in a fixed order, since seeded draws and training batches depend
    on it: ``better`` runs over ``ids``, then ``worse`` over ``ids`` again. ``ids``
    defaults to the rank's keys in their order; pass a record's ``response_ids`` for
    response order instead. Ids the rank lacks (unranked responses) are skipped.

    >>> strict_pairs({"a": 1, "b": 0, "c": 1})
    [('b', 'a'), ('b', 'c')]
    >>> strict_pairs({"a": 1, "b": 0, "c": 1}, ids=["c", "x", "b", "a"])
    [('b', 'c'), ('b', 'a')]
    """
    order = [i for i in ids if i in rank] if ids is not None else list(rank)
    return [(a, b) for a in order for b in order if rank[a] < rank[b]]


_KNOWN = {"id", "input", "prompt", "responses", "annotations", "rank", "category", "sys_prompt"}


def parse_record(obj: Any, path: str | Path | None = None, line: int | None = None) -> Record:
    """Validate one decoded JSON object of the grouped form and return a :class:`Record`."""

    def fail(msg: str, fix: str = "") -> DataError:
        return DataError(path, line, msg, fix)

    if not isinstance(obj, dict):
        raise fail(f"expected a JSON object, got {type(obj).__name__}")
    prompt = obj.get("input", obj.get("prompt"))
    if not isinstance(prompt, str):
        raise fail("missing or non-string 'input'", "give the prompt text as \"input\" (or \"prompt\")")
    raw = obj.get("responses")
    if not isinstance(raw, list) or not raw:
        raise fail("missing or empty 'responses'", "give a list of {\"id\", \"content\"} objects")
    responses, seen = [], set()
    for k, r in enumerate(raw):
        if isinstance(r, str):  # bare strings: id = md5 of content, like the official ids
            r = {"content": r}
        if not isinstance(r, dict) or not isinstance(r.get("content"), str):
            raise fail(f"responses[{k}] has no string 'content'")
        rid = r.get("id") or md5(r["content"])
        if not isinstance(rid, str):
            raise fail(f"responses[{k}].id must be a string, got {show(rid)}")
        if rid in seen:
            raise fail(f"duplicate response id {show(rid)}", "response ids must be unique within a record")
        seen.add(rid)
        responses.append(Response(rid, r["content"]))
    annotations = []
    for k, a in enumerate(obj.get("annotations") or []):
        if not isinstance(a, (list, tuple)) or len(a) != 3:
            raise fail(f"annotations[{k}] must be [id_a, id_b, p], got {show(a)}")
        ida, idb, p = a
        for rid in (ida, idb):
            if rid not in seen:
                raise fail(f"annotations[{k}] names unknown response id {show(rid)}",
                           "use ids from this record's 'responses'")
        if ida == idb:
            raise fail(f"annotations[{k}] compares response {show(ida)} with itself")
        if preference(p) is None:
            raise fail(f"annotations[{k}] has preference {show(p)}", 'use "1" (a better), "2" (b better) or "0" (tie)')
        annotations.append((ida, idb, preference(p)))
    rank = obj.get("rank")
    if rank is not None:
        if not isinstance(rank, dict):
            raise fail("'rank' must be an object {response_id: int}")
        for rid, v in rank.items():
            if rid not in seen:
                raise fail(f"'rank' names unknown response id {show(rid)}", "use ids from this record's 'responses'")
            if not isinstance(v, int) or isinstance(v, bool):
                raise fail(f"rank of {show(rid)} must be an integer, got {show(v)}")
    category = obj.get("category")
    if isinstance(category, str):
        category = [category]
    if category is not None and not (isinstance(category, list) and all(isinstance(c, str) for c in category)):
        raise fail("'category' must be a list of strings")
    pid = obj.get("id")
    if pid is not None and not isinstance(pid, str):
        pid = str(pid)
    return Record(prompt=prompt, responses=responses, id=pid or "", annotations=annotations,
                  rank=rank, category=category, sys_prompt=obj.get("sys_prompt"),
                  extra={k: v for k, v in obj.items() if k not in _KNOWN},
                  origin=f"{path}:{line}" if path else "")


def _decode(raw: bytes, path, n: int) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        try:  # NaN/Infinity: valid for Python's json, reported later as a bad value
            obj = json.loads(raw)
        except ValueError:
            raise DataError(path, n, f"malformed JSON ({e.msg})", "one JSON object per line") from None
        try:  # a lone surrogate escape (\ud800) decodes in Python but is no Unicode text: nothing could write it
            orjson.dumps(obj)
        except TypeError:
            raise DataError(path, n, "a string holds a lone UTF-16 surrogate escape such as \\ud800",
                            "remove the escape or pair it with its other half") from None
        return obj


def json_lines(path: Path, skipped: list | None = None) -> Iterator[tuple[int, Any]]:
    """Yield (line number, decoded object) for each non-blank line; bad lines go to ``skipped`` if given."""
    try:
        fh = open(path, "rb")
    except IsADirectoryError:
        raise DataError(path, None, "is a folder, not a JSONL file", "pass the .jsonl file inside it") from None
    except OSError as e:
        raise DataError(path, None, f"cannot open: {e.strerror}") from None
    with fh:
        for n, raw in enumerate(fh, 1):
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


def read_records(path: str | Path, *, skipped: list | None = None, need_rank: bool = False) -> list[Record]:
    """Read a JSONL file of grouped records or of official pairwise lines.

    Pairwise lines (``answer1``/``answer2``/``preference``) are grouped by prompt text in
    order of first appearance; the two forms may not be mixed in one file (the form of
    the first valid line decides). With ``skipped`` (a list), an invalid line is appended
    there as a :class:`DataError` and the rest of the file is still read. ``need_rank``: a
    record without ``rank`` is invalid too (what evaluating and training need).
    """
    path = Path(path)
    records: list[Record] = []
    pairwise: list[tuple[int, dict]] = []
    for n, obj in json_lines(path, skipped):
        try:
            if isinstance(obj, dict) and "answer1" in obj:
                if records:
                    raise DataError(path, n, "pairwise line in a file of grouped records", "keep one form per file")
                _pairwise_row(path, n, obj.get("input", obj.get("prompt")), obj.get("answer1"), obj.get("answer2"),
                              obj.get("preference"))  # here, so the first bad line in file order is reported
                pairwise.append((n, obj))
            else:
                if pairwise:
                    raise DataError(path, n, "grouped record in a file of pairwise lines", "keep one form per file")
                rec = parse_record(obj, path, n)
                records.append(rec if not need_rank else _ranked(rec))
        except DataError as e:
            if skipped is None:
                raise
            skipped.append(e)
    if pairwise:
        records = from_pairwise(((n, o.get("input", o.get("prompt")), o.get("answer1"), o.get("answer2"),
                                  o.get("preference"), o) for n, o in pairwise), path=path, skipped=skipped)
        if need_rank:  # the pairwise form has no rank
            records = [r for r in records if _keep(_ranked, r, skipped)]
    return records


def _ranked(rec: Record) -> Record:
    """``rec``, or a :class:`DataError` when it has no ``rank``."""
    if rec.rank is None:
        raise DataError(*_where(rec), f"prompt {show(rec.id)} has no 'rank'", "run `cheems resolve` on the file first")
    return rec


def _keep(check: Callable[[Record], Record], rec: Record, skipped: list | None) -> bool:
    """Whether ``check(rec)`` passes; a failure raises, or with ``skipped`` is appended there."""
    try:
        check(rec)
        return True
    except DataError as e:
        if skipped is None:
            raise
        skipped.append(e)
        return False


def write_records(records: Iterable[Record], path: str | Path) -> int:
    """Write records as JSONL (UTF-8, unescaped Chinese), atomically; returns the number written.

    The file appears at ``path`` only when complete (:func:`cheems_lib.outputs.atomic_open`),
    so writing over the input file is safe too.
    """
    n = 0
    with atomic_open(path, "wb") as fh:
        for r in records:
            fh.write(orjson.dumps(r.to_json()) + b"\n")
            n += 1
    return n


def _where(rec: Record) -> tuple[str | None, int | None]:
    """(file, line) of a record, from its ``origin``."""
    path, _, line = (rec.origin or "").rpartition(":")
    return (path, int(line)) if line.isdigit() else (rec.origin or None, None)


def unique_records(records: Iterable[Record], *, skipped: list | None = None) -> list[Record]:
    """``records`` with distinct prompt ids; a repeated id raises (or, with ``skipped``, the repeat is skipped).

    Scores are keyed by (prompt id, response id), so two records with one id would share
    scores and break evaluation and resuming, and training would count the prompt twice.
    A repeat is refused even when its content equals the first record's: the same prompt
    in two files of one command is a mistake in the files (or one file given twice).
    """
    first: dict[str, Record] = {}
    out = []
    for rec in records:
        prev = first.get(rec.id)
        if prev is None:
            first[rec.id] = rec
            out.append(rec)
            continue
        same = " with the same content" if (prev.prompt, prev.responses) == (rec.prompt, rec.responses) else ""
        err = DataError(*_where(rec), f"prompt id {show(rec.id)} repeats the record at "
                        f"{prev.origin or 'an earlier line'}{same}",
                        "give each prompt its own id, or keep only one of the two records")
        if skipped is None:
            raise err
        skipped.append(err)
    return out


def _distinct_files(paths: list[Path]) -> None:
    """Refuse one file given twice (also under two names: a link, ``./a`` and ``a``)."""
    import os

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


def read_files(paths: Iterable[str | Path], *, skipped: list | None = None,
               need_rank: bool = False) -> dict[Path, list[Record]]:
    """The records of every input file of one command, ``{path: records}``, checked together.

    The one reader of the command line: each file is read with :func:`read_records`; a record
    without ``rank`` is an error when ``need_rank`` (evaluate, train); prompt ids must be
    distinct within and across the files (:func:`unique_records`; the later record is the
    one reported, or skipped); one file given twice is refused whatever ``skipped`` is. With
    ``skipped`` (a list), invalid rows are appended there, but a file left with no valid
    row is still an error: it is the wrong file, or a broken one.
    """
    paths = [Path(p) for p in paths]
    _distinct_files(paths)
    out: dict[Path, list[Record]] = {}
    for p in paths:
        out[p] = read_records(p, skipped=skipped, need_rank=need_rank)
    kept = {id(r) for r in unique_records([r for recs in out.values() for r in recs], skipped=skipped)}
    out = {p: [r for r in recs if id(r) in kept] for p, recs in out.items()}
    for p, recs in out.items():
        n = sum(str(e.path) == str(p) for e in skipped or [])
        if not recs and n:
            raise DataError(p, None, f"no valid row ({n} skipped as invalid)",
                            "fix the rows listed above, or check that this is the right file")
    return out


def _pairwise_row(path, line, prompt, a, b, pref) -> str:
    """Check one pairwise row; returns its official preference string."""
    if not isinstance(prompt, str):
        raise DataError(path, line, "missing prompt text", "give the prompt as 'input' or 'prompt'")
    if not isinstance(a, str) or not isinstance(b, str):
        raise DataError(path, line, "both responses must be strings")
    if preference(pref) is None:
        raise DataError(path, line, f"preference {show(pref)} not understood", "use 1 (a better), 2 (b better) or 0 (tie)")
    if a == b:
        raise DataError(path, line, "the two responses are identical", "drop the row: it compares nothing")
    return preference(pref)


def from_pairwise(rows: Iterable[tuple], *, path: str | Path | None = None, skipped: list | None = None) -> list[Record]:
    """Group pairwise rows ``(line, prompt, response_a, response_b, preference, extra)`` into records.

    Response ids are md5 of content, prompt ids md5 of prompt text; ``preference`` is
    1/"a" (a better), 2/"b" (b better) or 0/"tie". ``extra`` may carry ``category``.
    With ``skipped`` (a list), invalid rows are appended there instead of raising.
    """
    groups: dict[str, Record] = {}
    for line, prompt, a, b, pref, extra in rows:
        try:
            pref = _pairwise_row(path, line, prompt, a, b, pref)
        except DataError as e:
            if skipped is None:
                raise
            skipped.append(e)
            continue
        rec = groups.get(prompt)
        if rec is None:
            cat = (extra or {}).get("category")
            rec = groups[prompt] = Record(prompt=prompt, responses=[],
                                          category=[cat] if isinstance(cat, str) else cat,
                                          origin=f"{path}:{line}" if path else "")
        ids = {r.id for r in rec.responses}
        pair = []
        for text in (a, b):
            rid = md5(text)
            if rid not in ids:
                rec.responses.append(Response(rid, text))
                ids.add(rid)
            pair.append(rid)
        rec.annotations.append((pair[0], pair[1], pref))
    return list(groups.values())


def read_pairwise_table(path: str | Path, *, prompt: str = "prompt", response_a: str = "response_a",
                        response_b: str = "response_b", preference: str = "preference",
                        skipped: list | None = None) -> list[Record]:
    """Import a pairwise table (CSV or JSONL, one comparison per row) into grouped records.

    Column names are keyword options; a ``category`` column is kept when present.
    """
    path = Path(path)
    if path.suffix.lower() == ".csv":
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            missing = {prompt, response_a, response_b, preference} - set(reader.fieldnames or [])
            if missing:
                raise DataError(path, 1, f"missing columns {sorted(missing)}", "rename the columns or pass the names as options")
            rows = [(n, r[prompt], r[response_a], r[response_b], r[preference].strip(), r)
                    for n, r in enumerate(reader, 2)]
    else:
        rows = [(n, o.get(prompt), o.get(response_a), o.get(response_b), o.get(preference), o)
                for n, o in json_lines(path, skipped)]
    return from_pairwise(rows, path=path, skipped=skipped)


def data_fingerprint(records: Iterable[Record]) -> str:
    """sha256 of the records as written (order matters: it changes batching)."""
    h = hashlib.sha256()
    for r in records:
        h.update(orjson.dumps(r.to_json()))
    return h.hexdigest()


def to_pairs(records: Iterable[Record], *,
             pairs: Callable[[Record], Iterable[tuple[str, str]]] | None = None) -> Iterator[dict[str, str]]:
    """Chosen/rejected pairs for pairwise trainers (TRL, OpenRLHF): ``{"prompt", "chosen", "rejected"}``.

    By default every pair with different ranks (spec §3, :func:`strict_pairs` in response
    order); ties give no pair. ``pairs`` replaces that choice: a function from a record to
    its ``(better, worse)`` ids, e.g. only the pairs the annotations imply with
    ``lambda r: conflicts.ordered_pairs(r, view="implied")``.
    """
    for rec in records:
        if pairs is None and rec.rank is None:
            raise ValueError(f"record {rec.id} has no rank: resolve it first")
        text = {r.id: r.content for r in rec.responses}
        for better, worse in pairs(rec) if pairs is not None else strict_pairs(rec.rank, rec.response_ids):
            yield {"prompt": rec.prompt, "chosen": text[better], "rejected": text[worse]}
