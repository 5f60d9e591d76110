"""`ci/cluster/testbed.py render`: writes the Slurm test cluster's configuration into its state
directory (what ci/cluster/cluster-up.sh runs, with the checkout's .venv/bin/python).

CI infrastructure, not part of the harness a facility runs: it reads a system description
through iostudy.core.config and writes only files whose content or mode changed, keeping the
database password of an earlier rendering. The cluster's shape is in testbed_layout.py, the
texts of the files in testbed_files.py.

    .venv/bin/python ci/cluster/testbed.py render --system testcluster --state build/cluster \\
        --mode netns|localhost [--nodes N] [--tools DIR] [--controller-host NAME]
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import socket
import sys
from pathlib import Path

from testbed_files import File, render
from testbed_layout import MODES, Layout, directories, with_node_count

from iostudy.core import config
from iostudy.core.exitcodes import EXIT_BAD_INPUT

PROG = "ci/cluster/testbed.py"


def write(state: Path, files: dict[str, File], dirs: list[Path]) -> list[str]:
    """Writes files whose content or mode differs (atomically); returns their relative paths."""
    state = Path(state)
    for d in dirs:
        d.mkdir(parents=True, exist_ok=True)
    changed = []
    for rel, f in files.items():
        path = state / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            same = path.read_text() == f.text and (path.stat().st_mode & 0o7777) == f.mode
        except OSError:
            same = False
        if same:
            continue
        tmp = path.with_name(f".{path.name}.tmp")
        # Created with its final mode: the password file is never readable by others.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, f.mode)
        with os.fdopen(fd, "w") as out:
            out.write(f.text)
        os.chmod(tmp, f.mode)
        os.replace(tmp, path)
        changed.append(rel)
    return changed


def existing_db_password(state: Path) -> str | None:
    """StoragePass of an earlier rendering, so that re-rendering changes nothing."""
    try:
        text = (Layout(Path(state)).slurmdbd_conf).read_text()
    except OSError:
        return None
    match = re.search(r"^StoragePass=(\S+)$", text, re.MULTILINE)
    return match.group(1) if match else None


def cmd_render(args) -> int:
    state = Path(args.state).resolve()
    tools = Path(args.tools).resolve() if args.tools else config.REPO_ROOT / "build" / "tools"
    try:
        system = with_node_count(config.load_system(args.system), args.nodes)
        files = render(
            system,
            state,
            args.mode,
            controller_host=args.controller_host or socket.gethostname().split(".")[0],
            tools_dir=tools,
            db_password=existing_db_password(state) or secrets.token_hex(16),
        )
        changed = write(state, files, directories(system, state))
    except config.ConfigError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    what = f"{len(changed)} of {len(files)} files changed" if changed else "unchanged"
    print(f"testbed: {args.mode} mode, {system['nodes']['count']} nodes of {args.system}: {what}")
    print(f"testbed: configuration in {state}; source {Layout(state).env}")
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog=PROG,
        description="Configuration of the Slurm test-and-development cluster that "
        "ci/cluster/cluster-up.sh stands up on one machine, derived from a system "
        "description's nodes, partitions, mpi and testbed sections.",
    )
    cmds = top.add_subparsers(title="commands", dest="command", required=True)
    render_cmd = cmds.add_parser(
        "render",
        help="write slurm.conf, slurmdbd.conf, mariadb.cnf and env.sh into a state directory",
        description="Write the configuration into STATE (only files whose content changed; "
        "slurmdbd.conf keeps its database password across runs).",
    )
    render_cmd.add_argument("--system", required=True, help="system name, e.g. testcluster")
    render_cmd.add_argument("--state", required=True, metavar="DIR", help="state directory")
    render_cmd.add_argument("--mode", required=True, choices=MODES)
    render_cmd.add_argument(
        "--nodes", type=int, metavar="N", help="override the system's node count"
    )
    render_cmd.add_argument(
        "--tools", metavar="DIR", help="directory of the built scrontab (default build/tools)"
    )
    render_cmd.add_argument(
        "--controller-host", metavar="NAME", help="slurmctld host name (default: this host)"
    )
    render_cmd.set_defaults(func=cmd_render)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
