"""Collectors of what the logs do not hold: iostat snapshots of storage servers, fsstats
snapshots of file systems, Slurm accounting."""
