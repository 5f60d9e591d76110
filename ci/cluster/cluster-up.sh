#!/usr/bin/env bash
# Stands up the Slurm test cluster of a system description on this machine: munged, a private
# MariaDB, slurmdbd, slurmctld and one slurmd per node, with accounting, and (netns mode) the
# system's GlusterFS volume served by the nodes (gluster.sh). Idempotent: what runs already is
# kept, and a healthy cluster is left untouched.
#
#   CLUSTER_STATE=build/cluster  state directory (configuration, spool, logs, PID files)
#   CLUSTER_NODES=N              node count instead of the system's
#   CLUSTER_MODE=netns|localhost instead of detecting it (netns when `ip netns add` works)
#   CLUSTER_SYSTEM=testcluster   the system description (configs/systems/<name>)
#
# The last line of output is the path of the env file to source (SLURM_CONF, PATH).
set -Eeuo pipefail

SCRIPT=cluster-up
REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO"
# shellcheck source=ci/cluster/lib.sh
source ci/cluster/lib.sh
# shellcheck source=ci/cluster/gluster.sh
source ci/cluster/gluster.sh

TOOLS=$REPO/build/tools
# Counts what this run changed, so that a run on a healthy cluster can say it changed nothing.
ACTIONS=0
READY_TIMEOUT=30

# netns mode needs CAP_NET_ADMIN and CAP_SYS_ADMIN; trying is the only reliable test.
choose_mode() {
    if [ -n "${CLUSTER_MODE:-}" ]; then
        echo "$CLUSTER_MODE"
    elif ip netns add "iostudy-probe-$$" 2>/dev/null; then
        ip netns delete "iostudy-probe-$$"
        echo netns
    else
        echo localhost
    fi
}

config_digest() { { cat "$STATE"/etc/* "$STATE/testbed.sh" 2>/dev/null || true; } | sha256sum; }

render_config() {
    local mode=$1 before
    local args=(--system "${CLUSTER_SYSTEM:-testcluster}" --state "$STATE" --mode "$mode"
        --tools "$TOOLS")
    [ -z "${CLUSTER_NODES:-}" ] || args+=(--nodes "$CLUSTER_NODES")
    [ -x .venv/bin/python ] || die ".venv/bin/python is missing: run make venv"
    before=$(config_digest)
    .venv/bin/python ci/cluster/testbed.py render "${args[@]}" | sed "s/^/$SCRIPT: /"
    [ "$before" = "$(config_digest)" ] || CONFIG_CHANGED=1
}

# Daemons keep the configuration they started with: a changed one needs a restart.
restart_if_reconfigured() {
    [ -n "${CONFIG_CHANGED:-}" ] || return 0
    local f
    for f in "$TESTBED_RUN"/*.pid; do
        [ -e "$f" ] || continue
        say "configuration changed while daemons run: stopping the cluster first"
        CLUSTER_STATE=$STATE CLUSTER_LOCKED=1 ci/cluster/cluster-down.sh
        ACTIONS=$((ACTIONS + 1))
        return 0
    done
}

load_facts() {
    # shellcheck source=/dev/null
    source "$STATE/testbed.sh"
    export SLURM_CONF=$TESTBED_SLURM_CONF
    declare -gA PORT
    local i
    for i in "${!TESTBED_PORT_DAEMONS[@]}"; do
        PORT[${TESTBED_PORT_DAEMONS[$i]}]=${TESTBED_PORTS[$i]}
    done
}

require_commands() {
    local c missing=()
    for c in munged mungekey mariadbd mariadb-install-db mariadb slurmdbd slurmctld slurmd \
        sacctmgr sinfo ss ip tc nsenter unshare flock losetup mkfs.ext4 mountpoint findmnt; do
        command -v "$c" >/dev/null || missing+=("$c")
    done
    [ ${#missing[@]} -eq 0 ] ||
        die "missing commands: ${missing[*]} (make setup installs ci/apt-packages.txt)"
}

# The live PID of one of our daemons, named as in TESTBED_PORT_DAEMONS (slurmd-<node> too).
daemon_pid() {
    case $1 in
    mariadb) live_pid "$TESTBED_RUN/mariadb.pid" mariadbd ;;
    slurmd-*) live_pid "$TESTBED_RUN/$1.pid" slurmd ;;
    *) live_pid "$TESTBED_RUN/$1.pid" "$1" ;;
    esac
}

# A daemon that cannot bind its port dies with a terse log line; say who holds it, and before
# anything starts, so that a clash leaves nothing half up.
require_ports_free() {
    local daemon port holder
    for daemon in "${!PORT[@]}"; do
        port=${PORT[$daemon]}
        daemon_pid "$daemon" >/dev/null && continue
        holder=$(ss -Hltnp "sport = :$port" 2>/dev/null || true)
        [ -z "$holder" ] ||
            die "port $port (for $daemon) is in use: $(grep -o 'users:.*' <<<"$holder" | head -1)"
    done
}

# Runs "$@" until it succeeds or SECONDS pass; on timeout shows the tail of LOG.
wait_until() {
    local what=$1 seconds=$2 log=$3
    shift 3
    local deadline=$((${EPOCHREALTIME/./} + seconds * 1000000))
    until "$@" >/dev/null 2>&1; do
        if [ "${EPOCHREALTIME/./}" -ge "$deadline" ]; then
            echo "$SCRIPT: error: $what not ready after ${seconds}s; tail of $log:" >&2
            tail -n 20 "$log" >&2 2>/dev/null || true
            exit 1
        fi
        sleep 0.2
    done
}

listening() { [ -n "$(ss -Hltn "sport = :$1")" ]; }
munge_works() { munge -n </dev/null | unmunge; }

start_munge() {
    if munge_works >/dev/null 2>&1; then
        say "munged: running, reused"
        return
    fi
    if [ ! -s /etc/munge/munge.key ]; then
        mungekey -c -f -k /etc/munge/munge.key
        chown munge:munge /etc/munge/munge.key
        chmod 0400 /etc/munge/munge.key
        say "munged: created /etc/munge/munge.key"
    fi
    install -d -o munge -g munge -m 755 /run/munge
    runuser -u munge -- munged 9>&-
    wait_until munged 10 /var/log/munge/munged.log munge_works
    record "munged $(cat /run/munge/munged.pid)"
    say "munged: started (pid $(cat /run/munge/munged.pid))"
    ACTIONS=$((ACTIONS + 1))
}

mariadb_sql() { mariadb --defaults-file="$TESTBED_MARIADB_CNF" -u root -e "$1"; }

start_mariadb() {
    local pid cnf=$TESTBED_MARIADB_CNF
    if pid=$(daemon_pid mariadb); then
        say "mariadb: running (pid $pid)"
        return
    fi
    if [ ! -d "$TESTBED_MARIADB_DATA/mysql" ]; then
        say "mariadb: initialising $TESTBED_MARIADB_DATA"
        mariadb-install-db --defaults-file="$cnf" --auth-root-authentication-method=socket \
            --skip-test-db >"$TESTBED_LOG/mariadb-install.log" 2>&1 ||
            die "mariadb-install-db failed; see $TESTBED_LOG/mariadb-install.log"
    fi
    # mariadbd stays in the foreground: setsid detaches it from make and this shell.
    setsid mariadbd --defaults-file="$cnf" </dev/null >>"$TESTBED_LOG/mariadb.log" 2>&1 9>&- &
    wait_until mariadb 30 "$TESTBED_LOG/mariadb.log" \
        mariadb-admin --defaults-file="$cnf" -u root --silent ping
    say "mariadb: started on 127.0.0.1:${PORT[mariadb]} (pid $(cat "$TESTBED_RUN/mariadb.pid"))"
    ACTIONS=$((ACTIONS + 1))
}

# Database and user for slurmdbd, password from slurmdbd.conf (the renderer keeps it stable).
create_db_user() {
    local pass user="'$TESTBED_DB_USER'@'127.0.0.1'"
    pass=$(sed -n 's/^StoragePass=//p' "$TESTBED_SLURMDBD_CONF")
    mariadb_sql "CREATE DATABASE IF NOT EXISTS $TESTBED_DB_NAME;
        CREATE USER IF NOT EXISTS $user IDENTIFIED BY '$pass';
        ALTER USER $user IDENTIFIED BY '$pass';
        GRANT ALL ON $TESTBED_DB_NAME.* TO $user;"
}

start_slurmdbd() {
    local pid
    if pid=$(daemon_pid slurmdbd); then
        say "slurmdbd: running (pid $pid)"
        return
    fi
    create_db_user
    # No -f: slurmdbd reads slurmdbd.conf beside $SLURM_CONF.
    slurmdbd 9>&- || die "slurmdbd did not start; see $TESTBED_LOG/slurmdbd.log"
    wait_until slurmdbd 30 "$TESTBED_LOG/slurmdbd.log" listening "${PORT[slurmdbd]}"
    say "slurmdbd: started on port ${PORT[slurmdbd]} (pid $(cat "$TESTBED_RUN/slurmdbd.pid"))"
    ACTIONS=$((ACTIONS + 1))
}

register_cluster() {
    if ! sacctmgr -nP list cluster format=cluster | has_line "$TESTBED_CLUSTER"; then
        sacctmgr -i add cluster "$TESTBED_CLUSTER" >/dev/null
        say "accounting: registered cluster $TESTBED_CLUSTER"
        ACTIONS=$((ACTIONS + 1))
    fi
}

# Jobs run as root here; give root an account of the harness as its default.
register_account() {
    local user=root
    if ! sacctmgr -nP list account "$TESTBED_ACCOUNT" format=account |
        has_line "$TESTBED_ACCOUNT"; then
        sacctmgr -i add account "$TESTBED_ACCOUNT" Cluster="$TESTBED_CLUSTER" \
            Description="iostudy test cluster" Organization=iostudy >/dev/null
        say "accounting: added account $TESTBED_ACCOUNT"
        ACTIONS=$((ACTIONS + 1))
    fi
    if ! sacctmgr -nP list association cluster="$TESTBED_CLUSTER" \
        account="$TESTBED_ACCOUNT" user="$user" format=user | has_line "$user"; then
        sacctmgr -i add user "$user" Account="$TESTBED_ACCOUNT" Cluster="$TESTBED_CLUSTER" \
            DefaultAccount="$TESTBED_ACCOUNT" >/dev/null
        say "accounting: added user $user to account $TESTBED_ACCOUNT (its default)"
        ACTIONS=$((ACTIONS + 1))
    fi
}

start_slurmctld() {
    local pid
    if pid=$(daemon_pid slurmctld); then
        say "slurmctld: running (pid $pid)"
        return
    fi
    slurmctld -f "$SLURM_CONF" 9>&- ||
        die "slurmctld did not start; see $TESTBED_LOG/slurmctld.log"
    wait_until slurmctld 30 "$TESTBED_LOG/slurmctld.log" listening "${PORT[slurmctld]}"
    say "slurmctld: started on port ${PORT[slurmctld]} (pid $(cat "$TESTBED_RUN/slurmctld.pid"))"
    ACTIONS=$((ACTIONS + 1))
}

ensure_bridge() {
    local br=$TESTBED_BRIDGE
    if ! ip link show dev "$br" >/dev/null 2>&1; then
        ip link add "$br" type bridge
        record "bridge $br"
        ACTIONS=$((ACTIONS + 1))
    fi
    # Bridged frames must not meet the host's firewall (br_netfilter may be loaded).
    ip link set "$br" type bridge nf_call_iptables 0 2>/dev/null || true
    ip addr replace "$TESTBED_BRIDGE_CIDR" dev "$br"
    ip link set "$br" up
}

# A namespace per node with a veth to the bridge; inside, the node's end is TESTBED_NODE_IFACE.
ensure_node_netns() {
    local ns=$1 veth=$2 addr=$3 iface=$TESTBED_NODE_IFACE
    if [ ! -e "/run/netns/$ns" ]; then
        ip netns add "$ns"
        record "netns $ns"
        ACTIONS=$((ACTIONS + 1))
    fi
    if ! ip link show dev "$veth" >/dev/null 2>&1; then
        ip link add "$veth" type veth peer name "$iface" netns "$ns"
        record "link $veth"
    fi
    ip link set "$veth" master "$TESTBED_BRIDGE" up
    ip -n "$ns" addr replace "$addr/${TESTBED_BRIDGE_CIDR#*/}" dev "$iface"
    ip -n "$ns" link set "$iface" up
    ip -n "$ns" link set lo up
}

setup_network() {
    [ "$TESTBED_MODE" = netns ] || return 0
    ensure_bridge
    local i
    for i in "${!TESTBED_NODES[@]}"; do
        ensure_node_netns "${TESTBED_NETNS[$i]}" "${TESTBED_VETHS[$i]}" "${TESTBED_NODE_ADDRS[$i]}"
    done
}

# A storage target the system lists: a sparse image in the state directory, ext4 on a loop
# device, mounted at TESTBED_TARGETS[i] (fio_check measures each from its node). discard: what
# fio deletes is punched out of the image again.
ensure_target() {
    local mount=$1 image=$1.img dev
    mountpoint -q "$mount" && return 0
    mkdir -p "$mount"
    if [ ! -s "$image" ]; then
        truncate -s "${TESTBED_TARGET_MIB}M" "$image"
        mkfs.ext4 -q -F -E nodiscard "$image" || die "mkfs.ext4 $image failed"
    fi
    # a loop device left attached to the image (a run that stopped half way) is reused
    dev=$(losetup -j "$image" -n -O NAME | head -n 1)
    [ -n "$dev" ] || dev=$(losetup --find --show "$image") ||
        die "no loop device for storage target $image (is the loop module loaded?)"
    record "loop $dev"
    mount -o discard "$dev" "$mount" || die "cannot mount $dev ($image) at $mount"
    record "mount $mount"
    say "storage target: $mount (ext4, ${TESTBED_TARGET_MIB} MiB on $dev)"
    ACTIONS=$((ACTIONS + 1))
}

# A folder as a shared mount of its own (a bind on itself). Unmount events propagate through a
# mount's parent: with the targets under the machine's private root, the copy of a target in a
# node namespace made later (another cluster's too) would keep its file system and loop device
# busy after cluster-down. Under a shared parent the copies are slaves, and the unmount reaches
# them.
ensure_shared_folder() {
    local folder=$1
    mkdir -p "$folder"
    mountpoint -q "$folder" && return 0
    { mount --bind "$folder" "$folder" && mount --make-shared "$folder"; } ||
        die "cannot make $folder a shared mount"
    record "mount $folder"
    ACTIONS=$((ACTIONS + 1))
}

setup_targets() {
    local mount
    for mount in "${TESTBED_TARGETS[@]}"; do
        ensure_shared_folder "$(dirname "$mount")"
        ensure_target "$mount"
    done
}

# netns: nsenter, not `ip netns exec`, which remounts /sys and leaves slurmd an empty
# /sys/fs/cgroup; a private UTS namespace gives each node its own host name, and a mount
# namespace of its own the node's GlusterFS client (mounted there after it starts), which its
# jobs inherit.
start_slurmd() {
    local i=$1 node=${TESTBED_NODES[$1]} pid
    if pid=$(daemon_pid "slurmd-$node"); then
        say "slurmd $node: running (pid $pid)"
        return
    fi
    if [ "$TESTBED_MODE" = netns ]; then
        # shellcheck disable=SC2016 # $1 and $2 are the inner shell's arguments
        nsenter --net="/run/netns/${TESTBED_NETNS[$i]}" \
            unshare --uts --mount --propagation slave \
            sh -c 'hostname "$1" && exec slurmd -f "$2" -N "$1"' sh "$node" "$SLURM_CONF" 9>&-
    else
        slurmd -f "$SLURM_CONF" -N "$node" 9>&-
    fi || die "slurmd $node did not start; see $TESTBED_LOG/slurmd-$node.log"
    say "slurmd $node: started at ${TESTBED_NODE_ADDRS[$i]}:${TESTBED_NODE_PORTS[$i]}"
    ACTIONS=$((ACTIONS + 1))
}

# Nodes that respond and can take jobs (a running job makes a healthy node mix or alloc).
ready_nodes() {
    sinfo -h -N -o '%N %t' 2>/dev/null | awk '$2 ~ /^(idle|mix|alloc)$/ { print $1 }' |
        sort -u | wc -l
}
all_nodes_ready() { [ "$(ready_nodes)" -eq ${#TESTBED_NODES[@]} ]; }

# A node someone set down or drained (a test, an admin) while its slurmd runs would never be
# ready again by itself; ReturnToService=1 only revives nodes that stopped responding.
resume_nodes() {
    local node state
    while read -r node state; do
        [[ $state =~ ^(down|drain|drained|draining|drng)\*?$ ]] || continue
        scontrol update NodeName="$node" State=RESUME
        say "nodes: resumed $node (was $state)"
        ACTIONS=$((ACTIONS + 1))
    done < <(sinfo -h -N -o '%N %t' 2>/dev/null | sort -u)
}

wait_for_nodes() {
    local deadline=$((SECONDS + READY_TIMEOUT)) log
    until all_nodes_ready; do
        if [ $SECONDS -ge $deadline ]; then
            echo "$SCRIPT: error: $(ready_nodes) of ${#TESTBED_NODES[@]} nodes ready after" \
                "${READY_TIMEOUT}s:" >&2
            sinfo -N >&2 || true
            for log in "$TESTBED_LOG"/slurmctld.log "$TESTBED_LOG"/slurmd-*.log; do
                echo "--- tail of $log" >&2
                tail -n 10 "$log" >&2 || true
            done
            exit 1
        fi
        sleep 0.2
    done
    say "nodes: ${#TESTBED_NODES[@]} ready ($(sinfo -h -o '%P %D %t' | tr '\n' ' '))"
}

# Snakemake's in-job step drops every SLURM_* variable, SLURM_CONF included: the default path
# must lead to this cluster's configuration.
link_system_conf() {
    local link=/etc/slurm/slurm.conf
    if [ -L "$link" ] && [ "$(readlink "$link")" = "$SLURM_CONF" ]; then
        return
    elif [ -e "$link" ] || [ -L "$link" ]; then
        warn "$link exists and is not ours: jobs that drop SLURM_CONF will not find this cluster"
        return
    fi
    mkdir -p /etc/slurm
    ln -s "$SLURM_CONF" "$link"
    record "symlink $link"
    say "linked $link -> $SLURM_CONF"
    ACTIONS=$((ACTIONS + 1))
}

# scrontab is a convenience for scheduled campaigns: a cluster without it is still usable.
ensure_scrontab() {
    if ci/cluster/build-scrontab.sh "$TOOLS" | sed "s/^/$SCRIPT: /"; then
        return
    fi
    warn "no scrontab client (see $TOOLS/scrontab-build.log); the cluster works without it"
}

main() {
    local t0=$EPOCHREALTIME i
    require_root
    STATE=$(state_dir)
    lock_state "$STATE"
    require_commands
    render_config "$(choose_mode)"
    load_facts
    say "$TESTBED_MODE mode, ${#TESTBED_NODES[@]} nodes, state in $STATE"
    restart_if_reconfigured
    require_ports_free
    start_munge
    start_mariadb
    start_slurmdbd
    register_cluster
    start_slurmctld
    setup_network
    shape_links
    setup_targets
    serve_volume
    for i in "${!TESTBED_NODES[@]}"; do start_slurmd "$i"; done
    mount_volume
    register_account
    resume_nodes
    wait_for_nodes
    link_system_conf
    ensure_scrontab
    [ $ACTIONS -gt 0 ] || say "already up and healthy; nothing changed"
    say "done in $(elapsed "$t0") s; use it with: source $TESTBED_ENV"
    echo "$TESTBED_ENV"
}

main "$@"
