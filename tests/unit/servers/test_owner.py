"""Ownership that survives namespaces: an owner in another PID namespace, behind ``hidepid`` or seen from a
machine without ``/proc`` is never judged dead while it lives; once it is dead, what it left is swept.

Real parts: ``unshare --pid --fork --mount-proc`` for a second PID namespace, ``mount -t proc -o hidepid=2``
in a mount namespace of its own, a tmpfs over ``/proc``, and a second uid (65534) through ``setpriv``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_triton.servers import process
from pytest_triton.servers.owner import Liveness
from pytest_triton.servers.owner import liveness
from pytest_triton.servers.owner import sweep_dead_owner_locks
from pytest_triton.servers.process import make_owned_workdir
from pytest_triton.servers.process import sweep_stale_shm
from pytest_triton.servers.process import sweep_stale_workdirs
from tests.owners import dead_owner_token
from tests.owners import readable_package

NOBODY = 65534
SYSTEM_PYTHON = "/usr/bin/python3"  # a python uid 65534 can run (this one's may sit in a folder it cannot read)

HOLD = """
import sys, time
from pathlib import Path
from pytest_triton.servers import process
folder = process.make_owned_workdir(Path(sys.argv[1]))
region = process.SHM_DIR / (process.shm_prefix("t") + "region")
region.write_bytes(b"")
print(folder, region, flush=True)
time.sleep(300)
"""

SWEEP = """
import sys
from pathlib import Path
from pytest_triton.servers.process import sweep_stale_workdirs
print(len(sweep_stale_workdirs(Path(sys.argv[1]))), flush=True)
"""


def _need(tool: str, *probe: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed: this test needs it for a real namespace")
    done = subprocess.run([tool, *probe, "true"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"`{tool} {' '.join(probe)}` is not allowed here: {done.stderr.strip()}")


def _env() -> dict[str, str]:
    # the package from a folder uid 65534 can read: this checkout may be in a private one
    return {**os.environ, "PYTHONPATH": str(readable_package()), "HOME": tempfile.gettempdir()}


@contextlib.contextmanager
def holder(cmd: list[str], folder: Path) -> Iterator[tuple[subprocess.Popen[str], Path, Path]]:
    """A live owner started with ``cmd`` + the HOLD script: (process, its work folder, its shm region)."""
    proc = subprocess.Popen([*cmd, "-c", HOLD, str(folder)], stdout=subprocess.PIPE, text=True, env=_env())
    assert proc.stdout is not None
    line = proc.stdout.readline().split()
    region = Path(line[1]) if len(line) == 2 else None
    try:
        assert region is not None, f"the owner did not start: {line!r} (exit {proc.poll()})"
        yield proc, Path(line[0]), region
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        if region is not None:
            region.unlink(missing_ok=True)


SWEEP_ALL = """
import sys
from pathlib import Path
from pytest_triton.servers.process import sweep_stale_shm, sweep_stale_workdirs
sweep_stale_workdirs(Path(sys.argv[1]))
sweep_stale_shm()
"""


def _swept_after_death(proc: subprocess.Popen[str], workdir: Path, region: Path, *, sweeper: list[str]) -> None:
    """Once the owner is dead, a sweep by ``sweeper`` (a python of the owner's user) removes what it left: a
    sweep that never removes anything would pass the other checks."""
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 30
    while workdir.exists() or region.exists():
        assert time.monotonic() < deadline, f"left after its owner died: {workdir} {region}"
        subprocess.run([*sweeper, "-c", SWEEP_ALL, str(workdir.parent)], env=_env(), check=True)
        time.sleep(0.2)


def test_an_owner_in_another_pid_namespace_is_alive_until_it_dies(tmp_path: Path) -> None:
    # the owner is pid 1 of its namespace: read from here, "pid 1" is this namespace's init with another
    # start time, and a /proc-based judgement called it dead while it ran
    _need("unshare", "--pid", "--fork", "--mount-proc", "--kill-child")
    cmd = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child", sys.executable]
    with holder(cmd, tmp_path) as (proc, workdir, region):
        assert sweep_stale_workdirs(tmp_path) == []
        assert region.name not in sweep_stale_shm()
        assert workdir.is_dir()
        assert region.exists()
        _swept_after_death(proc, workdir, region, sweeper=[sys.executable])


def test_an_owner_hidden_by_hidepid_is_alive(tmp_path: Path) -> None:
    # the owner runs as uid 65534; the sweeper runs as uid 0 without CAP_SYS_PTRACE and outside gid 0 (hidepid's
    # default gid= exemption) in a mount namespace whose /proc has hidepid=2: the owner's /proc entry is hidden
    if os.getuid() != 0:
        pytest.skip("needs root, for a second uid (setpriv) and a proc mount with hidepid")
    if not Path(SYSTEM_PYTHON).exists():
        pytest.skip(f"{SYSTEM_PYTHON} is missing: uid {NOBODY} needs a python it can run")
    _need("unshare", "--mount")
    shared = Path(tempfile.mkdtemp(dir="/tmp", prefix="owner-hidepid-"))
    shared.chmod(0o1777)  # a shared /tmp-like folder where both users make their work folders
    as_nobody = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", SYSTEM_PYTHON]
    try:
        with holder(as_nobody, shared) as (proc, workdir, region):
            unseen = f'test ! -e /proc/{proc.pid} || exit 3; exec "$0" -c "$1" "$2"'  # 3: the owner is visible
            script = (
                "mount -t proc -o hidepid=2 proc /proc && "
                "exec setpriv --regid=65533 --clear-groups --bounding-set=-sys_ptrace --inh-caps=-sys_ptrace "
                f"sh -c '{unseen}' \"$@\""
            )
            done = subprocess.run(
                ["unshare", "--mount", "sh", "-c", script, "sh", sys.executable, SWEEP, str(shared)],
                capture_output=True,
                text=True,
                env=_env(),
                check=False,
            )
            assert done.returncode == 0, done.stderr
            assert done.stdout.strip() == "0", f"a live owner's work folder was swept: {done.stdout}"
            assert workdir.is_dir()
            _swept_after_death(proc, workdir, region, sweeper=as_nobody)  # each user sweeps what its own left
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def test_without_proc_no_owner_looks_dead(tmp_path: Path) -> None:
    # Docker Desktop on macOS has no /proc: the sweeper runs with an empty tmpfs over it
    _need("unshare", "--mount")
    with holder([sys.executable], tmp_path) as (proc, workdir, region):
        mine = make_owned_workdir(tmp_path)  # a sibling worker's folder: this process is alive too
        no_proc = 'mount -t tmpfs none /proc && exec "$0" -c "$1" "$2"'
        done = subprocess.run(
            ["unshare", "--mount", "sh", "-c", no_proc, sys.executable, SWEEP, str(tmp_path)],
            capture_output=True,
            text=True,
            env=_env(),
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "0", f"live owners' work folders were swept: {done.stdout}"
        assert workdir.is_dir()
        assert mine.is_dir()
        _swept_after_death(proc, workdir, region, sweeper=[sys.executable])


def test_unknown_owners_are_never_swept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(process, "SHM_DIR", tmp_path)
    stranger = "0123456789abcdef" * 2  # a token whose lock file is not here (another container's /tmp)
    (tmp_path / f"pytest_triton_{stranger}_t_region").write_bytes(b"")
    (tmp_path / "pytest_triton_12345_abcd_region").write_bytes(b"")  # an older format: a pid, no token
    foreign = tmp_path / "pytest-triton-1-abc"
    foreign.mkdir()
    (foreign / process.OWNER_FILE).write_text(f"{stranger} pid=1\n")
    assert sweep_stale_shm() == []
    assert sweep_stale_workdirs(tmp_path) == []
    assert foreign.is_dir()


def test_old_locks_of_dead_owners_go_and_live_ones_stay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_TRITON_OWNERS", str(tmp_path))
    dead_token = dead_owner_token()
    (tmp_path / ".0123.new").write_bytes(b"")  # an owner killed between creating and naming its lock
    (tmp_path / "work").mkdir()
    with holder([sys.executable], tmp_path / "work") as (proc, _workdir, _region):
        live = [p.stem for p in tmp_path.glob("*.lock") if p.stem != dead_token]
        assert len(live) == 1
        assert liveness(dead_token) is Liveness.DEAD
        assert liveness(live[0]) is Liveness.ALIVE
        assert sweep_dead_owner_locks(max_age_s=3600) == []  # a recent death: kept, later sweeps still judge it
        assert sorted(sweep_dead_owner_locks(max_age_s=0)) == sorted([dead_token, "0123"])
        assert liveness(dead_token) is Liveness.UNKNOWN  # its file is gone: nothing of it is swept any more
        assert liveness(live[0]) is Liveness.ALIVE
        assert proc.poll() is None
