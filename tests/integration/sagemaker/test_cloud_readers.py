"""Read-only helpers against moto: CloudWatch's latency split and the endpoint log tail."""

from __future__ import annotations

import datetime as dt

import boto3

from pytest_triton.cloud.deploy import endpoint_log_tail
from pytest_triton.cloud.metrics import latency_split

from .conftest import OfflineAws

DIMENSIONS = [{"Name": "EndpointName", "Value": "ep"}, {"Name": "VariantName", "Value": "AllTraffic"}]


def test_latency_split_is_the_sample_weighted_mean_in_ms(offline_aws: OfflineAws) -> None:
    cloudwatch = boto3.client("cloudwatch")
    now = dt.datetime.now(dt.timezone.utc)
    for value in (900.0, 1000.0, 1400.0):  # what SageMaker publishes, in microseconds
        cloudwatch.put_metric_data(
            Namespace="AWS/SageMaker",
            MetricData=[
                {"MetricName": "ModelLatency", "Dimensions": DIMENSIONS, "Value": value, "Unit": "Microseconds"}
            ],
        )
    split = latency_split(cloudwatch, "ep", now - dt.timedelta(minutes=5), now + dt.timedelta(minutes=1))
    assert split.mean_ms == {"ModelLatency": 1.1}
    assert split.samples == {"ModelLatency": 3}
    assert split.missing == ("OverheadLatency",)
    assert split.describe() == ("endpoint ep: ModelLatency mean 1.10 ms over 3 requests, no data for OverheadLatency")


def test_latency_split_says_when_cloudwatch_has_nothing(offline_aws: OfflineAws) -> None:
    now = dt.datetime.now(dt.timezone.utc)
    split = latency_split(boto3.client("cloudwatch"), "ep", now - dt.timedelta(minutes=5), now)
    assert split.mean_ms == {}
    assert "no CloudWatch ModelLatency, OverheadLatency yet" in split.describe()


def test_log_tail_of_an_endpoint_without_a_log_group(offline_aws: OfflineAws) -> None:
    assert endpoint_log_tail(boto3.client("logs"), "ep") == (
        "(no CloudWatch log group /aws/sagemaker/Endpoints/ep: the container wrote nothing, or never started)"
    )


def test_log_tail_keeps_the_last_lines(offline_aws: OfflineAws) -> None:
    logs = boto3.client("logs")
    logs.create_log_group(logGroupName="/aws/sagemaker/Endpoints/ep")
    logs.create_log_stream(logGroupName="/aws/sagemaker/Endpoints/ep", logStreamName="AllTraffic/i-1")
    start = int(dt.datetime.now(dt.timezone.utc).timestamp() * 1000)
    events = [{"timestamp": start + i, "message": f"line {i}"} for i in range(80)]
    logs.put_log_events(logGroupName="/aws/sagemaker/Endpoints/ep", logStreamName="AllTraffic/i-1", logEvents=events)
    tail = endpoint_log_tail(logs, "ep", events=5).splitlines()
    assert tail == [f"[AllTraffic/i-1] line {i}" for i in range(75, 80)]
