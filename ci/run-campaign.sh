#!/usr/bin/env bash
# One scheduled campaign run, for cron, scrontab or a CI job (ci/templates/): set up, run the
# campaign on the system, publish the report. Runs never overlap (a lock), and each run keeps
# its own log.
#
#   ci/run-campaign.sh CAMPAIGN SYSTEM
#
#   IOSTUDY_UPDATE=1        first `git pull --ff-only` this checkout (cron and scrontab)
#   IOSTUDY_PUBLISH_DIR=DIR durable home of the published reports: its versions are copied in
#                           before the run (so the new one is numbered after them) and the
#                           reports/ tree is copied back after it
#   IOSTUDY_LOG_DIR=DIR     one log per run (default build/campaign-logs)
#   IOSTUDY_LOCK=FILE       the lock (default ${TMPDIR:-/tmp}/iostudy-campaign-SYSTEM.lock; put
#                           it on a shared file system if runs may start on different hosts)
#
#   IOSTUDY_ON_REGRESSION=COMMAND  a shell command line run when the run regressed, the
#                           judgement's JSON on its stdin (ci/judge-campaign.sh: its environment)
#   IOSTUDY_BASELINE=RUN_ID the accepted run, the baseline of the runs after it
#
# Steps: `iostudy campaign run` (a new results/<run-id>/), then the Snakemake workflow, which
# ingests every run, computes the metrics and publishes reports/<study>/v<N+1>/, then
# ci/judge-campaign.sh: `iostudy compare --json` of the new run against the runs before it,
# saved next to the log (<log>.compare.json), and IOSTUDY_ON_REGRESSION on a regression.
# Exit status:
#   0    all passed, no regression; or a run is already in progress (this one skipped, says so)
#   1    a check failed in the campaign (the report still shows it), no regression
#   10   a regression (whether or not a check failed; IOSTUDY_ON_REGRESSION, if set, succeeded)
#   11   a regression, and the IOSTUDY_ON_REGRESSION command failed (logged)
#   12   no judgement: compare failed
#   else the failing step's status (2 bad input, 3 a campaign stopped by a bound, make's and
#        Snakemake's own)
set -euo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 CAMPAIGN SYSTEM" >&2
    exit 2
fi
campaign=$1
system=$2
cd "$(dirname "$0")/.."

lock=${IOSTUDY_LOCK:-${TMPDIR:-/tmp}/iostudy-campaign-$system.lock}
exec 9>>"$lock"
if ! flock -n 9; then
    echo "run-campaign: a run on $system holds $lock; skipping this one" >&2
    exit 0
fi

log_dir=${IOSTUDY_LOG_DIR:-build/campaign-logs}
mkdir -p "$log_dir"
log=$log_dir/$(date -u +%Y%m%dT%H%M%SZ)-$campaign-$system.log
# Everything below goes to the log and to our own output (cron mail, CI job log).
exec > >(tee -a "$log") 2>&1

step() { echo "run-campaign: $(date -u +%FT%TZ) $*"; }
on_exit() {
    local status=$?
    case $status in
    0) ;;
    10) step "REGRESSION (status 10); log: $log" ;;
    11) step "REGRESSION, and its command FAILED (status 11); log: $log" ;;
    *) step "FAILED with status $status; log: $log" ;;
    esac
}
trap on_exit EXIT

step "campaign $campaign on system $system, commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [ "${IOSTUDY_UPDATE:-0}" = 1 ]; then
    step "updating the checkout"
    git pull --ff-only
fi

step "make setup"
make setup

publish=${IOSTUDY_PUBLISH_DIR:-}
if [ -n "$publish" ] && [ -d "$publish" ]; then
    # Published versions are immutable: copy them in without overwriting anything here.
    step "fetching published reports from $publish"
    cp -a -n "$publish"/. reports/
fi

step "iostudy campaign run $campaign --system $system"
campaign_status=0
# its output's last line is the new run's directory (tee: the output goes to the log as well)
run_dir=$(.venv/bin/iostudy campaign run "$campaign" --system "$system" |
    tee /dev/stderr | tail -n 1) || campaign_status=$?
[ "$campaign_status" -le 1 ] || exit "$campaign_status"

study=$(.venv/bin/python -c 'import sys; from iostudy.core import config
print(config.load_campaign(sys.argv[1])["study"])' "$campaign")
step "workflow: ingest, metrics, report of study $study"
.venv/bin/snakemake -s workflow/Snakefile --directory . --cores 2 \
    --configfile workflow/config/config.yaml --config "study=$study"

if [ -n "$publish" ]; then
    step "publishing reports/ to $publish"
    mkdir -p "$publish"
    cp -a reports/. "$publish"/
fi
step "judging run $(basename "$run_dir") against the runs before it"
judge_status=0
ci/judge-campaign.sh "$campaign" "$system" "$(basename "$run_dir")" "${log%.log}.compare.json" ||
    judge_status=$?
step "done; log: $log${publish:+, reports: $publish}"
[ "$judge_status" -eq 0 ] || exit "$judge_status"
exit "$campaign_status"
