"""Where the analysis tests' data is: the real Darshan logs beside the checkout."""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
# Real Darshan logs (external test data) live beside the checkout, not in it.
DARSHAN_LOGS = REPO_ROOT / ".." / "shared" / "testdata" / "darshan-logs"
# Primary 3.41 test vector: written by Darshan 3.5.0, 4 ranks, POSIX+MPI-IO+STDIO+LUSTRE+HEATMAP.
RELEASE_350 = "release_logs/mpi-io-test-x86_64-3.5.0.darshan"
# Darshan logs kept here (data/darshan-logs/README.md): the only ones with DFS, DAOS and APXC.
OWN_LOGS = Path(__file__).resolve().parent / "data" / "darshan-logs"
DFS_LOG = (
    OWN_LOGS / "ior_daos/snyder_ior-DFS_id4681120-53379_5-8-15060-3270540599978592154_1.darshan"
)
APXC_LOG = OWN_LOGS / "apmpi_apxc/mpi-io-test.darshan"
# 496 processes, 295 of which moved bytes in records of their own (data/darshan-logs/README.md)
IMBALANCED_LOG = OWN_LOGS / "imbalanced_io/imbalanced-io.darshan"


def corpus_logs() -> list[Path]:
    """Every real log of the tests: the shared test data's, the PyDarshan wheel's samples and
    the ones kept here."""
    import darshan

    wheel = Path(darshan.__file__).parent
    found = [DARSHAN_LOGS.rglob("*.darshan"), wheel.rglob("*.darshan"), OWN_LOGS.rglob("*.darshan")]
    return [log for logs in found for log in sorted(logs)]
