"""A ``--cloud`` run killed in the middle of a deploy (a real pytest subprocess, while its endpoint is Creating):
SIGTERM tears down as Ctrl-C does; after SIGKILL, ``python -m pytest_triton cloud-cleanup`` finds what was left
(by the ledger file beside the report and by the run's tag), lists it, and deletes it only with ``--yes --run``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import boto3
import pytest

from pytest_triton.cloud.ledger_files import PREFIX
from pytest_triton.cloud.resources import RUN_TAG

from .aws_state import NOTHING
from .aws_state import left_in_aws
from .conftest import OfflineAws
from .repos import ROOT
from .repos import add_repository
from .waiting import wait_for

pytestmark = pytest.mark.xdist_group("embedded-triton")

HOLDS = """
import pytest


@pytest.mark.cloud
def test_holds_the_endpoint(triton_server):
    pass
"""


def _start_cloud_run(tmp_path: Path, aws: OfflineAws) -> tuple[subprocess.Popen[str], Path]:
    project = tmp_path / "project"
    add_repository(project / "repo")
    (project / "test_on_endpoint.py").write_text(HOLDS)
    report = tmp_path / "reports" / "latency"
    report.parent.mkdir()
    environ = {**os.environ, **aws.env, "PYTEST_TRITON_STATE_DIR": str(tmp_path / "state")}
    environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(project)])
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "--cloud"]
    command += ["--triton-repository", "repo", "--triton-report", str(report), "test_on_endpoint.py"]
    output = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "text": True}
    proc = subprocess.Popen(command, cwd=project, env=environ, **output)  # type: ignore[call-overload]
    return proc, report.parent


def _creating(proc: subprocess.Popen[str]) -> None:
    sagemaker = boto3.client("sagemaker")
    endpoints = sagemaker.list_endpoints
    wait_for(lambda: any(e["EndpointStatus"] == "Creating" for e in endpoints()["Endpoints"]), 120, proc)


def _cleanup(aws: OfflineAws, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, **aws.env, "PYTEST_TRITON_STATE_DIR": str(tmp_path / "state"), "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "pytest_triton", "cloud-cleanup", *args]
    return subprocess.run(command, env=environ, capture_output=True, text=True, timeout=300)


def _everything_tagged(run: str) -> list[str]:
    tagging = boto3.client("resourcegroupstaggingapi")
    found = tagging.get_resources(TagFilters=[{"Key": RUN_TAG, "Values": [run]}])["ResourceTagMappingList"]
    return [m["ResourceARN"] for m in found]


def test_sigterm_during_the_deploy_removes_everything(offline_aws: OfflineAws, tmp_path: Path) -> None:
    offline_aws.hosting.delay = 120.0  # the container takes its time: the run is waiting for InService
    proc, _ = _start_cloud_run(tmp_path, offline_aws)
    _creating(proc)
    assert left_in_aws()["endpoints"]
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=300)
    assert "SIGTERM: removing what run" in out, out
    assert "deleted endpoint pytest-triton-" in out, out
    assert left_in_aws() == NOTHING, out


@pytest.mark.parametrize("ledger", ["with the ledger file", "by tag alone (ledger file lost)"])
def test_cloud_cleanup_after_sigkill_during_the_deploy(offline_aws: OfflineAws, tmp_path: Path, ledger: str) -> None:
    offline_aws.hosting.delay = 120.0
    proc, reports = _start_cloud_run(tmp_path, offline_aws)
    _creating(proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    left = left_in_aws()
    assert all(left[kind] for kind in ("endpoints", "configs", "models", "objects")), left
    # the ledger file beside the report names all four, each with its delete command, before its create call
    [journal] = sorted(reports.glob(f"{PREFIX}*.jsonl"))
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    assert [line["kind"] for line in lines] == ["s3-object", "model", "endpoint-config", "endpoint"]
    assert all(line["state"] == "creating" and line["delete"].startswith("aws ") for line in lines)
    run = lines[0]["run"]
    assert len(_everything_tagged(run)) == 3  # endpoint, endpoint config and model carry the run's tag
    places = ["--ledger", str(reports)]
    if ledger.startswith("by tag"):
        journal.unlink()
        places = []
    # listed, not deleted
    listed = _cleanup(offline_aws, tmp_path, *places)
    assert listed.returncode == 1, listed.stdout + listed.stderr
    for name in left["endpoints"] + left["configs"] + left["models"]:
        assert name in listed.stdout, listed.stdout
    assert f"aws s3 rm s3://{left['objects'][0]} --region us-east-1" in listed.stdout, listed.stdout
    assert "nothing deleted" in listed.stdout
    assert left_in_aws() == left
    # --yes alone deletes nothing: another job's run may be live
    refused = _cleanup(offline_aws, tmp_path, *places, "--yes")
    assert refused.returncode == 2, refused.stdout
    assert "--run RUN_ID" in refused.stdout
    assert left_in_aws() == left
    deleted = _cleanup(offline_aws, tmp_path, *places, "--yes", "--run", run)
    assert deleted.returncode == 0, deleted.stdout + deleted.stderr
    assert left_in_aws() == NOTHING, deleted.stdout
    assert _everything_tagged(run) == []
    again = _cleanup(offline_aws, tmp_path, *places)
    assert again.returncode == 0, again.stdout
    assert "nothing tagged" in again.stdout


def test_cloud_cleanup_leaves_other_runs_alone(offline_aws: OfflineAws, tmp_path: Path) -> None:
    """Two runs killed: deleting one by its id leaves the other's endpoint, config, model and object."""
    offline_aws.hosting.delay = 120.0
    runs: list[str] = []
    endpoints = boto3.client("sagemaker").list_endpoints
    for number in range(2):
        proc, reports = _start_cloud_run(tmp_path / str(number), offline_aws)
        count = number + 1

        def started(count: int = count) -> bool:
            return len(endpoints()["Endpoints"]) == count

        wait_for(started, 120, proc)
        proc.kill()
        proc.communicate(timeout=60)
        [journal] = reports.glob(f"{PREFIX}*.jsonl")
        runs.append(json.loads(journal.read_text().splitlines()[0])["run"])
    before = left_in_aws()
    deleted = _cleanup(offline_aws, tmp_path, "--yes", "--run", runs[0])
    assert deleted.returncode == 0, deleted.stdout + deleted.stderr
    after = left_in_aws()
    assert all(runs[1] in name for names in after.values() for name in names), after
    assert all(len(after[kind]) == 1 and len(before[kind]) == 2 for kind in after), (before, after)
