"""A report page's figures (matplotlib, Agg, as inline SVG with plain text) and tables (HTML
rows with headers and number formats), shared by its sections."""

from __future__ import annotations

import io
import math
import re
import textwrap
from typing import TYPE_CHECKING

from iostudy.core import nodecount
from iostudy.core.deferred import deferred
from iostudy.core.numfmt import binary_bytes, short
from iostudy.core.plotting import headroom, legend_below, panels
from iostudy.metrics.scaling import WITHIN  # a cross-check's verdict column
from iostudy.report.headers import HEADERS

np = deferred("numpy")
pd = deferred("pandas")

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def to_time(values) -> pd.Series:
    return pd.to_datetime(pd.Series(values), utc=True, errors="coerce", format="mixed")


def colours(names) -> dict[str, str]:
    from matplotlib import colors as mcolors

    palette = [mcolors.to_hex(c) for c in mcolors.TABLEAU_COLORS.values()]
    return {s: palette[i % len(palette)] for i, s in enumerate(sorted(set(names)))}


# matplotlib's own tick labels of log axes are mathtext: "$\mathdefault{6\times10^{-1}}$"
_MATH_TICK = re.compile(r"^\$\\mathdefault\{(.*)\}\$$")


_SUPERSCRIPT = str.maketrans("0123456789-\u2212", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁻")


def _plain(text: str) -> str:
    """text as it is to be read: a mathtext tick label in plain characters (6×10⁻¹), a "\\$"
    as "$"."""
    if m := _MATH_TICK.match(text):
        label = m.group(1).replace("\\times", "×")
        return re.sub(r"\^\{([^}]*)\}", lambda e: e.group(1).translate(_SUPERSCRIPT), label)
    return text.replace(r"\$", "$")


def _plain_formatter(inner):
    """inner, a tick formatter, with its labels through _plain (tick labels are made again by
    the axis's formatter each time the figure is drawn)."""
    from matplotlib import ticker

    class Plain(ticker.Formatter):
        def __call__(self, x, pos=None):
            return _plain(inner(x, pos))

        def format_ticks(self, values):
            return [_plain(label) for label in inner.format_ticks(values)]

        def get_offset(self):
            return _plain(inner.get_offset())

        def set_locs(self, locs):
            inner.set_locs(locs)

    return Plain()


def _literal_text(fig: Figure) -> None:
    """Every text of fig drawn as it is, never as mathtext or TeX: names from logs and configs
    (systems, MPI flavours, checks, projects) may hold "$", and "$\\x$" would not even parse.
    No figure of the report uses mathtext. A "\\$" shows as "$", as matplotlib shows it in
    plain text, for the names already escaped that way (iostudy.metrics.workload)."""
    from matplotlib.text import Text

    for text in fig.findobj(Text):
        text.set_text(_plain(text.get_text()))
        text.set_parse_math(False)
        text.set_usetex(False)
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(_plain_formatter(axis.get_major_formatter()))
            axis.set_minor_formatter(_plain_formatter(axis.get_minor_formatter()))


def svg(fig: Figure, name: str) -> str:
    """The figure as an inline <svg> element, its texts literal (_literal_text). The hash salt
    is the figure's name so that the ids of clip paths and markers differ between figures
    sharing one HTML document; no date, so the same data give the same bytes."""
    from matplotlib import rc_context

    _literal_text(fig)
    buf = io.StringIO()
    # texts made while drawing (new ticks) are literal too
    settings = {"text.parse_math": False, "text.usetex": False}
    with rc_context({"svg.hashsalt": f"iostudy-{name}", "svg.fonttype": "none", **settings}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    return text[text.index("<svg") :]


def fmt(value, digits=3) -> str:
    """A number for tables: integers in full, others to 3 significant digits, no exponent."""
    if value is None or isinstance(value, str):
        return value or ""
    v = float(value)
    if math.isnan(v):
        return ""
    if math.isinf(v):
        return "∞" if v > 0 else "-∞"
    if v == 0:
        return "0"
    if v.is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    decimals = max(0, digits - 1 - int(math.floor(math.log10(abs(v)))))
    return f"{v:,.{decimals}f}"


HISTOGRAM_PANELS = (
    ("max_write_mib_s", "max write throughput", "MiB/s"),
    ("max_mib_s_per_node_hour", "max throughput per node-hour", "MiB/s per node-hour"),
)


def histogram_scales(hist: pd.DataFrame) -> dict:
    """One colour scale per quantity for every histogram of a page (all systems, MPI flavours
    and sizes in ``hist``), so that one colour is one value in every panel: logarithmic when
    the values span more than 30x."""
    from matplotlib import colors as mcolors

    scales = {}
    for column, *_ in HISTOGRAM_PANELS:
        values = hist[column].to_numpy(float) if column in hist else np.array([])
        finite = values[np.isfinite(values) & (values > 0)]
        if len(finite) and finite.max() / finite.min() > 30:
            scales[column] = mcolors.LogNorm(finite.min(), finite.max())
        else:
            scales[column] = mcolors.Normalize(0, finite.max() if len(finite) else 1)
    return scales


def histogram_figure(hist: pd.DataFrame, title: str, scales: dict | None = None) -> Figure:
    from matplotlib import ticker
    from matplotlib.figure import Figure

    xs = np.arange(0, int(hist["x_log2_io_procs"].max()) + 1)
    ys = np.arange(0, int(hist["y_log2_procs_per_file"].max()) + 1)
    fig = Figure(figsize=(4.3 + 0.55 * len(xs) * 2, 1.9 + 0.55 * len(ys)), layout="constrained")
    axes = fig.subplots(1, 2)
    scales = scales or histogram_scales(hist)
    for ax, (column, label, unit) in zip(axes, HISTOGRAM_PANELS, strict=True):
        grid = np.full((len(ys), len(xs)), np.nan)
        for row in hist.itertuples():
            grid[int(row.y_log2_procs_per_file), int(row.x_log2_io_procs)] = getattr(row, column)
        norm = scales[column]
        mesh = ax.pcolormesh(
            np.append(xs, xs[-1] + 1) - 0.5,
            np.append(ys, ys[-1] + 1) - 0.5,
            np.ma.masked_invalid(grid),
            cmap="viridis",
            norm=norm,
            edgecolors="white",
            linewidth=1.5,
        )
        for (j, i), value in np.ndenumerate(grid):
            if np.isfinite(value):
                r, g, b, _ = mesh.cmap(norm(value))
                dark = 0.299 * r + 0.587 * g + 0.114 * b < 0.55
                ax.text(
                    i,
                    j,
                    short(value),
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="white" if dark else "black",
                )
        ax.set_xticks(xs, [str(2**x) for x in xs])
        ax.set_yticks(ys, [str(2**y) for y in ys])
        ax.set_xlabel("processes doing I/O")
        ax.set_ylabel("processes per file")
        ax.set_aspect("equal")
        ax.set_facecolor("#f2f2f2")
        ax.set_title(label, fontsize=9)
        bar = fig.colorbar(mesh, ax=ax, shrink=0.9)
        bar.set_label(unit, fontsize=8)
        bar.ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: short(v)))
        bar.ax.tick_params(labelsize=7)
    fig.suptitle(title, fontsize=10)
    return fig


def job_rates_figure(rates: pd.DataFrame, colours: dict[str, str]) -> Figure:
    from matplotlib.figure import Figure

    rates = rates.reset_index(drop=True)
    fig = Figure(figsize=(9, min(1.0 + 0.32 * len(rates), 16)), layout="constrained")
    ax = fig.subplots()
    y = np.arange(len(rates))
    values = rates["mib_s_per_cn"].fillna(0)
    ax.barh(y, values, color=[colours.get(s, "#777777") for s in rates["series"]], height=0.7)
    for yi, value, nodes in zip(y, rates["mib_s_per_cn"], rates["nodes"], strict=True):
        ax.annotate(
            short(value) if pd.notna(value) else "nodes unknown" if pd.isna(nodes) else "no I/O",
            (0 if pd.isna(value) else value, yi),
            xytext=(3, 0),
            textcoords="offset points",
            va="center",
            fontsize=7,
        )
    labels = [f"{r.series} · {r.run_id} · job {r.jobid}" for r in rates.itertuples()]
    ax.set_yticks(y, labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("MiB/s per compute node (from the job's log)", fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    ax.margins(x=0.12)
    ax.grid(axis="x", alpha=0.3)
    return fig


def unknown_nodes(jobs: pd.DataFrame) -> str:
    """What a caption of MiB/s/CN says of the jobs without one for want of a node count."""
    unknown = int(jobs["nodes"].isna().sum()) if len(jobs) else 0
    if not unknown:
        return ""
    return f" {unknown:,} of the {len(jobs):,} jobs have no MiB/s/CN: {nodecount.WHY_UNKNOWN}."


def time_span(times: pd.Series) -> tuple:
    """A time axis fitted to the data: its span and 5% either side (at least a second; a minute
    either side of a single time), so that runs seconds apart are apart, and one run is a point
    on a readable axis rather than in matplotlib's default span of years."""
    lo, hi = times.min(), times.max()
    # at least a second either side: a date axis has no ticks finer than that
    pad = max((hi - lo) * 0.05, pd.Timedelta(seconds=1)) if hi > lo else pd.Timedelta(minutes=1)
    return lo - pad, hi + pad


def date_axis(ax, span: tuple) -> None:
    """A time axis over span (time_span), at most 5 ticks, labelled concisely."""
    from matplotlib import dates as mdates

    ax.set_xlim(*span)
    locator = mdates.AutoDateLocator(maxticks=5)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    ax.xaxis.get_offset_text().set_fontsize(7)  # the date the ticks omit, as small as they are


def size_bins(nprocs: pd.Series) -> pd.Series:
    """A job's size bin: its processes rounded down to a power of two (1, 2, 4, ...)."""
    return (2 ** np.floor(np.log2(nprocs.clip(lower=1).astype(float)))).astype("int64")


def rates_by_size(jobs: pd.DataFrame) -> pd.DataFrame:
    """MiB/s/CN per job-size bin (processes, powers of two), of the jobs that moved data:
    procs_bin, jobs, p10, median, p90."""
    moved = jobs[jobs["mib_s_per_cn"].notna()]
    rates = moved["mib_s_per_cn"].groupby(size_bins(moved["nprocs"]).values)
    out = rates.agg(
        jobs="size", p10=lambda v: v.quantile(0.1), median="median", p90=lambda v: v.quantile(0.9)
    )
    return out.rename_axis("procs_bin").reset_index()


def rates_by_size_figure(jobs: pd.DataFrame) -> Figure:
    """Seed 000's MiB/s/CN against job size at a facility's scale: a box per bin of processes
    (whiskers 10th to 90th percentile), the jobs of each bin above it."""
    from matplotlib.figure import Figure

    moved = jobs[jobs["mib_s_per_cn"].notna() & (jobs["mib_s_per_cn"] > 0)]
    bins = size_bins(moved["nprocs"])
    order = sorted(bins.unique())
    groups = [moved.loc[bins.values == b, "mib_s_per_cn"].to_numpy() for b in order]
    fig = Figure(figsize=(9, 3.8), layout="constrained")
    ax = fig.subplots()
    ax.boxplot(groups, whis=(10, 90), showfliers=False, medianprops={"color": "#c03000"})
    ax.set_xticks(range(1, len(order) + 1), [short(b) for b in order], fontsize=7)
    ax.set_yscale("log")
    for x, g in enumerate(groups, 1):
        ax.annotate(
            f"{len(g):,}",
            (x, 1),
            xycoords=("data", "axes fraction"),
            ha="center",
            va="bottom",
            fontsize=6,
            color="#555555",
        )
    ax.set_xlabel("processes per job (bins of powers of two)", fontsize=8)
    ax.set_ylabel("MiB/s per compute node", fontsize=8)
    ax.tick_params(axis="y", labelsize=7)
    ax.grid(axis="y", alpha=0.3)
    return fig


def over_runs_figure(metric_table: pd.DataFrame, colours: dict[str, str]) -> Figure:
    from matplotlib import ticker

    names = list(dict.fromkeys(metric_table["metric"]))
    fig, axes = panels(len(names), 5.4, 2.9)
    times = to_time(metric_table["started"]).dt.tz_convert(None)
    table = metric_table.assign(_t=times.to_numpy())
    span = time_span(times)
    for ax, name in zip(axes, names, strict=True):
        g = table[table["metric"] == name]
        # Room above the values and the reference range's finite edges, so that a threshold
        # is in sight.
        edges = g[["band_low", "band_high"]].astype(float).to_numpy().ravel()
        top = headroom(g["value"], edges, room=1.25)
        for series, s in g.groupby("series"):
            s = s.sort_values("_t")
            colour = colours[series]
            ax.plot(s["_t"], s["value"], marker="o", markersize=4, color=colour, label=series)
            band = s[["band_low", "band_high"]].astype(float).dropna()
            if len(band):  # ReFrame's reference range of this system, as a band
                lo, hi = band.iloc[-1]
                ax.axhspan(max(lo, 0), min(hi, top), color=colour, alpha=0.12, linewidth=0)
            failed = s[s["result"] == "fail"]
            if len(failed):  # regressions: outside the reference range
                ax.plot(
                    failed["_t"],
                    failed["value"],
                    linestyle="none",
                    marker="x",
                    markersize=9,
                    color="#c00000",
                    label="outside the reference range (ReFrame failed)",
                )
        ax.set_title(textwrap.fill(name, 70), fontsize=8)
        ax.set_ylabel(g["unit"].iloc[0], fontsize=8)
        ax.set_ylim(0, top)
        date_axis(ax, span)
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: short(v)))
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    legend_below(fig)
    return fig


def side_by_side_figure(table: pd.DataFrame, colours: dict[str, str]) -> Figure:
    from matplotlib import ticker

    names = list(dict.fromkeys(table["metric"]))
    width = max(3.4, 0.9 * table["series"].nunique() + 1.5)
    fig, axes = panels(len(names), width, 2.7, ncols=3)
    for ax, name in zip(axes, names, strict=True):
        g = table[table["metric"] == name].sort_values("series")
        x = np.arange(len(g))
        ax.bar(x, g["latest"], color=[colours[s] for s in g["series"]], width=0.6)
        # Whisker: the range over all runs of the system.
        ax.errorbar(
            x,
            g["latest"],
            yerr=[g["latest"] - g["min"], g["max"] - g["latest"]],
            fmt="none",
            ecolor="black",
            capsize=4,
            linewidth=1,
        )
        for xi, hi, value in zip(x, g["max"], g["latest"], strict=True):
            ax.annotate(
                short(value),
                (xi, hi),
                xytext=(0, 3),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize=7,
            )
        ax.set_xticks(x, g["series"], fontsize=7)
        ax.set_title(textwrap.fill(name, 45), fontsize=8)
        ax.set_ylabel(g["unit"].iloc[0], fontsize=8)
        ax.set_ylim(0, headroom(g["max"]))
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: short(v)))
        ax.tick_params(labelsize=7)
        ax.grid(axis="y", alpha=0.3)
    return fig


# Columns that are identifiers or small counts: shown as they are, without digit grouping.
PLAIN = {"jobid", "repetition", "n", "p", "f", "m", "nprocs", "nodes", "runs", "procs"}


# Columns whose yes/no or pass/fail is a verdict (coloured).
VERDICTS = {WITHIN, "result"}
#: columns set side by side to be compared: never stated once, even when alike in every row
COMPARED = {"a", "b", "b_over_a"}
# How a missing value reads where it means something: a cross-check without its log.
MISSING = {WITHIN: "no log"}


#: a long table's rows on the page (one of up to ROWS_WHOLE rows is shown whole); the CSV
#: beside it has them all
ROWS_SHOWN, ROWS_WHOLE = 12, 16
FAILING = {"fail", "no", "false", "regression"}


def page_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of a table the page shows: all of a short one (up to :data:`ROWS_WHOLE`); of a
    long one the first :data:`ROWS_SHOWN`, those a verdict column marks failing first."""
    if len(df) <= ROWS_WHOLE:
        return df
    marks = [c for c in df.columns if c in VERDICTS or c == "verdict"]
    if marks:
        failing = df[marks].astype(str).apply(lambda col: col.str.lower().isin(FAILING))
        bad = failing.any(axis=1)
        df = pd.concat([df[bad], df[~bad]])
    return df.head(ROWS_SHOWN)


def is_bytes(column: str) -> bool:
    """A column of byte counts (bytes, bytes_read, io_volume_bytes, transfer_size ...): shown
    with a binary prefix on the page."""
    return (
        column == "bytes"
        or column.startswith("bytes_")
        or column.endswith("_bytes")
        or column.endswith("_size")
    )


def _cell(column: str, v) -> tuple[str, str]:
    """One value as the page shows it: (text, CSS class)."""
    if v is None or v is pd.NA or v is pd.NaT or (isinstance(v, float) and math.isnan(v)):
        return MISSING.get(column, ""), ""
    if isinstance(v, bool | np.bool_):
        text = "yes" if v else "no"
        return text, text if column in VERDICTS else ""
    if isinstance(v, int | float | np.integer | np.floating) and is_bytes(column):
        return binary_bytes(v), "num"  # 2.25 GiB; the CSV has the bytes
    if isinstance(v, int | float | np.integer | np.floating):
        plain = column in PLAIN and float(v).is_integer()
        return (str(int(v)) if plain else fmt(v)), "num"
    text = str(v)
    return text, text.lower() if column in VERDICTS else ""


def cell_text(column: str, value) -> str:
    """One value as the page's tables show it in ``column`` (a job's record reads alike)."""
    return _cell(column, value)[0]


def _page_columns(df: pd.DataFrame) -> tuple[list[str], list[str]]:
    """The columns a page table shows, and those it states once instead: the first column
    (what a row is), then the verdicts (so that pass/fail is never scrolled off the page),
    then the rest; a column with one value in every shown row is said once under the table."""
    columns = list(df.columns)
    verdicts = [c for c in columns[1:] if c in VERDICTS or c == "verdict"]
    rest = [c for c in columns[1:] if c not in verdicts]
    same = []
    if len(df) >= 3:  # two rows alike in a column are a coincidence, not yet a pattern
        same = [
            c for c in rest if c not in COMPARED and df[c].astype(str).nunique(dropna=False) == 1
        ]
    shown = [*columns[:1], *verdicts, *[c for c in rest if c not in same]]
    return shown, same


#: the cell of a row that links to its page (links): the first of these shown, else the first
LINKED = ("jobid", "log_path")


def rows(df: pd.DataFrame, links: list | None = None) -> dict:
    """A DataFrame as header + rows of (text, CSS class, link) cells for the template, and the
    values shared by every row ("same": header and text). links: per row, the page its row
    links to (None: no link), from its :data:`LINKED` cell."""
    shown, same = _page_columns(df)
    first = df.iloc[0] if len(df) else {}
    links = links or [None] * len(df)
    at = next((c for c in LINKED if c in shown), shown[0] if shown else None)
    return {
        "header": [HEADERS.get(c, c) for c in shown],
        "rows": [
            [(*_cell(c, r[c]), link if c == at else None) for c in shown]
            for r, link in zip(df.to_dict("records"), links, strict=True)
        ],
        "same": [(HEADERS.get(c, c), _cell(c, first[c])[0] or "none") for c in same],
    }


def item(
    section,
    kind,
    ident,
    caption,
    df,
    fig=None,
    table=False,
    hide=(),
    label=None,
    links=None,
    whole=False,
) -> dict:
    """A page's figure, table or note (the templates' ``item``): fig drawn as inline SVG, the
    rows the page shows of df (a table; every row when ``whole``), its CSV's name. links(shown
    rows) -> per row, the page its row links to. label: what tells a figure from its siblings
    (one per system): the page draws them side by side, each under its label, the caption
    once."""
    shown = (df if whole else page_rows(df)) if table and len(df) else None
    hrefs = links(shown) if links is not None and shown is not None else None
    if shown is not None:
        shown = shown.drop(columns=list(hide))
    return {
        "section": section,
        "kind": kind,
        "id": ident,
        "csv": f"{ident}.csv",
        "caption": f"{label}: {caption}" if label else caption,
        "label": label,
        "about": caption,
        "provenance": provenance(df),
        "svg": svg(fig, ident) if fig is not None else None,
        "table": rows(shown, hrefs) if shown is not None else None,
        "rows": (len(shown), len(df)) if shown is not None else None,
        "links": [h for h in hrefs or () if h],
    }


def provenance(df: pd.DataFrame) -> str | None:
    """Where a figure's or table's values come from, in one line: the runs and systems of its
    rows (their manifests are in MANIFEST.json); None when its rows name no run."""
    if "run_id" not in df.columns or df.empty:
        return None
    runs = df["run_id"].dropna().astype(str).unique()
    if not len(runs):
        return None
    text = f"from run {runs[0]}" if len(runs) == 1 else f"from {len(runs):,} runs"
    if "system" in df.columns:
        systems = sorted(df["system"].dropna().astype(str).unique())
        more = f" and {len(systems) - 3} more" if len(systems) > 3 else ""
        text += f" of {', '.join(systems[:3])}{more}" if systems else ""
    return text if len(runs) == 1 else f"{text} ({min(runs)} to {max(runs)})"


def safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", str(name)).strip("-") or "x"
