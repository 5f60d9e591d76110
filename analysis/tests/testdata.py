"""Where the analysis tests' data is: the real Darshan logs beside the checkout."""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
# Real Darshan logs (external test data) live beside the checkout, not in it.
DARSHAN_LOGS = REPO_ROOT / ".." / "shared" / "testdata" / "darshan-logs"
# Primary 3.41 test vector: written by Darshan 3.5.0, 4 ranks, POSIX+MPI-IO+STDIO+LUSTRE+HEATMAP.
RELEASE_350 = "release_logs/mpi-io-test-x86_64-3.5.0.darshan"
