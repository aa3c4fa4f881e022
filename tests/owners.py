"""Owners for the tests of the sweeps: one that is provably dead (it took its lock and exited), and the package
in a folder another user (uid 65534) can read."""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_PRINT_TOKEN = "from pytest_triton.servers.owner import owner_token; print(owner_token())"


def dead_owner_token() -> str:
    """The token of a Python process that took its owner lock and exited: its lock file stays, free. It runs with
    this environment (so the same lock folder) and this checkout first on its path."""
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path}
    done = subprocess.run([sys.executable, "-c", _PRINT_TOKEN], capture_output=True, text=True, env=env, check=True)
    return done.stdout.strip()


@functools.cache
def readable_package() -> Path:
    """A folder holding a copy of this checkout's ``pytest_triton`` that every user can read, for code run as
    another uid: a checkout in a private (0700) folder is out of its reach. Under /tmp (sticky, world-searchable;
    ``TMPDIR`` may be private too), removed when this process exits."""
    folder = Path(tempfile.mkdtemp(prefix="pytest-triton-readable-", dir="/tmp"))
    atexit.register(shutil.rmtree, folder, True)
    shutil.copytree(ROOT / "pytest_triton", folder / "pytest_triton", ignore=shutil.ignore_patterns("__pycache__"))
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return folder
