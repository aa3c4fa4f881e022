"""``cloud-cleanup`` on a ledger file that is not one (a FIFO, ``/dev/zero``): one line naming it, then the tag
search goes on; no hang, no traceback (moto in server mode stands in for AWS)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_triton.cloud.ledger_files import ledger_path

from .conftest import OfflineAws
from .repos import ROOT


@pytest.mark.parametrize("kind", ["fifo", "dev-zero link"])
def test_a_ledger_that_is_a_special_file_is_named_and_skipped(
    offline_aws: OfflineAws, tmp_path: Path, kind: str
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    journal = ledger_path("r1", state)
    if kind == "fifo":
        os.mkfifo(journal)
    else:
        journal.symlink_to("/dev/zero")
    environ = {**os.environ, **offline_aws.env, "PYTEST_TRITON_STATE_DIR": str(state), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest_triton", "cloud-cleanup"],
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"cloud-cleanup: ledger {journal} not read: " in done.stdout
    assert "not a regular file" in done.stdout
    assert "Traceback" not in done.stderr
