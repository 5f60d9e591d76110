"""A job page's DXT trace (the store's dxt table, iostudy.logs.dxt), drawn as DXT Explorer draws
one: per rank, the reads and the writes over time (a panel per module and operation, a row per
rank), and, for the files that moved the most bytes in the trace, each access's offset over time.

Both are static images of the segments binned into pixels: a trace of a million segments costs
the page no more than one of ten (an SVG element per segment would not fit a page), and a
segment shorter than a pixel still colours its pixel. The CSV beside them is the trace per
module, rank, file and operation (segments, bytes, first start, last end).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iostudy.core.deferred import deferred
from iostudy.core.numfmt import binary_bytes
from iostudy.core.plotting import legend_below, panels
from iostudy.logs import modules
from iostudy.report.jobfigures import TIME_PARTS

np = deferred("numpy")
pd = deferred("pandas")

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from iostudy.report.studydata import StudyData

TIME_BINS = 600  # pixels across a timeline panel
RANK_ROWS = 256  # ranks drawn a row each; above, several ranks share a row
TOP_FILES = 4  # files whose offsets are drawn
#: the operations, in the order drawn, and their colours (the page's write and read colours)
COLOURS = {op: next(c for _, label, c in TIME_PARTS if label == op) for op in ("write", "read")}


def trace_of(data: StudyData, sha256: str, run_id: str) -> pd.DataFrame:
    """A job's stored segments (module, record_id, rank, operation, offset, length, start,
    end), no path: a file's path is in :func:`paths_of`, once."""
    return data.query(
        'SELECT module, record_id, rank, operation, "offset", length, start, "end" FROM dxt '
        "WHERE log_sha256 = ? AND run_id = ?",
        [sha256, run_id],
    )


def paths_of(data: StudyData, sha256: str, run_id: str) -> pd.DataFrame:
    """The path of each file (record_id) of a job's trace."""
    return data.query(
        "SELECT record_id, any_value(path) AS path FROM dxt WHERE log_sha256 = ? AND run_id = ? "
        "GROUP BY record_id",
        [sha256, run_id],
    )


def summary(seg: pd.DataFrame, paths: pd.DataFrame) -> pd.DataFrame:
    """The trace per module, rank, file and operation: segments, bytes, first start and last
    end (the figures' CSV)."""
    keys = ["module", "rank", "record_id", "operation"]
    spans = {
        "segments": ("length", "size"),
        "bytes": ("length", "sum"),
        "first_start": ("start", "min"),
        "last_end": ("end", "max"),
    }
    out = seg.groupby(keys, sort=True).agg(**spans).reset_index()
    out = out.merge(paths, on="record_id", how="left")
    out["module"] = out["module"].map(modules.display)
    return out[
        [
            "module",
            "rank",
            "path",
            "operation",
            "segments",
            "bytes",
            "first_start",
            "last_end",
            "record_id",
        ]
    ]


def _rows(ranks: np.ndarray) -> tuple[np.ndarray, int, int]:
    """Each segment's row in a timeline (its rank, or a band of ranks when there are more than
    RANK_ROWS), the rows, and ranks per row."""
    low, high = int(ranks.min()), int(ranks.max())
    per_row = max(1, -(-(high - low + 1) // RANK_ROWS))
    return (ranks - low) // per_row, (high - low) // per_row + 1, per_row


def _busy(rows, nrows: int, start, end, span: float) -> np.ndarray:
    """rows x TIME_BINS: whether an operation was under way in the cell (its segments' counts
    of open operations, summed from where each starts to where it ends)."""
    width = span / TIME_BINS
    first = np.clip((start / width).astype(np.int64), 0, TIME_BINS - 1)
    last = np.clip((end / width).astype(np.int64), 0, TIME_BINS - 1)
    delta = np.zeros((nrows, TIME_BINS + 1), np.int64)
    np.add.at(delta, (rows, first), 1)
    np.add.at(delta, (rows, last + 1), -1)
    return np.cumsum(delta, axis=1)[:, :TIME_BINS] > 0


def timeline_figure(seg: pd.DataFrame) -> Figure:
    """Per module and operation, a row per rank (or band of ranks) and a pixel per
    1/TIME_BINS of the trace's time, coloured where an operation was under way."""
    from matplotlib.colors import ListedColormap

    groups = [
        (m, op)
        for m in dict.fromkeys(seg["module"])
        for op in COLOURS
        if ((seg["module"] == m) & (seg["operation"] == op)).any()
    ]
    rows, nrows, per_row = _rows(seg["rank"].to_numpy(np.int64))
    span = max(float(seg["end"].max()), 1e-9)
    low = int(seg["rank"].min())
    fig, axes = panels(len(groups), 7.2, 0.9 + min(2.4, 0.05 * nrows), ncols=1, sharex=True)
    for ax, (module, op) in zip(axes, groups, strict=True):
        mine = ((seg["module"] == module) & (seg["operation"] == op)).to_numpy()
        busy = _busy(
            rows[mine], nrows, seg["start"].to_numpy()[mine], seg["end"].to_numpy()[mine], span
        )
        ax.imshow(
            np.ma.masked_equal(busy.astype(np.int8), 0),
            aspect="auto",
            interpolation="nearest",
            cmap=ListedColormap([COLOURS[op]]),
            extent=(0, span, low + nrows * per_row - 0.5, low - 0.5),
        )
        ax.set_title(f"{modules.display(module)} {op}s", fontsize=9)
        ax.set_ylabel("rank" if per_row == 1 else f"rank ({per_row} a row)", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(axis="x", alpha=0.3)
    axes[-1].set_xlabel("seconds since the job started", fontsize=8)
    return fig


def top_files(seg: pd.DataFrame) -> list[tuple[str, int]]:
    """The (module, record_id) of the TOP_FILES files that moved the most bytes in the trace,
    of those whose offsets were recorded."""
    known = seg[seg["offset"].notna()]
    moved = known.groupby(["module", "record_id"])["length"].sum()
    moved = moved.reset_index().sort_values(
        ["length", "module", "record_id"], ascending=[False, True, True]
    )
    return list(zip(moved["module"], moved["record_id"], strict=True))[:TOP_FILES]


def offsets_figure(seg: pd.DataFrame, files: list, paths: dict) -> Figure:
    """Per file of ``files`` (top_files), each access's offset against its start time, reads
    and writes in their colours (a dot per access)."""
    from matplotlib.ticker import MaxNLocator  # matplotlib is loaded only when a figure is drawn

    span = max(float(seg["end"].max()), 1e-9)
    fig, axes = panels(len(files), 3.6, 2.3, extra_height=0.3)
    for ax, (module, rid) in zip(axes, files, strict=True):
        mine = seg[(seg["module"] == module) & (seg["record_id"] == rid)]
        for op, colour in COLOURS.items():
            part = mine[mine["operation"] == op]
            if len(part):
                ax.plot(
                    part["start"],
                    part["offset"],
                    ".",
                    color=colour,
                    label=op,
                    ms=2.5,
                    rasterized=True,
                )
        name = str(paths.get(rid, rid))
        ax.set_title(f"{modules.display(module)} {_tail(name)}", fontsize=8)
        # A margin on every side: an access at offset 0, or at the last instant, is drawn on
        # the axes' edge, where the spine would hide it.
        top = max(1.0, float((mine["offset"] + mine["length"]).max()))
        ax.set_xlim(-0.02 * span, 1.02 * span)
        ax.set_ylim(-0.04 * top, 1.05 * top)
        ax.xaxis.set_major_locator(MaxNLocator(4))  # a short job's times are long numbers
        ax.yaxis.set_major_formatter(lambda v, _: binary_bytes(v))
        ax.set_xlabel("seconds since the job started", fontsize=7)
        ax.set_ylabel("offset", fontsize=7)
        ax.tick_params(labelsize=6)
        ax.grid(alpha=0.3)
    legend_below(fig)
    return fig


def _tail(path: str, chars: int = 40) -> str:
    """The end of a long path (its file name is what tells files apart)."""
    return path if len(path) <= chars else "..." + path[-(chars - 3) :]
