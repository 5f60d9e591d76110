"""ci/judge-campaign.sh, the judgement ci/run-campaign.sh makes of a scheduled campaign's new run,
run for real from a checkout-like folder (its .venv, its results/store) against stores of
hand-made results: the newcomer's history (three runs of five repetitions, the third one's
shared-file write halved) is a regression, the site's command gets the JSON naming the series;
a quiet history runs no command; a failing command and a failing compare are reported, each
with a status of its own."""

import json
import os
import shlex
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from iostudy.store import store

from .testdata import REPO_ROOT

pytestmark = pytest.mark.slow

JUDGE = REPO_ROOT / "ci" / "judge-campaign.sh"
# ci/judge-campaign.sh's exit statuses (its header)
REGRESSION, HOOK_FAILED, NO_JUDGEMENT = 10, 11, 12
T0 = datetime(2026, 3, 2, 2, 30, tzinfo=timezone.utc)
# five repetitions per run, all fifteen values distinct: the rank test is exact
QUIET = [[98.0, 101.0, 100.0, 103.0, 99.0], [100.5, 97.5, 102.5, 99.5, 101.5]]
HALVED = [v / 2 for v in QUIET[0]]
STEADY = [99.8, 100.2, 100.7, 98.7, 101.2]


def run_id(i: int, system: str, campaign: str = "quick") -> str:
    return f"{(T0 + timedelta(days=i)):%Y%m%dT%H%M%SZ}-{campaign}-{system}"


def write_store(root: Path, *histories: tuple[str, str, int, list[list[float]]]) -> Path:
    """root/results/store with the runs of each (system, campaign, first day, runs' repetitions),
    on consecutive days: a shared-file write rate of each repetition (quick's I/O-model check, an
    IOR check of the components campaign), as the perf and runs tables hold it."""
    tables = {"perf": [], "runs": []}
    for system, campaign, day0, runs in histories:
        check = "iomodel_check" if campaign == "quick" else "ior_check"
        for i, reps in enumerate(runs, start=day0):
            rid = run_id(i, system, campaign)
            started = T0 + timedelta(days=i)
            tables["runs"].append(
                {
                    "run_id": rid,
                    "campaign": campaign,
                    "system": system,
                    "started": started,
                    "finished": started + timedelta(minutes=2),
                    "status": "passed",
                    "study": campaign,
                }
            )
            tables["perf"] += [
                {
                    "run_id": rid,
                    "system": system,
                    "partition": "default",
                    "environ": "openmpi",
                    "check": check,
                    "parameters": json.dumps({"size": "256M", "repetition": r}),
                    "variable": "ssf_write_mib_s",
                    "value": value,
                    "unit": "MiB/s",
                    "result": "pass",
                    "num_tasks": 2,
                    "num_tasks_per_node": 2,
                }
                for r, value in enumerate(reps)
            ]
    st = root / "results" / "store"
    for table, rows in tables.items():
        schema = store.TABLES[table]
        for rid in sorted({row["run_id"] for row in rows}):
            part = [{c: r.get(c) for c in schema.names} for r in rows if r["run_id"] == rid]
            (st / table).mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.Table.from_pylist(part, schema), st / table / f"{rid}.parquet")
    return st


@pytest.fixture
def checkout(tmp_path) -> Path:
    """A folder laid out like the checkout run-campaign.sh runs in: .venv/ is this venv."""
    (tmp_path / ".venv").symlink_to(Path(sys.executable).parent.parent)
    return tmp_path


def judge(checkout: Path, system: str, rid: str, **env) -> subprocess.CompletedProcess:
    json_file = checkout / "build" / "campaign-logs" / "run.compare.json"
    return subprocess.run(
        [JUDGE, "quick", system, rid, json_file],
        cwd=checkout,
        env={k: v for k, v in os.environ.items() if not k.startswith("IOSTUDY_")} | env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def hook_writing_to(out: Path) -> str:
    """A site's command that keeps what it was given: its stdin and its IOSTUDY_ environment."""
    return f"cat > {shlex.quote(str(out / 'stdin.json'))}; env > {shlex.quote(str(out / 'env'))}"


def test_a_halved_third_run_is_a_regression_and_the_command_gets_the_json(checkout, tmp_path):
    # the third run judged; besides its own regressed series, the same on another system and
    # another campaign's on this system, whose last run (the day before) regressed
    write_store(
        checkout,
        ("local", "quick", 0, [*QUIET, HALVED]),
        ("testcluster", "quick", 0, [*QUIET, HALVED]),
        ("local", "components", -2, [*QUIET, HALVED]),
    )
    got = tmp_path / "hook"
    got.mkdir()
    latest = run_id(2, "local")
    proc = judge(checkout, "local", latest, IOSTUDY_ON_REGRESSION=hook_writing_to(got))
    assert proc.returncode == REGRESSION, proc.stdout + proc.stderr

    received = json.loads((got / "stdin.json").read_text())
    saved = checkout / "build" / "campaign-logs" / "run.compare.json"
    assert received == json.loads(saved.read_text())
    # only the new run judged: the other regressions are not this campaign's news
    (series,) = received["series"]
    assert (series["system"], series["run_id"]) == ("local", latest)
    assert (series["check"], series["variable"]) == ("iomodel_check", "ssf_write_mib_s")
    assert series["verdict"] == "regression" and received["exit_status"] == 1
    # 5 repetitions against 10, every one lower, no ties: exact p = 2 / C(15, 5) = 2 / 3003
    assert series["p_value"] == pytest.approx(2 / 3003)
    # every repetition exactly halved: the Hodges-Lehmann shift is near -50 % of the median
    assert -55 < series["change_pct"] < -45
    env = dict(line.split("=", 1) for line in (got / "env").read_text().splitlines() if "=" in line)
    assert env["IOSTUDY_COMPARE_JSON"] == str(saved)
    assert (env["IOSTUDY_CAMPAIGN"], env["IOSTUDY_SYSTEM"]) == ("quick", "local")
    assert f"REGRESSION: 1 values of run {latest} on local" in proc.stdout


def test_a_quiet_history_runs_no_command(checkout, tmp_path):
    write_store(checkout, ("local", "quick", 0, [*QUIET, STEADY]))
    got = tmp_path / "hook"
    got.mkdir()
    proc = judge(checkout, "local", run_id(2, "local"), IOSTUDY_ON_REGRESSION=hook_writing_to(got))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert list(got.iterdir()) == []
    saved = json.loads((checkout / "build" / "campaign-logs" / "run.compare.json").read_text())
    assert [s["verdict"] for s in saved["series"]] == ["no change"]


def test_the_accepted_run_as_baseline(checkout):
    # against the accepted first run the third one is judged too; the JSON names the baseline
    write_store(checkout, ("local", "quick", 0, [*QUIET, HALVED]))
    proc = judge(checkout, "local", run_id(2, "local"), IOSTUDY_BASELINE=run_id(0, "local"))
    assert proc.returncode == REGRESSION, proc.stdout + proc.stderr
    saved = json.loads((checkout / "build" / "campaign-logs" / "run.compare.json").read_text())
    assert saved["series"][0]["baseline"] == f"accepted run {run_id(0, 'local')} (5 repetitions)"


def test_a_failing_command_is_reported_with_its_own_status(checkout):
    write_store(checkout, ("local", "quick", 0, [*QUIET, HALVED]))
    command = "no-such-notifier -s regression ops@site"
    proc = judge(checkout, "local", run_id(2, "local"), IOSTUDY_ON_REGRESSION=command)
    assert proc.returncode == HOOK_FAILED, proc.stdout + proc.stderr
    assert f"command exited with status 127: {command}" in proc.stderr
    # a command that hangs is stopped, so that it never keeps the campaign's lock: timeout's 124
    hung = "sleep 30"
    proc = judge(
        checkout,
        "local",
        run_id(2, "local"),
        IOSTUDY_ON_REGRESSION=hung,
        IOSTUDY_ON_REGRESSION_TIMEOUT="1",
    )
    assert proc.returncode == HOOK_FAILED, proc.stdout + proc.stderr
    assert f"command exited with status 124: {hung}" in proc.stderr


def test_no_judgement_is_neither_a_pass_nor_a_regression(checkout):
    # no store at all, then a run the store does not hold: compare's bad input
    proc = judge(checkout, "local", run_id(2, "local"))
    assert proc.returncode == NO_JUDGEMENT, proc.stdout + proc.stderr
    assert "compare failed with status 2: store results/store: no such directory" in proc.stderr
    write_store(checkout, ("local", "quick", 0, QUIET))
    proc = judge(checkout, "local", run_id(2, "local"), IOSTUDY_ON_REGRESSION="true")
    assert proc.returncode == NO_JUDGEMENT, proc.stdout + proc.stderr
    assert f"--run {run_id(2, 'local')}: no such run" in proc.stderr
    # a campaign that named no run: never every series' latest value judged again
    proc = judge(checkout, "local", "", IOSTUDY_ON_REGRESSION="true")
    assert proc.returncode == NO_JUDGEMENT, proc.stdout + proc.stderr
    assert "no run to judge" in proc.stderr
