"""Leftovers of hard-killed runs: work folders and port lock files of dead owners are swept."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pytest_triton.servers.ports import reserve_ports
from pytest_triton.servers.ports import sweep_stale_port_locks
from pytest_triton.servers.process import OWNER_FILE
from pytest_triton.servers.process import make_owned_workdir
from pytest_triton.servers.process import sweep_stale_workdirs
from tests.owners import dead_owner_token

HOLD = """
import sys, time
from pathlib import Path
from pytest_triton.servers.ports import reserve_ports
from pytest_triton.servers.process import make_owned_workdir
folder = make_owned_workdir(Path(sys.argv[1]))
(folder / "tritonserver.log").write_text("log")
ports = reserve_ports(3, lock_dir=Path(sys.argv[1]) / "locks")
print(folder, *ports.ports, flush=True)
time.sleep(120)
"""


def killed_owner(tmp_path: Path) -> tuple[Path, list[int]]:
    """A process that made a work folder and reserved ports, then died by SIGKILL."""
    (tmp_path / "locks").mkdir()
    child = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    folder, *ports = child.stdout.readline().split()
    child.kill()
    child.wait()
    child.stdout.close()
    return Path(folder), [int(p) for p in ports]


def test_work_folder_of_a_killed_owner_is_swept(tmp_path: Path) -> None:
    folder, _ = killed_owner(tmp_path)
    mine = make_owned_workdir(tmp_path)
    legacy = tmp_path / "pytest-triton-abcd1234"  # no owner recorded: not ours to judge
    legacy.mkdir()
    linting = tmp_path / "pytest-triton-lint-x1y2"
    linting.mkdir()
    assert folder.name.startswith("pytest-triton-")
    assert (folder / "tritonserver.log").exists()
    assert sweep_stale_workdirs(tmp_path) == [folder]
    assert not folder.exists()
    assert mine.is_dir()
    assert legacy.is_dir()
    assert linting.is_dir()
    assert sweep_stale_workdirs(tmp_path) == []


def test_a_folder_is_judged_by_its_owner_token_not_its_pid(tmp_path: Path) -> None:
    folder = make_owned_workdir(tmp_path)
    token = (folder / OWNER_FILE).read_text().split()[0]
    dead = dead_owner_token()  # an owner that took its lock and exited
    assert sweep_stale_workdirs(tmp_path) == []  # our token: alive, whatever pid the name carries
    (folder / OWNER_FILE).write_text(f"{dead} pid={os.getpid()}\n")  # our pid, a dead owner's token
    assert sweep_stale_workdirs(tmp_path) == [folder]
    assert token != dead


def test_port_locks_of_a_killed_owner_are_swept(tmp_path: Path) -> None:
    _, ports = killed_owner(tmp_path)
    locks = tmp_path / "locks"
    assert sorted(int(p.stem) for p in locks.iterdir()) == sorted(ports)  # zero-byte files outlive the lock
    with reserve_ports(2, lock_dir=locks) as held:
        assert sweep_stale_port_locks(lock_dir=locks) == sorted(set(ports) - set(held.ports))
        assert sorted(int(p.stem) for p in locks.iterdir()) == sorted(held.ports)  # live locks stay
    assert sweep_stale_port_locks(lock_dir=locks) == []
    assert os.listdir(locks) == []
