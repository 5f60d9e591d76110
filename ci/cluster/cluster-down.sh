#!/usr/bin/env bash
# Stops the Slurm test cluster that cluster-up.sh started: cancels every job, stops each daemon
# by its PID file (TERM, then KILL after a grace period) and removes what the ledger says
# cluster-up created (the GlusterFS clients, bricks and glusterds, namespaces, veths, bridge,
# the storage targets' mounts and loop devices, the /etc/slurm/slurm.conf symlink, munged).
# Keeps the state directory (accounting database, slurmctld state, logs) for the next start.
# Safe to run when nothing is up.
#
#   CLUSTER_STATE=build/cluster  state directory given to cluster-up.sh
set -Eeuo pipefail

# shellcheck disable=SC2034 # read by lib.sh
SCRIPT=cluster-down
REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO"
# shellcheck source=ci/cluster/lib.sh
source ci/cluster/lib.sh
# shellcheck source=ci/cluster/gluster.sh
source ci/cluster/gluster.sh

DRAIN_SECONDS=5
GRACE_SECONDS=5

# Jobs would otherwise outlive their slurmd (slurmstepd keeps running) and show up requeued
# at the next start.
cancel_jobs() {
    live_pid "$TESTBED_RUN/slurmctld.pid" slurmctld >/dev/null || return 0
    local jobs deadline=$((SECONDS + DRAIN_SECONDS))
    mapfile -t jobs < <(squeue -h -o %i 2>/dev/null)
    [ ${#jobs[@]} -gt 0 ] || return 0
    scancel "${jobs[@]}" 2>/dev/null || true
    until [ -z "$(squeue -h -o %i 2>/dev/null)" ] || [ $SECONDS -ge $deadline ]; do
        sleep 0.2
    done
    say "cancelled ${#jobs[@]} job(s); queue: $(squeue -h 2>/dev/null | wc -l) left"
}

# Live PIDs of daemons named COMM whose PID files match GLOB.
pids_of() {
    local comm=$1 file pid
    shift
    for file in "$@"; do
        pid=$(live_pid "$file" "$comm") && echo "$pid"
    done
    return 0
}

# The munged cluster-up started, if it did (a munged that ran before is not ours to stop).
ledger_munged() {
    local pid
    [ -f "$(ledger)" ] || return 0
    pid=$(awk '$1 == "munged" { print $2 }' "$(ledger)")
    [ -z "$pid" ] || [ "$(cat "/proc/$pid/comm" 2>/dev/null)" != munged ] || echo "$pid"
}

# The order keeps each daemon's peer up while it shuts down: slurmd and slurmctld report to
# slurmdbd, which writes to MariaDB and authenticates with munged.
stop_daemons() {
    local run=$TESTBED_RUN pids
    mapfile -t pids < <(pids_of slurmd "$run"/slurmd-*.pid)
    mapfile -t -O "${#pids[@]}" pids < <(pids_of slurmctld "$run/slurmctld.pid")
    stop_pids "slurmd and slurmctld" "$GRACE_SECONDS" "${pids[@]}"
    mapfile -t pids < <(pids_of slurmdbd "$run/slurmdbd.pid")
    stop_pids slurmdbd "$GRACE_SECONDS" "${pids[@]}"
    # Each takes about 2 s to exit and neither needs the other any more: stop them together.
    local munged what=mariadb
    mapfile -t pids < <(pids_of mariadbd "$run/mariadb.pid")
    munged=$(ledger_munged)
    [ -z "$munged" ] || { pids+=("$munged") && what+=" and munged"; }
    stop_pids "$what" "$GRACE_SECONDS" "${pids[@]}"
    # A KILLed daemon leaves its PID file; the next start must not trust it.
    rm -f "$run"/slurmd-*.pid "$run"/slurmctld.pid "$run"/slurmdbd.pid "$run"/mariadb.pid
}

# Processes left in a node's namespace (steps of a job that ignored the cancel) were started
# through our slurmd; the namespace cannot go while they hold it.
remove_netns() {
    local ns=$1 pids
    [ -e "/run/netns/$ns" ] || return 0
    mapfile -t pids < <(ip netns pids "$ns" 2>/dev/null)
    stop_pids "processes left in $ns" 2 "${pids[@]}"
    ip netns delete "$ns"
}

undo() {
    local kind=$1 what=$2
    case $kind in
    symlink)
        # Only while it still leads to this cluster: someone may have replaced it since.
        if [ -L "$what" ] && [ "$(readlink "$what")" = "$TESTBED_SLURM_CONF" ]; then
            rm -f "$what"
        fi
        ;;
    netns) remove_netns "$what" ;;
    link | bridge)
        if ip link show dev "$what" >/dev/null 2>&1; then ip link delete "$what"; fi
        ;;
    munged) return 0 ;; # stopped with the daemons
    glusterfs-client) stop_node_client "$what" ;;
    glusterd) stop_glusterd "$what" ;;
    mount)
        if mountpoint -q "$what"; then umount "$what"; fi
        ;;
    loop)
        # Only while it is still ours: a loop device whose image is gone is someone else's.
        if losetup "$what" 2>/dev/null | grep -qF "${TESTBED_RUN%/run}/targets/"; then
            losetup -d "$what"
        fi
        ;;
    *)
        warn "unknown ledger entry: $kind $what"
        return 0
        ;;
    esac
    say "removed $kind $what"
}

# Newest first: links go before their bridge.
undo_ledger() {
    local kind what
    [ -f "$(ledger)" ] || return 0
    while read -r kind what; do
        undo "$kind" "$what"
    done < <(tac "$(ledger)")
    rm -f "$(ledger)"
}

main() {
    local t0=$EPOCHREALTIME state
    require_root
    state=${CLUSTER_STATE:-build/cluster}
    if [ ! -f "$state/testbed.sh" ]; then
        say "nothing to stop (no $state/testbed.sh); done in $(elapsed "$t0") s"
        return 0
    fi
    state=$(cd "$state" && pwd)
    lock_state "$state"
    # shellcheck source=/dev/null
    source "$state/testbed.sh"
    export SLURM_CONF=$TESTBED_SLURM_CONF
    cancel_jobs
    stop_daemons
    stop_gluster
    undo_ledger
    # env.sh then says the volume is not served
    rm -f "${TESTBED_GLUSTER_STATUS:-}"
    say "done in $(elapsed "$t0") s; nothing of the cluster runs (state kept in $state)"
}

main "$@"
