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
# It runs as root over folders users can write, so it trusts only what it made or checked:
# - only files owned by the job's user (SLURM_JOB_UID) that are regular files, not links, are
#   taken, and checked again before the merge; another user's file of a matching name is left
#   where it is, and logged;
# - the job's staging folder IOSTUDY_STAGING/<jobid> is made by the epilog (mkdir, mode 0700,
#   root's). One that is already there is used only if it is a folder, not a link, of root's
#   that nobody else can write (another node's epilog made it); anything else (another user
#   made it first, with files of theirs, a .lock or .node-* in it) is left alone and logged,
#   and the job's files stay in IOSTUDY_MMAP_DIR;
# - the merged log is written into a new folder of root's inside IOSTUDY_LOG_DIR, given to the
#   job's user, and renamed to <user>_id<jobid>_killed.darshan: a link or file someone put at
#   that name is replaced, never written through.
# IOSTUDY_STAGING and IOSTUDY_LOG_DIR (made, if missing, 0755) must be root's and writable by
# nobody else, or only with the sticky bit (1777, as /tmp): otherwise nothing is merged, and
# that is logged. Only the epilog writes in IOSTUDY_STAGING: make it 0755. A world-writable one
# lets any user block the merge of a job by making the job's folder first.
#
# Settings, from the environment or from IOSTUDY_EPILOG_CONF (default /etc/iostudy/epilog.conf,
# a shell file of NAME=value lines):
#   IOSTUDY_MMAP_DIR  the jobs' DARSHAN_MMAP_LOGPATH, node-local      (default /dev/shm)
#   IOSTUDY_STAGING   a folder on a file system all nodes share       (required)
#   IOSTUDY_LOG_DIR   where merged logs go: <user>_id<jobid>_killed.darshan  (required)
#   IOSTUDY_MERGE     the iostudy-merge program (built beside libiostudy.so) (default: on PATH)
set -u
umask 022 # folders made on the way (mkdir -p) are root's and nobody else's to write
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
if ! [[ $job =~ ^[0-9]+$ ]]; then # it names a folder
    log "not a job id: nothing done"
    exit 0
fi
me=$(id -u) # root, as Slurm runs an epilog: the one owner of the folders it writes in
uid=${SLURM_JOB_UID:-}
[[ $uid =~ ^[0-9]+$ ]] || uid=""

# exists PATH: anything is there, a dangling link too.
exists() { [ -e "$1" ] || [ -L "$1" ]; }

# safe_dir DIR [shared]: DIR is a folder of this script's user that nobody else can write. With
# "shared" (a configured folder) others may write it if it has the sticky bit (they cannot then
# rename or remove what root puts there), and it may be a link of root's; else no link at all.
safe_dir() {
    local owner mode
    if [ -L "$1" ]; then
        [ "${2:-}" = shared ] && [ "$(stat -c %u -- "$1")" = "$me" ] || return 1
    fi
    [ -d "$1" ] && read -r owner mode < <(stat -L -c '%u %a' -- "$1") || return 1
    [ "$owner" = "$me" ] || return 1
    ((8#$mode & 8#022)) || return 0
    [ "${2:-}" = shared ] && ((8#$mode & 8#1000))
}

# own_file FILE: a regular file, not a link, of the job's user.
own_file() {
    [ -n "$uid" ] && [ -f "$1" ] && [ ! -L "$1" ] && [ "$(stat -c %u -- "$1")" = "$uid" ]
}

# make_stage: $stage made now (mkdir, not -p: never one someone else made), 0700 and root's, or
# made so by another node's epilog. Root's, not the job user's: nobody else needs to write there,
# and in a folder of theirs the user could swap a checked file for a link or for another user's
# file before root merges it. Anything else at that name is left alone, and logged.
make_stage() {
    if ! exists "$IOSTUDY_STAGING"; then
        mkdir -p -- "$IOSTUDY_STAGING" || log "cannot create $IOSTUDY_STAGING"
    fi
    if ! safe_dir "$IOSTUDY_STAGING" shared; then
        log "refused $IOSTUDY_STAGING: not a folder of uid $me that others cannot write" \
            "(or only with the sticky bit); nothing staged"
        return 1
    fi
    mkdir -m 0700 -- "$stage" 2>/dev/null && return 0
    safe_dir "$stage" && return 0
    log "refused $stage: not a folder of uid $me that others cannot write (a link, another" \
        "user's, group/other-writable) or cannot be made; left alone, nothing staged or merged"
    return 1
}

# take_files: this node's files of the job, the job user's own only, into $stage.
take_files() {
    local f
    for f in "${mine[@]}"; do
        if own_file "$f"; then
            mv -f -T -- "$f" "$stage/${f##*/}" || log "cannot move $f to $stage"
        else
            log "left $f: not a regular file of the job's user (uid ${uid:-unknown})"
        fi
    done
}

# write_log LOG...: merges LOGs into a new file in a new folder of root's inside IOSTUDY_LOG_DIR
# (mktemp -d; iostudy-merge runs as root), gives it to the job's user and renames it (same file
# system: rename(2), which replaces a link at the name rather than follow it) to its name.
write_log() {
    local dir=$IOSTUDY_LOG_DIR out tmp err
    out=${SLURM_JOB_USER:-user}
    out=$dir/${out//\//_}_id${job}_killed.darshan
    exists "$dir" || mkdir -p -- "$dir" || log "cannot create $dir" # 0755: the umask
    if ! safe_dir "$dir" shared; then
        log "refused $dir: not a folder of uid $me that others cannot write (or only with the" \
            "sticky bit); logs kept in $stage"
        return 1
    fi
    if ! tmp=$(mktemp -d -- "$dir/.iostudy-epilog-$job.XXXXXX"); then
        log "cannot create a folder in $dir: logs kept in $stage"
        return 1
    fi
    if ! err=$("$merge" --output "$tmp/log" --job-end-time "$(date +%s)" "$@" 2>&1); then
        log "merge failed, logs kept in $stage: $err"
    elif ! chown -- "$uid" "$tmp/log"; then
        log "cannot give the merged log to uid $uid: logs kept in $stage"
    elif ! mv -f -T -- "$tmp/log" "$out"; then
        log "cannot rename the merged log to $out: logs kept in $stage"
    else
        rmdir -- "$tmp"
        log "merged $# logs into $out"
        return 0
    fi
    rm -rf -- "$tmp"
    return 1
}

# merge_staged: the staged files of the job's user merged; anything else there (a link, another
# user's file: a node can take a file that changed after its check) is left out, and logged.
merge_staged() {
    local f logs=()
    for f in "$stage"/*_mmap-log-*.darshan; do
        if own_file "$f"; then
            logs+=("$f")
        else
            log "not merged: $f is not a regular file of the job's user (uid ${uid:-unknown})"
        fi
    done
    [ ${#logs[@]} -eq 0 ] || write_log "${logs[@]}"
}

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
if [ ${#mine[@]} -eq 0 ] && [ "$nodes" -le 1 ] && ! exists "$stage"; then
    exit 0
fi
make_stage || exit 0
take_files
touch -- "$stage/.node-$host"

(
    flock 9 || exit 0
    arrived=("$stage"/.node-*)
    if [ "$nodes" -eq 0 ]; then # merging now could leave other nodes' files out
        log "cannot tell how many nodes the job had: files kept in $stage"
        exit 0
    fi
    [ ${#arrived[@]} -ge "$nodes" ] || exit 0 # another node has yet to move its files
    merge_staged || exit 0
    rm -rf -- "$stage"
) 9>"$stage/.lock"
exit 0
