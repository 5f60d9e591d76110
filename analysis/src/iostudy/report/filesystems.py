"""The report's file-system section (seed 000, IV): per root scanned, the growth between its
first and latest snapshot (Table III), its file-size CDF (Fig. 8) and the data left unmodified,
from the store's fsstats table (:mod:`iostudy.collect.fsstats` and its siblings scan and
compute them)."""

from __future__ import annotations

import re

from iostudy.collect.fsstats_diff import growth_table, size_cdf, unmodified_shares
from iostudy.core.numfmt import binary_bytes
from iostudy.core.plotting import legend_below


def size_cdf_figure(whole, without, title: str):
    """Fig. 8: the file-size CDF, of all files and without the largest project."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 3.6), layout="constrained")
    ax = fig.subplots()
    series = [(whole, "all files")]
    if without is not None and len(without):
        series.append((without, f"without {without.attrs.get('excluded')}"))
    for df, label in series:
        x = [max(int(v), 1) for v in df["hi"]]
        ax.step(x, df["cdf"], where="post", marker="o", markersize=3, linewidth=1.2, label=label)
    ax.set_xscale("log", base=2)
    ticks = [1 << k for k in range(0, 64, 4) if ax.get_xlim()[0] <= (1 << k) <= ax.get_xlim()[1]]
    if ticks:
        ax.set_xticks(ticks, [binary_bytes(t, digits=4) for t in ticks], rotation=45, fontsize=7)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("file size (less than)", fontsize=8)
    ax.set_ylabel("fraction of files", fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.tick_params(labelsize=7)
    legend_below(fig)
    return fig


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", str(text)).strip("-") or "root"


def add_section(add, tables) -> None:
    """The report's file-system section (seed 000 IV) through report.render's add(), from the
    store's fsstats table (tables["fsstats"]): per root scanned, the growth table between its
    first and its latest snapshot (Table III; when it has two or more), the file-size CDF of the
    latest with and without its largest project (Fig. 8), and the shares of its data not
    modified for 64 and 128 days. Nothing without snapshots."""
    import pandas as pd

    rows = tables.get("fsstats") if hasattr(tables, "get") else None
    if rows is None or rows.empty:
        return
    for root, of_root in rows.groupby("root", sort=True):
        order = of_root.groupby("snapshot")["taken"].min().sort_values()
        frames = {s: of_root[of_root["snapshot"] == s] for s in order.index}
        first, latest = order.index[0], order.index[-1]
        slug = _slug(root)
        when = f"{latest} ({order[latest]:%Y-%m-%d})"
        if len(order) > 1:
            add(
                "fsstats",
                "table",
                f"fsstats-growth-{slug}",
                f"{root}: growth from snapshot {first} ({order[first]:%Y-%m-%d}) to {when}: "
                "usage (bytes) and files per project and in all, the change in %, and each "
                "project's share of the growth (seed 000, Table III).",
                growth_table(frames[first], frames[latest]),
                table=True,
            )
        whole = size_cdf(frames[latest])
        without = size_cdf(frames[latest], exclude_largest_project=True)
        cdf = whole.assign(series="all files")
        if without.attrs["excluded"] is not None:
            excluded = without.assign(series=f"without {without.attrs['excluded']}")
            cdf = pd.concat([cdf, excluded], ignore_index=True)
        add(
            "fsstats",
            "figure",
            f"fsstats-size-cdf-{slug}",
            f"{root}, snapshot {when}: cumulative distribution of file sizes, of all files and "
            "without the project holding the most files (seed 000, Fig. 8).",
            cdf,
            fig=size_cdf_figure(
                whole, without if without.attrs["excluded"] else None, f"{root}: {latest}"
            )
            if len(whole)
            else None,
        )
        add(
            "fsstats",
            "table",
            f"fsstats-unmodified-{slug}",
            f"{root}, snapshot {when}: share of the data (bytes) and of the files not modified "
            "for 64 and 128 days or more (seed 000, section IV-B).",
            unmodified_shares(frames[latest]),
            table=True,
        )
