"""`iostudy offline pack|unpack`: the Spack tier for an air-gapped site, in one archive
(spack-env/README.md; layout in iostudy.benchmarks.offline_archive)."""

import sys
from pathlib import Path

from iostudy.benchmarks import offline_archive, offline_pack, offline_unpack, spackenv
from iostudy.core import config
from iostudy.core.exitcodes import EXIT_BAD_INPUT, EXIT_FAILED


def _failure(exc: Exception) -> int:
    print(f"iostudy offline: error: {exc}", file=sys.stderr)
    bad_input = isinstance(exc, offline_archive.BadArchive | config.ConfigError)
    return EXIT_BAD_INPUT if bad_input else EXIT_FAILED


def cmd_pack(args) -> int:
    sources = {"spack": args.spack, "spack-packages": args.spack_packages}
    try:
        facts = offline_pack.pack(args.system, args.out, sources, args.source_mirror)
    except (offline_archive.OfflineError, spackenv.SpackError, config.ConfigError) as exc:
        return _failure(exc)
    print(
        f"packed {args.out} ({args.out.stat().st_size >> 20} MiB): system {facts['system']}, "
        f"Spack {facts['pins']['spack']['tag']}, spack-packages "
        f"{facts['pins']['spack-packages']['tag']}, iostudy {facts['iostudy_commit'][:12]}"
    )
    return 0


def cmd_unpack(args) -> int:
    try:
        manifest = offline_unpack.unpack(args.archive, args.dir)
    except (offline_archive.OfflineError, spackenv.SpackError) as exc:
        return _failure(exc)
    print(
        f"unpacked into {args.dir}; next:\n  . {args.dir / 'env.sh'}\n"
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
        description="Checks every file against the archive's manifest, makes the clingo "
        "virtual environment, Spack's site scope (carried recipes and mirror only, no "
        "bootstrap), clones the checkout and writes DIR/env.sh. "
        f"Exit {EXIT_BAD_INPUT}: the archive is not one pack wrote or was changed.",
    )
    unpack.add_argument("archive", type=Path)
    unpack.add_argument("dir", type=Path, help="a new or empty folder")
    unpack.set_defaults(func=cmd_unpack)
