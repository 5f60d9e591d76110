import pytest

from tests.testdata import DARSHAN_LOGS, RELEASE_350


@pytest.fixture(scope="session")
def darshan_logs():
    assert DARSHAN_LOGS.is_dir(), f"test data missing: {DARSHAN_LOGS} (clone beside ../shared)"
    return DARSHAN_LOGS


@pytest.fixture(scope="session")
def release_log(darshan_logs):
    return darshan_logs / RELEASE_350
