"""CloudWatch's split read at the session's end, against moto's CloudWatch: after the endpoint is deleted, when
the datapoints come late, when they never come (the message and the command to read them later), on Ctrl-C."""

from __future__ import annotations

import datetime as dt
import shlex
import threading
import time
from pathlib import Path
from typing import Any

import boto3
import botocore.config
import numpy as np
import pytest

from pytest_triton.cloud.metrics import SplitWindow
from pytest_triton.cloud.metrics_wait import read_splits
from pytest_triton.servers.protocol import ServeOptions
from pytest_triton.servers.sagemaker.endpoint import SageMakerLauncher

from .conftest import REGION
from .conftest import OfflineAws
from .repos import add_repository

pytestmark = pytest.mark.xdist_group("embedded-triton")

A = np.arange(4, dtype=np.float32).reshape(1, 4)
_NO_RETRY = botocore.config.Config(retries={"total_max_attempts": 1}, connect_timeout=2)


def _window(endpoint: str, requests: int, *, seconds: float = 20.0) -> SplitWindow:
    end = dt.datetime.now(dt.timezone.utc)
    return SplitWindow(endpoint, end - dt.timedelta(seconds=seconds), end, requests, REGION)


def _publish(cloudwatch: Any, window: SplitWindow, count: int, *, model_us: float = 800.0) -> None:
    """``count`` requests as SageMaker publishes them: both metrics, stamped inside the window."""
    dimensions = [{"Name": "EndpointName", "Value": window.endpoint}, {"Name": "VariantName", "Value": "AllTraffic"}]
    stamp = window.start + (window.end - window.start) / 2
    for _ in range(count):
        cloudwatch.put_metric_data(
            Namespace="AWS/SageMaker",
            MetricData=[
                {
                    "MetricName": name,
                    "Dimensions": dimensions,
                    "Value": value,
                    "Unit": "Microseconds",
                    "Timestamp": stamp,
                }
                for name, value in (("ModelLatency", model_us), ("OverheadLatency", 200.0))
            ],
        )


def test_split_is_read_after_the_endpoint_is_deleted(offline_aws: OfflineAws, tmp_path: Path) -> None:
    options = ServeOptions(settings={"poll_interval": 0.2, "deploy_timeout": 90.0}, progress=None)
    with SageMakerLauncher.from_options(add_repository(tmp_path / "repo"), options) as launcher:
        transport = launcher.transport()
        transport.infer("python_add", {"A": A, "B": A}, ["SUM"])  # before the window: not counted
        start = dt.datetime.now(dt.timezone.utc)
        for _ in range(5):
            transport.infer("python_add", {"A": A, "B": A}, ["SUM"])
        window = launcher.late_latency_note(start, dt.datetime.now(dt.timezone.utc))
        name = launcher.endpoint_name
    assert window.requests == 5
    assert window.placeholder == (
        f"endpoint {name}: server-side split (CloudWatch ModelLatency / OverheadLatency) read at session end"
    )
    sagemaker = boto3.client("sagemaker")
    with pytest.raises(sagemaker.exceptions.ClientError, match="Could not find endpoint"):
        sagemaker.describe_endpoint(EndpointName=name)  # gone: CloudWatch needs only the dimensions
    (read,) = read_splits([window], wait_s=0, cloudwatch={REGION: boto3.client("cloudwatch")})
    assert read.complete, read.describe()
    assert read.split is not None
    # CloudWatch keeps whole minutes: the minute the window starts in may hold the call before it too
    assert read.split.samples in ({"ModelLatency": n, "OverheadLatency": n} for n in (5, 6)), read.split.samples
    assert read.describe().startswith(f"endpoint {name}: server-side split ModelLatency ")
    assert "(read at session end, " in read.describe()


def test_late_datapoints_are_waited_for(offline_aws: OfflineAws) -> None:
    cloudwatch = boto3.client("cloudwatch")
    window = _window("late-ep", 3)
    publisher = threading.Timer(1.5, _publish, args=(cloudwatch, window, 3))  # published after the first reads
    lines: list[str] = []
    started = time.monotonic()
    publisher.start()
    try:
        (read,) = read_splits([window], wait_s=60, poll_s=0.3, cloudwatch={REGION: cloudwatch}, progress=lines.append)
    finally:
        publisher.cancel()
    waited = time.monotonic() - started
    assert read.complete, read.describe()
    assert read.split is not None
    assert read.split.value_ms == {"ModelLatency": 0.8, "OverheadLatency": 0.2}
    assert waited < 30, waited  # stopped polling once the datapoints were there, long before the deadline
    assert lines, "no progress while waiting"
    assert lines[0].startswith("waiting for CloudWatch ModelLatency / OverheadLatency of 1 endpoint: "), lines
    assert lines[0].endswith(" s of 60 s"), lines


def test_datapoints_that_never_come_are_reported_with_the_command(offline_aws: OfflineAws) -> None:
    cloudwatch = boto3.client("cloudwatch")
    window = _window("never-ep", 4)
    (read,) = read_splits([window], wait_s=1.0, poll_s=0.2, cloudwatch={REGION: cloudwatch})
    assert not read.complete
    assert read.split is not None
    assert not read.split.value_ms
    text = read.describe()
    start, end = window.query_window()
    span = f"{start:%Y-%m-%dT%H:%M:%SZ} to {end:%Y-%m-%dT%H:%M:%SZ}"
    assert text.startswith(
        f"endpoint never-ep: no server-side split: CloudWatch had no datapoint for ModelLatency, OverheadLatency "
        f"of the window {span} by "
    ), text
    assert (
        " s after the window (--triton-cloud-metrics-wait 1); SageMaker publishes them per minute: "
        "read them later with: " in text
    )
    commands = text.split("read them later with: ", 1)[1].split(" ; ")
    assert [c.split(" --metric-name ")[1].split()[0] for c in commands] == ["ModelLatency", "OverheadLatency"]
    # the command is the read itself: run with boto3 after the datapoints came, it finds them
    _publish(cloudwatch, window, 4)
    assert _run_cli(cloudwatch, commands[0]) == {"p50": 800.0}


def _run_cli(cloudwatch: Any, command: str) -> dict[str, float]:
    """``aws cloudwatch get-metric-statistics ...`` as the equivalent boto3 call (its one datapoint's statistics).

    moto answers ExtendedStatistics with no value: the Average of the same query stands in for the p50 here."""
    words = shlex.split(command)
    assert words[:3] == ["aws", "cloudwatch", "get-metric-statistics"], words
    args: dict[str, list[str]] = {}
    key = ""
    for word in words[3:]:
        if word.startswith("--"):
            key = word[2:]
            args[key] = []
        else:
            args[key].append(word)
    dimensions = [dict(part.split("=", 1) for part in d.split(",")) for d in args["dimensions"]]
    assert args["region"] == [REGION], args
    assert args["extended-statistics"] == ["p50"], args
    query = {
        "Namespace": args["namespace"][0],
        "MetricName": args["metric-name"][0],
        "Dimensions": dimensions,
        "StartTime": dt.datetime.fromisoformat(args["start-time"][0].replace("Z", "+00:00")),
        "EndTime": dt.datetime.fromisoformat(args["end-time"][0].replace("Z", "+00:00")),
        "Period": int(args["period"][0]),
    }
    cloudwatch.get_metric_statistics(**query, ExtendedStatistics=["p50"])  # the command's own call is valid
    (point,) = cloudwatch.get_metric_statistics(**query, Statistics=["Average"])["Datapoints"]
    return {"p50": point["Average"]}


def test_partial_datapoints_say_how_many_came(offline_aws: OfflineAws) -> None:
    cloudwatch = boto3.client("cloudwatch")
    window = _window("partial-ep", 6)
    _publish(cloudwatch, window, 2)
    (read,) = read_splits([window], wait_s=0, cloudwatch={REGION: cloudwatch})
    assert not read.complete
    text = read.describe()
    assert text.startswith("endpoint partial-ep: server-side split ModelLatency 0.80 ms over 2 requests"), text
    assert "; incomplete: CloudWatch had ModelLatency 2, OverheadLatency 2 of 6 requests of the window " in text
    assert " when read once, " in text
    assert "(--triton-cloud-metrics-wait 0)" in text


def test_ctrl_c_stops_the_wait_and_reports_what_is_known(offline_aws: OfflineAws) -> None:
    cloudwatch = boto3.client("cloudwatch")
    done, waiting = _window("done-ep", 1), _window("waiting-ep", 1)
    _publish(cloudwatch, done, 1)

    def interrupted(seconds: float) -> None:
        raise KeyboardInterrupt

    reads = read_splits([done, waiting], wait_s=600, cloudwatch={REGION: cloudwatch}, sleep=interrupted)
    assert [r.complete for r in reads] == [True, False]
    assert "server-side split ModelLatency 0.80 ms over 1 requests" in reads[0].describe()
    assert " when Ctrl-C stopped the wait, " in reads[1].describe()
    assert "aws cloudwatch get-metric-statistics " in reads[1].describe()


def test_a_read_that_fails_after_a_partial_one_is_not_complete(offline_aws: OfflineAws) -> None:
    cloudwatch = boto3.client("cloudwatch")
    window = _window("flaky-ep", 4)
    _publish(cloudwatch, window, 2)  # half of the window's requests
    # a real client of a port where nothing listens: the second poll cannot reach CloudWatch
    dead = boto3.client("cloudwatch", endpoint_url="http://127.0.0.1:9", config=_NO_RETRY)
    clients = iter([cloudwatch, dead])
    (read,) = read_splits([window], wait_s=30, poll_s=0.1, cloudwatch=lambda region: next(clients))
    assert not read.complete
    assert read.error.startswith("EndpointConnectionError"), read.error
    assert "CloudWatch could not be read: EndpointConnectionError" in read.describe()
