"""``iostudy report build``: publish a new version of a study's report
(:mod:`iostudy.report.report`)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from iostudy.cli.options import add_store_option
from iostudy.core import paths
from iostudy.metrics import workload
from iostudy.report import report


def cmd_build(args) -> int:
    index = report.build(
        Path(args.store),
        args.study,
        Path(args.reports),
        title=args.title,
        as_version=args.as_version,
        results=Path(args.results) if args.results else None,
        argv=["iostudy", *sys.argv[1:]],
        large_procs=args.large_procs,
        large_mib=args.large_mib,
        anonymize=args.anonymize,
        before_after=args.before_after or (),
    )
    manifest = json.loads((index.parent / "MANIFEST.json").read_text())
    runs = manifest["runs"]
    print(
        f"report {args.study} v{manifest['report']['version']}: {len(runs)} runs "
        f"({', '.join(sorted({r['system'] or '?' for r in runs}))}), "
        f"{len(manifest['contents'])} figures and tables, "
        f"index of versions {index.parent.parent / 'index.html'}"
    )
    # The last line is the new report's page alone, for scripts (`make demo`) to take.
    print(index)
    return 0


def _positive(text: str) -> int:
    value = int(text.removeprefix("v"))
    if value < 1:
        raise ValueError(text)
    return value


def _non_negative(text: str) -> float:
    value = float(text)
    if not value >= 0 or math.isinf(value):
        raise ValueError(text)
    return value


def register(groups) -> None:
    """Adds the ``report`` command group to the CLI's group subparsers."""
    rep = groups.add_parser(
        "report",
        help="build versioned, self-contained HTML reports",
        description="Reports of a study: REPORTS/<study>/v<N>/ (index.html, MANIFEST.json, one "
        "CSV per figure and table) and REPORTS/<study>/index.html listing the versions.",
    )
    cmds = rep.add_subparsers(title="commands", dest="command", required=True)
    b = cmds.add_parser(
        "build",
        help="publish a new version of a study's report from the store",
        description="Publish REPORTS/<study>/v<N+1>/ from the study's runs in the store (a "
        "run belongs to the study its campaign names). A published version is never "
        "overwritten. The last line of output is the path of the new index.html.",
    )
    _add_build_options(b)
    b.set_defaults(func=cmd_build)


def _add_build_options(b) -> None:
    """report build's options."""
    add_store_option(b)
    b.add_argument(
        "--results",
        metavar="DIR",
        help="folder of the run directories, where the runs' manifests are (default: the "
        "store's parent folder)",
    )
    b.add_argument("--study", required=True, help="study name, e.g. quick")
    b.add_argument(
        "--reports",
        type=Path,
        default=paths.REPORTS,
        help=f"reports folder (default {paths.REPORTS})",
    )
    b.add_argument("--title", help="page title (default: iostudy report: STUDY)")
    b.add_argument(
        "--large-procs",
        type=_positive,
        default=workload.LARGE_PROCS,
        metavar="N",
        help="seed 000's large jobs (Figs. 9, 10, Table IV) have at least N processes "
        f"(default {workload.LARGE_PROCS})",
    )
    b.add_argument(
        "--large-mib",
        type=_non_negative,
        default=workload.LARGE_MIB,
        metavar="M",
        help=f"... and moved at least M MiB, read + written (default {workload.LARGE_MIB:g})",
    )
    b.add_argument(
        "--anonymize",
        action="store_true",
        help="replace user names, projects, command lines and paths with pseudonyms (keyed "
        "HMAC; the same name, the same pseudonym, in every table, figure, CSV and version; the "
        "key is STORE/anonymize.key, made on first use and never published)",
    )
    b.add_argument(
        "--before-after",
        nargs=2,
        action="append",
        metavar=("A", "B"),
        help="compare job B with job A, before and after (seed 000, Fig. 11): a log's sha256 "
        "(or its first 8+ hex digits), a Slurm job id, or a log's path or file name; repeat "
        "for more pairs",
    )
    b.add_argument(
        "--as-version",
        type=_positive,
        metavar="N",
        help="publish as v<N>; an error if v<N> exists (default: the next version)",
    )
