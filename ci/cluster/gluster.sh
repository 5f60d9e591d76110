# shellcheck shell=bash
# The test cluster's GlusterFS volume and link rates (sourced by cluster-up.sh and
# cluster-down.sh after lib.sh; reads the facts of testbed.sh).
#
# Each node runs a glusterd in its network namespace, with its host name, and in a mount
# namespace of its own, where gluster/<node>/{lib,run,log} of the state directory are mounted
# over /var/lib/glusterd, /run/gluster and /var/log/glusterfs: the brick processes it starts use
# those fixed paths, and the nodes share this machine's file system. One brick per node on its storage target, one
# distributed volume, and each node's FUSE client in the mount namespace of that node's slurmd,
# so that the node's jobs see its client at the one mount path. Functions that set up the volume
# return non-zero instead of dying: the cluster then comes up without it (GLUSTER_WHY says why).

GLUSTER_TIMEOUT=20
# Why the volume is not served ("" while it is).
GLUSTER_WHY=""

gluster_dir() { echo "${TESTBED_GLUSTER_DIRS[$1]}"; }

# The gluster CLI, aimed at node I's glusterd (by its socket; unix sockets need no netns).
gluster_cli() {
    local dir
    dir=$(gluster_dir "$1")
    shift
    gluster --mode=script --glusterd-sock="$dir/run/glusterd.socket" \
        --log-file="$dir/log/cli.log" "$@"
}

# Runs "$@" until it succeeds or SECONDS pass; returns 1 on timeout (unlike wait_until).
within() {
    local seconds=$1 deadline
    shift
    deadline=$((${EPOCHREALTIME/./} + seconds * 1000000))
    until "$@" >/dev/null 2>&1; do
        [ "${EPOCHREALTIME/./}" -lt "$deadline" ] || return 1
        sleep 0.2
    done
}

# Why the volume cannot be served here; nothing when it can.
gluster_unavailable() {
    local c
    if [ -z "$TESTBED_GLUSTER_VOLUME" ]; then
        echo "the system lists no glusterfs storage"
        return
    elif [ "${IOSTUDY_GLUSTER:-on}" = off ]; then
        echo "switched off (IOSTUDY_GLUSTER=off)"
        return
    elif [ "$TESTBED_MODE" != netns ]; then
        echo "$TESTBED_MODE mode: glusterd needs a network namespace per node"
        return
    fi
    for c in glusterd glusterfs gluster getfattr; do
        if ! command -v "$c" >/dev/null; then
            echo "no $c command (make setup installs glusterfs-server, glusterfs-client, attr)"
            return
        fi
    done
    if [ ! -c /dev/fuse ]; then
        echo "no /dev/fuse on this machine"
    elif ! { : <>/dev/fuse; } 2>/dev/null; then
        echo "/dev/fuse cannot be opened here (FUSE is not allowed)"
    fi
}

write_gluster_status() {
    local file=$TESTBED_GLUSTER_STATUS
    {
        echo "# Written by cluster-up: is the GlusterFS volume served?"
        if [ -n "$GLUSTER_WHY" ]; then
            echo "export IOSTUDY_GLUSTER_UNAVAILABLE='${GLUSTER_WHY//\'/}'"
        else
            echo "unset IOSTUDY_GLUSTER_UNAVAILABLE"
        fi
    } >"$file.tmp" && mv "$file.tmp" "$file"
}

start_glusterd() {
    local i=$1 node=${TESTBED_NODES[$1]} dir pid
    dir=$(gluster_dir "$i")
    if pid=$(live_pid "$dir/run/glusterd.pid" glusterd); then
        say "glusterd $node: running (pid $pid)"
        return 0
    fi
    mkdir -p "$dir/lib" "$dir/run" "$dir/log" /var/lib/glusterd /run/gluster /var/log/glusterfs ||
        return 1
    # The node's host name too: a brick reports it in a file's pathinfo.
    # shellcheck disable=SC2016 # $1 to $3 are the inner shell's arguments
    nsenter --net="/run/netns/${TESTBED_NETNS[$i]}" \
        unshare --uts --mount --propagation slave sh -c 'hostname "$3" &&
            mount --bind "$1/lib" /var/lib/glusterd && mount --bind "$1/run" /run/gluster &&
            mount --bind "$1/log" /var/log/glusterfs &&
            exec glusterd -f "$2" -p /run/gluster/glusterd.pid -l /var/log/glusterfs/glusterd.log' \
        sh "$dir" "$(dirname "$TESTBED_SLURM_CONF")/glusterd-$node.vol" "$node" 9>&- || return 1
    record "glusterd $node"
    within "$GLUSTER_TIMEOUT" gluster_cli "$i" peer status || return 1
    pid=$(live_pid "$dir/run/glusterd.pid" glusterd) || return 1
    say "glusterd $node: started at ${TESTBED_NODE_ADDRS[$i]}:24007 (pid $pid)"
    ACTIONS=$((ACTIONS + 1))
}

node_index() {
    local i
    for i in "${!TESTBED_NODES[@]}"; do
        [ "${TESTBED_NODES[$i]}" != "$1" ] || echo "$i"
    done
}

peer_connected() {
    gluster_cli 0 peer status | grep -A2 -xF "Hostname: $1" |
        has_line 'State: Peer in Cluster (Connected)'
}

# Every other node joins the pool of the first, by address (the nodes resolve no names).
ensure_peers() {
    local i addr
    for i in "${!TESTBED_NODES[@]}"; do
        [ "$i" -gt 0 ] || continue
        addr=${TESTBED_NODE_ADDRS[$i]}
        # a peer of an earlier run reconnects by itself once both glusterds run
        if gluster_cli 0 peer status | has_line "Hostname: $addr"; then
            within "$GLUSTER_TIMEOUT" peer_connected "$addr" || return 1
            continue
        fi
        gluster_cli 0 peer probe "$addr" >/dev/null || return 1
        within "$GLUSTER_TIMEOUT" peer_connected "$addr" || return 1
        say "glusterfs: ${TESTBED_NODES[$i]} ($addr) joined the pool of ${TESTBED_NODES[0]}"
        ACTIONS=$((ACTIONS + 1))
    done
}

# host:brick of every brick, as the volume lists them.
brick_specs() {
    local k i
    for k in "${!TESTBED_GLUSTER_BRICKS[@]}"; do
        i=$(node_index "${TESTBED_GLUSTER_BRICK_NODES[$k]}")
        echo "${TESTBED_NODE_ADDRS[$i]}:${TESTBED_GLUSTER_BRICKS[$k]}"
    done
}

bricks_online() {
    local online
    online=$(gluster_cli 0 volume status "$TESTBED_GLUSTER_VOLUME" --xml |
        grep -c '<status>1</status>') || return 1
    [ "$online" -eq "${#TESTBED_GLUSTER_BRICKS[@]}" ]
}

ensure_volume() {
    local vol=$TESTBED_GLUSTER_VOLUME specs listed
    mapfile -t specs < <(brick_specs)
    if ! gluster_cli 0 volume info "$vol" >/dev/null 2>&1; then
        mkdir -p "${TESTBED_GLUSTER_BRICKS[@]}" || return 1
        gluster_cli 0 volume create "$vol" transport tcp "${specs[@]}" >/dev/null || return 1
        say "glusterfs: created the distributed volume $vol (${specs[*]})"
        ACTIONS=$((ACTIONS + 1))
    fi
    listed=$(gluster_cli 0 volume info "$vol" | sed -n 's/^Brick[0-9]*: //p')
    if [ "$listed" != "$(printf '%s\n' "${specs[@]}")" ]; then
        warn "volume $vol has other bricks ($(echo "$listed" | tr '\n' ' ')) than the system" \
            "lists; remove $(dirname "$(gluster_dir 0)") after cluster-down to start anew"
        return 1
    fi
    bricks_online && return 0
    # A stopped volume starts; "force" restarts the bricks of a started one that died.
    if gluster_cli 0 volume info "$vol" | has_line 'Status: Started'; then
        gluster_cli 0 volume start "$vol" force >/dev/null || return 1
    else
        gluster_cli 0 volume start "$vol" >/dev/null || return 1
    fi
    within "$GLUSTER_TIMEOUT" bricks_online || return 1
    say "glusterfs: volume $vol started, ${#specs[@]} bricks online"
    ACTIONS=$((ACTIONS + 1))
}

# Before the slurmds start: glusterd on every node and the volume started.
serve_volume() {
    local i dir
    GLUSTER_WHY=$(gluster_unavailable)
    if [ -n "$GLUSTER_WHY" ]; then
        # what an earlier run served (IOSTUDY_GLUSTER=off now) must not outlive the reason
        local stopped
        stopped=$(stop_gluster)
        [ -z "$stopped" ] || { echo "$stopped"; ACTIONS=$((ACTIONS + 1)); }
        return 0
    fi
    for i in "${!TESTBED_NODES[@]}"; do
        dir=$(gluster_dir "$i")
        if ! start_glusterd "$i"; then
            GLUSTER_WHY="glusterd on ${TESTBED_NODES[$i]} did not start (see $dir/log)"
            return 0
        fi
    done
    ensure_peers ||
        GLUSTER_WHY="the nodes' glusterds did not form a pool (see $(gluster_dir 0)/log)"
    [ -n "$GLUSTER_WHY" ] || ensure_volume ||
        GLUSTER_WHY="volume $TESTBED_GLUSTER_VOLUME did not start (see $(gluster_dir 0)/log)"
}

# The client of node I runs in the mount namespace of its slurmd (pid S) and is mounted there.
client_ok() {
    local i=$1 slurmd=$2 pid
    pid=$(live_pid "$(gluster_dir "$i")/run/client.pid" glusterfs) || return 1
    [ "$(readlink "/proc/$pid/ns/mnt")" = "$(readlink "/proc/$slurmd/ns/mnt")" ] || return 1
    nsenter -t "$slurmd" -m findmnt -n -t fuse.glusterfs --mountpoint "$TESTBED_GLUSTER_MOUNT" &&
        nsenter -t "$slurmd" -m stat -f "$TESTBED_GLUSTER_MOUNT" >/dev/null
}

# Unmounts in the client's own mount namespace (the FUSE client then exits) and stops it.
stop_client() {
    local pid=$1
    nsenter -t "$pid" -m umount "$TESTBED_GLUSTER_MOUNT" 2>/dev/null ||
        nsenter -t "$pid" -m umount -l "$TESTBED_GLUSTER_MOUNT" 2>/dev/null || true
    stop_pids "glusterfs client" 5 "$pid"
}

mount_client() {
    local i=$1 node=${TESTBED_NODES[$1]} dir slurmd pid
    dir=$(gluster_dir "$i")
    # a slurmd just started writes its PID file a moment later
    within "$GLUSTER_TIMEOUT" daemon_pid "slurmd-$node" || return 1
    slurmd=$(daemon_pid "slurmd-$node")
    if client_ok "$i" "$slurmd" >/dev/null 2>&1; then
        say "glusterfs client $node: mounted (pid $(cat "$dir/run/client.pid"))"
        return 0
    fi
    # a client of an earlier slurmd: its mount namespace is gone from the node's jobs
    if pid=$(live_pid "$dir/run/client.pid" glusterfs); then stop_client "$pid"; fi
    mkdir -p "$TESTBED_GLUSTER_MOUNT" || return 1
    nsenter -t "$slurmd" -m -n glusterfs --volfile-server="${TESTBED_NODE_ADDRS[$i]}" \
        --volfile-id="$TESTBED_GLUSTER_VOLUME" --pid-file="$dir/run/client.pid" \
        --log-file="$dir/log/client.log" "$TESTBED_GLUSTER_MOUNT" 9>&- || return 1
    within "$GLUSTER_TIMEOUT" client_ok "$i" "$slurmd" || return 1
    record "glusterfs-client $node"
    say "glusterfs client $node: mounted $TESTBED_GLUSTER_VOLUME at $TESTBED_GLUSTER_MOUNT" \
        "(pid $(cat "$dir/run/client.pid"))"
    ACTIONS=$((ACTIONS + 1))
}

# After the slurmds start: every node's client, then the status file env.sh reads.
mount_volume() {
    local i
    if [ -z "$GLUSTER_WHY" ]; then
        for i in "${!TESTBED_NODES[@]}"; do
            mount_client "$i" && continue
            GLUSTER_WHY="the client on ${TESTBED_NODES[$i]} did not mount (see"
            GLUSTER_WHY+=" $(gluster_dir "$i")/log/client.log)"
            break
        done
    fi
    write_gluster_status
    [ -z "$GLUSTER_WHY" ] || warn "no GlusterFS volume: $GLUSTER_WHY; the cluster works without it"
}

# A root tbf qdisc at TESTBED_LINK_RATE on DEV (in namespace NS, "" for this one's); none when
# the rate is empty. tc's own listing tells whether anything changed.
shape() {
    local ns=$1 dev=$2 tc=(tc) before after
    [ -z "$ns" ] || tc=(tc -n "$ns")
    before=$("${tc[@]}" qdisc show dev "$dev" root | sed 's/ [0-9a-f]*: / /')
    if [ -n "$TESTBED_LINK_RATE" ]; then
        # burst: two 64 KiB GSO packets (tbf drops what exceeds it), and no more: a message
        # that fits the bucket passes faster than the link (netbw's small messages did, up to
        # 170 MiB/s on 1gbit with 512 KiB), and the larger the burst, the larger the messages
        # that must be measured to see the link's rate
        "${tc[@]}" qdisc replace dev "$dev" root tbf rate "$TESTBED_LINK_RATE" burst 128kb \
            latency 20ms || return 1
    elif [[ $before == "qdisc tbf "* ]]; then
        "${tc[@]}" qdisc del dev "$dev" root || return 1
    fi
    after=$("${tc[@]}" qdisc show dev "$dev" root | sed 's/ [0-9a-f]*: / /')
    [ "$before" = "$after" ] || ACTIONS=$((ACTIONS + 1))
}

# Both ends of every node's veth: the host's end shapes what the node receives, the node's
# end what it sends.
shape_links() {
    [ "$TESTBED_MODE" = netns ] || return 0
    local i ok=1
    for i in "${!TESTBED_NODES[@]}"; do
        shape "" "${TESTBED_VETHS[$i]}" && shape "${TESTBED_NETNS[$i]}" "$TESTBED_NODE_IFACE" ||
            ok=""
    done
    if [ -z "$ok" ]; then
        warn "tc could not shape the links to ${TESTBED_LINK_RATE:-none} (sch_tbf missing?)"
    elif [ -n "$TESTBED_LINK_RATE" ]; then
        say "links: ${#TESTBED_NODES[@]} node links at $TESTBED_LINK_RATE each way (tc tbf)"
    fi
}

# The live brick processes of node I's glusterd, by the PID files in its run folder.
brick_pids() {
    local file pid
    while IFS= read -r -d '' file; do
        pid=$(live_pid "$file" glusterfsd) && echo "$pid"
    done < <(find "$(gluster_dir "$1")/run" -name '*.pid' ! -name glusterd.pid \
        ! -name client.pid -print0 2>/dev/null)
    return 0
}

# cluster-down, before the ledger: every client unmounted in its namespace, then clients,
# bricks and glusterds stopped together (each takes about 2 s to exit on TERM).
stop_gluster() {
    declare -p TESTBED_GLUSTER_DIRS >/dev/null 2>&1 || return 0
    local i dir pid pids=()
    for i in "${!TESTBED_GLUSTER_DIRS[@]}"; do
        dir=$(gluster_dir "$i")
        if pid=$(live_pid "$dir/run/client.pid" glusterfs); then
            nsenter -t "$pid" -m umount "$TESTBED_GLUSTER_MOUNT" 2>/dev/null ||
                nsenter -t "$pid" -m umount -l "$TESTBED_GLUSTER_MOUNT" 2>/dev/null || true
            pids+=("$pid")
        fi
        mapfile -t -O "${#pids[@]}" pids < <(brick_pids "$i")
        if pid=$(live_pid "$dir/run/glusterd.pid" glusterd); then pids+=("$pid"); fi
    done
    stop_pids "GlusterFS clients, bricks and glusterds" 5 "${pids[@]}"
}

# The ledger's entry for NODE's glusterd: whatever of it still runs (stop_gluster ran first).
stop_glusterd() {
    local i pids pid
    i=$(node_index "$1")
    [ -n "$i" ] || return 0
    mapfile -t pids < <(brick_pids "$i")
    if pid=$(live_pid "$(gluster_dir "$i")/run/glusterd.pid" glusterd); then pids+=("$pid"); fi
    stop_pids "glusterd $1 and its bricks" 5 "${pids[@]}"
    rm -f "$(gluster_dir "$i")/run/glusterd.pid"
}

stop_node_client() {
    local i pid
    i=$(node_index "$1")
    [ -n "$i" ] || return 0
    if pid=$(live_pid "$(gluster_dir "$i")/run/client.pid" glusterfs); then stop_client "$pid"; fi
}
