"""Chat encoding: a (prompt, response) conversation as the token ids a reward model or a judge reads.

A pair is encoded with the tokenizer's chat template (prompt as the user turn, response as the assistant
turn); a template that refuses a system turn gets the system prompt at the start of the user turn
(:func:`accepts_system_turn`), and a tokenizer without a template gets plain text. :func:`encode_pair` is
the reference; :func:`encode_pairs` and :func:`encode_chats` give the same ids for many conversations at
once, and with ``max_length`` cut each text to :func:`text_budget` characters first, so a 50 MB response
costs kilobytes to tokenize.
"""
from __future__ import annotations

import contextlib
import weakref
from dataclasses import dataclass
from typing import Iterable

__all__ = ["accepts_system_turn", "encode_pair", "encode_pairs", "encode_chats", "text_budget", "cut_text"]


def _messages(prompt: str, response: str, sys_prompt: str | None) -> list[dict]:
    return ([{"role": "system", "content": sys_prompt}] if sys_prompt else []) + [
        {"role": "user", "content": prompt}, {"role": "assistant", "content": response}]


def _folded_messages(prompt: str, response: str, sys_prompt: str | None) -> list[dict]:
    """The conversation for a template without a system turn: the system prompt opens the user turn (as
    Gemma 3's own template folds it)."""
    return _messages(f"{sys_prompt}\n\n{prompt}" if sys_prompt else prompt, response, None)


_SYSTEM_TURN: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # tokenizer -> (template, accepts)


def accepts_system_turn(tokenizer) -> bool:
    """Whether ``tokenizer``'s chat template renders a system turn; False when it raises a ``TemplateError``
    for one (Gemma's: "System role not supported"). Rendered once per tokenizer and template."""
    from jinja2.exceptions import TemplateError

    template = tokenizer.chat_template
    with contextlib.suppress(TypeError):
        known = _SYSTEM_TURN.get(tokenizer)
        if known is not None and known[0] == template:
            return known[1]
    try:
        tokenizer.apply_chat_template(_messages("p", "r", "s"), tokenize=False)
        accepts = True
    except TemplateError:
        accepts = False
    with contextlib.suppress(TypeError):
        _SYSTEM_TURN[tokenizer] = (template, accepts)
    return accepts


def _conversation(tokenizer, items) -> object:
    """How ``items``' conversations become messages for ``tokenizer``: with a system turn, or with the system
    prompt folded into the user turn where the template refuses one."""
    if tokenizer.chat_template and any(len(item) > 2 and item[2] for item in items) \
            and not accepts_system_turn(tokenizer):
        return _folded_messages
    return _messages


def _plain_text(prompt: str, response: str, sys_prompt: str | None) -> str:
    """The conversation as text, for a tokenizer without a chat template."""
    return (f"{sys_prompt}\n\n" if sys_prompt else "") + f"{prompt}\n\n{response}"


def encode_pair(tokenizer, prompt: str, response: str, *, sys_prompt: str | None = None) -> list[int]:
    """Token ids of one (prompt, response) conversation, through the chat template when there is one.

    The reference encoding; :func:`encode_pairs` gives the same ids for many pairs at once.
    """
    if tokenizer.chat_template:
        messages = _conversation(tokenizer, [(prompt, response, sys_prompt)])
        out = tokenizer.apply_chat_template(messages(prompt, response, sys_prompt), tokenize=True)
        return list(out["input_ids"] if hasattr(out, "keys") else out)
    return tokenizer(_plain_text(prompt, response, sys_prompt))["input_ids"]


_IDS_ONLY = {"return_attention_mask": False, "return_token_type_ids": False}  # fewer lists to build; same ids
_LONGEST_TOKEN: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # tokenizer -> longest vocabulary entry


def text_budget(tokenizer, max_length: int | None) -> int | None:
    """How many characters of a text to tokenize when only ``max_length`` tokens are kept (None: all).

    No token stands for more characters than its vocabulary entry has: byte-level BPE spells
    each byte as one character, SentencePiece's byte tokens (``<0xE4>``) and WordPiece's
    ``##`` pieces are longer than what they stand for. So the budget, twice ``max_length``
    times the longest entry, holds more than ``2 * max_length`` tokens, and cutting a text
    to it before tokenizing keeps the first (or last) ``max_length`` tokens, and whether
    the text was longer than that, while a 50 MB response costs kilobytes, not gigabytes.
    A text within the budget is not cut at all, so its ids do not change. A normaliser that
    drops characters (whitespace, control characters) can leave fewer tokens: callers
    encode those texts again with a doubled budget (:func:`encode_chats`).
    """
    if not max_length:
        return None
    try:
        longest = _LONGEST_TOKEN.get(tokenizer)
    except TypeError:  # not weakly referenceable: no cache
        longest = None
    if longest is None:
        longest = max(map(len, tokenizer.get_vocab()), default=1)
        with contextlib.suppress(TypeError):
            _LONGEST_TOKEN[tokenizer] = longest
    return 2 * max_length * max(longest, 1) + 16


def cut_text(text: str | None, budget: int | None, *, keep: str = "start") -> str | None:
    """``text`` cut to ``budget`` characters, keeping its start (reward models) or its ``"end"`` (judges)."""
    if text is None or budget is None or len(text) <= budget:
        return text
    return text[:budget] if keep == "start" else text[-budget:]


def encode_pairs(tokenizer, items: Iterable[tuple[str, str, str | None]], *, chunk: int = 4096,
                 max_length: int | None = None) -> list[list[int]]:
    """Token ids of many ``(prompt, response, sys_prompt)`` conversations, the same as :func:`encode_pair` for each.

    :func:`encode_chats` with the reward model's conversation: one template rendering call and
    one tokenizer call per ``chunk`` conversations, and with ``max_length`` (the caller keeps
    the first ``max_length`` ids) each text cut to :func:`text_budget` characters first, so
    scoring a 50 MB response no longer tokenizes all of it.
    """
    items = list(items)
    return encode_chats(tokenizer, items, messages=_conversation(tokenizer, items), plain=_plain_text, chunk=chunk,
                        max_length=max_length)


def encode_chats(tokenizer, items: Iterable[tuple[str | None, ...]], *, messages, plain, generation_prompt: bool = False,
                 keep: str = "start", chunk: int = 4096, max_length: int | None = None) -> list[list[int]]:
    """Token ids of many chats, each an item of texts: ``messages(*item)`` is its chat, ``plain(*item)``
    the text a tokenizer without a chat template gets (with its default special tokens).

    The one chunked encoder of the library (reward models and judges): one template rendering call
    and one tokenizer call per ``chunk`` chats instead of one of each per chat: less Python overhead,
    and a fast tokenizer spreads a batch over the cores. The ids equal
    ``apply_chat_template(messages(*item), tokenize=True, add_generation_prompt=generation_prompt)``
    because that is what it does: render, then tokenize with ``add_special_tokens=False``.
    ``chunk`` bounds the tokenizer's intermediate objects for large data sets.

    With ``max_length`` each text is first cut to :func:`text_budget` characters, keeping its
    ``"start"`` or its ``"end"`` (``keep``): the first (or last) ``max_length`` ids, and whether there
    are more, are those of the whole chat, but the tokenizer never sees more than the budget of one
    text. The ids are not cut here: the caller keeps the first or last ``max_length``.
    """
    items = list(items)
    budget = text_budget(tokenizer, max_length)
    form = _ChatForm(messages, plain, generation_prompt, keep)
    out: list[list[int]] = []
    for start in range(0, len(items), chunk):
        out.extend(_encode_cut(tokenizer, form, items[start:start + chunk], budget, max_length))
    return out


@dataclass(frozen=True)
class _ChatForm:
    """How :func:`encode_chats` turns an item into a chat (see there)."""

    messages: object
    plain: object
    generation_prompt: bool
    keep: str


def _encode_cut(tokenizer, form: _ChatForm, part: list, budget: int | None, max_length: int | None) -> list[list[int]]:
    """:func:`_encode_chunk` of ``part`` with every text cut to ``budget``; a cut chat left with fewer
    than ``2 * max_length`` ids (a normaliser dropped characters) is encoded again with twice the
    budget, until it has them or is no longer cut."""
    if budget is None:
        return _encode_chunk(tokenizer, form, part)
    ids = _encode_chunk(tokenizer, form, [tuple(cut_text(t, budget, keep=form.keep) for t in item) for item in part])
    again = [k for k, item in enumerate(part) if len(ids[k]) < 2 * max_length
             and any(t is not None and len(t) > budget for t in item)]
    if again:
        for k, x in zip(again, _encode_cut(tokenizer, form, [part[k] for k in again], 2 * budget, max_length)):
            ids[k] = x
    return ids


RENDERED_CHUNKS = 32
"""Rendered chunks of chats a process keeps (:func:`_rendered`): the tiny reward models of different training sets
have different vocabularies but one chat template and one set of special tokens, so the Best-of-N study renders
its samples once, not once per training set."""
RENDERED_CHARACTERS = 64_000_000
"""At most this many characters of rendered chats are kept (untruncated texts can be long)."""
_RENDERED: dict[str, tuple[tuple[str, ...], int]] = {}  # key -> (rendered texts, their characters), oldest first


def _encode_chunk(tokenizer, form: _ChatForm, part: list) -> list[list[int]]:
    """One template rendering (:func:`_rendered`) and one tokenizer call (:func:`_template_ids`) for ``part``'s
    chats."""
    if tokenizer.chat_template:
        return _template_ids(tokenizer, _rendered(tokenizer, [form.messages(*item) for item in part],
                                                  form.generation_prompt))
    return [list(x) for x in tokenizer([form.plain(*item) for item in part], **_IDS_ONLY)["input_ids"]]


def _rendered(tokenizer, chats: list, generation_prompt: bool) -> list[str]:
    """``apply_chat_template(chats, tokenize=False)``, reused from the last :data:`RENDERED_CHUNKS` renderings of
    this process for the same chats, generation prompt and what else the rendering reads: the template, the
    special tokens (``{{ bos_token }}``) and the tokenizer's class. A template that reads the date
    (``strftime_now``) is rendered every time."""
    import hashlib

    import orjson

    template = tokenizer.chat_template
    if not isinstance(template, str) or "strftime" in template:
        return tokenizer.apply_chat_template(chats, tokenize=False, add_generation_prompt=generation_prompt)
    key = hashlib.sha256(orjson.dumps(
        [type(tokenizer).__module__, type(tokenizer).__qualname__, template, generation_prompt,
         tokenizer.special_tokens_map, getattr(tokenizer, "extra_special_tokens", None), chats],
        default=str, option=orjson.OPT_SORT_KEYS)).hexdigest()
    if key in _RENDERED:
        _RENDERED[key] = _RENDERED.pop(key)  # most recent last
        return list(_RENDERED[key][0])
    texts = tokenizer.apply_chat_template(chats, tokenize=False, add_generation_prompt=generation_prompt)
    _RENDERED[key] = tuple(texts), sum(map(len, texts))  # kept immutable: every caller gets a list of its own
    while len(_RENDERED) > RENDERED_CHUNKS or (
            len(_RENDERED) > 1 and sum(n for _, n in _RENDERED.values()) > RENDERED_CHARACTERS):
        _RENDERED.pop(next(iter(_RENDERED)))
    return texts


_WRAPPER = ("__call__", "_encode_plus", "_batch_encode_plus")
"""The methods of a fast tokenizer between ``tokenizer(texts)`` and its backend: a class that overrides one of them
may change the ids, so it is called as it is."""


def _template_ids(tokenizer, texts: list[str]) -> list[list[int]]:
    """``tokenizer(texts, add_special_tokens=False)``'s ids. A fast tokenizer's backend is called directly when
    the call would change nothing on the way (no truncation, padding or split special tokens set, and none of
    :data:`_WRAPPER` overridden): the same ids without the wrapper's per-text objects and offsets
    (``encode_batch_fast``, where the tokenizers library has it)."""
    from transformers import PreTrainedTokenizerFast

    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None and backend.truncation is None and backend.padding is None \
            and not getattr(backend, "encode_special_tokens", False) \
            and not getattr(tokenizer, "split_special_tokens", False) \
            and all(getattr(type(tokenizer), m, None) is getattr(PreTrainedTokenizerFast, m, None) for m in _WRAPPER):
        encode = getattr(backend, "encode_batch_fast", backend.encode_batch)
        return [e.ids for e in encode(texts, add_special_tokens=False)]
    return [list(x) for x in tokenizer(texts, add_special_tokens=False, **_IDS_ONLY)["input_ids"]]
