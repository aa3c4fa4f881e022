"""Where the time went on the server: Triton's statistics API (and Prometheus metrics) over a measured window.

Triton keeps cumulative counters per model and version (``GET /v2/models/stats`` or
``/v2/models/{name}/stats``): ``inference_stats.{success,fail,queue,compute_input,compute_infer,compute_output}``,
each ``{"count": requests, "ns": total nanoseconds}``. A snapshot before and one after the window, differenced,
give the mean microseconds per request of each phase for that window only.

Report each model on its own, never summed: an ensemble's own counters already include the time of its composing
models (checked on Triton 2.51: ensemble compute_infer ≈ the composing model's request time), and
:func:`composing_models` lists those models from the ensemble's config so they can be snapshotted too.

The metrics endpoint carries the same counters in microseconds (``nv_inference_queue_duration_us``,
``nv_inference_compute_{input,infer,output}_duration_us``, ``nv_inference_request_duration_us``,
``nv_inference_request_success``, ``nv_inference_exec_count``): :func:`parse_metrics` and :func:`metrics_delta`
give the same split from there. Through the package's one REST client (no proxy).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import asdict
from dataclasses import dataclass
from types import TracebackType
from typing import Any
from typing import Literal
from typing import final

from pytest_triton.client.rest import TritonRest
from pytest_triton.client.rest import fetch_text

__all__ = [
    "ModelCounters",
    "PhaseSplit",
    "ServerSplit",
    "StatsSnapshot",
    "StatsWindow",
    "composing_models",
    "fetch_metrics",
    "fetch_server_version",
    "fetch_statistics",
    "metrics_delta",
    "parse_metrics",
    "parse_statistics",
    "stats_delta",
]

PHASES: tuple[str, ...] = ("success", "fail", "queue", "compute_input", "compute_infer", "compute_output")
_ModelKey = tuple[str, str]


@final
@dataclass(frozen=True)
class ModelCounters:
    """One model version's cumulative counters: ``phases[name] = (count, ns)``."""

    name: str
    version: str
    inference_count: int
    execution_count: int
    phases: Mapping[str, tuple[int, int]]

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> ModelCounters:
        stats = obj.get("inference_stats") or {}
        phases = {p: (int(stats.get(p, {}).get("count", 0)), int(stats.get(p, {}).get("ns", 0))) for p in PHASES}
        return cls(
            name=str(obj["name"]),
            version=str(obj.get("version", "")),
            inference_count=int(obj.get("inference_count", 0)),
            execution_count=int(obj.get("execution_count", 0)),
            phases=phases,
        )


StatsSnapshot = dict[_ModelKey, ModelCounters]


@final
@dataclass(frozen=True)
class PhaseSplit:
    """Mean microseconds per request of each server phase for one model version, over one window."""

    model: str
    version: str
    requests: int
    failures: int
    executions: int
    request_us: float
    queue_us: float
    compute_input_us: float
    compute_infer_us: float
    compute_output_us: float

    @property
    def compute_us(self) -> float:
        return self.compute_input_us + self.compute_infer_us + self.compute_output_us

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["compute_us"] = self.compute_us
        return out


@final
@dataclass(frozen=True)
class ServerSplit:
    """Per-model phase split of a window, from ``source`` (the statistics API or the metrics endpoint)."""

    models: tuple[PhaseSplit, ...]
    source: Literal["statistics", "metrics"] = "statistics"

    def for_model(self, name: str | None) -> PhaseSplit | None:
        """The split of model ``name`` (its busiest version); the first model when ``name`` is None."""
        matches = [m for m in self.models if name is None or m.model == name]
        return max(matches, key=lambda m: m.requests, default=None)

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "models": [m.as_dict() for m in self.models]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ServerSplit:
        fields = PhaseSplit.__dataclass_fields__
        models = tuple(PhaseSplit(**{k: v for k, v in m.items() if k in fields}) for m in data["models"])
        return cls(models, data.get("source", "statistics"))


def _mean_us(delta_ns: int, count: int) -> float:
    return delta_ns / count / 1e3 if count > 0 else 0.0


def parse_statistics(payload: str | bytes | Mapping[str, Any]) -> StatsSnapshot:
    """Read a ``/v2/models[/{name}]/stats`` response body into ``{(model, version): counters}``."""
    data = json.loads(payload) if isinstance(payload, (str, bytes)) else payload
    return {(c.name, c.version): c for c in map(ModelCounters.from_json, data.get("model_stats", []))}


def stats_delta(before: StatsSnapshot, after: StatsSnapshot, *, models: Iterable[str] | None = None) -> ServerSplit:
    """The split of the window between two snapshots: models named in ``models``, else those that served requests."""
    wanted = set(models) if models is not None else None
    out = []
    for key, end in sorted(after.items()):
        if wanted is not None and end.name not in wanted:
            continue
        start = before.get(key)
        d: dict[str, tuple[int, int]] = {}
        for phase in PHASES:
            c1, n1 = end.phases[phase]
            c0, n0 = start.phases[phase] if start else (0, 0)
            d[phase] = (c1 - c0, n1 - n0)
        requests = d["success"][0]
        if wanted is None and requests == 0 and d["fail"][0] == 0:
            continue
        out.append(
            PhaseSplit(
                model=end.name,
                version=end.version,
                requests=requests,
                failures=d["fail"][0],
                executions=end.execution_count - (start.execution_count if start else 0),
                request_us=_mean_us(d["success"][1], requests),
                queue_us=_mean_us(d["queue"][1], d["queue"][0]),
                compute_input_us=_mean_us(d["compute_input"][1], d["compute_input"][0]),
                compute_infer_us=_mean_us(d["compute_infer"][1], d["compute_infer"][0]),
                compute_output_us=_mean_us(d["compute_output"][1], d["compute_output"][0]),
            )
        )
    return ServerSplit(tuple(out), "statistics")


def fetch_statistics(
    http_url: str, model: str | None = None, *, version: str = "", timeout: float = 10.0
) -> StatsSnapshot:
    """Snapshot the statistics of ``model`` (every model when None) from a server's HTTP URL."""
    return parse_statistics(TritonRest(http_url, timeout=timeout).statistics(model or "", version))


def fetch_server_version(http_url: str, *, timeout: float = 10.0) -> str:
    """The server's ``name version`` from its metadata (``GET /v2``), e.g. ``triton 2.51.0``."""
    rest = TritonRest(http_url, timeout=timeout)
    try:
        data = rest.get_json("/v2", "reading the server metadata")
    finally:
        rest.close()
    return f"{data.get('name', 'server')} {data.get('version', '?')}"


def composing_models(http_url: str, model: str, *, timeout: float = 10.0) -> list[str]:
    """The models an ensemble runs, nested ensembles expanded (empty for a model that is not an ensemble)."""
    rest = TritonRest(http_url, timeout=timeout)
    found: list[str] = []
    pending = [model]
    while pending:
        name = pending.pop(0)
        steps = rest.config(name).get("ensemble_scheduling", {}).get("step", [])
        for step in steps:
            child = str(step.get("model_name", ""))
            if child and child not in found and child != model:
                found.append(child)
                pending.append(child)
    return found


@final
class StatsWindow:
    """Snapshot every model's statistics on entering and on leaving; ``split`` is the difference.

    ``model`` (and, with ``include_composing``, the models its ensemble runs) restricts the split; None keeps
    every model that served a request in the window. Both snapshots are one ``/v2/models/stats`` request each.
    """

    def __init__(
        self, http_url: str, model: str | None = None, *, include_composing: bool = True, timeout: float = 10.0
    ) -> None:
        self.http_url = http_url
        self.model = model
        self.include_composing = include_composing
        self.timeout = timeout
        self.models: list[str] | None = None
        self.split: ServerSplit | None = None
        self._before: StatsSnapshot = {}

    def __enter__(self) -> StatsWindow:
        if self.model is not None:
            self.models = [self.model]
            if self.include_composing:
                self.models += composing_models(self.http_url, self.model, timeout=self.timeout)
        self._before = fetch_statistics(self.http_url, timeout=self.timeout)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            after = fetch_statistics(self.http_url, timeout=self.timeout)
            self.split = stats_delta(self._before, after, models=self.models)


# -- Prometheus metrics ---------------------------------------------------------------------------------------

_METRIC_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
MetricsSnapshot = dict[tuple[str, frozenset[tuple[str, str]]], float]

_METRIC_PHASES = {
    "request_us": "nv_inference_request_duration_us",
    "queue_us": "nv_inference_queue_duration_us",
    "compute_input_us": "nv_inference_compute_input_duration_us",
    "compute_infer_us": "nv_inference_compute_infer_duration_us",
    "compute_output_us": "nv_inference_compute_output_duration_us",
}


def parse_metrics(text: str) -> MetricsSnapshot:
    """Read Prometheus text: ``{(metric, frozenset(labels)): value}`` (comments and bad lines skipped)."""
    out: MetricsSnapshot = {}
    for line in text.splitlines():
        match = _METRIC_LINE.match(line.strip())
        if not match or line.startswith("#"):
            continue
        name, labels, value = match.groups()
        try:
            number = float(value)
        except ValueError:
            continue
        out[(name, frozenset(_LABEL.findall(labels or "")))] = number
    return out


def fetch_metrics(metrics_url: str, *, timeout: float = 10.0) -> MetricsSnapshot:
    """Snapshot a server's metrics endpoint (``http://host:8002/metrics``)."""
    return parse_metrics(fetch_text(metrics_url, timeout=timeout))


def _by_model(snapshot: MetricsSnapshot, metric: str) -> dict[_ModelKey, float]:
    totals: dict[_ModelKey, float] = {}
    for (name, labels), value in snapshot.items():
        if name != metric:
            continue
        label = dict(labels)
        if "model" in label:
            key = (label["model"], label.get("version", ""))
            totals[key] = totals.get(key, 0.0) + value
    return totals


def metrics_delta(
    before: MetricsSnapshot, after: MetricsSnapshot, *, models: Iterable[str] | None = None
) -> ServerSplit:
    """The split of the window from two metrics snapshots (mean µs per successful request)."""
    wanted = set(models) if models is not None else None

    def delta(metric: str) -> dict[_ModelKey, float]:
        start = _by_model(before, metric)
        return {k: v - start.get(k, 0.0) for k, v in _by_model(after, metric).items()}

    success = delta("nv_inference_request_success")
    failure = delta("nv_inference_request_failure")
    executions = delta("nv_inference_exec_count")
    phases = {field: delta(metric) for field, metric in _METRIC_PHASES.items()}
    out = []
    for key in sorted(success):
        requests = int(success[key])
        if wanted is not None and key[0] not in wanted:
            continue
        if wanted is None and requests == 0 and failure.get(key, 0.0) == 0:
            continue
        means = {f: (phases[f].get(key, 0.0) / requests if requests else 0.0) for f in _METRIC_PHASES}
        out.append(
            PhaseSplit(
                model=key[0],
                version=key[1],
                requests=requests,
                failures=int(failure.get(key, 0.0)),
                executions=int(executions.get(key, 0.0)),
                **means,
            )
        )
    return ServerSplit(tuple(out), "metrics")
