"""Read-only helpers against moto: CloudWatch's latency split and the endpoint log tail."""

from __future__ import annotations

import datetime as dt

import boto3
from botocore.stub import Stubber

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
    assert split.value_ms == {"ModelLatency": 1.1}  # moto ignores ExtendedStatistics: no p50 comes back
    assert split.samples == {"ModelLatency": 3}
    assert split.missing == ("OverheadLatency",)
    assert split.describe() == (
        "endpoint ep: server-side split ModelLatency 1.10 ms over 3 requests, sample-weighted mean of CloudWatch's "
        "Average (no ExtendedStatistics p50 came back); no data for OverheadLatency"
    )


def test_latency_split_takes_cloudwatchs_p50_where_it_is_served() -> None:
    # moto cannot answer ExtendedStatistics; botocore's Stubber checks these replies against the API's model
    cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
    now = dt.datetime.now(dt.timezone.utc)
    start, end = now - dt.timedelta(seconds=90), now
    with Stubber(cloudwatch) as stub:
        for metric, p50, average, count in (("ModelLatency", 950.0, 1100.0, 3.0), ("OverheadLatency", 0, 0, 0)):
            query = {
                "Namespace": "AWS/SageMaker",
                "MetricName": metric,
                "Dimensions": DIMENSIONS,
                "StartTime": start,
                "EndTime": end,
                "Period": 120,  # the whole window in one period, in whole minutes
            }
            median = [{"Timestamp": start, "ExtendedStatistics": {"p50": p50}}] if p50 else []
            stub.add_response("get_metric_statistics", {"Datapoints": median}, {**query, "ExtendedStatistics": ["p50"]})
            points = [{"Timestamp": start, "Average": average, "SampleCount": count}] if count else []
            stub.add_response(
                "get_metric_statistics", {"Datapoints": points}, {**query, "Statistics": ["Average", "SampleCount"]}
            )
        split = latency_split(cloudwatch, "ep", start, end)
    assert split.value_ms == {"ModelLatency": 0.95}
    assert split.statistic == {"ModelLatency": "p50 (CloudWatch ExtendedStatistics)"}
    assert split.missing == ("OverheadLatency",)


def test_latency_split_says_when_cloudwatch_has_nothing(offline_aws: OfflineAws) -> None:
    now = dt.datetime.now(dt.timezone.utc)
    split = latency_split(boto3.client("cloudwatch"), "ep", now - dt.timedelta(minutes=5), now)
    assert split.value_ms == {}
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
