"""Every S3 call of ``--cloud`` (deploy, teardown, ``--endpoint`` reuse, ``cloud-cleanup``) says which account
must own the bucket (ExpectedBucketOwner), so a bucket someone else created under the predictable default name
``sagemaker-REGION-ACCOUNT`` is refused by S3 instead of receiving the model.

moto 5.2.1 does not enforce ExpectedBucketOwner (a HeadBucket or PutObject with another account's id succeeds),
so these tests read the parameters off the real boto3 clients with botocore's ``provide-client-params`` event,
as they are about to be sent.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from pytest_triton.cloud.aws import AwsClients
from pytest_triton.cloud.cleanup import cleanup_main
from pytest_triton.cloud.deploy import Deployment
from pytest_triton.cloud.deploy import DeployOptions
from pytest_triton.cloud.reuse import download_model_data
from pytest_triton.cloud.reuse import inspect_endpoint

from .aws_state import NOTHING
from .aws_state import left_in_aws
from .conftest import OfflineAws
from .front_door import ACCOUNT
from .repos import add_repository

pytestmark = pytest.mark.xdist_group("embedded-triton")

# the one S3 call that has no ExpectedBucketOwner (the bucket is new: its creator owns it)
WITHOUT_OWNER = {"CreateBucket"}


def _record_s3(clients: AwsClients) -> list[tuple[str, dict[str, Any]]]:
    calls: list[tuple[str, dict[str, Any]]] = []

    def hook(params: dict[str, Any], model: Any, **_: Any) -> None:
        calls.append((str(model.name), dict(params)))

    clients.s3.meta.events.register("provide-client-params.s3.*", hook)
    return calls


def _without_owner(calls: list[tuple[str, dict[str, Any]]]) -> list[str]:
    owned = [name for name, params in calls if params.get("ExpectedBucketOwner") == ACCOUNT]
    return [name for name, _ in calls if name not in WITHOUT_OWNER and name not in owned]


def test_deploy_reuse_and_teardown_send_expected_bucket_owner(offline_aws: OfflineAws, tmp_path: Path) -> None:
    clients = AwsClients.connect()
    calls = _record_s3(clients)
    options = DeployOptions(role=offline_aws.env["PYTEST_TRITON_SAGEMAKER_ROLE"], poll_interval=0.2, timeout=90)
    (tmp_path / "deploy").mkdir()
    deployment = Deployment(clients, add_repository(tmp_path / "repo"), options, tmp_path / "deploy", progress=None)
    try:
        name = deployment.deploy()
        download_model_data(clients, inspect_endpoint(clients, name), tmp_path / "served")
    finally:
        deployment.teardown()
    names = {name for name, _ in calls}
    assert {"HeadBucket", "CreateBucket", "PutObject", "GetObject", "GetObjectTagging", "DeleteObject"} <= names
    assert _without_owner(calls) == []
    assert left_in_aws() == NOTHING


def test_cloud_cleanup_sends_expected_bucket_owner(
    offline_aws: OfflineAws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clients = AwsClients.connect()
    options = DeployOptions(role=offline_aws.env["PYTEST_TRITON_SAGEMAKER_ROLE"], poll_interval=0.2, timeout=90)
    (tmp_path / "deploy").mkdir()
    deployment = Deployment(clients, add_repository(tmp_path / "repo"), options, tmp_path / "deploy", progress=None)
    deployment.deploy()  # left behind, as a killed run leaves it
    cleanup_clients = AwsClients.connect()
    calls = _record_s3(cleanup_clients)
    monkeypatch.setattr(AwsClients, "connect", classmethod(lambda cls, region=None: cleanup_clients))
    lines: list[str] = []
    args = argparse.Namespace(region=None, runs=[deployment.run_id], ledgers=[], s3_uris=[], yes=True, all=False)
    assert cleanup_main(args, lines.append) == 0, lines
    assert left_in_aws() == NOTHING, lines
    assert {"ListObjectsV2", "HeadObject", "GetObjectTagging", "DeleteObject"} <= {name for name, _ in calls}
    assert _without_owner(calls) == []
