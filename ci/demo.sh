#!/usr/bin/env bash
# `make demo` (after `make setup`): the quick campaign on this machine (system `local`), then the
# Snakemake workflow, which ingests every run under results/, computes the metrics and publishes
# a new version of the report. The last line of output is the new report's index.html.
set -euo pipefail
cd "$(dirname "$0")/.."

study=quick
latest() { # highest published version of the study, 0 if none
    find "reports/$study" -mindepth 1 -maxdepth 1 -type d -name 'v[0-9]*' -printf '%f\n' 2>/dev/null |
        sed 's/^v//' | sort -n | tail -n 1 | grep . || echo 0
}
before=$(latest)

# Exit status 1: the run finished but a check failed; its results still go into the report.
status=0
.venv/bin/iostudy campaign run quick --system local || status=$?
if [ "$status" -ne 0 ] && [ "$status" -ne 1 ]; then
    echo "demo: the campaign could not run (exit status $status)" >&2
    exit "$status"
fi

.venv/bin/snakemake -s workflow/Snakefile --directory . --cores 2 --configfile workflow/config/config.yaml

after=$(latest)
if [ "$after" -le "$before" ]; then
    echo "demo: the workflow published no new version under reports/$study/" >&2
    exit 1
fi
if [ "$status" -ne 0 ]; then
    echo "demo: a check failed in the campaign (see the report's ReFrame table)" >&2
fi
echo "reports/$study/v$after/index.html"
exit "$status"
