"""``pytest --cloud`` in a subprocess, against moto and the hosting/front-door doubles: the run deploys, tests
and removes an endpoint; Ctrl-C (SIGINT) still removes everything; ``--endpoint`` reuse changes nothing."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import boto3
import pytest

from pytest_triton.cloud.aws import AwsClients
from pytest_triton.cloud.deploy import Deployment
from pytest_triton.cloud.deploy import DeployOptions

from .aws_state import NOTHING
from .aws_state import left_in_aws
from .conftest import OfflineAws
from .repos import ROOT
from .waiting import wait_for

pytestmark = pytest.mark.xdist_group("embedded-triton")

CONTRACT = """
import os
from pathlib import Path

import pytest

from pytest_triton.client.nli import NliClient
from pytest_triton.client.nli import NliTokenizer
from pytest_triton.client.nli import load_samples

ROOT = Path(os.environ["PYTEST_TRITON_ROOT"])


@pytest.mark.triton_cloud
def test_ensemble_labels_every_sample_on_the_endpoint(triton_server):
    assert triton_server.urls.http is None and triton_server.control is None
    samples = load_samples(ROOT / "model_repos" / "samples" / "nli_samples.jsonl")
    tokenizer = NliTokenizer(ROOT / "model_repos" / "assets" / "tiny-mdeberta" / "tokenizer.json", max_length=512)
    for binary in (True, False):
        client = NliClient(triton_server.transport("sagemaker", binary=binary), tokenizer)
        results = client.classify_text([s.pair for s in samples])
        assert [r.label for r in results] == [s.label for s in samples]
"""

SLOW = """
import os
import time

import pytest


@pytest.mark.triton_cloud
def test_holds_the_endpoint(triton_server):
    open(os.environ["MARKER"], "w").write(triton_server.endpoint_name)
    time.sleep(120)
"""

RECORD_OPERATIONS = """
import atexit
import contextlib
import json
import os

from pytest_triton.cloud import aws
from pytest_triton.cloud.reuse import record_operations

SEEN = []
_client = aws.AwsClients.client


def client(self, service):
    fresh = service not in self._made
    made = _client(self, service)
    if fresh:
        record_operations(made, SEEN)
    return made


aws.AwsClients.client = client
atexit.register(lambda: open(os.environ["OPERATIONS"], "w").write(json.dumps(SEEN)))
"""


def _ensemble_project(tmp_path: Path, test_source: str) -> Path:
    project = tmp_path / "project"
    shutil.copytree(ROOT / "model_repos" / "scenario07" / "ensemble", project / "repo")
    (project / "repo" / "sagemaker.env").write_text("SAGEMAKER_TRITON_DEFAULT_MODEL_NAME=ensemble_mdeberta\n")
    (project / "test_on_endpoint.py").write_text(test_source)
    return project


# pytest with Python's own SIGINT handler: a runner that starts the suite in the background (`cmd &` in a
# script) ignores SIGINT, children inherit that, and the Ctrl-C these tests send would never reach pytest
_PYTEST_WITH_CTRL_C = (
    "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "import pytest; sys.exit(pytest.main(sys.argv[1:]))"
)


def _pytest(project: Path, aws: OfflineAws, *args: str, **env: str) -> subprocess.Popen[str]:
    environ = {**os.environ, **aws.env, **env, "PYTEST_TRITON_ROOT": str(ROOT)}
    environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(project)])
    command = [sys.executable, "-c", _PYTEST_WITH_CTRL_C, "-p", "no:cacheprovider", "-p", "no:xdist", "-rA", *args]
    return subprocess.Popen(
        command, cwd=project, env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def test_cloud_run_deploys_tests_and_removes_the_endpoint(offline_aws: OfflineAws, tmp_path: Path) -> None:
    project = _ensemble_project(tmp_path, CONTRACT)
    proc = _pytest(project, offline_aws, "--cloud", "--triton-repository", "repo", "test_on_endpoint.py")
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, out
    assert "1 passed" in out
    # progress reaches the terminal although pytest captures the fixture's output
    assert "pytest-triton: creating endpoint pytest-triton-" in out
    assert ": Creating (0m" in out
    assert ": InService (0m" in out
    assert "pytest-triton: deleted endpoint pytest-triton-" in out
    assert left_in_aws() == NOTHING
    assert offline_aws.front_door.requests  # the test's requests went through InvokeEndpoint


def test_cloud_run_with_the_endpoint_container_in_docker(
    offline_aws: OfflineAws, standin_image: str, docker_client: Any, tmp_path: Path
) -> None:
    """The same run, the endpoint's container started from an image as SageMaker starts it (the stand-in)."""
    offline_aws.hosting.image = standin_image
    project = _ensemble_project(tmp_path, CONTRACT)
    proc = _pytest(project, offline_aws, "--cloud", "--triton-repository", "repo", "test_on_endpoint.py")
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, out
    assert "1 passed" in out
    assert len(offline_aws.hosting.containers) == 1, out
    assert offline_aws.front_door.requests
    assert left_in_aws() == NOTHING
    container = offline_aws.hosting.containers[0]
    assert not docker_client.containers.list(all=True, filters={"id": container})  # removed with the endpoint


@pytest.mark.parametrize("when", ["while the endpoint is Creating", "while a test runs"])
def test_ctrl_c_still_removes_everything(offline_aws: OfflineAws, tmp_path: Path, when: str) -> None:
    project = _ensemble_project(tmp_path, SLOW)
    marker = tmp_path / "in-service"
    if when.endswith("Creating"):
        offline_aws.hosting.delay = 120.0  # the container takes its time to come up
    proc = _pytest(
        project, offline_aws, "--cloud", "--triton-repository", "repo", "test_on_endpoint.py", MARKER=str(marker)
    )
    sagemaker = boto3.client("sagemaker")
    if when.endswith("Creating"):
        wait_for(
            lambda: any(e["EndpointStatus"] == "Creating" for e in sagemaker.list_endpoints()["Endpoints"]), 120, proc
        )
    else:
        wait_for(marker.exists, 180, proc)
    assert left_in_aws()["endpoints"]
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=300)  # teardown on a busy 2-core runner takes its time
    assert "KeyboardInterrupt" in out, out
    assert left_in_aws() == NOTHING, out


def test_second_ctrl_c_during_teardown_reports_everything_left(offline_aws: OfflineAws, tmp_path: Path) -> None:
    project = _ensemble_project(tmp_path, SLOW)
    marker = tmp_path / "in-service"
    offline_aws.hosting.deleting = 30.0  # as on AWS, the endpoint is Deleting for a while
    proc = _pytest(
        project, offline_aws, "--cloud", "--triton-repository", "repo", "test_on_endpoint.py", MARKER=str(marker)
    )
    sagemaker = boto3.client("sagemaker")
    wait_for(marker.exists, 180, proc)
    proc.send_signal(signal.SIGINT)  # the first: stops the test, teardown starts
    wait_for(lambda: any(e["EndpointStatus"] == "Deleting" for e in sagemaker.list_endpoints()["Endpoints"]), 180, proc)
    proc.send_signal(signal.SIGINT)  # the second: while teardown waits for the endpoint to go
    out, _ = proc.communicate(timeout=300)  # teardown on a busy 2-core runner takes its time
    assert "teardown of run" in out, out
    assert "interrupted; still there, delete with:" in out, out
    left = left_in_aws()
    assert left["configs"], out  # the interrupt stopped the deletions
    assert left["models"], out
    assert left["objects"], out
    for name in left["configs"] + left["models"]:
        assert f" {name} --region us-east-1" in out, (name, out)
    for item in left["objects"]:
        assert f"aws s3 rm s3://{item} --region us-east-1" in out, (item, out)
    for name in left["endpoints"]:
        assert f"aws sagemaker delete-endpoint --endpoint-name {name} --region us-east-1" in out
    offline_aws.hosting.deleting = 0.0
    for command in (line.strip() for line in out.splitlines() if line.strip().startswith("aws ")):
        _run_aws_command(command)
    wait_for(lambda: left_in_aws() == NOTHING, 180, proc)


def _run_aws_command(command: str) -> None:
    """Do what a printed aws CLI command would (the CLI itself is not installed here)."""
    words = command.split()
    if words[1] == "s3":
        bucket, key = words[3][5:].split("/", 1)
        boto3.client("s3").delete_object(Bucket=bucket, Key=key)
        return
    operation, option, name = words[2], words[3], words[4]
    parameter = {"--endpoint-name": "EndpointName", "--endpoint-config-name": "EndpointConfigName"}.get(
        option, "ModelName"
    )
    sagemaker = boto3.client("sagemaker")
    with contextlib.suppress(sagemaker.exceptions.ClientError):  # gone already (the endpoint, on its own)
        getattr(sagemaker, operation.replace("-", "_"))(**{parameter: name})


def test_endpoint_reuse_without_a_repository_changes_nothing(offline_aws: OfflineAws, tmp_path: Path) -> None:
    project = _ensemble_project(tmp_path, CONTRACT)
    (project / "conftest.py").write_text(RECORD_OPERATIONS)
    options = DeployOptions(role=offline_aws.env["PYTEST_TRITON_SAGEMAKER_ROLE"], poll_interval=0.2, timeout=120)
    (tmp_path / "deploy").mkdir()
    deployment = Deployment(AwsClients.connect(), project / "repo", options, tmp_path / "deploy", progress=None)
    name = deployment.deploy()
    try:
        before = left_in_aws()
        operations = tmp_path / "operations.json"
        shutil.rmtree(project / "repo")  # reuse needs no repository: the served model comes from the endpoint's
        proc = _pytest(
            project, offline_aws, "--cloud", "--endpoint", name, "test_on_endpoint.py", OPERATIONS=str(operations)
        )
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, out
        assert left_in_aws() == before
        seen = json.loads(operations.read_text())
        assert "DescribeEndpoint" in seen
        assert "InvokeEndpoint" in seen
        assert [op for op in seen if not op.startswith(("Describe", "Get", "List", "Head", "Invoke", "Filter"))] == []
    finally:
        deployment.teardown()
    assert left_in_aws() == NOTHING


def test_cloud_only_options_need_cloud(offline_aws: OfflineAws, tmp_path: Path) -> None:
    project = _ensemble_project(tmp_path, CONTRACT)
    proc = _pytest(project, offline_aws, "--endpoint", "x", "test_on_endpoint.py")
    out, _ = proc.communicate(timeout=300)  # teardown on a busy 2-core runner takes its time
    assert proc.returncode == 4, out
    assert "--endpoint only applies with --cloud; add --cloud" in out


def test_cloud_tests_skip_with_a_reason_without_cloud(offline_aws: OfflineAws, tmp_path: Path) -> None:
    project = _ensemble_project(tmp_path, CONTRACT)
    proc = _pytest(project, offline_aws, "test_on_endpoint.py")
    out, _ = proc.communicate(timeout=300)  # teardown on a busy 2-core runner takes its time
    assert proc.returncode == 0, out
    assert "needs a SageMaker endpoint: run with --cloud" in out


def test_cloud_metrics_wait_must_be_seconds(offline_aws: OfflineAws, tmp_path: Path) -> None:
    project = _ensemble_project(tmp_path, CONTRACT)
    proc = _pytest(project, offline_aws, "--cloud", "--triton-cloud-metrics-wait", "-5", "test_on_endpoint.py")
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 4, out
    assert "--triton-cloud-metrics-wait='-5': expected a number of seconds >= 0" in out
    assert left_in_aws() == NOTHING  # refused before anything was created
