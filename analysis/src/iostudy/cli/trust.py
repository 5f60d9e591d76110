"""``iostudy trust own|add|list``: this site's key, and the keys of the sites a store trusts
(:mod:`iostudy.store.siteid`)."""

import sys
from pathlib import Path

from iostudy.cli.options import add_store_option
from iostudy.store import siteid


def cmd_own(args) -> int:
    store = Path(args.store)
    site = siteid.own_site(store, args.site)
    key = siteid.own_key(store, create=True)
    raw = siteid.raw_public(key.public_key())
    line = siteid.public_line(raw, site)
    if args.out:
        Path(args.out).write_text(line + "\n")
    print(line)
    print(f"trust: fingerprint {siteid.fingerprint(raw)}", file=sys.stderr)
    return 0


def cmd_add(args) -> int:
    raw, path = siteid.trust_file(Path(args.store), args.site, args.keyfile)
    print(f"trust: site {args.site} trusted with key {siteid.fingerprint(raw)} ({path})")
    return 0


def cmd_list(args) -> int:
    store = Path(args.store)
    for path in sorted((store / siteid.TRUST_DIR).glob("*.pub")):
        try:
            raw = siteid.trusted(store, path.stem)
        except siteid.SiteError as exc:
            print(f"{path.stem}: {exc}")
            continue
        print(f"{path.stem} {siteid.fingerprint(raw)}")
    return 0


def register(groups) -> None:

    trust_p = groups.add_parser(
        "trust", help="the keys bundles are signed with: this site's, and the sites trusted"
    )
    sub = trust_p.add_subparsers(dest="trust_cmd", required=True)
    p = sub.add_parser("own", help="print this store's public key (made if needed), to send")
    add_store_option(p)
    p.add_argument("--out", help="also write the key line to this file")
    p.add_argument("--site", help="this store's site name (required if it has none yet; kept)")
    p.set_defaults(func=cmd_own)
    p = sub.add_parser("add", help="trust a site's public key (a file from iostudy trust own)")
    p.add_argument("site")
    p.add_argument("keyfile")
    add_store_option(p)
    p.set_defaults(func=cmd_add)
    p = sub.add_parser("list", help="the sites this store trusts, with their keys' fingerprints")
    add_store_option(p)
    p.set_defaults(func=cmd_list)
