"""Display headers of the report's table columns (figures.rows; the CSVs keep the column
names): a name said in words, which a narrow column can wrap."""

from __future__ import annotations

from iostudy.metrics import metrics
from iostudy.metrics.scaling import WITHIN  # a cross-check's verdict column

# Seed 000: the MiB/s derived from the logs is within 3% of the benchmark's (Table I).
TOLERANCE_PCT = 100 * metrics.TABLE1_TOLERANCE

# Display headers of table columns (the CSVs keep the column names).
HEADERS = {
    "benchmark_mib_s": "benchmark MiB/s",
    "derived_mib_s": "derived from logs MiB/s",
    "difference_pct": "difference %",
    WITHIN: f"within {TOLERANCE_PCT:g}%?",
    "mib_s": "MiB/s",
    "ior_mib_s": "IOR MiB/s",
    "log_mib_s": "derived from log MiB/s",
    "mib_s_per_cn": "MiB/s/CN",
    "median_mib_s_per_cn": "median MiB/s/CN",
    "slowest_mib_s_per_cn": "slowest MiB/s/CN",
    "fastest_mib_s_per_cn": "fastest MiB/s/CN",
    "key_access_size": "key access size",
    "mib_s_per_cn_span": "MiB/s/CN, seed 000's span form",
    "io_time_slowest_s": "slowest rank's I/O time (s)",
    "nodes_source": "nodes from",
    "ingested_from": "ingested from",
    "lower": "lower (fraction)",
    "upper": "upper (fraction)",
    # seed 000's workload tables (iostudy.metrics.workload)
    "bytes_read": "bytes read",
    "bytes_written": "bytes written",
    "bytes_moved": "bytes moved",
    "jobs_instrumented": "jobs with a log",
    "jobs_total": "jobs",
    "job_coverage_pct": "job coverage %",
    "core_hours_instrumented": "core-hours with a log",
    "core_hours_total": "core-hours",
    "core_hour_coverage_pct": "core-hour coverage %",
    "apis": "APIs",
    "md_cost_pct": "metadata cost %",
    "files_per_proc": "files per process",
    "creates_per_proc": "creates per process",
    "seq_pct": "sequential %",
    "aligned_pct": "aligned %",
    "mib_per_proc": "MiB per process",
    # the diagnoses (iostudy.report.diagnoses)
    "jobs_pct": "% of jobs",
    "jobs_with_a_finding": "jobs with a finding",
    "most_frequent": "most frequent rules (jobs)",
    "found": "what fired it",
    # the components and their ceiling (iostudy.metrics.ceiling)
    "measured_mib_s": "measured MiB/s",
    "declared_mib_s": "declared MiB/s",
    "used_mib_s": "used MiB/s",
    "ceiling_mib_s": "ceiling MiB/s",
    "ceiling_pct": "% of the ceiling",
    "limited_by": "limited by",
    # a before/after pair (iostudy.report.beforeafter)
    "a": "A (before)",
    "b": "B (after)",
    "b_over_a": "B / A",
    # seed 004's interference probe (iostudy.report.probe_report) and adaptive I/O
    # (adaptive_report), some shared with other tables (a job's ranks: slowest_s): words that
    # wrap, so that their wide tables fit the page
    "writers_per_target": "writers per target",
    "bytes_per_writer": "bytes per writer",
    "aggregate_mib_s": "aggregate MiB/s",
    "mean_writer_mib_s": "mean writer MiB/s",
    "slowest_writer_mib_s": "slowest writer MiB/s",
    "fastest_writer_mib_s": "fastest writer MiB/s",
    "slowest_s": "slowest (s)",
    "fastest_s": "fastest (s)",
    "mean_mib_s": "mean MiB/s",
    "min_mib_s": "min MiB/s",
    "max_mib_s": "max MiB/s",
    "std_mib_s": "std MiB/s",
    "cov_pct": "CoV %",
    "mean_imbalance": "mean imbalance",
    "max_imbalance": "max imbalance",
    "mean_s": "mean (s)",
    "target_spread": "target spread",
    "size_mib": "MiB per writer",
    "competing_writer": "competing writer here",
}
