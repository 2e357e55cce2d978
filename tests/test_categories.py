"""cheems_lib.categories: the paper's eight top-level categories, their subcategories and the deterministic ones."""
from __future__ import annotations

from cheems_lib.categories import CATEGORIES, DETERMINISTIC, SUBCATEGORIES


def test_eight_categories_each_with_its_own_gloss():
    """The paper's benchmark has eight top-level categories (Figs. 8-10); each has a distinct English gloss."""
    assert len(CATEGORIES) == 8 and all(CATEGORIES.values())
    assert len(set(CATEGORIES.values())) == len(CATEGORIES)


def test_deterministic_categories_are_math_code_and_reasoning():
    """§6.1's "relatively deterministic answers" are three of the categories: math, code and reasoning."""
    assert set(DETERMINISTIC) <= set(CATEGORIES)
    assert sorted(CATEGORIES[c] for c in DETERMINISTIC) == ["code", "math", "reasoning"]


def test_every_category_has_subcategories_of_its_own():
    """Each top-level category, and only those, has subcategories; no subcategory sits under two categories, so a
    category path ``[top, sub]`` names its top level twice over."""
    assert set(SUBCATEGORIES) == set(CATEGORIES)
    subs = [s for top in SUBCATEGORIES.values() for s in top]
    assert all(SUBCATEGORIES.values()) and len(subs) == len(set(subs))
    assert not set(subs) & set(CATEGORIES)
