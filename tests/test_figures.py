"""cheems_lib.publishing.figures: shared plots draw what their docstrings say."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from cheems_lib.analyses.claims import Estimate  # noqa: E402
from cheems_lib.publishing.figures import overall_dots, seed_dots  # noqa: E402


def test_seed_dots_draws_one_dot_per_seed_a_mean_and_an_interval():
    """Each row: its seeds as dots, the mean as a diamond at the seed mean, one interval line; rows top to bottom."""
    rng = np.random.default_rng(0)
    ests = {"a": Estimate(np.array([0.5, 0.6, 0.7]), rng.normal(0.6, 0.01, (3, 200))),
            "b": Estimate.single(0.4, rng.normal(0.4, 0.01, 200))}
    fig, ax = plt.subplots()
    seed_dots(ests, ax=ax)
    dots, means = ax.collections[0::2], ax.collections[1::2]
    assert [len(c.get_offsets()) for c in dots] == [3, 1]
    assert np.allclose(means[0].get_offsets()[0], [0.6, 1]) and np.allclose(means[1].get_offsets()[0], [0.4, 0])
    assert len(ax.lines) == 2 and [t.get_text() for t in ax.get_yticklabels()] == ["b", "a"]
    plt.close(fig)


def test_overall_dots_is_one_row_per_training_set_with_its_mean():
    """Table 3's and Table 4's figure: one row per training set in order, its diamond at the mean over seeds,
    the Overall axis label and a legend above the axes."""
    rng = np.random.default_rng(1)
    overall = {name: Estimate(np.array([v - 0.01, v + 0.01]), rng.normal(v, 0.01, (2, 100)))
               for name, v in {"human": 0.6, "gpt": 0.5, "both": 0.65}.items()}
    fig = overall_dots(overall)
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_yticklabels()] == ["both", "gpt", "human"]
    assert np.allclose([c.get_offsets()[0, 0] for c in ax.collections[1::2]], [0.6, 0.5, 0.65])
    assert ax.get_xlabel() == "Overall on CheemsBench (ours)" and ax.get_legend() is not None
    plt.close(fig)


class TestCellFontSize:
    def test_fits_the_cell_and_stays_readable_on_the_page(self):
        """A size that fits the cell and shows at least READABLE_PT points once the figure is shrunk to the page."""
        from cheems_lib.publishing.figures import PAGE_WIDTH_IN, READABLE_PT, cell_font_size

        fig, ax = plt.subplots(figsize=(7, 3))
        size = cell_font_size(ax, (3, 3), chars=12, lines=2)
        box = ax.get_position()
        assert size is not None and size * min(1, PAGE_WIDTH_IN / 7) >= READABLE_PT
        assert size * 0.62 * 12 <= box.width * 7 * 72 / 3 and size * 1.25 * 2 <= box.height * 3 * 72 / 3
        plt.close(fig)

    def test_none_when_the_cells_are_too_small(self):
        """Many small cells on a wide figure shown shrunk: no size is readable, so None (drop or shorten the text)."""
        from cheems_lib.publishing.figures import cell_font_size

        fig, ax = plt.subplots(figsize=(11, 2))
        assert cell_font_size(ax, (8, 12), chars=12, lines=2) is None
        assert cell_font_size(ax, (0, 3), chars=4) is None
        plt.close(fig)
