"""``iostudy config``: check and show the system descriptions of configs/
(:mod:`iostudy.core.config`), and write what derives from one (:mod:`iostudy.run.profiles`)."""

import json
import sys
from pathlib import Path

from iostudy.cli.checks import check_files
from iostudy.core import config
from iostudy.run import profiles


def cmd_config_check(args) -> int:
    names = args.systems or config.system_names()
    checks = [(config.system_path(n), lambda n=n: config.load_system(n)) for n in names]
    return check_files(checks, "config check: system")


def cmd_config_show(args) -> int:
    json.dump(config.load_system(args.system), sys.stdout, indent=2)
    print()
    return 0


def cmd_snakemake_profile(args) -> int:
    path = profiles.write_snakemake_profile(config.load_system(args.system), args.out)
    print(f"snakemake profile for {args.system}: {path} (use: snakemake --profile {args.out})")
    return 0


def register(groups) -> None:
    cfg = groups.add_parser(
        "config",
        help="check and show configuration (configs/)",
        description="Configuration is data under configs/ (IOSTUDY_CONFIGS overrides the "
        "folder), validated against configs/schemas/. A bad file is reported as one error "
        "naming the file, the key and the problem.",
    )
    cmds = cfg.add_subparsers(title="commands", dest="command", required=True)
    check = cmds.add_parser("check", help="validate system descriptions")
    check.add_argument("systems", nargs="*", metavar="SYSTEM", help="default: every system")
    check.set_defaults(func=cmd_config_check)
    show = cmds.add_parser("show", help="print a system with its defaults filled in")
    show.add_argument("system", metavar="SYSTEM")
    show.set_defaults(func=cmd_config_show)
    prof = cmds.add_parser(
        "snakemake-profile",
        help="write a Snakemake profile derived from a system description",
        description="Writes DIR/config.yaml, a Snakemake 9 profile for SYSTEM: on Slurm the "
        "slurm executor with the default partition, a core and its share of memory per rule, "
        "as many parallel jobs as the system has cores, and job states polled with sacct.",
    )
    prof.add_argument("system", metavar="SYSTEM")
    prof.add_argument("--out", required=True, type=Path, metavar="DIR", help="profile folder")
    prof.set_defaults(func=cmd_snakemake_profile)
