"""The server-side split of an endpoint's latency, from CloudWatch: ModelLatency and OverheadLatency.

SageMaker publishes both per endpoint and variant in the ``AWS/SageMaker`` namespace, in microseconds, once a
minute: ``ModelLatency`` is the time the container took, ``OverheadLatency`` what SageMaker added around it.
They arrive a minute or more after the requests, so a run reads them at its end, and says so when none came.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

NAMESPACE = "AWS/SageMaker"
METRICS = ("ModelLatency", "OverheadLatency")


@dataclass(frozen=True)
class LatencySplit:
    """Mean of each metric over the window (weighted by its sample counts), in milliseconds; ``missing`` names
    metrics with no data. A mean, not a median: the Average statistic is the one every CloudWatch (and moto)
    serves; percentiles need ExtendedStatistics."""

    endpoint: str
    mean_ms: dict[str, float]
    missing: tuple[str, ...]
    samples: dict[str, int]

    def describe(self) -> str:
        if not self.mean_ms:
            return (
                f"endpoint {self.endpoint}: no CloudWatch {', '.join(self.missing)} yet "
                "(SageMaker publishes them a minute or more after the requests); no server-side split"
            )
        parts = [f"{name} mean {v:.2f} ms over {self.samples[name]} requests" for name, v in self.mean_ms.items()]
        if self.missing:
            parts.append(f"no data for {', '.join(self.missing)}")
        return f"endpoint {self.endpoint}: " + ", ".join(parts)


def latency_split(
    cloudwatch: Any, endpoint: str, start: dt.datetime, end: dt.datetime, *, variant: str = "AllTraffic"
) -> LatencySplit:
    """Read ModelLatency and OverheadLatency of ``endpoint`` between ``start`` and ``end`` (read-only)."""
    found: dict[str, float] = {}
    counts: dict[str, int] = {}
    missing: list[str] = []
    period = max(60, int((end - start).total_seconds()) // 60 * 60 or 60)
    for metric in METRICS:
        reply = cloudwatch.get_metric_statistics(
            Namespace=NAMESPACE,
            MetricName=metric,
            Dimensions=[{"Name": "EndpointName", "Value": endpoint}, {"Name": "VariantName", "Value": variant}],
            StartTime=start,
            EndTime=end,
            Period=period,
            Statistics=["Average", "SampleCount"],
        )
        points = [p for p in reply.get("Datapoints", []) if p.get("SampleCount")]
        total = sum(p["SampleCount"] for p in points)
        if total:
            found[metric] = sum(p["Average"] * p["SampleCount"] for p in points) / total / 1000.0  # µs -> ms
            counts[metric] = int(total)
        else:
            missing.append(metric)
    return LatencySplit(endpoint, found, tuple(missing), counts)
