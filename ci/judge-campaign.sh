#!/usr/bin/env bash
# Judges a scheduled campaign's new run (ci/run-campaign.sh calls it after the workflow has
# ingested the run): `iostudy compare --json` over the store, restricted to the system and the
# run, each value judged against the runs before it; the JSON is saved to JSON_FILE. On a
# regression it runs the site's command, so that a facility hears of it (mail, a ticket, a chat).
#
#   ci/judge-campaign.sh CAMPAIGN SYSTEM RUN_ID JSON_FILE
#
# Run from the checkout's root: it uses .venv/bin/iostudy and the store results/store.
#
#   IOSTUDY_BASELINE=RUN_ID        the accepted run: compare --baseline RUN_ID
#   IOSTUDY_ON_REGRESSION=COMMAND  a shell command line (sh -c), run on a regression with the JSON
#                                  on its stdin and in its environment IOSTUDY_COMPARE_JSON (the
#                                  saved file, absolute), IOSTUDY_CAMPAIGN, IOSTUDY_SYSTEM; e.g.
#                                  'mail -s "iostudy regression on $IOSTUDY_SYSTEM" ops@site'
#   IOSTUDY_ON_REGRESSION_TIMEOUT=S  the command is stopped after S seconds (600), so that a hung
#                                  one never keeps the campaign's lock (status 124: failed)
#
# Exit status (above every status a step of run-campaign.sh returns: make, ReFrame, Snakemake
# and iostudy use 1, 2, 3 and 130):
#   0   no regression
#   10  a regression (and the command, if one is set, ran and succeeded)
#   11  a regression, and the command failed: its status and command line are logged
#   12  no judgement: compare failed (bad input, a crash); its message is above
set -euo pipefail

if [ $# -ne 4 ]; then
    echo "usage: $0 CAMPAIGN SYSTEM RUN_ID JSON_FILE" >&2
    exit 2
fi
campaign=$1
system=$2
run_id=$3
json=$(realpath -m "$4")

say() { echo "judge-campaign: $*"; }

if [ -z "$run_id" ]; then
    # without --run, compare would judge every series' latest value again, another campaign's too
    say "no judgement: no run to judge (the campaign named no run directory)" >&2
    exit 12
fi

mkdir -p "$(dirname "$json")"
args=(compare --json --system "$system" --run "$run_id")
if [ -n "${IOSTUDY_BASELINE:-}" ]; then
    args+=(--baseline "$IOSTUDY_BASELINE")
fi
say "iostudy ${args[*]} > $json"
compare_status=0
.venv/bin/iostudy "${args[@]}" >"$json" || compare_status=$?

# compare exits 1 on a regression, but so does a Python crash: the JSON must say it. Bad input
# is told in the JSON only ("error").
verdict=$(.venv/bin/python -c 'import json, sys
try:
    out = json.load(open(sys.argv[1]))
    n = out["verdicts"]["regression"] if out["exit_status"] == 1 else -1
    print(n, out.get("error", ""))
except (OSError, ValueError, KeyError, TypeError) as exc:
    print(-1, f"no judgement in {sys.argv[1]}: {exc}")' "$json")
regressions=${verdict%% *}
error=${verdict#* }
if [ "$compare_status" -eq 0 ]; then
    say "no regression in run $run_id on $system"
    exit 0
fi
if [ "$compare_status" -ne 1 ] || [ "$regressions" -le 0 ]; then
    say "no judgement: compare failed with status $compare_status${error:+: $error}" >&2
    exit 12
fi

say "REGRESSION: $regressions values of run $run_id on $system; the judgement: $json"
if [ -z "${IOSTUDY_ON_REGRESSION:-}" ]; then
    say "no IOSTUDY_ON_REGRESSION command set: nobody else is told"
    exit 10
fi
say "running IOSTUDY_ON_REGRESSION: $IOSTUDY_ON_REGRESSION"
hook_status=0
IOSTUDY_COMPARE_JSON=$json IOSTUDY_CAMPAIGN=$campaign IOSTUDY_SYSTEM=$system \
    timeout "${IOSTUDY_ON_REGRESSION_TIMEOUT:-600}" sh -c "$IOSTUDY_ON_REGRESSION" <"$json" ||
    hook_status=$?
if [ "$hook_status" -ne 0 ]; then
    say "FAILED: the IOSTUDY_ON_REGRESSION command exited with status $hook_status:" \
        "$IOSTUDY_ON_REGRESSION" >&2
    exit 11
fi
exit 10
