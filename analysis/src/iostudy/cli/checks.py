"""How every ``check`` command (config, campaign, spack) validates its files and says so: "ok:
PATH" for each valid one, the error naming file, key and problem for each other, then a count."""

import sys

from iostudy.cli.errors import error_line
from iostudy.core import config
from iostudy.core.exitcodes import EXIT_BAD_INPUT


def check_files(checks, what: str) -> int:
    """Validates (path, load) pairs, printing each one's verdict and a summary line about what;
    the exit status: EXIT_BAD_INPUT unless every file is valid."""
    if not checks:
        raise config.ConfigError(f"{what}: no files to check in {config.configs_dir()}")
    failed = 0
    for path, load in checks:
        try:
            load()
            print(f"ok: {path}")
        except config.ConfigError as exc:
            print(error_line(exc), file=sys.stderr)
            failed += 1
    print(f"{what}: {len(checks) - failed} of {len(checks)} files valid")
    return EXIT_BAD_INPUT if failed else 0
