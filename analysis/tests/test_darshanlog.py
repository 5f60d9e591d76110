"""read_log against real Darshan logs; expected values are facts of the input files (checked
with PyDarshan 3.5.0 directly), not outputs of iostudy."""

import pytest

from iostudy.logs.darshanlog import DarshanLogError, read_log
from iostudy.logs.logregions import Limits
from tests import logbombs, logcraft

SHARED_FILE = "/home/wkliao/Darshan/TEST/mpi-io-test.tmp.dat"


def test_release_341_log_job_and_modules(release_log):
    log = read_log(release_log)
    job = log["job"]
    assert (job["nprocs"], job["jobid"], job["log_ver"]) == (4, 3171794, "3.41")
    assert (job["start_time_sec"], job["start_time_nsec"]) == (1762569885, 209444863)
    assert job["metadata"] == {"lib_ver": "3.5.0", "h": "romio_no_indep_rw=true;cb_nodes=4"}
    assert log["exe"].startswith("/home/wkliao/Darshan/TEST/mpi-io-test -f")
    assert len(log["mounts"]) == 35
    assert set(log["modules"]) == {"POSIX", "MPI-IO", "LUSTRE", "STDIO", "HEATMAP"}
    assert log["modules"]["POSIX"] == {"len": 156, "ver": 4, "partial_flag": False}
    assert len(log["name_records"]) == 7


def test_release_341_log_records(release_log):
    log = read_log(release_log)
    (posix,) = log["records"]["POSIX"]
    assert posix["rank"] == -1
    assert log["name_records"][posix["id"]] == SHARED_FILE
    assert posix["counters"]["POSIX_OPENS"] == 16
    assert posix["counters"]["POSIX_BYTES_READ"] == 64 * 2**20
    assert posix["counters"]["POSIX_BYTES_WRITTEN"] == 64 * 2**20
    assert "POSIX_F_OPEN_START_TIMESTAMP" in posix["fcounters"]
    (mpiio,) = log["records"]["MPI-IO"]
    assert mpiio["counters"]["MPIIO_INDEP_OPENS"] == 8
    (stdio,) = log["records"]["STDIO"]
    assert (log["name_records"][stdio["id"]], stdio["rank"]) == ("<STDOUT>", 0)
    assert stdio["counters"]["STDIO_BYTES_WRITTEN"] == 322


def test_release_341_log_heatmaps(release_log):
    heatmaps = read_log(release_log)["heatmaps"]
    assert set(heatmaps) == {"POSIX", "MPIIO", "STDIO"}
    posix = heatmaps["POSIX"]
    assert (posix["nbins"], posix["bin_width"], posix["ranks"]) == (1, 0.1, [0, 1, 2, 3])
    assert [posix["write"][rank] for rank in posix["ranks"]] == [[16 * 2**20]] * 4
    assert [posix["read"][rank] for rank in posix["ranks"]] == [[16 * 2**20]] * 4


def test_release_341_log_raw_records(release_log):
    log = read_log(release_log)
    # 64-bit record ids come out exact (this one is above 2**63): the hash of the name, as in
    # the reference's test vectors.
    (posix,) = log["records"]["POSIX"]
    assert posix["id"] == 9347516096890457488
    assert log["raw_record_counts"] == {"POSIX": 1, "STDIO": 1, "MPI-IO": 1, "HEATMAP": 9}
    # One heatmap record per API and rank: POSIX and MPIIO on 4 ranks, STDIO on rank 0.
    hm_ids = [log["name_records"][r["id"]] for r in log["heatmap_records"]]
    assert sorted(hm_ids) == ["heatmap:MPIIO"] * 4 + ["heatmap:POSIX"] * 4 + ["heatmap:STDIO"]
    assert {(r["nbins"], r["bin_width"]) for r in log["heatmap_records"]} == {(1, 0.1)}


def test_big_endian_legacy_log(darshan_logs):
    job = read_log(darshan_logs / "release_logs/mpi-io-test-ppc64-3.0.0.darshan")["job"]
    assert (job["nprocs"], job["jobid"], job["log_ver"]) == (4, 770702, "3.00")


def test_empty_log_has_no_modules(darshan_logs):
    log = read_log(darshan_logs / "empty_log/empty_log.darshan")
    assert (log["job"]["nprocs"], log["job"]["jobid"]) == (4, 395998)
    assert log["modules"] == {} and log["records"] == {} and log["heatmaps"] == {}
    assert log["raw_record_counts"] == {} and log["heatmap_records"] == []


def test_partial_flag(darshan_logs):
    log = read_log(darshan_logs / "partial_data_stdio/partial_data_stdio.darshan")
    assert log["modules"]["STDIO"]["partial_flag"] is True
    assert log["modules"]["POSIX"]["partial_flag"] is False
    assert len(log["records"]["STDIO"]) == 1022


# Cut points in the 2597-byte 3.5.0 log: inside the header, the job region, the name region and
# the last (HEATMAP) module region. A cut header makes libdarshan-util fail; the others are
# refused before it reads them, as the header puts regions past the end of the file (the last
# one libdarshan-util "read" with records missing and only a complaint on stderr).
@pytest.mark.parametrize("size", [100, 1500, 1850, 2500])
def test_truncated_log_raises_naming_the_file(release_log, tmp_path, size):
    bad = tmp_path / f"cut-at-{size}.darshan"
    bad.write_bytes(release_log.read_bytes()[:size])
    with pytest.raises(DarshanLogError) as err:
        read_log(bad)
    assert str(bad) in str(err.value)
    if size == 100:
        assert err.value.stderr, "libdarshan-util's complaints are kept"
    else:
        assert "truncated: the header puts the" in str(err.value)
        assert f"the file has {size}" in str(err.value)


def test_missing_file(tmp_path):
    missing = tmp_path / "nope.darshan"
    with pytest.raises(DarshanLogError, match="no such file") as err:
        read_log(missing)
    assert err.value.path == str(missing)


def test_not_a_log(tmp_path):
    text = tmp_path / "notes.darshan"
    text.write_text("hello\n")
    with pytest.raises(DarshanLogError, match="Failed to open file") as err:
        read_log(text)
    assert any("invalid log file" in line for line in err.value.stderr)


def test_timeout(release_log, tmp_path):
    """A log whose check takes long (a 1 GiB bomb, allowed here: inflating it takes about a
    second) is given up at the timeout, and the next read gets a fresh reader."""
    slow = tmp_path / "slow.darshan"
    slow.write_bytes(logbombs.record_bomb(release_log.read_bytes(), logbombs.GIB))
    allowed = Limits(max_bytes=2 * logbombs.GIB, max_records=1 << 30, max_ratio=1e6)
    with pytest.raises(DarshanLogError, match="timed out after 0.05 s"):
        read_log(slow, timeout=0.05, limits=allowed)
    assert read_log(release_log)["job"]["nprocs"] == 4


def test_hdf5_and_pnetcdf_file_records(darshan_logs):
    """The libraries' file-level records of upstream Darshan's IOR logs (4 ranks, one file
    written and read back, reduced to rank -1)."""
    logs = darshan_logs / "ior_pnetcdf_hdf5"
    (hdf5,) = logs.glob("shane_ior-HDF5_*.darshan")
    log = read_log(hdf5)
    (h5f,) = log["records"]["H5F"]
    assert h5f["rank"] == -1 and log["modules"]["H5F"]["ver"] == 3
    assert (h5f["counters"]["H5F_OPENS"], h5f["counters"]["H5F_USE_MPIIO"]) == (8, 1)
    fc = h5f["fcounters"]
    assert fc["H5F_F_OPEN_START_TIMESTAMP"] == pytest.approx(0.009283, abs=1e-6)
    assert fc["H5F_F_CLOSE_END_TIMESTAMP"] == pytest.approx(0.018892, abs=1e-6)
    assert log["raw_record_counts"]["H5F"] == 1

    (pnetcdf,) = logs.glob("shane_ior-PNETCDF_*.darshan")
    (nc,) = read_log(pnetcdf)["records"]["PNETCDF_FILE"]
    c = nc["counters"]
    assert (c["PNETCDF_FILE_CREATES"], c["PNETCDF_FILE_OPENS"]) == (4, 4)
    assert (c["PNETCDF_FILE_BYTES_WRITTEN"], c["PNETCDF_FILE_BYTES_READ"]) == (4194476, 4456448)
    assert nc["fcounters"]["PNETCDF_FILE_F_CLOSE_END_TIMESTAMP"] == pytest.approx(0.01819, abs=1e-6)


def test_damaged_job_region_is_refused_before_the_reader(release_log, tmp_path):
    """A zeroed job region made libdarshan-util segfault (a new worker per such log in ingest);
    its zlib data is now refused first, with the region named."""
    bad = tmp_path / "zeroed-job.darshan"
    bad.write_bytes(logcraft.zero_region(release_log.read_bytes(), "job"))
    with pytest.raises(DarshanLogError, match="job region: damaged compressed data") as err:
        read_log(bad)
    assert not err.value.stderr, "libdarshan-util never read it"
