"""Records: the official CheemsRM file formats, read, validated and written.

One JSON Lines record per prompt (spec §1: the book's page "Use your own data", ``book/own_data.md``)::

    {"id": "p1", "input": "你好", "category": ["理解"],
     "responses": [{"id": "a", "content": "..."}, {"id": "b", "content": "..."}],
     "annotations": [["a", "b", "1"]], "rank": {"a": 0, "b": 1}}

The official flat pairwise form ``{"input", "answer1", "answer2", "preference"}`` (one line per
pair) is grouped by ``subset`` and prompt text into the same records (response ids = md5 of
content; :func:`from_pairwise`). What needs a ranking (evaluating, training, every chapter) reads
through :func:`cheems_lib.world_files.read_ranked` / :func:`cheems_lib.world_files.read_ranked_files`,
which rank a record that comes without ``rank`` from its ``annotations`` on read with Algorithm 1
(this module stays below the algorithm); what reading resolved or skipped on purpose is counted
in a :class:`cheems_lib.read_report.ReadReport` for the caller to show. Score files (spec §4) are read and
written by :mod:`cheems_lib.score_file`; how any file is opened and decoded is :mod:`cheems_lib.input_files`.

Every problem raises :class:`cheems_lib.input_files.DataError`, whose message is one line naming the file,
the line and the fix; nothing is dropped silently. Readers take ``skipped=[]`` to keep
every valid row instead: each invalid row's :class:`cheems_lib.input_files.DataError` is appended to that list
(the command line's ``--skip-invalid`` prints them and their total). :func:`read_files` is
what every command reads its input files with: prompt ids distinct within and across the
files, one file never given twice, and a file with no valid row an error even when skipping.
Values in messages are shown as JSON (:func:`cheems_lib.input_files.show`).
"""
from __future__ import annotations

import csv
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

import orjson

from .input_files import DataError, distinct_files, json_lines, read_text, show
from .outputs import atomic_open
from .read_report import ReadReport

__all__ = [
    "Response", "Record", "md5", "read_records", "write_records",
    "parse_record", "from_pairwise", "read_pairwise_table", "strict_pairs", "to_pairs",
    "data_fingerprint", "unique_records", "read_files", "preference", "TIE", "FIRST", "SECOND", "label_problem",
    "file_and_line",
]

TIE, FIRST, SECOND = "0", "1", "2"
# Accepted spellings of a preference, normalised to the official strings. A label always names a position
# ("the first shown is better"), never a response: an annotation whose label is also the id of one of its
# record's responses is refused unless both readings name the same response (:func:`label_problem`).
_PREFERENCE = {
    "0": TIE, 0: TIE, "tie": TIE, "=": TIE,
    "1": FIRST, 1: FIRST, "a": FIRST, "A": FIRST,
    "2": SECOND, 2: SECOND, "b": SECOND, "B": SECOND,
}


def label_problem(a: str, b: str, p: Any, response_ids: Iterable[str]) -> str | None:
    """Why the label ``p`` of the annotation ``[a, b, p]`` is ambiguous in a record whose responses are
    ``response_ids``, or None when it is not.

    Labels name a position: ``"1"`` (or ``"a"``) is the first shown, ``"2"`` (or ``"b"``) the second,
    ``"0"`` a tie. A user who writes the winner's id instead gets the opposite preference whenever that id
    is also a label (responses named ``a`` and ``b``, or ``1`` and ``2``): ``["b", "a", "a"]`` would read as
    "b is better". So a label that is also the id of a response of the record is refused, unless both
    readings agree (``["a", "b", "a"]``: the first shown is ``a``). A tie label never names a response.

    >>> label_problem("b", "a", "a", ["a", "b"])[:44]
    'label "a" is also the id of response "a" of '
    >>> label_problem("a", "b", "a", ["a", "b"]) is None
    True
    """
    raw = str(p)
    if raw not in set(response_ids):
        return None
    meaning = preference(p)
    if (meaning == FIRST and raw == a) or (meaning == SECOND and raw == b):
        return None
    shown = {FIRST: f"the first shown ({show(a)})", SECOND: f"the second shown ({show(b)})",
             TIE: "a tie"}.get(meaning, "")
    return (f"label {show(p)} is also the id of response {show(raw)} of this record, so it could mean "
            f"{shown} or response {show(raw)}")


def preference(p: Any) -> str | None:
    """The official preference string of ``p``, or None when ``p`` is not a preference.

    Booleans are refused: ``False == 0`` in Python, so a dictionary lookup would read
    ``false`` as a tie.
    """
    if isinstance(p, bool) or not isinstance(p, (str, int)):
        return None
    return _PREFERENCE.get(p)


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
        ambiguous = label_problem(ida, idb, p, seen)
        if ambiguous:
            raise fail(f"annotations[{k}] {show(a)}: {ambiguous}",
                       'a label names a position: write "1" (the first of the two is better), "2" (the second) '
                       'or "0" (a tie)')
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


def read_records(path: str | Path, *, skipped: list | None = None, need_rank: bool = False,
                 report: ReadReport | None = None) -> list[Record]:
    """Read a JSONL file of grouped records or of official flat pairwise lines.

    Pairwise lines (``answer1``/``answer2``/``preference``) are grouped into records by
    :func:`from_pairwise`'s rule (by ``subset`` and prompt text, in order of first appearance);
    the two forms may not be mixed in one file (the form of the first valid line decides).
    With ``skipped`` (a list), an invalid line is appended there as a :class:`cheems_lib.input_files.DataError` and
    the rest of the file is still read.

    ``need_rank``: the records are to be ranked, so a record with neither ``rank`` nor
    ``annotations`` is invalid (nothing could rank it); the others come back as they are, and
    :func:`cheems_lib.world_files.read_ranked` ranks those without ``rank`` with Algorithm 1
    (this module stays below the algorithm). ``report`` (a :class:`cheems_lib.read_report.ReadReport`) counts the flat
    pairs skipped for a label the format does not define; without a report such a pair is an
    error, as nothing would show it.
    """
    path = Path(path)
    records: list[Record] = []
    pairwise: list[tuple] = []
    flat = False  # the file's form is the flat pairwise one (a valid pairwise line came first)
    for n, obj in json_lines(path, skipped):
        try:
            if isinstance(obj, dict) and "answer1" in obj:
                if records:
                    raise DataError(path, n, "pairwise line in a file of grouped records", "keep one form per file")
                row = _pairwise_line(path, n, obj, report)  # here, so the first bad line in file order is reported
                flat = True
                if row is not None:
                    pairwise.append(row)
            else:
                if flat:
                    raise DataError(path, n, "grouped record in a file of pairwise lines", "keep one form per file")
                rec = parse_record(obj, path, n)
                if need_rank and rec.rank is None and not rec.annotations:
                    raise DataError(path, n, f"prompt {show(rec.id)} has no 'rank' and no 'annotations' to rank it from",
                                    "give its responses a 'rank', or the annotations that Algorithm 1 ranks them from")
                records.append(rec)
        except DataError as e:
            if skipped is None:
                raise
            skipped.append(e)
    if flat:
        records = _group_pairs(pairwise, path)
    return records


def write_records(records: Iterable[Record], path: str | Path) -> int:
    """Write records as JSONL (UTF-8, unescaped Chinese), atomically; returns the number written.

    The file appears at ``path`` only when complete (:func:`cheems_lib.outputs.atomic_open`),
    so writing over the input file is safe too.
    """
    n = 0
    with atomic_open(path, "wb") as fh:
        for r in records:
            try:
                fh.write(orjson.dumps(r.to_json()) + b"\n")
            except TypeError as e:  # a field nested deeper than JSON writers go (orjson: 254 levels), read from a file
                raise DataError(*file_and_line(r), f"prompt {show(r.id)} cannot be written back: {e}",
                                "flatten the deeply nested field of this record") from None
            n += 1
    return n


def file_and_line(rec: Record) -> tuple[str | None, int | None]:
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
        err = DataError(*file_and_line(rec), f"prompt id {show(rec.id)} repeats the record at "
                        f"{prev.origin or 'an earlier line'}{same}",
                        "give each prompt its own id, or keep only one of the two records")
        if skipped is None:
            raise err
        skipped.append(err)
    return out


def read_files(paths: Iterable[str | Path], *, skipped: list | None = None, need_rank: bool = False,
               report: ReadReport | None = None) -> dict[Path, list[Record]]:
    """The records of every input file of one command, ``{path: records}``, checked together.

    The one reader of the command line: each file is read with :func:`read_records` (``need_rank``:
    a record with neither ``rank`` nor annotations is invalid;
    :func:`cheems_lib.world_files.read_ranked_files` is this plus ranking on read, what evaluate
    and train read with); prompt ids must be distinct within and across the files
    (:func:`unique_records`; the later record is the one reported, or skipped); one file given
    twice is refused whatever ``skipped`` is. With ``skipped`` (a list), invalid rows are appended
    there, but a file left with no valid row is still an error: it is the wrong file, or a broken
    one. So is a file whose every flat pair was skipped for its label, and an empty file.
    """
    paths = [Path(p) for p in paths]
    distinct_files(paths)
    out: dict[Path, list[Record]] = {}
    labels: dict[Path, int] = {}
    for p in paths:
        own = ReadReport() if report is not None else None
        out[p] = read_records(p, skipped=skipped, need_rank=need_rank, report=own)
        if own is not None:
            report.add(own)
            labels[p] = own.skipped_labels
    kept = {id(r) for r in unique_records([r for recs in out.values() for r in recs], skipped=skipped)}
    out = {p: [r for r in recs if id(r) in kept] for p, recs in out.items()}
    for p, recs in out.items():
        n = sum(str(e.path) == str(p) for e in skipped or [])
        if not recs and n:
            raise DataError(p, None, f"no valid row ({n} skipped as invalid)",
                            "fix the rows listed above, or check that this is the right file")
        if not recs and labels.get(p):
            raise DataError(p, None, f"no pair with a preference of 1, 2 or 0 ({labels[p]} skipped for their label)",
                            "label the pairs 1 (answer1 better), 2 (answer2 better) or 0 (a tie)")
        if not recs:  # empty, or blank lines only: a command that did nothing must not look like one that worked
            raise DataError(p, None, "holds no record (the file is empty)", "check that this is the right file")
    return out


def _pairwise_row(path, line, prompt, a, b, pref, report: ReadReport | None = None) -> str | None:
    """Check one pairwise row; returns its official preference string, or None when the row is
    skipped for its label (counted in ``report``).

    A label is a string or a number. One outside :func:`preference`'s spellings (``3``, ``"-1"``,
    ``"both bad"``: a label the format does not define) skips the pair, counted in ``report``, as
    real files may carry labels of their own; without a report it is an error, since nothing would
    show the skip. A preference that is no label at all (missing, ``null``, ``true``, a list) is an
    error either way: the row is broken, not labelled otherwise.
    """
    if not isinstance(prompt, str):
        raise DataError(path, line, "missing prompt text", "give the prompt as 'input' or 'prompt'")
    if not isinstance(a, str) or not isinstance(b, str):
        raise DataError(path, line, "both responses must be strings")
    if a == b:
        raise DataError(path, line, "the two responses are identical", "drop the row: it compares nothing")
    if preference(pref) is not None:
        return preference(pref)
    if report is not None and isinstance(pref, (str, int, float)) and not isinstance(pref, bool):
        report.count_label(path, pref)
        return None
    raise DataError(path, line, f"preference {show(pref)} not understood", "use 1 (a better), 2 (b better) or 0 (tie)")


def _pairwise_line(path, line: int, obj: dict, report: ReadReport | None) -> tuple | None:
    """One flat pairwise line of a JSONL file, checked: ``(line, prompt, a, b, preference, subset, category)``,
    or None when it is skipped for its label."""
    return _pairwise_fields(path, line, obj.get("input", obj.get("prompt")), obj.get("answer1"), obj.get("answer2"),
                            obj.get("preference"), obj, report)


def _pairwise_fields(path, line, prompt, a, b, pref, extra, report) -> tuple | None:
    pref = _pairwise_row(path, line, prompt, a, b, pref, report)
    extra = extra or {}
    subset = extra.get("subset")
    if subset is not None and not isinstance(subset, str):
        raise DataError(path, line, f"'subset' must be a string, got {show(subset)}", 'write "human" or "gpt"')
    category = extra.get("category")
    if isinstance(category, str):
        category = [category]
    if category is not None and not (isinstance(category, list) and all(isinstance(c, str) for c in category)):
        raise DataError(path, line, f"'category' must be a string or a list of strings, got {show(category)}")
    return None if pref is None else (line, prompt, a, b, pref, subset or None, category)


def _group_pairs(rows: Iterable[tuple], path) -> list[Record]:
    """Checked pairwise rows (:func:`_pairwise_fields`) grouped into records, by (subset, prompt text).

    The key holds the subset because a release's one preference file may hold the same prompt text in
    its human and its GPT subset: those are two records, each with its own annotations, so that the file
    still splits into the subsets (:func:`cheems_lib.world_files.split_preference`). A record's prompt id
    is the md5 of its text, as the official ids are; a text that is in more than one subset gets
    ``-<subset>`` appended, so that prompt ids stay distinct. Category: the group's first row's.
    """
    groups: dict[tuple[str | None, str], Record] = {}
    for line, prompt, a, b, pref, subset, category in rows:
        rec = groups.get((subset, prompt))
        if rec is None:
            rec = groups[(subset, prompt)] = Record(prompt=prompt, responses=[], category=category,
                                                    extra={"subset": subset} if subset is not None else {},
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
    subsets: dict[str, set] = {}
    for subset, prompt in groups:
        subsets.setdefault(prompt, set()).add(subset)
    for (subset, prompt), rec in groups.items():
        if len(subsets[prompt]) > 1 and subset is not None:
            rec.id = f"{md5(prompt)}-{subset}"
    return list(groups.values())


def from_pairwise(rows: Iterable[tuple], *, path: str | Path | None = None, skipped: list | None = None,
                  report: ReadReport | None = None) -> list[Record]:
    """Group pairwise rows ``(line, prompt, response_a, response_b, preference, extra)`` into records.

    Rows are grouped by ``subset`` and prompt text, in order of first appearance (see
    :func:`_group_pairs`: the same text in two subsets stays two records, with distinct ids).
    Response ids are md5 of content, prompt ids md5 of prompt text; ``preference`` is
    1/"a" (a better), 2/"b" (b better) or 0/"tie"; another label skips the row, counted in
    ``report`` (an error without one: :func:`_pairwise_row`). ``extra`` may carry ``category``
    and ``subset`` (kept in the record's ``extra``). With ``skipped`` (a list), invalid rows are
    appended there instead of raising.
    """
    checked = []
    for line, prompt, a, b, pref, extra in rows:
        try:
            row = _pairwise_fields(path, line, prompt, a, b, pref, extra, report)
        except DataError as e:
            if skipped is None:
                raise
            skipped.append(e)
            continue
        if row is not None:
            checked.append(row)
    return _group_pairs(checked, path)


def read_pairwise_table(path: str | Path, *, prompt: str = "prompt", response_a: str = "response_a",
                        response_b: str = "response_b", preference: str = "preference",
                        skipped: list | None = None) -> list[Record]:
    """Import a pairwise table (CSV or JSONL, one comparison per row) into grouped records.

    Column names are keyword options; a ``category`` column is kept when present.
    """
    path = Path(path)
    if path.suffix.lower() == ".csv":
        import io

        with io.StringIO(read_text(path, newlines=False), newline="") as fh:
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
            raise ValueError(f"record {rec.id} has no rank: read it with world_files.read_ranked, which ranks it on read")
        text = {r.id: r.content for r in rec.responses}
        for better, worse in pairs(rec) if pairs is not None else strict_pairs(rec.rank, rec.response_ids):
            yield {"prompt": rec.prompt, "chosen": text[better], "rejected": text[worse]}
