"""The exit statuses of every ``iostudy`` command, defined once."""

#: the command ran and found what it reports as a failure (a check, a build, a merge)
EXIT_FAILED = 1
#: a comparison found a regression beyond its band
EXIT_REGRESSION = 1
#: the input could not be used: a file, a field or a value (argparse uses 2 for bad usage too)
EXIT_BAD_INPUT = 2
#: stopped by a bound before the end (a time or size limit)
EXIT_STOPPED = 3
#: interrupted (SIGINT), as a shell reports it
EXIT_INTERRUPTED = 130
