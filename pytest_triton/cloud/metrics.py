"""The server-side split of an endpoint's latency, from CloudWatch: ModelLatency and OverheadLatency.

SageMaker publishes both per endpoint and variant in the ``AWS/SageMaker`` namespace, in microseconds, once a
minute: ``ModelLatency`` is the time the container took, ``OverheadLatency`` what SageMaker added around it.
They arrive a minute or more after the requests, so a run keeps each measured window (:class:`SplitWindow`) and
reads them all at the session's end (:mod:`pytest_triton.cloud.metrics_wait`), saying so when none came.
The median comes from ExtendedStatistics ``p50`` where CloudWatch serves it over the window in one datapoint;
otherwise (moto ignores ExtendedStatistics) the split is the mean of the ``Average`` datapoints weighted by
their sample counts, and the report says which it is.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

NAMESPACE = "AWS/SageMaker"
METRICS = ("ModelLatency", "OverheadLatency")
MEDIAN = "p50 (CloudWatch ExtendedStatistics)"
WEIGHTED_MEAN = "sample-weighted mean of CloudWatch's Average (no ExtendedStatistics p50 came back)"


@dataclass(frozen=True)
class LatencySplit:
    """Each metric over the window, in milliseconds (``statistic`` of each says what it is); ``missing`` names
    metrics with no data; ``samples`` the request counts where CloudWatch gave them."""

    endpoint: str
    value_ms: dict[str, float]
    missing: tuple[str, ...]
    samples: dict[str, int]
    statistic: dict[str, str]

    def describe(self) -> str:
        if not self.value_ms:
            return (
                f"endpoint {self.endpoint}: no CloudWatch {', '.join(self.missing)} yet "
                "(SageMaker publishes them a minute or more after the requests); no server-side split"
            )
        parts = []
        for name, value in self.value_ms.items():
            count = f" over {self.samples[name]} requests" if name in self.samples else ""
            parts.append(f"{name} {value:.2f} ms{count}, {self.statistic[name]}")
        if self.missing:
            parts.append(f"no data for {', '.join(self.missing)}")
        return f"endpoint {self.endpoint}: server-side split " + "; ".join(parts)


def whole_minute(moment: dt.datetime, *, up: bool = False) -> dt.datetime:
    """``moment`` rounded down (or ``up``) to the minute: CloudWatch keeps SageMaker's metrics per minute."""
    floor = moment.replace(second=0, microsecond=0)
    return floor + dt.timedelta(minutes=1) if up and floor != moment else floor


@dataclass(frozen=True)
class SplitWindow:
    """One measured window of an endpoint whose split is read later (CloudWatch publishes it minutes after).

    ``requests`` are the InvokeEndpoint calls answered in the window (0: not counted): the window's datapoints
    are all there once both metrics count at least that many samples. CloudWatch needs only the dimensions
    (EndpointName, VariantName), so the read works after the endpoint is deleted.
    """

    endpoint: str
    start: dt.datetime
    end: dt.datetime
    requests: int
    region: str
    variant: str = "AllTraffic"

    @property
    def placeholder(self) -> str:
        """The variant's note until the read: the split comes at the session's end."""
        return f"endpoint {self.endpoint}: server-side split (CloudWatch {' / '.join(METRICS)}) read at session end"

    @classmethod
    def read_late(cls, windows: Sequence[SplitWindow], *, wait_s: float, progress: Callable[[str], None]) -> list[str]:
        """Each window's note, read from CloudWatch at the session's end, polling up to ``wait_s`` seconds after
        the last window (:func:`~pytest_triton.cloud.metrics_wait.read_splits`); ``progress`` gets the lines
        that say what is read and how much came back."""
        from pytest_triton.cloud.metrics_wait import read_splits

        progress(
            f"reading CloudWatch's split of {len(windows)} latency window(s) at session end "
            f"(SageMaker publishes it per minute; waiting up to {wait_s:g} s after the last window)"
        )
        reads = read_splits(windows, wait_s=wait_s, progress=progress)
        complete = sum(read.complete for read in reads)
        progress(f"complete for {complete} of {len(reads)} window(s); each variant's notes say more")
        return [read.describe() for read in reads]

    def query_window(self) -> tuple[dt.datetime, dt.datetime]:
        """The whole minutes the window touches: the 1-minute datapoints that hold its requests."""
        return whole_minute(self.start), whole_minute(self.end, up=True)

    def read(self, cloudwatch: Any) -> LatencySplit:
        start, end = self.query_window()
        return latency_split(cloudwatch, self.endpoint, start, end, variant=self.variant)

    def complete(self, split: LatencySplit) -> bool:
        """Whether CloudWatch has every request of the window in both metrics (any data, when not counted)."""
        if split.missing:
            return False
        return all(split.samples.get(metric, 0) >= self.requests for metric in METRICS)

    def commands(self, metrics: Sequence[str] = METRICS) -> list[str]:
        """The aws CLI commands that read ``metrics`` of this window (CloudWatch's p50 over the whole window)."""
        start, end = self.query_window()
        period = _period(start, end)
        stamp = "%Y-%m-%dT%H:%M:%SZ"
        return [
            f"aws cloudwatch get-metric-statistics --region {self.region} --namespace {NAMESPACE} "
            f"--metric-name {metric} --dimensions Name=EndpointName,Value={self.endpoint} "
            f"Name=VariantName,Value={self.variant} --start-time {start.astimezone(dt.timezone.utc):{stamp}} "
            f"--end-time {end.astimezone(dt.timezone.utc):{stamp}} --period {period} --extended-statistics p50"
            for metric in metrics
        ]


def _period(start: dt.datetime, end: dt.datetime) -> int:
    """One period over the whole window, in whole minutes (as CloudWatch wants them)."""
    return max(60, math.ceil((end - start).total_seconds() / 60) * 60)


def latency_split(
    cloudwatch: Any, endpoint: str, start: dt.datetime, end: dt.datetime, *, variant: str = "AllTraffic"
) -> LatencySplit:
    """Read ModelLatency and OverheadLatency of ``endpoint`` between ``start`` and ``end`` (read-only)."""
    found: dict[str, float] = {}
    counts: dict[str, int] = {}
    statistic: dict[str, str] = {}
    missing: list[str] = []
    period = _period(start, end)  # one p50 for all the window's requests
    query: dict[str, Any] = {
        "Namespace": NAMESPACE,
        "Dimensions": [{"Name": "EndpointName", "Value": endpoint}, {"Name": "VariantName", "Value": variant}],
        "StartTime": start,
        "EndTime": end,
        "Period": period,
    }
    for metric in METRICS:
        # CloudWatch takes Statistics or ExtendedStatistics in one call, not both
        extended = cloudwatch.get_metric_statistics(MetricName=metric, ExtendedStatistics=["p50"], **query)
        medians = [p["ExtendedStatistics"]["p50"] for p in extended.get("Datapoints", []) if "ExtendedStatistics" in p]
        reply = cloudwatch.get_metric_statistics(MetricName=metric, Statistics=["Average", "SampleCount"], **query)
        points = [p for p in reply.get("Datapoints", []) if p.get("SampleCount")]
        total = sum(p["SampleCount"] for p in points)
        if total:
            counts[metric] = int(total)
        if len(medians) == 1:
            found[metric] = float(medians[0]) / 1000.0  # µs -> ms
            statistic[metric] = MEDIAN
        elif total:
            found[metric] = sum(p["Average"] * p["SampleCount"] for p in points) / total / 1000.0
            statistic[metric] = WEIGHTED_MEAN
        else:
            missing.append(metric)
    return LatencySplit(endpoint, found, tuple(missing), counts, statistic)
