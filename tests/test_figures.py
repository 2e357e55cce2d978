"""cheems_lib.figures: shared plots draw what their docstrings say."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from cheems_lib.claims import Estimate  # noqa: E402
from cheems_lib.figures import seed_dots  # noqa: E402


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
