"""``iostudy offline pack|unpack``: the Spack tier for an air-gapped site, in one archive
(spack-env/README.md; :mod:`iostudy.benchmarks.offline_pack`, :mod:`iostudy.benchmarks.
offline_unpack`, layout in :mod:`iostudy.benchmarks.offline_archive`)."""

from pathlib import Path

from iostudy.benchmarks import offline_archive, offline_pack, offline_signature, offline_unpack
from iostudy.cli.options import add_store_option
from iostudy.cli.output import StderrProgress
from iostudy.core.exitcodes import EXIT_BAD_INPUT, EXIT_FAILED
from iostudy.store import siteid


def cmd_pack(args) -> int:
    sources = {"spack": args.spack, "spack-packages": args.spack_packages}
    # the store's site key signs the archive (made at its first use)
    signer = siteid.own_site(args.store, args.site), siteid.own_key(args.store, create=True)
    progress = StderrProgress("offline")
    facts = offline_pack.pack(args.system, args.out, sources, args.source_mirror, signer, progress)
    raw = siteid.raw_public(signer[1].public_key())
    print(
        f"packed {args.out} ({args.out.stat().st_size >> 20} MiB): system {facts['system']}, "
        f"Spack {facts['pins']['spack']['tag']}, spack-packages "
        f"{facts['pins']['spack-packages']['tag']}, iostudy {facts['iostudy_commit'][:12]}\n"
        f"signed by site {signer[0]}, key {siteid.fingerprint(raw)}: "
        f"{offline_signature.path_of(args.out)}"
    )
    return 0


def trusted_key(key_file: Path | None, store: Path):
    """site -> the raw key trusted for it: the one of --key FILE (a line of `iostudy trust
    own`), else the store's trusted keys (`iostudy trust add`)."""
    if key_file is None:
        return lambda site: siteid.trusted(store, site)
    try:
        named, raw = siteid.read_public(key_file)
    except siteid.SiteError as exc:
        raise offline_archive.BadArchive(f"--key {key_file}: {exc}") from None
    return lambda site: raw if site == named else None


def cmd_unpack(args) -> int:
    trusted = trusted_key(args.key, args.store)
    manifest, site, key = offline_unpack.unpack(
        args.archive, args.dir, trusted, StderrProgress("offline")
    )
    print(
        f"signed by site {site}, key {key}: verified\nunpacked into {args.dir}; next:\n"
        f"  . {args.dir / 'env.sh'}\n"
        f"  cd {args.dir / 'iostudy'} && make setup && make spack SYSTEM={manifest['system']}"
    )
    return 0


def register(groups) -> None:
    group = groups.add_parser(
        "offline",
        help="carry the Spack tier to an air-gapped site in one archive",
        description="pack on a connected machine, unpack on the air-gapped one; then "
        "make setup and make spack need no network (spack-env/README.md).",
    )
    cmds = group.add_subparsers(title="commands", dest="command", required=True)
    pack = cmds.add_parser(
        "pack",
        help="write the archive (needs the network, or local clones and a source mirror)",
        description="Spack and spack-packages at the tags of spack-env/pins.yaml, a wheelhouse "
        "of analysis/requirements.lock with clingo and build requirements, the source mirror "
        "of the committed lock's specs (made by the carried Spack), the checkout as a git "
        "bundle, and a manifest with every file's sha256. pip needs its index (PyPI or the "
        f"site's). Exit {EXIT_BAD_INPUT}: a bad configuration; {EXIT_FAILED}: a step failed.",
    )
    pack.add_argument("--system", required=True, help="a system of configs/systems/")
    add_store_option(pack, "the store whose site key signs the archive (made at its first use)")
    pack.add_argument("--site", help="the store's site name (required if it has none yet; kept)")
    pack.add_argument("--out", required=True, type=Path, help="the archive to write (.tar.gz)")
    pack.add_argument("--spack", type=Path, metavar="GIT", help="a clone of Spack with the tag")
    pack.add_argument(
        "--spack-packages", type=Path, metavar="GIT", help="a clone of spack-packages with the tag"
    )
    pack.add_argument(
        "--source-mirror",
        type=Path,
        metavar="DIR",
        help="a Spack source mirror to take the sources from instead of their URLs",
    )
    pack.set_defaults(func=cmd_pack)
    unpack = cmds.add_parser(
        "unpack",
        help="check the archive and make it ready (no network)",
        description="Checks the archive's signature (ARCHIVE.sig, by the key of --key or one "
        "the store trusts) before anything else, then every entry and file against the "
        "archive's manifest, makes the clingo "
        "virtual environment, Spack's site scope (carried recipes and mirror only, no "
        "bootstrap), clones the checkout and writes DIR/env.sh. "
        f"Exit {EXIT_BAD_INPUT}: the archive is unsigned, signed by a key not trusted, not "
        "one pack wrote or changed since.",
    )
    unpack.add_argument("archive", type=Path, help="the archive; its signature ARCHIVE.sig beside")
    unpack.add_argument("dir", type=Path, help="a new or empty folder")
    unpack.add_argument(
        "--key",
        type=Path,
        metavar="FILE",
        help="the packing site's public key (the line iostudy trust own prints there)",
    )
    add_store_option(unpack, "without --key: the store whose trusted keys (iostudy trust) apply")
    unpack.set_defaults(func=cmd_unpack)
