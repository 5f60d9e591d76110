"""``iostudy export`` and ``iostudy import``: a store's own results as a portable bundle, and
another site's bundle into a store (:mod:`iostudy.store.bundle`)."""

import argparse

from iostudy.cli.options import add_store_option
from iostudy.cli.output import StderrProgress
from iostudy.core import helptext
from iostudy.store import bundle
from iostudy.store.bundle_export import export


def cmd_export(args) -> int:
    meta = export(
        args.store, args.out, args.site, args.results, args.anonymize, StderrProgress("export")
    )
    systems = ", ".join(meta["systems"]) or "none"
    print(
        f"export: {len(meta['runs'])} runs of site {meta['site']} (systems: {systems}) -> "
        f"{args.out} (bundle id {meta['id'][:16]}, signed by key {meta['key']})"
    )
    return 0


def cmd_import(args) -> int:
    summary = bundle.import_bundle(
        args.bundle, args.store, StderrProgress("import"), args.trust_on_first_use, args.replace
    )
    print(
        f"import: bundle {summary['id'][:16]} of site {summary['site']}, signed by key "
        f"{summary['key']}"
    )
    if summary.get("trusted_now"):
        print(f"import: site {summary['site']} now trusted with that key (first use)")
    if summary["skipped"]:
        print(
            f"import: bundle {summary['id'][:16]} of site {summary['site']} is already in "
            f"{args.store}: nothing changed"
        )
    else:
        print(
            f"import: {summary['runs']} runs of site {summary['site']} ({summary['files']} "
            f"files) -> {args.store} (bundle id {summary['id'][:16]})"
        )
    return 0


def register(groups) -> None:
    p = groups.add_parser(
        "export",
        help="write this store's own results as a portable bundle (one tar file)",
        # the command, the bundle's members and how they are checked
        description=helptext.plain("\n\n".join(bundle.__doc__.split("\n\n")[1:4])),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_store_option(p)
    p.add_argument("--out", required=True, help="the bundle to write (a .tar; never overwritten)")
    p.add_argument("--site", help="this store's site name (required at the first export; kept)")
    p.add_argument(
        "--results",
        help="the folder of the run directories (default: the store's "
        "parent), where the manifests are",
    )
    p.add_argument(
        "--anonymize",
        action="store_true",
        help="users, projects, paths and command lines as keyed pseudonyms",
    )
    p.set_defaults(func=cmd_export)
    p = groups.add_parser(
        "import",
        help="add another site's bundle to a store (verified by its checksums; idempotent)",
        description="Add another site's bundle (iostudy export) to the store. "
        "Run ids become <site>:<run id>; system names are kept. The bundle must be signed by "
        "the key the store trusts for its site (iostudy trust); a bundle with a changed byte, "
        "a name, field or table that is not what iostudy writes is rejected before anything is "
        "written; the same bundle imported twice changes nothing.",
    )
    p.add_argument("bundle", help="the bundle (.tar) from iostudy export")
    add_store_option(p)
    p.add_argument(
        "--trust-on-first-use",
        action="store_true",
        help="trust the key of a site this store does not know yet (prefer "
        "iostudy trust add: a key received from the site itself)",
    )
    p.add_argument(
        "--replace",
        action="store_true",
        help="let the bundle replace data of its site imported before",
    )
    p.set_defaults(func=cmd_import)
