"""The processes of the test cluster's job steps, read from /proc: the nodes are namespaces of
this machine, so every slurmstepd and what it runs is a process here. For a test that timed out,
they tell a hang in the kernel (state D, and the kernel stack it waits in: a FUSE request to the
volume, a page writeback) from one in user space (state S in an MPI poll, a shell's wait)."""

from __future__ import annotations

from pathlib import Path

PROC = Path("/proc")
# frames of a blocked process's kernel stack worth printing
STACK_FRAMES = 8
COMMAND_CHARS = 160


def read(path: Path) -> str:
    """A /proc file's text, or "" when the process has gone or it cannot be read."""
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def processes() -> dict[int, dict]:
    """pid -> ppid, state, wchan and command line of every process."""
    found = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        stat = read(entry / "stat")
        # comm, in parentheses, may hold spaces: the fields follow its last ")"
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) < 2:
            continue
        command = read(entry / "cmdline").replace("\0", " ").strip()
        found[int(entry.name)] = {
            "ppid": int(fields[1]),
            "state": fields[0],
            "wchan": read(entry / "wchan") or "-",
            "command": command or stat[stat.find("(") : stat.rfind(")") + 1],
        }
    return found


def describe(pid: int, process: dict, depth: int) -> list[str]:
    """A process's line, and the top of its kernel stack when it is blocked in the kernel."""
    line = (
        f"{'  ' * depth}{pid} {process['state']} {process['wchan']} "
        f"{process['command'][:COMMAND_CHARS]}"
    )
    lines = [line]
    if process["state"] == "D":
        frames = read(PROC / str(pid) / "stack").splitlines()[:STACK_FRAMES]
        lines += [f"{'  ' * (depth + 2)}{frame}" for frame in frames]
    return lines


def tree() -> str:
    """Every slurmstepd with its descendants, a line each (pid, state, wchan, command)."""
    table = processes()
    children: dict[int, list[int]] = {}
    for pid, process in table.items():
        children.setdefault(process["ppid"], []).append(pid)
    roots = [pid for pid, p in table.items() if p["command"].startswith("slurmstepd")]
    lines = []

    def walk(pid: int, depth: int) -> None:
        lines.extend(describe(pid, table[pid], depth))
        for child in sorted(children.get(pid, [])):
            walk(child, depth + 1)

    for root in sorted(roots):
        walk(root, 0)
    return "\n".join(lines) or "(no job step runs)"
