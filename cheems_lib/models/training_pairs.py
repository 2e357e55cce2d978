"""Training pairs (paper §5): ranked records as token ids with their strictly ordered pairs.

A record's partial ranking gives one (better, worse) pair per two responses of different rank;
ties give none, and a prompt without any pair is left out and counted. Records come ranked from
the readers (:func:`cheems_lib.world_files.read_ranked` ranks a record without ``rank`` from its
annotations on read); one built in code without a ranking is ranked here from its annotations
with the same Algorithm 1, and counted (``resolved``). :func:`collate` joins a
batch's prompts into one list of sequences with its pairs re-indexed. Kept apart from
:mod:`cheems_lib.models.training` because it is data preparation: it needs a tokenizer, not torch.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..conflicts import resolve
from ..records import Record, strict_pairs
from .chat_encoding import encode_pairs
from .training_config import TrainError

__all__ = ["EncodedData", "encode_records", "collate"]


@dataclass
class EncodedData:
    """Training prompts as token ids with their ordered pairs, and what was left out."""

    sequences: list[list[list[int]]]  # prompt -> response -> token ids
    pairs: list[list[tuple[int, int]]]  # prompt -> (better, worse) local indices
    truncated: int = 0
    prompts_without_pairs: int = 0
    responses_unranked: int = 0
    resolved: int = 0  # records without 'rank' ranked here from their annotations (Algorithm 1)

    @property
    def lengths(self) -> list[list[int]]:
        return [[len(s) for s in p] for p in self.sequences]

    @property
    def n_pairs(self) -> int:
        return sum(len(p) for p in self.pairs)

    def report(self) -> dict:
        return {"prompts": len(self.sequences), "responses": sum(len(p) for p in self.sequences),
                "pairs": self.n_pairs, "truncated_sequences": self.truncated,
                "prompts_without_pairs": self.prompts_without_pairs, "responses_unranked": self.responses_unranked,
                **({"resolved": self.resolved} if self.resolved else {})}


def encode_records(records: Sequence[Record], tokenizer, max_length: int) -> EncodedData:
    """Encode each ranked record; prompts with no strict pair are counted and left out. A record without
    ``rank`` is ranked from its annotations (Algorithm 1; the record itself is not changed) and counted;
    one with neither is refused."""
    data = EncodedData([], [])
    kept = []  # (record, its ranked responses' texts) for the prompts with a strict pair
    for rec in records:
        rank = rec.rank
        if rank is None:
            if not rec.annotations:
                raise TrainError(f"{rec.origin or rec.id}: record has no 'rank' and no 'annotations' to rank it from "
                                 "(fix: give its responses a 'rank', or the annotations Algorithm 1 ranks them from)")
            rank = resolve(rec.response_ids, rec.annotations)
            data.resolved += 1
        ids = [r.id for r in rec.responses if r.id in rank]
        data.responses_unranked += len(rec.responses) - len(ids)
        local = {rid: i for i, rid in enumerate(ids)}
        pairs = [(local[a], local[b]) for a, b in strict_pairs(rank, ids)]
        if not pairs:
            data.prompts_without_pairs += 1
            continue
        text = {r.id: r.content for r in rec.responses}
        kept.append((rec, [text[rid] for rid in ids]))
        data.pairs.append(pairs)
    if not data.pairs:
        raise TrainError("no usable pair: every prompt is unranked or all-tied (fix: check the files' 'rank' fields)")
    toks = iter(encode_pairs(tokenizer, [(rec.prompt, t, rec.sys_prompt) for rec, texts in kept for t in texts],
                             max_length=max_length))  # texts cut to a character budget before tokenizing
    for rec, texts in kept:
        seqs = [next(toks) for _ in texts]
        data.truncated += sum(len(t) > max_length for t in seqs)
        data.sequences.append([t[:max_length] for t in seqs])
    return data


def collate(data: EncodedData, prompts: Sequence[int]) -> tuple[list[list[int]], list[tuple[int, int]]]:
    """The responses of ``prompts`` (a batch) as one list of token ids, and their pairs as indices into it."""
    seqs: list[list[int]] = []
    pairs: list[tuple[int, int]] = []
    for i in prompts:
        offset = len(seqs)
        pairs += [(offset + a, offset + b) for a, b in data.pairs[i]]
        seqs += data.sequences[i]
    return seqs, pairs
