#!/usr/bin/env bash
# Builds Slurm's scrontab client into DIR/scrontab. Debian 12's slurm-client omits it although
# slurmctld supports scrontab; it is compiled from Debian's source package of the installed
# Slurm against libslurmfull.so. Idempotent: a binary built for the installed version is kept
# (DIR/scrontab.version), so DIR (build/tools) survives cluster-down and later runs.
#
# Usage: build-scrontab.sh DIR   (root: may add a deb-src entry and update its package list)
set -euo pipefail

SRC_LIST=/etc/apt/sources.list.d/iostudy-deb-src.list

say() { echo "scrontab: $*"; }
# Reads all of stdin (grep -q would stop early and fail the pipeline on SIGPIPE under pipefail).
has_line() { grep -xF -- "$1" >/dev/null; }
die() {
    echo "scrontab: error: $*" >&2
    exit 1
}

# The deb entries of Debian's own archives, as deb-src lines: from one-line .list files and
# from deb822 .sources paragraphs (one line per URI and suite).
debian_src_lines() {
    local f
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] && [ "$f" != "$SRC_LIST" ] || continue
        sed -n -E 's/^[[:space:]]*deb[[:space:]]+(.*debian.*)$/deb-src \1/p' "$f"
    done
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        awk 'BEGIN { RS = ""; FS = "\n" }
        {
            types = uris = suites = comps = key = ""; enabled = 1
            for (i = 1; i <= NF; i++) {
                if ($i ~ /^#/) continue
                split($i, kv, /:[ \t]*/); k = tolower(kv[1]); v = substr($i, length(kv[1]) + 2)
                gsub(/^[ \t]+|[ \t]+$/, "", v)
                if (k == "types") types = v; else if (k == "uris") uris = v
                else if (k == "suites") suites = v; else if (k == "components") comps = v
                else if (k == "signed-by") key = v
                else if (k == "enabled" && tolower(v) == "no") enabled = 0
            }
            if (!enabled || types !~ /(^| )deb( |$)/ || uris !~ /debian/) next
            opt = (key ~ /^\//) ? "[signed-by=" key "] " : ""
            nu = split(uris, u, / +/); ns = split(suites, s, / +/)
            for (a = 1; a <= nu; a++) for (b = 1; b <= ns; b++)
                print "deb-src " opt u[a] " " s[b] " " comps
        }' "$f"
    done
}

# apt-get source needs a deb-src entry; the update reads that entry alone, leaving the other
# package lists as they are.
ensure_source_entry() {
    local version=$1
    apt-cache showsrc slurm-wlm 2>/dev/null | has_line "Version: $version" && return
    [ "$(id -u)" -eq 0 ] || die "not root: cannot add $SRC_LIST"
    if [ ! -s "$SRC_LIST" ]; then
        debian_src_lines | sort -u >"$SRC_LIST.new"
        [ -s "$SRC_LIST.new" ] || {
            rm -f "$SRC_LIST.new"
            die "no Debian archive among the apt sources to derive a deb-src entry from"
        }
        mv "$SRC_LIST.new" "$SRC_LIST"
        # fd 3: the terminal, while the rest of the build goes to its log.
        say "added $SRC_LIST (deb-src of the configured Debian archives)" >&3
    fi
    apt-get -q update -o Dir::Etc::SourceList="$SRC_LIST" -o Dir::Etc::SourceParts=- \
        -o APT::Get::List-Cleanup=0 >&2
    apt-cache showsrc slurm-wlm 2>/dev/null | has_line "Version: $version" ||
        die "the archives offer no source of slurm-wlm $version"
}

libslurmfull_dir() {
    local lib
    lib=$(dpkg -L slurm-wlm-basic-plugins 2>/dev/null | grep '/libslurmfull\.so$' | head -1)
    [ -n "$lib" ] || die "libslurmfull.so not found (package slurm-wlm-basic-plugins)"
    dirname "$lib"
}

# configure only for config.h and the generated headers. scrontab embeds its default crontab
# and usage text as binary objects (as its Makefile.am does with ld and objcopy); the four .c
# files link against the installed library, so the client matches the running daemons.
compile() {
    local src=$1 out=$2 libdir txt
    libdir=$(libslurmfull_dir)
    (cd "$src" && ./configure -q --prefix=/usr --sysconfdir=/etc/slurm >/dev/null)
    cd "$src/src/scrontab"
    for txt in default_crontab.txt usage.txt; do
        ld -r -z noexecstack --format=binary -o "${txt%.txt}.bino" "$txt"
        objcopy --rename-section .data=.rodata,alloc,load,readonly,data,contents \
            "${txt%.txt}.bino"
    done
    gcc -O2 -DHAVE_CONFIG_H -I"$src" -o "$out" ./*.c ./*.bino \
        -L"$libdir" -Wl,-rpath,"$libdir" -lslurmfull -lpthread -ldl -lm
}

main() {
    [ $# -eq 1 ] || die "usage: $0 DIR"
    local dir=$1 version
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    version=$(dpkg-query -W -f='${source:Version}' slurm-client 2>/dev/null) ||
        die "slurm-client is not installed"
    if [ -x "$dir/scrontab" ] && [ "$(cat "$dir/scrontab.version" 2>/dev/null)" = "$version" ]
    then
        say "$dir/scrontab (Slurm $version)"
        return
    fi
    if ! command -v gcc >/dev/null || ! command -v dpkg-source >/dev/null; then
        die "gcc and dpkg-source (dpkg-dev) are needed"
    fi
    local t0=$SECONDS log=$dir/scrontab-build.log
    say "building for Slurm $version (log: $log)"
    # A subshell under `||` would run with errexit off: test its status afterwards instead.
    set +e
    (
        set -e
        ensure_source_entry "$version"
        work=$(mktemp -d "$dir/.build.XXXXXX")
        trap 'rm -rf "$work"' EXIT
        cd "$work"
        apt-get -q -o APT::Sandbox::User=root source "slurm-wlm=$version"
        compile "$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -1)" "$dir/scrontab.new"
    ) 3>&1 >"$log" 2>&1
    local status=$?
    set -e
    [ $status -eq 0 ] || die "build failed ($(tail -n 1 "$log")); see $log"
    mv "$dir/scrontab.new" "$dir/scrontab"
    echo "$version" >"$dir/scrontab.version"
    say "built $dir/scrontab in $((SECONDS - t0)) s"
}

main "$@"
