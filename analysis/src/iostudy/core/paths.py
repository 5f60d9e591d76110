"""Where commands read and write when not told, one rule for every command: paths relative to
the current folder (the checkout's root, where `make`, the workflow and the CI scripts run):
run directories in results/, the store in results/store, metric tables in results/metrics,
reports in reports/. A command that writes a path down for later (a crontab entry) writes it
absolute, resolved from the current folder when it runs."""

from __future__ import annotations

from pathlib import Path

RESULTS = Path("results")
STORE = RESULTS / "store"
METRICS = RESULTS / "metrics"
REPORTS = Path("reports")
