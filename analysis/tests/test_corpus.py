"""The benchmark corpus of `make bench-analysis` (analysis/bench/corpus.py).

set_jobid must change a log's job id and nothing else, in every format version and byte order
of the test logs: each rewritten log is read back by the real reader (PyDarshan in a child
process, which raises on any complaint) and compared with the original. A small corpus holds
distinct job ids and only logs the reader accepts, the runtime's logs among them.
"""

import importlib.util
import os
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from iostudy.logs.darshanlog import read_log

REPO_ROOT = Path(__file__).resolve().parents[2]
BENCH = REPO_ROOT / "analysis" / "bench"
JOBID = 123456789


def _load_corpus():
    spec = importlib.util.spec_from_file_location("iostudy_bench_corpus", BENCH / "corpus.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


corpus = _load_corpus()


def read_all(paths) -> list[dict]:
    """read_log of every path, a few at a time (each read is a child process)."""
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 1)) as pool:
        return list(pool.map(read_log, paths))


def split_jobid(log: dict) -> tuple[int, dict]:
    """(jobid, the log's content without jobid and path)."""
    rest = {k: v for k, v in log.items() if k != "path"}
    rest["job"] = {k: v for k, v in log["job"].items() if k != "jobid"}
    return log["job"]["jobid"], rest


def differences(a: dict, b: dict) -> list[str]:
    return [key for key in sorted(a.keys() | b.keys()) if a.get(key) != b.get(key)]


@pytest.fixture(scope="module")
def sample_logs(darshan_logs):
    paths = sorted(darshan_logs.rglob("*.darshan"))
    assert paths, f"no logs under {darshan_logs}"
    return paths


@pytest.fixture(scope="module")
def originals(darshan_logs, sample_logs):
    """{path relative to darshan-logs: read_log of the original}"""
    return {
        str(p.relative_to(darshan_logs)): log
        for p, log in zip(sample_logs, read_all(sample_logs), strict=True)
    }


def test_set_jobid_changes_only_the_jobid(darshan_logs, sample_logs, originals, tmp_path):
    rewritten = []
    for i, path in enumerate(sample_logs):
        out = tmp_path / f"{i:02d}.darshan"
        out.write_bytes(corpus.set_jobid(path.read_bytes(), JOBID))
        rewritten.append(out)
    versions, orders = set(), set()
    problems = []
    for path, out, new in zip(sample_logs, rewritten, read_all(rewritten), strict=True):
        name = str(path.relative_to(darshan_logs))
        old_jobid, old = split_jobid(originals[name])
        new_jobid, new = split_jobid(new)
        assert old_jobid != JOBID
        if new_jobid != JOBID:
            problems.append(f"{name}: jobid {new_jobid}")
        if diff := differences(old, new):
            problems.append(f"{name}: {', '.join(diff)} differ")
        header = corpus.read_header(out.read_bytes())
        assert header.order == corpus.read_header(path.read_bytes()).order, name
        versions.add(header.version)
        orders.add(header.order)
    assert not problems, "\n".join(problems)
    # the test logs cover every format set_jobid knows, in both byte orders
    assert versions == set(corpus.LAYOUTS)
    assert orders == {"<", ">"}


def test_set_jobid_refuses_what_it_cannot_rewrite(release_log):
    data = release_log.read_bytes()
    with pytest.raises(corpus.LogFormatError, match="magic"):
        corpus.set_jobid(data[:8] + b"\0" * 8 + data[16:], 1)
    with pytest.raises(corpus.LogFormatError, match="version"):
        corpus.set_jobid(b"4.00" + data[4:], 1)
    with pytest.raises(ValueError, match="i64"):
        corpus.set_jobid(data, 2**63)


def _corpus_logs(written) -> tuple[list[Path], list[int]]:
    paths = [path for path, _ in written]
    jobids = []
    for path in paths:
        m = re.fullmatch(r"\w+_[\w.+-]+_id(\d+)-\d+_(\d+)-(\d+)-\d+-\d+_1\.darshan", path.name)
        assert m, f"not a Darshan-like name: {path.name}"
        year, month, day = path.parent.parts[-3:]
        assert year.isdigit() and (month, day) == m.group(2, 3), path
        jobids.append(int(m.group(1)))
    return paths, jobids


def test_small_corpus_of_test_logs(tmp_path, darshan_logs, originals):
    messages = []
    written = corpus.build(
        tmp_path / "c",
        60,
        darshan_logs.parents[1],
        runtime_logs=0,
        progress=messages.append,
        dxt=True,
    )
    assert messages[-1] == "corpus: 60/60 logs written"
    paths, jobids = _corpus_logs(written)
    assert len(set(jobids)) == 60
    assert sorted(tmp_path.joinpath("c").rglob("*.darshan")) == sorted(paths)
    # every test log is copied at least once
    assert {src.label for _, src in written} == set(originals)
    for (path, src), jobid, log in zip(written, jobids, read_all(paths), strict=True):
        got_jobid, got = split_jobid(log)
        assert got_jobid == jobid, path
        assert not differences(split_jobid(originals[src.label])[1], got), (path, src.label)


DXT = {"DXT_POSIX", "DXT_MPIIO"}


def test_without_dxt_drops_the_traces_and_nothing_else(
    sample_logs, originals, darshan_logs, tmp_path
):
    """The bench's corpus has no DXT (its speed target is for logs without): each log with a
    trace reads back as its original without the DXT modules, every other module the same."""
    traced = [
        p
        for p in sample_logs
        if DXT & originals[str(p.relative_to(darshan_logs))]["modules"].keys()
    ]
    assert len(traced) >= 5  # both byte orders, DXT_MPIIO 1 and 2
    for path in traced:
        original = originals[str(path.relative_to(darshan_logs))]
        out = tmp_path / "without-dxt.darshan"
        out.write_bytes(corpus.without_dxt(path.read_bytes()))
        stripped = read_log(out)
        assert set(stripped["modules"]) == set(original["modules"]) - DXT, path
        assert differences(original, stripped) == ["modules", "path"], path
        assert {m: original["modules"][m] for m in stripped["modules"]} == stripped["modules"]


def test_corpus_is_deterministic(tmp_path, darshan_logs):
    shared = darshan_logs.parents[1]
    trees = []
    for name in ("a", "b"):
        corpus.build(tmp_path / name, 30, shared, runtime_logs=0, seed=7, progress=None)
        root = tmp_path / name
        trees.append({p.relative_to(root): p.read_bytes() for p in root.rglob("*.darshan")})
    assert trees[0] == trees[1]
    assert len(trees[0]) == 30


def test_corpus_with_runtime_logs(tmp_path, darshan_logs):
    build = corpus.DEFAULT_RUNTIME_BUILD
    if corpus.runtime_library(build) is None:
        pytest.skip(f"{build / corpus.RUNTIME_LIB} missing: run `make build-runtime`")
    written = corpus.build(
        tmp_path / "c", 40, darshan_logs.parents[1], build, runtime_logs=4, progress=None
    )
    paths, jobids = _corpus_logs(written)
    assert len(set(jobids)) == 40
    runtime = [
        (path, src, jobid)
        for (path, src), jobid in zip(written, jobids, strict=True)
        if src.kind == "runtime"
    ]
    assert len(runtime) == 4  # a tenth of the corpus: each of the 4 runtime logs once
    sources = []
    for i, (_, src, _) in enumerate(runtime):
        sources.append(tmp_path / f"source{i}.darshan")
        sources[-1].write_bytes(src.data)
    copies = read_all([path for path, _, _ in runtime])
    for (path, _, jobid), log, source in zip(runtime, copies, read_all(sources), strict=True):
        assert log["job"]["metadata"]["lib_ver"].startswith("iostudy-"), path
        assert log["records"]["POSIX"], path
        got_jobid, got = split_jobid(log)
        assert got_jobid == jobid
        assert not differences(split_jobid(source)[1], got), path
