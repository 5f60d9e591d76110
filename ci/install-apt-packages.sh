#!/usr/bin/env bash
# Install the Debian packages listed in FILE (one per line, '#' starts a comment) that are not
# installed yet. Idempotent: when everything is present it only queries dpkg, so it is cheap to
# run on every `make setup`.
set -euo pipefail

if [ $# -ne 1 ] || [ ! -r "$1" ]; then
    echo "usage: $0 FILE   (FILE lists one Debian package per line)" >&2
    exit 2
fi
list=$1

mapfile -t wanted < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$list" | grep -v '^$')
missing=()
for pkg in "${wanted[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
    [ "$status" = installed ] || missing+=("$pkg")
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "apt: all ${#wanted[@]} packages of $list are installed"
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    as_root=()
elif command -v sudo >/dev/null; then
    as_root=(sudo)
else
    echo "error: not root and no sudo; as root, run: apt-get install ${missing[*]}" >&2
    exit 1
fi

echo "apt: installing ${missing[*]}"
"${as_root[@]}" apt-get update
# env: sudo may drop DEBIAN_FRONTEND from the environment otherwise.
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${missing[@]}"
echo "apt: installed ${#missing[@]} package(s): ${missing[*]}"
