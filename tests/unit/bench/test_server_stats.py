"""Server-side split from canned Triton 2.51 statistics and metrics (shapes copied from a real server)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
from typing import Any

import pytest

from pytest_triton.bench.server_stats import StatsWindow
from pytest_triton.bench.server_stats import composing_models
from pytest_triton.bench.server_stats import fetch_metrics
from pytest_triton.bench.server_stats import fetch_statistics
from pytest_triton.bench.server_stats import metrics_delta
from pytest_triton.bench.server_stats import parse_metrics
from pytest_triton.bench.server_stats import parse_statistics
from pytest_triton.bench.server_stats import stats_delta
from pytest_triton.errors import ServerError


def model_stats(
    name: str, n: int, queue_ns: int, cin: int, infer: int, cout: int, execs: int | None = None
) -> dict[str, Any]:
    """One entry of ``model_stats`` as Triton 2.51 writes it (cumulative over ``n`` requests)."""
    total = queue_ns + cin + infer + cout + 1000 * n
    return {
        "name": name,
        "version": "1",
        "last_inference": 1795943314513,
        "inference_count": n,
        "execution_count": n if execs is None else execs,
        "inference_stats": {
            "success": {"count": n, "ns": total},
            "fail": {"count": 0, "ns": 0},
            "queue": {"count": n, "ns": queue_ns},
            "compute_input": {"count": n, "ns": cin},
            "compute_infer": {"count": n, "ns": infer},
            "compute_output": {"count": n, "ns": cout},
            "cache_hit": {"count": 0, "ns": 0},
            "cache_miss": {"count": 0, "ns": 0},
        },
        "response_stats": {},
        "batch_stats": [],
        "memory_usage": [],
    }


BEFORE = {
    "model_stats": [
        model_stats("ensemble_mdeberta", 10, 60_000, 1_000_000, 300_000_000, 5_000_000),
        model_stats("mdeberta", 12, 13_000_000, 2_000_000, 250_000_000, 1_000_000),
        model_stats("tokenize", 10, 100_000, 500_000, 20_000_000, 400_000),
        model_stats("other", 5, 1, 1, 1, 1),
    ]
}
# 100 more requests through the ensemble; mdeberta queues ~1.13 ms per request (dynamic batching, 1000 µs delay)
AFTER = {
    "model_stats": [
        model_stats("ensemble_mdeberta", 110, 660_000, 11_000_000, 2_000_000_000, 55_000_000),
        model_stats("mdeberta", 112, 126_000_000, 12_000_000, 1_650_000_000, 6_000_000, execs=80),
        model_stats("tokenize", 110, 1_100_000, 5_500_000, 220_000_000, 4_400_000),
        model_stats("other", 5, 1, 1, 1, 1),
    ]
}


def test_delta_gives_mean_microseconds_per_request_for_each_model() -> None:
    split = stats_delta(parse_statistics(json.dumps(BEFORE)), parse_statistics(json.dumps(AFTER)))
    assert [m.model for m in split.models] == ["ensemble_mdeberta", "mdeberta", "tokenize"]  # "other" idle
    mdeberta = split.for_model("mdeberta")
    assert mdeberta is not None
    assert (mdeberta.requests, mdeberta.executions, mdeberta.failures) == (100, 68, 0)
    assert mdeberta.queue_us == pytest.approx(1130.0)
    assert mdeberta.compute_input_us == pytest.approx(100.0)
    assert mdeberta.compute_infer_us == pytest.approx(14000.0)
    assert mdeberta.compute_output_us == pytest.approx(50.0)
    assert mdeberta.compute_us == pytest.approx(14150.0)
    assert mdeberta.request_us == pytest.approx(1130 + 14150 + 1)
    ensemble = split.for_model("ensemble_mdeberta")
    assert ensemble is not None
    assert ensemble.compute_infer_us == pytest.approx(17000.0)


def test_delta_restricted_to_named_models_keeps_idle_ones() -> None:
    split = stats_delta(parse_statistics(BEFORE), parse_statistics(AFTER), models=["tokenize", "other"])
    assert [(m.model, m.requests) for m in split.models] == [("other", 0), ("tokenize", 100)]
    other = split.for_model("other")
    assert other is not None
    assert other.queue_us == 0.0  # no division by zero


def test_a_model_loaded_during_the_window_counts_from_zero() -> None:
    split = stats_delta({}, parse_statistics(AFTER), models=["tokenize"])
    (tokenize,) = split.models
    assert tokenize.requests == 110
    assert tokenize.queue_us == pytest.approx(10.0)


def test_real_triton_payload_parses() -> None:
    # verbatim from Triton 2.51 (nvidia-pytriton 0.7.0): python_add behind an ensemble, 2 requests
    payload = (
        '{"model_stats":[{"name":"ens","version":"1","last_inference":1795943314513,"inference_count":2,'
        '"execution_count":2,"inference_stats":{"success":{"count":2,"ns":65625858},"fail":{"count":0,"ns":0},'
        '"queue":{"count":2,"ns":6491},"compute_input":{"count":2,"ns":173936},"compute_infer":{"count":2,'
        '"ns":64640429},"compute_output":{"count":2,"ns":610282},"cache_hit":{"count":0,"ns":0},"cache_miss":'
        '{"count":0,"ns":0}},"response_stats":{},"batch_stats":[{"batch_size":1,"compute_input":{"count":2,'
        '"ns":173936},"compute_infer":{"count":2,"ns":64640429},"compute_output":{"count":2,"ns":610282}}],'
        '"memory_usage":[]}]}'
    )
    (counters,) = parse_statistics(payload).values()
    assert counters.phases["queue"] == (2, 6491)
    split = stats_delta({}, parse_statistics(payload))
    assert split.models[0].compute_infer_us == pytest.approx(32320.2145)


METRICS_BEFORE = """\
# HELP nv_inference_request_success Number of successful inference requests, all batch sizes
# TYPE nv_inference_request_success counter
nv_inference_request_success{model="ens",version="1"} 2
nv_inference_request_success{model="python_add",version="1"} 3
nv_inference_request_failure{model="ens",reason="BACKEND",version="1"} 0
nv_inference_request_failure{model="python_add",reason="OTHER",version="1"} 0
nv_inference_exec_count{model="ens",version="1"} 2
nv_inference_exec_count{model="python_add",version="1"} 3
nv_inference_request_duration_us{model="ens",version="1"} 65625
nv_inference_request_duration_us{model="python_add",version="1"} 65892
nv_inference_queue_duration_us{model="ens",version="1"} 6
nv_inference_queue_duration_us{model="python_add",version="1"} 125
nv_inference_compute_input_duration_us{model="python_add",version="1"} 189
nv_inference_compute_infer_duration_us{model="python_add",version="1"} 64851
nv_inference_compute_output_duration_us{model="python_add",version="1"} 712
nv_cpu_utilization 0
"""
METRICS_AFTER = (
    METRICS_BEFORE.replace('python_add",version="1"} 3\n', 'python_add",version="1"} 13\n')
    .replace("} 125\n", "} 1125\n")
    .replace("} 64851\n", "} 84851\n")
    .replace(
        'nv_inference_request_failure{model="python_add",reason="OTHER",version="1"} 0',
        'nv_inference_request_failure{model="python_add",reason="OTHER",version="1"} 1',
    )
)


def test_metrics_parse_labels_and_skip_comments() -> None:
    snap = parse_metrics(METRICS_BEFORE)
    assert snap[("nv_inference_queue_duration_us", frozenset({("model", "python_add"), ("version", "1")}))] == 125
    assert snap[("nv_cpu_utilization", frozenset())] == 0
    assert not any(name.startswith("#") for name, _ in snap)


def test_metrics_delta_gives_the_same_split() -> None:
    split = metrics_delta(parse_metrics(METRICS_BEFORE), parse_metrics(METRICS_AFTER))
    assert split.source == "metrics"
    (add,) = split.models  # "ens" served nothing in the window
    assert (add.model, add.requests, add.failures) == ("python_add", 10, 1)
    assert add.queue_us == pytest.approx(100.0)
    assert add.compute_infer_us == pytest.approx(2000.0)


# -- over HTTP (a stand-in server speaking the same routes) ------------------------------------------------------


class _Routes:
    def __init__(self) -> None:
        self.stats = [BEFORE, AFTER]
        self.calls: list[str] = []


@pytest.fixture
def fake_triton() -> Iterator[tuple[str, _Routes]]:
    routes = _Routes()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            routes.calls.append(self.path)
            if self.path == "/v2/models/stats":
                body, status = json.dumps(routes.stats.pop(0)).encode(), 200
            elif self.path == "/v2/models/ensemble_mdeberta/config":
                steps = [{"model_name": "tokenize"}, {"model_name": "mdeberta"}]
                body, status = (
                    json.dumps({"name": "ensemble_mdeberta", "ensemble_scheduling": {"step": steps}}).encode(),
                    200,
                )
            elif self.path.endswith("/config"):
                body, status = b'{"name": "x", "platform": "onnxruntime_onnx"}', 200
            elif self.path == "/metrics":
                body, status = METRICS_BEFORE.encode(), 200
            else:
                body, status = b'{"error":"Request for unknown model: \'nope\' is not found"}', 400
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", routes
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_stats_window_snapshots_around_the_block_and_includes_composing_models(
    fake_triton: tuple[str, _Routes],
) -> None:
    url, routes = fake_triton
    with StatsWindow(url, "ensemble_mdeberta") as window:
        assert window.models == ["ensemble_mdeberta", "tokenize", "mdeberta"]
    assert window.split is not None
    assert sorted(m.model for m in window.split.models) == ["ensemble_mdeberta", "mdeberta", "tokenize"]
    assert routes.calls.count("/v2/models/stats") == 2


def test_composing_models_and_fetchers(fake_triton: tuple[str, _Routes]) -> None:
    url, _ = fake_triton
    assert composing_models(url, "ensemble_mdeberta") == ["tokenize", "mdeberta"]
    assert composing_models(url, "mdeberta") == []
    assert len(fetch_statistics(url)) == 4
    assert ("nv_cpu_utilization", frozenset()) in fetch_metrics(url + "/metrics")


def test_http_errors_carry_triton_wording(fake_triton: tuple[str, _Routes]) -> None:
    url, _ = fake_triton
    with pytest.raises(ServerError, match=r"HTTP 400 .*Request for unknown model: 'nope' is not found"):
        fetch_statistics(url, "nope")


def test_unreachable_server_is_a_server_error() -> None:
    with pytest.raises(ServerError, match=r"GET http://127.0.0.1:9/v2/models/stats failed: .*is the server running"):
        fetch_statistics("http://127.0.0.1:9", timeout=2)
