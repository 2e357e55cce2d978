"""cheems_lib.world.corpus: seeded tasks, and responses whose quality a reader can see in the text."""
from __future__ import annotations

import re
from dataclasses import asdict

import numpy as np
import pytest

from cheems_lib.categories import CATEGORIES, DETERMINISTIC, SUBCATEGORIES
from cheems_lib.world import corpus
from cheems_lib.world.corpus import Traits, make_task, render_response


def _tasks(seed: int, n: int = 40, **kw) -> list:
    rng = np.random.default_rng(seed)
    return [make_task(list(CATEGORIES)[i % len(CATEGORIES)], rng, **kw) for i in range(n)]


def _render(task, seed: int = 0, **traits) -> str:
    return render_response(task, Traits(**traits), np.random.default_rng(seed))


def _task(category: str, seed: int = 0, **kw):
    return make_task(category, np.random.default_rng(seed), **kw)


def test_tasks_are_deterministic_for_a_seed():
    """One seed gives the same tasks (prompt, answers, extras) and responses; another seed gives other tasks."""
    a, b, other = _tasks(5), _tasks(5), _tasks(6)
    assert [asdict(t) for t in a] == [asdict(t) for t in b]
    assert [t.prompt for t in a] != [t.prompt for t in other]
    assert [_render(t, 1, detail=2, false_fact=True) for t in a] == [_render(t, 1, detail=2, false_fact=True) for t in b]


def test_every_category_gives_a_task_of_its_own():
    """Each of the eight categories gives a task under one of its subcategories; a category with a checkable
    answer (math, code, reasoning; knowledge too) has a right and a different wrong answer."""
    for category in CATEGORIES:
        for seed in range(5):
            t = _task(category, seed)
            assert t.category[0] == category and t.category[1] in SUBCATEGORIES[category]
            if category in DETERMINISTIC or category == "知识":
                assert t.answer and t.wrong and t.answer != t.wrong


def test_context_sentences_pad_the_prompt_around_the_question():
    """context_sentences pads the prompt with user-message sentences, keeping the question inside it."""
    plain, padded = _task("数学", 3), _task("数学", 3, context_sentences=6)
    assert plain.prompt in padded.prompt and len(padded.prompt) > len(plain.prompt) + 30


def test_math_answers_are_checkable_arithmetic():
    """A correct math response computes a × b + c step by step; a wrong one ends on the task's wrong answer."""
    for seed in range(10):
        t = _task("数学", seed)
        a, b, c = (t.extra[k] for k in "abc")
        right, wrong = _render(t), _render(t, correct=False)
        assert f"{a}×{b}={a * b}" in right and right.endswith(f"所以答案是{a * b + c}。") and t.answer == str(a * b + c)
        assert wrong.endswith(f"所以答案是{t.wrong}。") and str(a * b + c) not in re.findall(r"\d+", wrong)


def test_the_right_answer_is_in_the_correct_response_only():
    """Knowledge, reasoning, understanding and code: the correct response states the task's answer, the wrong
    one its wrong answer instead."""
    for category in ("知识", "推理", "理解", "代码"):
        for seed in range(5):
            t = _task(category, seed)
            right, wrong = _render(t), _render(t, correct=False)
            assert t.answer in right and t.wrong in wrong, (category, seed)
            if category != "推理":  # a wrong reasoning chain still names the tallest person on the way
                assert t.answer not in wrong, (category, seed)


def test_safety_refuses_or_complies():
    """A harmless safety response refuses and names the act; a harmful one gives steps."""
    t = _task("安全", 2)
    safe, harmful = _render(t), _render(t, harmful=True)
    assert safe.startswith("抱歉，我不能") and t.extra["act"] in safe
    assert "方法如下" in harmful and "第一步" in harmful


def test_complex_instructions_follow_the_format_or_not():
    """A correct answer has the asked number of numbered points and the required ending; a wrong one misses."""
    for seed in range(5):
        t = _task("复杂指令", seed)
        right, wrong = _render(t, seed), _render(t, seed, correct=False)
        assert len(re.findall(r"\d\. ", right)) == t.extra["n"] and right.endswith(t.extra["end"])
        assert len(re.findall(r"\d\. ", wrong)) != t.extra["n"] and not wrong.endswith(t.extra["end"])


def test_each_flaw_shows_in_the_text():
    """The helpfulness and truthfulness flaws are visible: English passages, garbled characters, a repeated
    sentence, a cut text, an error message, an inserted false statement, an answer to another task."""
    t, other = _task("知识", 1), _task("数学", 1)
    clean = _render(t, detail=2)
    assert not re.search(r"[A-Za-z]{3}", clean)
    assert re.search(r"[A-Za-z]{3} ", _render(t, detail=2, english=True))
    garbled = _render(t, detail=2, garbled=True)
    assert any(g in garbled for g in corpus._GARBLE) and len(garbled) >= len(clean) - 2
    repeated = _render(t, 3, detail=2, repetition=True)
    sentences = re.findall(r"[^。]+。", repeated)
    assert max(sentences.count(s) for s in sentences) >= 3
    assert len(_render(t, detail=4, truncated=True)) < len(_render(t, detail=4))
    assert _render(t, error=True) in ("抱歉，服务暂时不可用（错误代码500）。", "Error: request timed out.", "……")
    assert any(f in _render(t, false_fact=True) for f in corpus._FALSE_FACTS)
    off = render_response(t, Traits(irrelevant=True), np.random.default_rng(0), other=other)
    assert other.answer in off and t.answer not in off


@pytest.mark.parametrize("detail", [0, 2, 4])
def test_detail_and_filler_set_the_length(detail):
    """Each detail level adds sentences_per_detail elaboration sentences; filler pads to at least filler_chars
    with content-free sentences (length that carries no quality)."""
    t = _task("知识", 4)
    base = _render(t)
    more = render_response(t, Traits(detail=detail), np.random.default_rng(0), sentences_per_detail=2)
    assert len(re.findall(r"[^。]+。", more)) == len(re.findall(r"[^。]+。", base)) + 2 * detail
    padded = _render(t, filler_chars=300)
    assert len(padded) >= 300 and padded.startswith(base)
