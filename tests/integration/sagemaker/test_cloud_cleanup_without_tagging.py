"""``cloud-cleanup`` for a role that may not call ``tag:GetResources``: moto's server enforcing IAM (a user allowed
SageMaker, S3 and STS only), the resources of a killed run found through SageMaker's own list calls and their
tags, listed, then deleted with ``--yes --run``; a ``pytest-triton-*`` resource without the run tag is left.

S3 is a second moto server, without IAM enforcement (``AWS_ENDPOINT_URL_S3``): moto 5's signature check fails
every ListObjectsV2 with a ``Prefix`` containing "/" (SignatureDoesNotMatch), which cloud-cleanup sends."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest

from pytest_triton.cloud.resources import RUN_TAG
from pytest_triton.cloud.resources import resource_name

from .aws_state import left_in_aws
from .repos import ROOT

REGION = "us-east-1"
ACCOUNT = "123456789012"  # moto's
ROLE = f"arn:aws:iam::{ACCOUNT}:role/pytest-triton-sagemaker"
RUN = "20261201-235959-abc123"
# the requests moto serves before it enforces IAM: the four that make the user below
SETUP_REQUESTS = 4
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass
class StrictAws:
    """The strict moto (``url``), the S3 one (``s3_url``) and what a subprocess needs to use them as the user."""

    url: str
    s3_url: str
    env: dict[str, str]

    def client(self, service: str) -> Any:
        credentials = {k.lower(): self.env[k] for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
        url = self.s3_url if service == "s3" else self.url
        return boto3.client(service, endpoint_url=url, region_name=REGION, **credentials)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_answering(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"moto_server ended with {proc.returncode}")
        try:
            _NO_PROXY.open(f"{url}/moto-api/", timeout=2).close()
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"moto_server did not answer at {url} within 60 s")


def _moto(**env: str) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    command = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    devnull = subprocess.DEVNULL
    proc = subprocess.Popen(command, env={**os.environ, **env}, stdout=devnull, stderr=devnull)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_answering(url, proc)
    except BaseException:
        proc.kill()
        raise
    return proc, url


@pytest.fixture
def strict_aws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[StrictAws]:
    """A moto server of its own (IAM enforcement is a setting of the whole server) and a user without tagging."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)  # boto3 here and in the command reach moto directly
    servers = []
    try:
        strict, url = _moto(INITIAL_NO_AUTH_ACTION_COUNT=str(SETUP_REQUESTS))
        servers.append(strict)
        plain, s3_url = _moto()
        servers.append(plain)
        root = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
        iam = boto3.client("iam", endpoint_url=url, region_name=REGION, **root)
        iam.create_user(UserName="ci")
        allowed = {"Effect": "Allow", "Action": ["sagemaker:*", "s3:*", "sts:*"], "Resource": "*"}
        document = json.dumps({"Version": "2012-10-17", "Statement": [allowed]})
        policy = iam.create_policy(PolicyName="no-tagging-api", PolicyDocument=document)["Policy"]["Arn"]
        iam.attach_user_policy(UserName="ci", PolicyArn=policy)
        key = iam.create_access_key(UserName="ci")["AccessKey"]
        env = {
            "AWS_ACCESS_KEY_ID": key["AccessKeyId"],
            "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"],
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ENDPOINT_URL": url,
            "AWS_ENDPOINT_URL_S3": s3_url,
            "AWS_CONFIG_FILE": str(tmp_path / "no-aws-config"),
            "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-aws-credentials"),
            "NO_PROXY": "127.0.0.1",
            "no_proxy": "127.0.0.1",
            "PYTEST_TRITON_STATE_DIR": str(tmp_path / "state"),
        }
        yield StrictAws(url, s3_url, env)
    finally:
        for proc in servers:
            proc.terminate()
            proc.wait(timeout=30)


def _left_by_killed_run(aws: StrictAws) -> dict[str, list[str]]:
    """What a run killed in the middle of its deploy leaves (its ledger file lost): model, config, endpoint and the
    uploaded archive, all carrying the run's tag; and one model of the same prefix without it."""
    sagemaker, s3 = aws.client("sagemaker"), aws.client("s3")
    tags = [{"Key": RUN_TAG, "Value": RUN}]
    bucket, key = f"sagemaker-{REGION}-{ACCOUNT}", f"pytest-triton/{RUN}/model.tar.gz"
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key=key, Body=b"archive", Tagging=f"{RUN_TAG}={RUN}")
    model, config, endpoint = (resource_name(RUN, kind) for kind in ("model", "config", "ep"))
    container = {
        "Image": "123.dkr.ecr.us-east-1.amazonaws.com/tritonserver:latest",
        "ModelDataUrl": f"s3://{bucket}/{key}",
    }
    sagemaker.create_model(ModelName=model, PrimaryContainer=container, ExecutionRoleArn=ROLE, Tags=tags)
    untagged = "pytest-triton-someone-elses-model"
    sagemaker.create_model(ModelName=untagged, PrimaryContainer=container, ExecutionRoleArn=ROLE)
    variant = {
        "VariantName": "AllTraffic",
        "ModelName": model,
        "InstanceType": "ml.g4dn.xlarge",
        "InitialInstanceCount": 1,
    }
    sagemaker.create_endpoint_config(EndpointConfigName=config, ProductionVariants=[variant], Tags=tags)
    sagemaker.create_endpoint(EndpointName=endpoint, EndpointConfigName=config, Tags=tags)
    return {"endpoints": [endpoint], "configs": [config], "models": [model, untagged], "objects": [f"{bucket}/{key}"]}


def _in_aws(aws: StrictAws) -> dict[str, list[str]]:
    found = left_in_aws(aws.client("sagemaker"), aws.client("s3"))
    return {**found, "models": sorted(found["models"])}


def _cleanup(aws: StrictAws, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, **aws.env, "PYTHONPATH": str(ROOT)}
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN"):
        environ.pop(name, None)
    command = [sys.executable, "-m", "pytest_triton", "cloud-cleanup", *args]
    return subprocess.run(command, env=environ, capture_output=True, text=True, timeout=300)


def test_without_tag_get_resources_the_run_is_found_by_listing_and_deleted(strict_aws: StrictAws) -> None:
    left = _left_by_killed_run(strict_aws)
    with pytest.raises(Exception, match="not authorized to perform: tagging:GetResources"):
        strict_aws.client("resourcegroupstaggingapi").get_resources()  # the role really lacks it

    listed = _cleanup(strict_aws)
    output = listed.stdout + listed.stderr
    assert listed.returncode == 1, output
    assert "tag:GetResources is not allowed" in output
    assert f"run {RUN} (found by tag):" in output
    for name in (*left["endpoints"], *left["configs"], left["models"][0], left["objects"][0]):
        assert name in output
    assert "someone-elses" not in output  # no run tag: not ours to list
    assert _in_aws(strict_aws) == {**left, "models": sorted(left["models"])}

    deleted = _cleanup(strict_aws, "--yes", "--run", RUN)
    assert deleted.returncode == 0, deleted.stdout + deleted.stderr
    after = _in_aws(strict_aws)
    assert after == {"endpoints": [], "configs": [], "models": ["pytest-triton-someone-elses-model"], "objects": []}
