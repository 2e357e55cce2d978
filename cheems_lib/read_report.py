"""What reading did to the files besides parsing them, counted so that the caller shows it.

Reading a file of records may decide things the user should hear about: records without ``rank`` ranked on
read with Algorithm 1 (and how many of those conflict), flat pairs skipped for a label the format does not
define, responses no annotation ranks. A :class:`ReadReport` counts them per file as the readers go
(:func:`cheems_lib.records.read_records`, :func:`cheems_lib.world_files.read_ranked`); the command line prints
its :meth:`ReadReport.sentences` and adds :meth:`ReadReport.to_json` to its output.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from .input_files import show

__all__ = ["ReadReport"]


@dataclass
class ReadReport:
    """What reading did to the files besides parsing them, counted so that the caller shows it: the
    command line prints :meth:`sentences` on stderr and adds :meth:`to_json` to its output, a chapter
    page shows them under the data's name (:attr:`cheems_lib.analyses.world_folder.World.about`).

    Pass one to :func:`cheems_lib.records.read_records` / :func:`cheems_lib.records.read_files`, or to the ranking readers
    :func:`cheems_lib.world_files.read_ranked` / :func:`cheems_lib.world_files.read_ranked_files`
    (``report=``); it adds up over the files read. ``resolved_files`` and ``label_files`` name the
    files the counts come from.
    """

    resolved: int = 0
    """Records that came without ``rank`` and were ranked on read from their ``annotations`` with Algorithm 1."""
    conflicted: int = 0
    """Of those, the records whose ranking does not reproduce every annotation (spec §2)."""
    annotations: int = 0
    """The annotations of the resolved records."""
    unreproduced: int = 0
    """Of those, the annotations the ranking does not reproduce."""
    other_labels: dict[str, int] = field(default_factory=dict)
    """Flat pairs skipped because their ``preference`` is a label the format does not define (``3``,
    ``"both bad"``): count by label, written as JSON."""
    unranked_by_file: dict[str, int] = field(default_factory=dict)
    """Per file, its responses that no annotation mentions (or that a given ``rank`` leaves out): not ranked, so
    they take part in no comparison (:func:`cheems_lib.conflicts.unranked_responses`)."""
    notes: list[str] = field(default_factory=list)
    """Other things reading decided, one sentence each (e.g. a subset left empty by a ``human_ids`` file)."""
    resolved_files: list[str] = field(default_factory=list)
    label_files: list[str] = field(default_factory=list)

    @property
    def unranked(self) -> int:
        """Unranked responses of all the files."""
        return sum(self.unranked_by_file.values())

    def __bool__(self) -> bool:
        return bool(self.resolved or self.other_labels or self.unranked or self.notes)

    @property
    def skipped_labels(self) -> int:
        """How many flat pairs were skipped for their label."""
        return sum(self.other_labels.values())

    def add(self, other: "ReadReport") -> "ReadReport":
        """Add ``other``'s counts to this report; returns it."""
        self.resolved += other.resolved
        self.conflicted += other.conflicted
        self.annotations += other.annotations
        self.unreproduced += other.unreproduced
        for label, n in other.other_labels.items():
            self.other_labels[label] = self.other_labels.get(label, 0) + n
        for path, n in other.unranked_by_file.items():
            self.unranked_by_file[path] = self.unranked_by_file.get(path, 0) + n
        self.notes += [s for s in other.notes if s not in self.notes]
        self.resolved_files += [f for f in other.resolved_files if f not in self.resolved_files]
        self.label_files += [f for f in other.label_files if f not in self.label_files]
        return self

    def to_json(self) -> dict[str, Any]:
        """The counts for a command's JSON output: ``resolved_on_read``, ``skipped_labels`` and ``unranked_responses``
        (per file), each only when non-zero."""
        out: dict[str, Any] = {}
        if self.resolved:
            out["resolved_on_read"] = {"records": self.resolved, "conflicted": self.conflicted,
                                       "annotations": self.annotations, "unreproduced": self.unreproduced}
        if self.other_labels:
            out["skipped_labels"] = dict(self.other_labels)
        if self.unranked:
            out["unranked_responses"] = dict(self.unranked_by_file)
        return out

    def sentences(self, *, name: Callable[[str], str] = str, code: Callable[[str], str] | None = None) -> list[str]:
        """One sentence per thing reading did (none when it only parsed). ``name`` shows a file, ``code`` a field
        name or a label: by default the command line's plain text ('rank', labels as JSON), Markdown code on a page."""
        field_name = code or (lambda s: f"'{s}'")
        label_text = code or str
        out = []
        if self.resolved:
            n, c = self.resolved, self.conflicted
            out.append(f"{n:,} record{'s' if n != 1 else ''} of {_and(map(name, self.resolved_files))} had no "
                       f"{field_name('rank')} and {'were' if n != 1 else 'was'} ranked on read from "
                       f"{'their' if n != 1 else 'its'} annotations with Algorithm 1; {c:,} of them "
                       f"{'has' if c == 1 else 'have'} a conflict, an annotation the ranking does not reproduce "
                       f"({self.unreproduced:,} of {self.annotations:,} annotations).")
        if self.other_labels:
            k = self.skipped_labels
            labels = ", ".join(f"{label_text(label)}: {n:,}" for label, n in sorted(self.other_labels.items()))
            out.append(f"{k:,} flat pair{'s' if k != 1 else ''} of {_and(map(name, self.label_files))} "
                       f"{'were' if k != 1 else 'was'} skipped: {field_name('preference')} is a label other than "
                       f"1, 2 (strict) or 0 (a tie) ({labels}).")
        if self.unranked:
            k = self.unranked
            it = "them" if k != 1 else "it"
            where = (f"of {name(next(iter(self.unranked_by_file)))}" if len(self.unranked_by_file) == 1 else
                     "(" + ", ".join(f"{n:,} of {name(f)}" for f, n in self.unranked_by_file.items()) + ")")
            out.append(f"{k:,} response{'s' if k != 1 else ''} {where} "
                       f"{'are' if k != 1 else 'is'} not ranked (no annotation compares {it}, or the file's "
                       f"{field_name('rank')} leaves {it} out) and {'are' if k != 1 else 'is'} left out of every "
                       "comparison.")
        return out + self.notes

    def count_resolved(self, path, records: int, stats: Mapping[str, Any]) -> None:
        """Count ``records`` of ``path`` ranked on read, with their :func:`cheems_lib.conflicts.conflict_stats`."""
        self.resolved += records
        self.conflicted += stats["conflicted_prompts"]
        self.annotations += stats["annotations"]
        self.unreproduced += stats["unreproduced_annotations"]
        if str(path) not in self.resolved_files:
            self.resolved_files.append(str(path))

    def count_unranked(self, path, responses: int) -> None:
        """Count ``responses`` of ``path`` that are left unranked (none: nothing is recorded)."""
        if responses:
            self.unranked_by_file[str(path)] = self.unranked_by_file.get(str(path), 0) + responses

    def count_label(self, path, label: Any) -> None:
        """Count one flat pair of ``path`` skipped for its ``label``."""
        key = show(label)
        self.other_labels[key] = self.other_labels.get(key, 0) + 1
        if str(path) not in self.label_files:
            self.label_files.append(str(path))


def _and(names: Iterable[str]) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
