"""The paper's category taxonomy: eight top-level categories, their subcategories, and which have checkable answers.

A record's ``category`` is a path ``[top, sub]`` (``["数学", "算术"]``); the top level is one of
:data:`CATEGORIES` in the paper's benchmark (Figs. 8-10), though a real file may name others. The taxonomy is a
fact of the record format, not of the simulator: the simulated world draws its prompts from it
(:mod:`cheems_lib.world.corpus`), the leaderboard's per-category tables and the book's ``{cheems-categories}``
directive read it, so it sits at the top level where every wing may import it.

>>> [CATEGORIES[c] for c in DETERMINISTIC]
['math', 'code', 'reasoning']
>>> set(SUBCATEGORIES) == set(CATEGORIES)
True
"""
from __future__ import annotations

__all__ = ["CATEGORIES", "DETERMINISTIC", "SUBCATEGORIES"]

#: The paper's top-level categories (Figs. 8-10) with English glosses.
CATEGORIES: dict[str, str] = {
    "理解": "understanding", "知识": "knowledge", "创意写作": "creative writing", "推理": "reasoning",
    "数学": "math", "代码": "code", "安全": "safety", "复杂指令": "complex instructions",
}
#: Categories whose prompts have one checkable answer (math, code, reasoning): §6.1 finds reward
#: models more accurate on "prompts with relatively deterministic answers".
DETERMINISTIC: tuple[str, ...] = ("数学", "代码", "推理")
#: The subcategories under each top-level category: the second level of a category path.
SUBCATEGORIES: dict[str, list[str]] = {
    "理解": ["摘要", "阅读理解"], "知识": ["地理", "科学常识"], "创意写作": ["诗歌", "故事"],
    "推理": ["逻辑推理", "常识推理"], "数学": ["算术", "应用题"], "代码": ["Python", "算法"],
    "安全": ["违法行为", "隐私"], "复杂指令": ["格式约束", "多步指令"],
}
