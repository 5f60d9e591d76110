"""How report figures are laid out: a grid of panels, one legend beside the data (never on
it), titles that fit, integer ticks for counts. matplotlib is imported inside the functions:
the checks' side imports iostudy.core without it."""

import math
import textwrap

#: the width of a legend's handle and its gap, and of one character at the legend's font, in
#: inches (DejaVu Sans at 7 pt: about 0.055 in a character, a little less on average)
_HANDLE_IN, _CHAR_IN = 0.5, 0.055


def panels(n: int, width: float, height: float, ncols: int = 2, extra_height: float = 0.0, **kw):
    """A constrained-layout figure of n panels of width x height inches, ncols to a row (fewer
    when n is smaller), and its n axes in reading order (the grid's spare cells hidden). kw:
    for Figure.subplots (sharey...)."""
    from matplotlib.figure import Figure

    ncols = max(1, min(ncols, n))
    nrows = math.ceil(n / ncols)
    fig = Figure(figsize=(width * ncols, height * nrows + extra_height), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, **kw).ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


def legend_below(fig, fontsize: float = 7) -> None:
    """One legend for all of fig's panels, below them (the figure needs a constrained layout):
    each label once, as many columns as the figure's width holds, so that no legend covers a
    value and none is wider than its figure."""
    handles: dict[str, object] = {}
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    if not handles:
        return
    widest = max(len(label) for label in handles) * _CHAR_IN * fontsize / 7 + _HANDLE_IN
    ncols = max(1, min(len(handles), int(fig.get_figwidth() // widest)))
    fig.legend(
        list(handles.values()),
        list(handles),
        loc="outside lower center",
        ncols=ncols,
        fontsize=fontsize,
        frameon=False,
    )


def fitted_title(fig, title: str, fontsize: float = 10) -> None:
    """fig's title, wrapped to the figure's width (a long run id is not cut at the edges)."""
    chars = max(20, int(fig.get_figwidth() / (_CHAR_IN * fontsize / 7)))
    fig.suptitle(textwrap.fill(title, chars), fontsize=fontsize)


def count_ticks(axis) -> None:
    """Ticks on whole numbers only: an axis of counts (jobs, files, runs) has no 2.5."""
    from matplotlib import ticker

    axis.set_major_locator(ticker.MaxNLocator(integer=True))


def headroom(*values, room: float = 1.2) -> float:
    """The top of a value axis from 0: the largest finite value with room above it, or 1 when
    there is none above 0 (all zeros would give matplotlib an axis of 10^-9 steps)."""
    import numpy as np

    flat = np.concatenate([np.ravel(np.asarray(v, dtype=float)) for v in values])
    finite = flat[np.isfinite(flat)]
    top = float(finite.max()) if len(finite) else 0.0
    return top * room if top > 0 else 1.0
