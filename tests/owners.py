"""An owner that is provably dead, for the tests of the sweeps: it took its lock and exited."""

from __future__ import annotations

import os
import subprocess
import sys
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
