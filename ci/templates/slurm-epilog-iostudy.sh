#!/bin/bash
# Slurm Epilog (slurm.conf: Epilog=/path/to/slurm-epilog-iostudy.sh): turns the memory-mapped
# per-process logs of a job that did not end normally (time limit, SIGKILL, crash, node failure)
# into one Darshan log. A job that ended normally left none: its processes removed them.
#
# It runs on every node of the job, as root, after the job. Each node moves the job's files of
# that node (their names carry the host name) out of its node-local folder into a staging folder
# every node can write (only its own: where nodes share the folder, as the test cluster's do, two
# nodes moving one file at once across file systems can lose it); the last node to arrive
# (SLURM_JOB_NUM_NODES says how many there are) merges them with iostudy-merge, gives the log to
# the job's user and removes the staged files. It never fails: a failing epilog drains the node.
#
# Only files owned by the job's user (SLURM_JOB_UID) are taken: another user's file of a
# matching name is left where it is, and logged.
#
# Settings, from the environment or from IOSTUDY_EPILOG_CONF (default /etc/iostudy/epilog.conf,
# a shell file of NAME=value lines):
#   IOSTUDY_MMAP_DIR  the jobs' DARSHAN_MMAP_LOGPATH, node-local      (default /dev/shm)
#   IOSTUDY_STAGING   a folder on a file system all nodes share       (required)
#   IOSTUDY_LOG_DIR   where merged logs go: <user>_id<jobid>_killed.darshan  (required)
#   IOSTUDY_MERGE     the iostudy-merge program (built beside libiostudy.so) (default: on PATH)
set -u
conf=${IOSTUDY_EPILOG_CONF:-/etc/iostudy/epilog.conf}
# shellcheck disable=SC1090
[ -r "$conf" ] && . "$conf"

log() { logger -t iostudy-epilog -- "job ${SLURM_JOB_ID:-?}: $*" 2>/dev/null || true; }

job=${SLURM_JOB_ID:-}
mmap_dir=${IOSTUDY_MMAP_DIR:-/dev/shm}
merge=${IOSTUDY_MERGE:-iostudy-merge}
if [ -z "$job" ] || [ -z "${IOSTUDY_STAGING:-}" ] || [ -z "${IOSTUDY_LOG_DIR:-}" ]; then
    log "not configured (SLURM_JOB_ID, IOSTUDY_STAGING, IOSTUDY_LOG_DIR): nothing done"
    exit 0
fi

shopt -s nullglob
host=$(hostname)
mine=("$mmap_dir"/*_id"${job}"_mmap-log-"${host}"-*.darshan)
stage=$IOSTUDY_STAGING/$job
# Slurm 22.05 gives an epilog SLURM_JOB_NUM_NODES and SLURM_NODELIST, not SLURM_JOB_NODELIST.
nodes=${SLURM_JOB_NUM_NODES:-}
if ! [[ $nodes =~ ^[0-9]+$ ]]; then
    nodes=$(scontrol show hostnames "${SLURM_JOB_NODELIST:-${SLURM_NODELIST:-}}" 2>/dev/null | wc -l)
fi
# Nothing here and a one-node job: nothing to merge, and no staging folder to leave behind.
if [ ${#mine[@]} -eq 0 ] && [ "$nodes" -le 1 ] && [ ! -d "$stage" ]; then
    exit 0
fi
mkdir -p "$stage" || { log "cannot create $stage"; exit 0; }
# Only the job's user's own regular files: the folder is shared by all users, and another
# could plant a file of that name to put records into this job's log.
uid=${SLURM_JOB_UID:-}
for f in "${mine[@]}"; do
    if [ -n "$uid" ] && [ -f "$f" ] && [ ! -L "$f" ] && [ "$(stat -c %u -- "$f")" = "$uid" ]; then
        mv -f -- "$f" "$stage/" || log "cannot move $f to $stage"
    else
        log "left $f: not a regular file of the job's user (uid ${uid:-unknown})"
    fi
done
touch "$stage/.node-$host"

(
    flock 9 || exit 0
    arrived=("$stage"/.node-*)
    if [ "$nodes" -eq 0 ]; then # merging now could leave other nodes' files out
        log "cannot tell how many nodes the job had: files kept in $stage"
        exit 0
    fi
    [ ${#arrived[@]} -ge "$nodes" ] || exit 0 # another node has yet to move its files
    logs=("$stage"/*_mmap-log-*.darshan)
    if [ ${#logs[@]} -gt 0 ]; then
        mkdir -p "$IOSTUDY_LOG_DIR"
        out=$IOSTUDY_LOG_DIR/${SLURM_JOB_USER:-user}_id${job}_killed.darshan
        if err=$("$merge" --output "$out" --job-end-time "$(date +%s)" "${logs[@]}" 2>&1); then
            chown "${SLURM_JOB_UID:-0}" "$out" 2>/dev/null || true
            log "merged ${#logs[@]} logs into $out"
        else
            log "merge failed, logs kept in $stage: $err"
            exit 0
        fi
    fi
    rm -rf -- "$stage"
) 9>"$stage/.lock"
exit 0
