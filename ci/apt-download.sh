#!/usr/bin/env bash
# For an air-gapped machine: the Debian packages of the lists FILE... that this machine lacks,
# with the dependencies it lacks too, exactly what `apt-get install` would install here. Run it on
# a connected machine set up like the air-gapped one (same Debian release, after `make setup`);
# with --download DIR it fetches those .debs into DIR, to install there with
# `apt-get install --no-install-recommends ./DIR/*.deb`. Without, it prints their names.
set -euo pipefail

usage() { echo "usage: $0 [--download DIR] FILE...   (FILE lists one Debian package per line)" >&2; exit 2; }
out=
if [ "${1:-}" = --download ]; then
    [ $# -ge 3 ] || usage
    out=$2
    shift 2
fi
[ $# -ge 1 ] || usage
for list in "$@"; do
    [ -r "$list" ] || { echo "error: $list: cannot read" >&2; exit 2; }
done

mapfile -t wanted < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$@" | grep -v '^$' | sort -u)
# apt's own answer for this machine: the "Inst" lines of a simulated install
mapfile -t needed < <(apt-get install --simulate --no-install-recommends "${wanted[@]}" |
    awk '/^Inst /{print $2}')

if [ -z "$out" ]; then
    printf '%s\n' "${needed[@]}"
    exit 0
fi
mkdir -p "$out"
if [ ${#needed[@]} -eq 0 ]; then
    echo "apt-download: this machine has every package of $*: nothing to download"
    exit 0
fi
(cd "$out" && apt-get download "${needed[@]}")
echo "apt-download: ${#needed[@]} package(s) in $out: ${needed[*]}"
