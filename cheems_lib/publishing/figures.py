"""Figures shared by the chapters: preference graphs and a consistent look.

Plot functions take an ``ax`` and plain data and return the ``ax``; they never call
``plt.show`` or save, so the chapter decides how the figure is glued and cited.
"""
from __future__ import annotations

from typing import Mapping

__all__ = ["draw_preference_graph", "seed_dots", "overall_dots", "no_data", "PAGE_WIDTH_IN", "READABLE_PT",
           "cell_font_size"]

PAGE_WIDTH_IN = 7.0
"""Width, in inches at 96 px per inch, of the book's text column at a 1280 px window (about 680 px): a wider figure is
shown shrunk to it."""
READABLE_PT = 7.0
"""The smallest text, in points as the page shows it, that a figure may carry."""


def no_data(ax, needs: str, *, title: str = ""):
    """Mark ``ax`` as a panel with nothing to show: the text "no data: needs ``needs``" (e.g. a file of
    the layout) in place of empty axes, so a reader sees why, not a blank plot."""
    ax.set_xticks([])
    ax.set_yticks([])
    ax.text(0.5, 0.5, f"no data: needs {needs}", ha="center", va="center", wrap=True, fontsize=9, color="#555555",
            transform=ax.transAxes)
    if title:
        ax.set_title(title)
    return ax


def draw_preference_graph(graph, *, ax, rank: Mapping[str, int] | None = None, title: str = "",
                          labels: Mapping[str, str] | None = None, seed: int = 0):
    """Draw a preference graph (edge winner -> loser).

    With ``rank`` (for the original nodes or merged ``a+b`` nodes), nodes are laid out in
    columns by round, best on the left, so the peeling order reads left to right; nodes
    on a directed cycle are drawn in orange. A response the ranking leaves out (no annotation
    mentions it) is drawn grey in a column of its own on the right.
    """
    import networkx as nx

    unranked: set = set()
    if rank is not None:
        layer = {}
        for n in graph.nodes:
            ranked = [rank[m] for m in str(n).split("+") if m in rank]
            layer[n] = min(ranked) if ranked else None
        unranked = {n for n, v in layer.items() if v is None}
        last = max((v for v in layer.values() if v is not None), default=-1)
        for n, v in layer.items():
            v = last + 1 if v is None else v
            graph.nodes[n]["layer"] = v
        pos = nx.multipartite_layout(graph, subset_key="layer")
    else:
        pos = nx.circular_layout(graph)
    on_cycle = {n for comp in nx.strongly_connected_components(graph) if len(comp) > 1 for n in comp}
    colors = ["#f28e2b" if n in on_cycle else "#bab0ac" if n in unranked else "#4e79a7" for n in graph.nodes]
    sizes = [900 + 500 * (str(n).count("+")) for n in graph.nodes]
    nx.draw_networkx_nodes(graph, pos, ax=ax, node_color=colors, node_size=sizes)
    nx.draw_networkx_labels(graph, pos, ax=ax, labels=labels, font_color="white", font_size=10)
    nx.draw_networkx_edges(graph, pos, ax=ax, arrows=True, arrowsize=16, node_size=sizes,
                           connectionstyle="arc3,rad=0.12", edge_color="#555555")
    _fit_nodes(ax, pos, max(sizes, default=0))
    ax.set_title(title)
    ax.set_axis_off()
    return ax


def _fit_nodes(ax, pos, size: float) -> None:
    """Limits that keep every node's disc (marker area ``size`` in points²) inside ``ax``: the layout's extent plus a
    node's radius each side, converted from points to data units on each axis. Autoscaling alone clips the discs,
    most visibly when every node sits on one row (a layout with one node per column)."""
    if not pos:
        return
    xs, ys = zip(*pos.values())
    box = ax.get_window_extent()  # pixels
    radius = (size ** 0.5 / 2 + 6) * ax.figure.dpi / 72  # pixels, with a margin for the outline and arrow heads
    for lo, hi, pixels, setter in ((min(xs), max(xs), box.width, ax.set_xlim), (min(ys), max(ys), box.height, ax.set_ylim)):
        span = max(hi - lo, 1.0)
        pad = span * radius / max(pixels - 2 * radius, 1.0)  # data units of one radius once the pad is added
        setter(lo - pad, hi + pad)


def seed_dots(estimates: Mapping[str, object], *, ax, seed: int = 0, xlabel: str = "", color: str = "#4e79a7"):
    """One row per entry of ``estimates`` (:class:`cheems_lib.estimates.Estimate`, top to bottom in order):
    a dot per training seed, the mean over seeds (black diamond) and its hierarchical 95% interval."""
    import numpy as np

    names = list(estimates)
    for row, name in enumerate(names):
        est = estimates[name]
        y = len(names) - 1 - row
        jitter = np.linspace(-0.15, 0.15, est.seeds) if est.seeds > 1 else np.zeros(1)
        ax.scatter(est.point, y + jitter, s=18, color=color, alpha=0.7, zorder=2,
                   label="one training seed" if row == 0 else None)
        lo, hi = est.interval(seed=seed)
        if np.isfinite(lo):
            ax.plot([lo, hi], [y, y], color="black", lw=1.5, zorder=3, label="95% interval" if row == 0 else None)
        ax.scatter([est.value], [y], marker="D", s=30, color="black", zorder=4, label="mean" if row == 0 else None)
    ax.set_yticks(range(len(names)), names[::-1])
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", alpha=0.3)
    return ax


def overall_dots(overall: Mapping[str, object], *, seed: int = 0, xlabel: str = "Overall on CheemsBench (ours)"):
    """A figure of each training set's Overall on CheemsBench (:func:`seed_dots`, top to bottom in
    order), legend on top; returns the Figure (Table 3's and Table 4's rows)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 0.45 * len(overall) + 1.2))
    seed_dots(overall, ax=ax, seed=seed, xlabel=xlabel)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, fontsize=8, frameon=False)
    fig.tight_layout()
    return fig


def cell_font_size(ax, shape: tuple[int, int], *, chars: int, lines: int = 1, largest: float = 11.0,
                   page_width_in: float = PAGE_WIDTH_IN, readable: float = READABLE_PT) -> float | None:
    """The font size (points) for text of ``lines`` lines of up to ``chars`` characters in each cell of a ``shape``
    (rows, columns) grid filling ``ax`` (a heatmap's annotations): the largest size up to ``largest`` that fits a
    cell, or None when that size would show smaller than ``readable`` points on the page (the figure shrunk to
    ``page_width_in``), so the caller drops the per-cell text or shortens it instead of printing it unreadably.

    A character is taken as 0.62 em wide and a line 1.25 em high (DejaVu Sans digits). For an 11-inch figure,
    shown at 7 inches, a size of 8 points shows at about 5: too small, so None.
    """
    rows, cols = shape
    if not rows or not cols:
        return None
    fig = ax.figure
    box = ax.get_position()  # figure fraction
    cell_w = box.width * fig.get_figwidth() / cols * 72  # points
    cell_h = box.height * fig.get_figheight() / rows * 72
    size = min(largest, 0.9 * cell_w / (0.62 * max(chars, 1)), 0.9 * cell_h / (1.25 * max(lines, 1)))
    shown = size * min(1.0, page_width_in / fig.get_figwidth())
    return size if shown >= readable else None
