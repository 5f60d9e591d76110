"""The air-gapped round trip for real: `iostudy offline pack` with the network (pip's index),
then, in a network namespace with no interface up (`unshare -n`), the steps of
spack-env/README.md: an iostudy made from the archive's bundle and wheels, `iostudy offline
unpack`, `make setup`, `make spack SYSTEM=local` and the quick campaign from the view.

It needs what CI does not have, given by environment variables (skipped, naming them, without):
  IOSTUDY_OFFLINE_SPACK           a git clone of Spack holding the tag of spack-env/pins.yaml
  IOSTUDY_OFFLINE_SPACK_PACKAGES  a git clone of spack-packages holding its tag
  IOSTUDY_OFFLINE_SOURCES         a Spack source mirror with the locked specs' sources (stands
                                  in for their download URLs)
and root (unshare -n). It takes 15 to 20 minutes on 2 cores. As the README says: the `.deb`s
`make spack` needs beyond `make setup` are fetched with the network (ci/apt-download.sh: libtool
and patchelf where this machine lacks them; none where it has them, since a test cannot take
installed packages away from the machine it runs on) and installed with the network cut; the
archive is unpacked into a relative folder, `site`.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from iostudy.benchmarks import spackenv

REPO_ROOT = Path(__file__).resolve().parents[2]
NEEDED = ("IOSTUDY_OFFLINE_SPACK", "IOSTUDY_OFFLINE_SPACK_PACKAGES", "IOSTUDY_OFFLINE_SOURCES")
MISSING = [name for name in NEEDED if not os.environ.get(name)]

pytestmark = pytest.mark.skipif(
    bool(MISSING) or os.geteuid() != 0 or shutil.which("unshare") is None,
    reason=f"the offline round trip needs {', '.join(MISSING) or 'nothing more'} set, root and "
    "unshare (a Spack clone, a spack-packages clone and a source mirror)",
)

# Nothing reaches the network inside: only a loopback device, and it is down.
# Nothing reaches the network inside: the namespace has only loopback, brought up because Open
# MPI's PMIx listens on it (an air-gapped machine has loopback too). Each step's time is logged.
OFFLINE_STEPS = """
set -euo pipefail
ip -o link show | grep -qv ": lo:" && exit 97
ip link set lo up
step() {{ echo "step $1: $SECONDS s" >&2; }}
cd {work}
if compgen -G "debs/*.deb" > /dev/null; then
    apt-get install -y --no-install-recommends ./debs/*.deb
fi
step debs
tar xzf iostudy-offline.tar.gz iostudy-offline/iostudy.bundle iostudy-offline/wheels
git clone --quiet -b main iostudy-offline/iostudy.bundle unpacker
(cd unpacker && PIP_NO_INDEX=1 PIP_FIND_LINKS=$PWD/../iostudy-offline/wheels make venv)
step unpacker
unpacker/.venv/bin/iostudy offline unpack iostudy-offline.tar.gz site --key site.pub
step unpack
. site/env.sh
cd site/iostudy
make setup JOBS=2
step setup
make spack SYSTEM=local JOBS=2
step spack
git status --porcelain > ../status-after-build.txt
.venv/bin/iostudy campaign run quick --system local
step campaign
"""


def test_pack_unpack_build_and_run_with_the_network_cut(tmp_path):
    archive = tmp_path / "iostudy-offline.tar.gz"
    pack = subprocess.run(
        [
            sys.executable,
            "-m",
            "iostudy.cli.cli",
            "offline",
            "pack",
            "--system",
            "local",
            "--out",
            str(archive),
            "--spack",
            os.environ["IOSTUDY_OFFLINE_SPACK"],
            "--spack-packages",
            os.environ["IOSTUDY_OFFLINE_SPACK_PACKAGES"],
            "--source-mirror",
            os.environ["IOSTUDY_OFFLINE_SOURCES"],
            "--store",
            str(tmp_path / "store"),
            "--site",
            "site-a",
        ],
        capture_output=True,
        text=True,
    )
    assert pack.returncode == 0, pack.stderr[-4000:]
    # the packing site's public key, carried with the archive and its signature
    own = [sys.executable, "-m", "iostudy.cli.cli", "trust", "own", "--store"]
    own += [str(tmp_path / "store"), "--out", str(tmp_path / "site.pub")]
    subprocess.run(own, check=True, capture_output=True)
    site = tmp_path / "site"
    # the README's step on the connected side: the .debs this machine lacks for make spack
    subprocess.run(
        [
            str(REPO_ROOT / "ci/apt-download.sh"),
            "--download",
            str(tmp_path / "debs"),
            str(REPO_ROOT / "configs/systems/local/spack/apt-packages.txt"),
        ],
        check=True,
    )
    steps = OFFLINE_STEPS.format(work=tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPACK", "PIP_", "IOSTUDY_"))}
    log = tmp_path / "offline-steps.log"
    with log.open("w") as out:
        run = subprocess.run(
            ["unshare", "-n", "bash", "-c", steps], stdout=out, stderr=out, env=env
        )
    assert run.returncode != 97, "unshare -n left a network interface"
    assert run.returncode == 0, f"{log}:\n{log.read_text()[-6000:]}"
    print("".join(line for line in log.read_text().splitlines(True) if line.startswith("step ")))

    checkout = site / "iostudy"
    assert (site / "status-after-build.txt").read_text() == ""  # the lock was not rewritten
    record = json.loads((checkout / "build/spack/local/build-record.json").read_text())
    locked = spackenv.iostudy_commits(checkout / "spack-env/locks/local/spack.lock")
    assert record["iostudy_packages"] == locked
    assert record["spack"]["version"] == "1.1.0"
    view = checkout / "build/spack/local/view"
    for program in ("ior", "mdtest", "btio", "hacc_io", "MADbench2.x", "hmmsearch"):
        assert (view / "bin" / program).exists(), program
    manifests = sorted((checkout / "results").glob("**/manifest.json"))
    assert manifests, "the quick campaign wrote no run"
    manifest = json.loads(manifests[-1].read_text())
    assert manifest["status"] == "passed", manifest["status"]
    assert manifest["spack_build"]["iostudy_packages"] == locked
    head = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    differ = sorted(n for n, c in locked.items() if c != head)
    assert manifest["spack_build"]["differs_from_checkout"] == differ
