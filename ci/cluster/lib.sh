# shellcheck shell=bash
# Functions shared by cluster-up.sh and cluster-down.sh (sourced; SCRIPT names the caller).

# errexit alone stops without a word: name the command that failed (set -E: in functions too).
trap 'echo "$SCRIPT: error: \"$BASH_COMMAND\" failed (status $?, line $LINENO)" >&2' ERR

say() { echo "$SCRIPT: $*"; }
warn() { echo "$SCRIPT: warning: $*" >&2; }
die() {
    echo "$SCRIPT: error: $*" >&2
    exit 1
}

# Reads all of stdin (grep -q would stop early and fail the pipeline on SIGPIPE under pipefail).
has_line() { grep -xF -- "$1" >/dev/null; }

require_root() {
    [ "$(id -u)" -eq 0 ] ||
        die "must run as root: it starts daemons as root and may create network namespaces"
}

# The state directory, absolute: the rendered files hold absolute paths into it.
state_dir() {
    local dir=${CLUSTER_STATE:-build/cluster}
    mkdir -p "$dir"
    (cd "$dir" && pwd)
}

# One cluster-up or cluster-down at a time per state directory (tests may race them). Daemons
# are started with 9>&-: one that kept the descriptor would hold the lock for its lifetime.
# CLUSTER_LOCKED: set by cluster-up when it calls cluster-down while holding the lock.
lock_state() {
    [ -z "${CLUSTER_LOCKED:-}" ] || return 0
    exec 9>"$1/.lock"
    flock -w 120 9 || die "another cluster-up/cluster-down holds $1/.lock"
}

# The PID in FILE if that process lives and is COMM: a stale file may name a reused PID.
live_pid() {
    local file=$1 comm=$2 pid
    [ -r "$file" ] && read -r pid <"$file" 2>/dev/null || return 1
    [[ $pid =~ ^[0-9]+$ ]] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$comm" ] || return 1
    echo "$pid"
}

# The ledger lists what cluster-up created outside the state directory (bridge, namespaces,
# links, the /etc/slurm symlink, a munged it started) so that cluster-down undoes exactly that.
ledger() { echo "$TESTBED_RUN/created"; }
record() { grep -qxF "$*" "$(ledger)" 2>/dev/null || echo "$*" >>"$(ledger)"; }

# TERM, then KILL whatever still lives after GRACE seconds.
stop_pids() {
    local what=$1 grace=$2
    shift 2
    [ $# -gt 0 ] || return 0
    kill -TERM "$@" 2>/dev/null || true
    local deadline=$((${EPOCHREALTIME/./} + grace * 1000000)) pid left
    while :; do
        left=()
        for pid in "$@"; do kill -0 "$pid" 2>/dev/null && left+=("$pid"); done
        [ ${#left[@]} -eq 0 ] && break
        if [ "${EPOCHREALTIME/./}" -ge "$deadline" ]; then
            warn "$what did not stop within ${grace}s: KILL ${left[*]}"
            kill -KILL "${left[@]}" 2>/dev/null || true
            break
        fi
        sleep 0.1
    done
    say "stopped $what (pid $*)"
}

elapsed() {
    local t0=$1
    awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'
}
