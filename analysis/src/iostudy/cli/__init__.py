"""The command line: ``iostudy GROUP COMMAND``."""
