#!/usr/bin/env bash
# `make demo`: run a small workload of ordinary tools under the iostudy runtime, then summarise
# every Darshan-format log it wrote. Expects `make setup` to have run.
set -euo pipefail
cd "$(dirname "$0")/.."

lib=$PWD/build/runtime/libiostudy.so
if [ ! -f "$lib" ]; then
    echo "error: $lib is missing; run 'make setup' first" >&2
    exit 1
fi

data=build/demo/data
logs=build/demo/logs/$(date +%Y%m%dT%H%M%S)
# Logs go to <LOGPATH>/<YYYY>/<M>/<D>/ (Darshan's convention); the runtime makes the date folders.
mkdir -p "$data" "$logs"

# Run one command under the runtime, in non-MPI mode, tagging its log.
instrumented() {
    echo "+ $*" >&2
    LD_PRELOAD=$lib DARSHAN_ENABLE_NONMPI=1 DARSHAN_LOGPATH=$PWD/$logs \
        IOSTUDY_LOG_TAGS="campaign=demo;check=demo_workload" "$@"
}

instrumented dd if=/dev/zero of="$data/file" bs=1M count=64 status=none
instrumented cat "$data/file" >/dev/null
# The interpreter itself, not a wrapper script (a pyenv shim would add a log per helper it runs).
python=$(python3 -c 'import sys; print(sys.executable)')
instrumented "$python" -c 'import sys; print(*range(1000), sep="\n", file=open(sys.argv[1], "w"))' \
    "$data/numbers.txt"

mapfile -t written < <(find "$logs" -name '*.darshan' | sort)
if [ ${#written[@]} -eq 0 ]; then
    echo "error: the runtime wrote no log under $logs" >&2
    exit 1
fi
for log in "${written[@]}"; do
    echo
    .venv/bin/iostudy log summary "$log"
done
echo
echo "demo: ${#written[@]} logs in $logs"
