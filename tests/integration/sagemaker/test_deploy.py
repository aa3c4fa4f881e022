"""The --cloud flow against moto and the hosting double: deploy, invoke, fail, tear down, reuse read-only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import boto3
import numpy as np
import pytest

from pytest_triton.client.transports import InputSpec
from pytest_triton.cloud.aws import AwsClients
from pytest_triton.cloud.deploy import Deployment
from pytest_triton.cloud.deploy import DeployOptions
from pytest_triton.cloud.invoke import InvokeEndpointTransport
from pytest_triton.cloud.resources import RUN_TAG
from pytest_triton.cloud.resources import Ledger
from pytest_triton.cloud.reuse import mutating
from pytest_triton.cloud.reuse import record_operations
from pytest_triton.errors import ConfigError
from pytest_triton.errors import DeploymentError
from pytest_triton.errors import EndpointModelError
from pytest_triton.errors import InferenceError
from pytest_triton.errors import LintFailed
from pytest_triton.servers.protocol import ServeOptions
from pytest_triton.servers.registry import launcher_class
from pytest_triton.servers.sagemaker.endpoint import SageMakerLauncher

from .aws_state import NOTHING
from .aws_state import left_in_aws
from .conftest import OfflineAws
from .front_door import PING_FAILED
from .repos import FAILING_INIT
from .repos import REFUSES_NEGATIVE
from .repos import SLOW_ADD
from .repos import add_repository

pytestmark = pytest.mark.xdist_group("embedded-triton")

A = np.arange(8, dtype=np.float32).reshape(2, 4)
B = np.ones((2, 4), dtype=np.float32)
FAST = {"poll_interval": 0.2, "deploy_timeout": 90.0}


def _launcher(repo: Path | None, lines: list[str], **settings: Any) -> SageMakerLauncher:
    options = ServeOptions(settings={**FAST, **settings}, progress=lines.append)
    return SageMakerLauncher.from_options(repo, options)


def test_registry_names_both_sagemaker_launchers() -> None:
    assert launcher_class("sagemaker") is SageMakerLauncher
    assert launcher_class("sagemaker-local").name == "sagemaker-local"


def test_deploy_with_the_defaults_invoke_and_remove_everything(offline_aws: OfflineAws, tmp_path: Path) -> None:
    lines: list[str] = []
    launcher = _launcher(add_repository(tmp_path / "repo"), lines)
    with launcher:
        name = launcher.endpoint_name
        sagemaker = boto3.client("sagemaker")
        endpoint = sagemaker.describe_endpoint(EndpointName=name)
        variant = sagemaker.describe_endpoint_config(EndpointConfigName=endpoint["EndpointConfigName"])[
            "ProductionVariants"
        ][0]
        assert variant["InstanceType"] == "ml.g5.xlarge"  # reached CreateEndpointConfig (moto alone rejects it)
        assert variant["ContainerStartupHealthCheckTimeoutInSeconds"] == 900
        assert variant["InferenceAmiVersion"] == "al2023-ami-sagemaker-inference-gpu-4-1"
        model = sagemaker.describe_model(ModelName=variant["ModelName"])["PrimaryContainer"]
        assert model["Image"] == "763104351884.dkr.ecr.us-east-1.amazonaws.com/sagemaker-tritonserver:26.05-py3"
        assert model["Environment"]["SAGEMAKER_TRITON_DEFAULT_MODEL_NAME"] == "python_add"
        assert launcher.deployment is not None
        run_id = launcher.deployment.run_id
        for arn in (endpoint["EndpointArn"],):
            assert {"Key": RUN_TAG, "Value": run_id} in sagemaker.list_tags(ResourceArn=arn)["Tags"]
        bucket, key = model["ModelDataUrl"][5:].split("/", 1)
        assert bucket == "sagemaker-us-east-1-123456789012"  # the default bucket: region and account
        tags = boto3.client("s3").get_object_tagging(Bucket=bucket, Key=key)["TagSet"]
        assert tags == [{"Key": RUN_TAG, "Value": run_id}]
        assert launcher.urls.http is None
        assert launcher.urls.sagemaker is not None
        assert launcher.urls.sagemaker.endswith(f"/endpoints/{name}")
        assert launcher.control is None
        out = launcher.transport().infer("python_add", {"A": A, "B": B}, ["SUM"])
        np.testing.assert_array_equal(out["SUM"], A + B)
        json_out = launcher.transport(binary=False).infer("python_add", {"A": A, "B": B}, ["SUM"])
        np.testing.assert_array_equal(json_out["SUM"], A + B)
        assert "successfully loaded" in launcher.log_tail(500)  # the container's log, read from CloudWatch
    assert any(": Creating (" in line for line in lines), lines
    assert any(": InService (" in line for line in lines), lines
    assert left_in_aws() == {**NOTHING, "objects": []}


def test_failed_endpoint_reports_reason_and_log_tail_and_leaves_nothing(
    offline_aws: OfflineAws, tmp_path: Path
) -> None:
    launcher = _launcher(add_repository(tmp_path / "repo", model_py=FAILING_INIT), [])
    with pytest.raises(DeploymentError, match="is Failed after") as info:
        launcher.start()
    error = info.value
    assert error.failure_reason == PING_FAILED
    assert "weights not found" in error.log_tail  # the container's own words, from CloudWatch
    assert "FailureReason: The primary container" in str(error)
    assert left_in_aws() == NOTHING
    launcher.stop()  # nothing left to do


def test_container_error_is_a_model_error_with_the_original_status(offline_aws: OfflineAws, tmp_path: Path) -> None:
    with _launcher(add_repository(tmp_path / "repo", model_py=REFUSES_NEGATIVE), []) as launcher:
        transport = launcher.transport()
        with pytest.raises(EndpointModelError) as info:
            transport.infer("python_add", {"A": -A - 1, "B": B}, ["SUM"])
        error = info.value
        assert error.original_status == 500  # what Triton's SageMaker frontend answers for a model's TritonError
        assert "A must not be negative" in error.original_message
        assert error.log_stream_arn.endswith(f"/aws/sagemaker/Endpoints/{launcher.endpoint_name}")
        np.testing.assert_array_equal(transport.infer("python_add", {"A": A, "B": B}, ["SUM"])["SUM"], A + B)


def test_request_over_the_limit_is_refused_before_sending(offline_aws: OfflineAws) -> None:
    runtime = boto3.client("sagemaker-runtime")
    specs = [InputSpec("A", "FP32", (-1, -1))]
    transport = InvokeEndpointTransport(runtime, "any-endpoint", specs)
    assert transport.limit == 6 * 1024 * 1024
    big = np.zeros((1, transport.limit // 4 + 1), dtype=np.float32)
    with pytest.raises(InferenceError, match="InvokeEndpoint takes at most 6291456 bytes"):
        transport.infer("m", {"A": big}, [])
    assert offline_aws.front_door.requests == []  # nothing was sent


def test_reused_endpoint_sees_no_mutating_call(offline_aws: OfflineAws, tmp_path: Path) -> None:
    clients = AwsClients.connect()
    repo = add_repository(tmp_path / "repo")
    options = DeployOptions(role=offline_aws.env["PYTEST_TRITON_SAGEMAKER_ROLE"], poll_interval=0.2, timeout=90)
    deployment = Deployment(clients, repo, options, tmp_path / "deploy", progress=None)
    (tmp_path / "deploy").mkdir()
    name = deployment.deploy()
    before = left_in_aws()
    try:
        reuse = _launcher(None, [], endpoint=name)
        seen: list[str] = []
        for service in ("sagemaker", "sagemaker-runtime", "s3", "logs", "sts"):
            record_operations(reuse.aws.client(service), seen)
        with reuse:
            out = reuse.transport().infer("python_add", {"A": A, "B": B}, ["SUM"])
            np.testing.assert_array_equal(out["SUM"], A + B)
            assert reuse.prepared is not None
            assert reuse.prepared.models == ("python_add",)
            reuse.log_tail()
        assert "DescribeEndpoint" in seen
        assert "InvokeEndpoint" in seen
        assert mutating(seen) == []
        assert left_in_aws() == before
    finally:
        deployment.teardown()
    assert left_in_aws() == NOTHING


def test_reuse_requires_an_endpoint_in_service(offline_aws: OfflineAws, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="Could not find endpoint"):
        _launcher(None, [], endpoint="no-such-endpoint").start()
    deployment = Deployment(
        AwsClients.connect(),
        add_repository(tmp_path / "repo", model_py=FAILING_INIT),
        DeployOptions(role="arn:aws:iam::123456789012:role/r"),
        tmp_path,
        progress=None,
    )
    deployment.ledger = Ledger(deployment.run_id, "us-east-1")
    deployment._create(deployment.package(), "arn:aws:iam::123456789012:role/r")  # created, not waited for
    try:
        assert offline_aws.hosting.hosted[deployment.endpoint_name].done.wait(60)
        with pytest.raises(DeploymentError, match="is Failed, not InService") as info:
            _launcher(None, [], endpoint=deployment.endpoint_name).start()
        assert info.value.failure_reason == PING_FAILED
    finally:
        deployment.teardown()
    assert left_in_aws() == NOTHING


def test_failed_deletion_prints_the_commands_to_finish(
    offline_aws: OfflineAws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    launcher = _launcher(add_repository(tmp_path / "repo"), []).start()
    model = boto3.client("sagemaker").list_models()["Models"][0]["ModelName"]

    def refuse(model: Any, **_: Any) -> None:
        raise RuntimeError("AccessDenied: not allowed to sagemaker:DeleteModel")

    launcher.aws.sagemaker.meta.events.register("before-call.sagemaker.DeleteModel", refuse)
    with pytest.raises(DeploymentError) as info:
        launcher.stop()
    assert info.value.left == (f"aws sagemaker delete-model --model-name {model} --region us-east-1",)
    assert "AccessDenied" in str(info.value)
    assert left_in_aws() == {**NOTHING, "models": [model]}  # everything else went
    boto3.client("sagemaker").delete_model(ModelName=model)


def test_second_interrupt_during_teardown_still_lists_what_is_left(
    offline_aws: OfflineAws, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    launcher = _launcher(add_repository(tmp_path / "repo"), []).start()
    assert launcher.deployment is not None
    run_id = launcher.deployment.run_id

    def interrupt(model: Any, **_: Any) -> None:
        raise KeyboardInterrupt

    launcher.aws.sagemaker.meta.events.register("before-call.sagemaker.DeleteEndpointConfig", interrupt)
    with pytest.raises(KeyboardInterrupt):
        launcher.stop()
    err = capfd.readouterr().err
    assert f"teardown of run {run_id} interrupted" in err
    assert f"aws sagemaker delete-endpoint-config --endpoint-config-name pytest-triton-{run_id}-config" in err
    assert f"aws sagemaker delete-model --model-name pytest-triton-{run_id}-model" in err
    assert "aws s3 rm s3://sagemaker-us-east-1-123456789012/pytest-triton/" in err
    assert "delete-endpoint " not in err  # that one went before the interrupt
    launcher.aws.sagemaker.meta.events.unregister("before-call.sagemaker.DeleteEndpointConfig", interrupt)
    launcher.stop()
    assert left_in_aws() == NOTHING


def test_s3_object_of_another_run_is_left_alone(offline_aws: OfflineAws, tmp_path: Path) -> None:
    launcher = _launcher(add_repository(tmp_path / "repo"), []).start()
    assert launcher.deployment is not None
    bucket, key = launcher.deployment.model_data_url[5:].split("/", 1)
    s3 = boto3.client("s3")
    s3.put_object_tagging(Bucket=bucket, Key=key, Tagging={"TagSet": [{"Key": RUN_TAG, "Value": "someone-else"}]})
    launcher.stop()
    assert left_in_aws() == {**NOTHING, "objects": [f"{bucket}/{key}"]}
    assert launcher.deployment.ledger is not None
    assert "not this run's; left alone" in launcher.deployment.ledger.kept[0]


@pytest.mark.parametrize(
    ("settings", "match"),
    [
        ({"container_release": "24.11"}, "setting container_release='24.11' is not published in region 'us-east-1'"),
        (
            {"instance_type": "ml.g5.xlarge", "s3_uri": "bucket-without-scheme"},
            "setting s3_uri='bucket-without-scheme'",
        ),
    ],
)
def test_bad_options_stop_before_anything_is_created(
    offline_aws: OfflineAws, tmp_path: Path, settings: dict[str, Any], match: str
) -> None:
    with pytest.raises(ConfigError, match=match):
        _launcher(add_repository(tmp_path / "repo"), [], **settings).start()
    assert left_in_aws() == NOTHING


def test_lint_errors_stop_the_deployment(offline_aws: OfflineAws, tmp_path: Path) -> None:
    repo = add_repository(tmp_path / "repo")
    config = repo / "python_add" / "config.pbtxt"
    config.write_text(config.read_text().replace("max_batch_size: 8", "max_batch_size: 8,,"))
    with pytest.raises(LintFailed, match="nothing was deployed") as info:
        _launcher(repo, []).start()
    assert info.value.findings
    assert left_in_aws() == NOTHING


def test_several_models_without_a_default_stop_before_upload(offline_aws: OfflineAws, tmp_path: Path) -> None:
    repo = add_repository(tmp_path / "repo")
    add_repository(repo, name="python_add_too")
    with pytest.raises(ConfigError, match="More than 1 model directory found"):
        _launcher(repo, []).start()
    assert left_in_aws() == NOTHING


def test_cpu_instance_gets_the_cpu_image_and_no_gpu_ami(offline_aws: OfflineAws, tmp_path: Path) -> None:
    with _launcher(add_repository(tmp_path / "repo"), [], instance_type="ml.c5.xlarge") as launcher:
        sagemaker = boto3.client("sagemaker")
        config = sagemaker.describe_endpoint(EndpointName=launcher.endpoint_name)["EndpointConfigName"]
        variant = sagemaker.describe_endpoint_config(EndpointConfigName=config)["ProductionVariants"][0]
        assert "InferenceAmiVersion" not in variant
        image = sagemaker.describe_model(ModelName=variant["ModelName"])["PrimaryContainer"]["Image"]
        assert image.endswith("sagemaker-tritonserver:26.05-py3-cpu")
        assert not launcher.has_gpu


def test_invocation_timeout_says_why_and_slow_first_calls_are_named(offline_aws: OfflineAws, tmp_path: Path) -> None:
    with _launcher(add_repository(tmp_path / "repo", model_py=SLOW_ADD), []) as launcher:
        transport = launcher.transport()
        transport.invocation_limit_s = 0.5  # stands in for SageMaker's 60 s
        np.testing.assert_array_equal(transport.infer("python_add", {"A": A, "B": B}, ["SUM"])["SUM"], A + B)
        transport.infer("python_add", {"A": A[:1], "B": B[:1]}, ["SUM"])
        slow = transport.slow_first_calls()
        assert len(slow) == 2  # one per batch shape, each over the limit
        assert "first call with shapes {'A': (2, 4), 'B': (2, 4)} took" in slow[0]
        offline_aws.front_door.invocation_timeout = 0.5
        with pytest.raises(EndpointModelError, match="timed out while waiting for a response") as info:
            transport.infer("python_add", {"A": A, "B": B}, ["SUM"])
        assert "warm every batch shape" in str(info.value)


def test_s3_uri_and_image_are_used_as_given(offline_aws: OfflineAws, tmp_path: Path) -> None:
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="team-models")
    image = "111122223333.dkr.ecr.us-east-1.amazonaws.com/our-triton:26.05-custom"
    settings = {"s3_uri": "s3://team-models/nli/", "image": image}
    with _launcher(add_repository(tmp_path / "repo"), [], **settings) as launcher:
        assert launcher.deployment is not None
        url = launcher.deployment.model_data_url
        assert url == f"s3://team-models/nli/pytest-triton/{launcher.deployment.run_id}/model.tar.gz"
        model = boto3.client("sagemaker").list_models()["Models"][0]["ModelName"]
        container = boto3.client("sagemaker").describe_model(ModelName=model)["PrimaryContainer"]
        assert container["Image"] == image
        assert launcher.prepared is not None
        assert launcher.prepared.location == url
    assert [b["Name"] for b in s3.list_buckets()["Buckets"]] == ["team-models"]  # the user's bucket stays
    assert left_in_aws() == NOTHING
