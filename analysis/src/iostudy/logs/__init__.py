"""Darshan-format logs: reading one (in a worker process), its rows for the store, merging a
killed job's, the log root's folders."""
