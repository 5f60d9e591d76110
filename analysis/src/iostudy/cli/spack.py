"""``iostudy spack build|check``: the Spack tier (:mod:`iostudy.benchmarks.spackenv`)."""

import os

from iostudy.benchmarks import spackenv
from iostudy.cli.checks import check_files
from iostudy.cli.output import StderrProgress
from iostudy.core import config
from iostudy.core.exitcodes import EXIT_FAILED


def cmd_check(args) -> int:
    checks = spackenv.checked_files(args.systems or spackenv.systems_with_scopes())
    return check_files(checks, "spack check")


def cmd_build(args) -> int:
    spack = spackenv.find_spack(args.spack)
    path = spackenv.build(args.system, spack, args.jobs, args.fresh, StderrProgress("spack"))
    print(f"built; record: {config.in_checkout(path)}; view: {spackenv.view_dir(args.system)}")
    return 0


def register(groups):
    group = groups.add_parser(
        "spack",
        help="build the runtime and benchmarks with Spack (spack-env/)",
        description="The Spack tier: spack-env/spack.yaml (what to build) with the site facts "
        "of configs/systems/<system>/spack/. See spack-env/README.md, air-gapped sites too.",
    )
    cmds = group.add_subparsers(title="commands", dest="command", required=True)
    build_cmd = cmds.add_parser(
        "build",
        help="concretize, install, record the build",
        description="Keeps the system's Spack environment in build/spack/<system>/, seeded "
        "with spack-env/locks/<system>/spack.lock; concretizes, installs, copies the lock "
        "back when a spec changed, and writes build/spack/<system>/build-record.json (Spack "
        "version, lock sha256, iostudy commits, spack find --json), which run manifests "
        "reference. The checks then find "
        "their programs in build/spack/<system>/view. Needs Spack >= 1.0 (--spack, "
        f"SPACK_ROOT or PATH); exit {EXIT_FAILED} when Spack is missing or fails.",
    )
    build_cmd.add_argument("--system", required=True, help="a system of configs/systems/")
    build_cmd.add_argument("--spack", metavar="PATH", help="the spack executable to use")
    build_cmd.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="parallel build jobs"
    )
    build_cmd.add_argument(
        "--fresh",
        action="store_true",
        help="ignore the committed lock: concretize anew (then commit the updated lock)",
    )
    build_cmd.set_defaults(func=cmd_build)
    check = cmds.add_parser(
        "check",
        help="validate spack.yaml and the site scopes (no Spack needed)",
        description="Validates spack-env/spack.yaml and configs/systems/*/spack/*.yaml "
        "against configs/schemas/spack-*.schema.json, checks that every package of the "
        "mission is there with a recipe, and that every external says how its version was "
        "checked.",
    )
    check.add_argument("systems", nargs="*", metavar="SYSTEM", help="default: every system")
    check.set_defaults(func=cmd_check)
