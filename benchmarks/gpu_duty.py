"""The ``duty`` phase of benchmarks.gpu_mdeberta: is the adapter's b=1 overhead the adapter, or idle time?

In-process ONNX Runtime is measured back to back; a served b=1 request leaves the python stub idle between two
``session.run`` calls (HTTP, Triton's scheduling, the stub hand-over: ~0.5-1 ms). This phase measures only
``session.run`` in both places under the same arrival pattern:
- in-process, with 0, 0.5, 1 and 2 ms of sleep between runs (a waiting server thread sleeps too), for the
  default intra-op thread pool, one thread, and the pool with spinning off (``session.intra_op.allow_spinning``);
- served, the stub's own ``session.run`` (``PYTEST_TRITON_ADAPTER_TIMINGS``) with one client (gaps) and with two
  clients on one instance (the stub never waits: back to back, like the in-process loop).
If served-with-one-client matches in-process-with-gaps and served-with-two-clients matches back to back, the
adapter adds nothing at b=1 and the ratio in the report measures the duty cycle.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from benchmarks import gpu_common as gpu
from benchmarks.common import cycle

GAPS_MS = (0.0, 0.5, 1.0, 2.0)
SECONDS_PER_CELL = 3.0
POOLS: dict[str, dict[str, Any]] = {"default": {}, "1 thread": {"threads": 1}, "no spinning": {"spinning": False}}


def paced_run_ms(call: Callable[[], object], gap_ms: float, seconds: float = SECONDS_PER_CELL) -> dict[str, Any]:
    """p50 of ``call`` alone, each call preceded by ``gap_ms`` of sleep (the sleep is not timed)."""
    for _ in range(10):
        call()
    times: list[float] = []
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline or len(times) < 20:
        if gap_ms:
            time.sleep(gap_ms / 1e3)
        began = time.perf_counter_ns()
        call()
        times.append((time.perf_counter_ns() - began) / 1e6)
    times.sort()
    return {"p50_ms": statistics.median(times), "p90_ms": times[int(len(times) * 0.9)], "count": len(times)}


def _session(ort: Any, path: str, providers: list[Any], threads: int = 0, spinning: bool = True) -> Any:
    options = ort.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
    if not spinning:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(path, options, providers=providers)


def phase_duty(run: Any) -> None:
    import onnxruntime as ort

    result: dict[str, Any] = {"gaps_ms": list(GAPS_MS), "inprocess": {}, "served": {}}
    feeds = run.batches(1)
    for dtype in ("fp32", "fp16"):
        for pool, kwargs in POOLS.items():
            session = _session(ort, str(run.files[dtype]), run.providers, **kwargs)
            call = cycle([gpu.run_call(session, f) for f in feeds])
            cells = {str(gap): paced_run_ms(call, gap) for gap in GAPS_MS}
            result["inprocess"][f"{dtype} {pool}"] = cells
            shown = ", ".join(f"{g} ms gap {c['p50_ms']:.3f}" for g, c in cells.items())
            print(f"duty in-process {dtype} {pool}: {shown}")
            del session
    models: list[gpu.Model] = [
        ("mdeberta", "fp32", {}, None),
        ("mdeberta_t1", "fp32", {}, gpu.params(intra_op_thread_count="1")),
        ("mdeberta_fp16", "fp16", {}, None),
    ]
    timings = run.work / "adapter-timings-duty.txt"
    factory, server = gpu.serve(run, "duty", models, env={gpu.TIMINGS_ENV: str(timings)})
    try:
        for name, _, _, _ in models:
            one = gpu.served_latency(run, server.urls.http, name, 1, timings)
            skip = len(timings.read_text(encoding="utf-8").splitlines())
            rate = gpu.concurrent_throughput(server.urls.http, name, run.batches(1)[0], 2, 5.0)
            two = gpu.adapter_timings(timings, name, 1, skip)
            result["served"][name] = {"one_client": one, "two_clients": {"samples_per_s": rate, "adapter": two}}
            print(f"duty served {name}: 1 client {one['adapter']}, 2 clients {two} ({rate:.0f}/s)")
    finally:
        factory.stop_all()
        gpu.cleanup(run, "duty")
    run.state["duty"] = result


def report_lines(state: dict[str, Any]) -> list[str]:
    duty = state.get("duty")
    if not duty:
        return ["not run"]
    gaps = [str(g) for g in duty["gaps_ms"]]
    lines = [
        "In-process `session.run` p50 (ms) with a sleep of G ms before each run:",
        "",
        "| session | " + " | ".join(f"G={g}" for g in gaps) + " | G=1 / G=0 |",
        "|---|" + "---|" * (len(gaps) + 1),
    ]
    for key, cells in duty["inprocess"].items():
        p50 = [cells[g]["p50_ms"] for g in gaps]
        ratio = cells["1.0"]["p50_ms"] / p50[0]
        lines.append(f"| {key} | " + " | ".join(f"{v:.2f}" for v in p50) + f" | {ratio:.3f} |")
    lines += [
        "",
        "Served (one instance), the stub's own `session.run` p50 (ms), against in-process back to back (G=0) and",
        "with a 1 ms gap (G=1) for the same session options:",
        "",
        "| model | 1 client | 2 clients | in-process G=0 | in-process G=1 | 1 client / G=1 | 2 clients / G=0 |",
        "|---|---|---|---|---|---|---|",
    ]
    twins = {"mdeberta": "fp32 default", "mdeberta_t1": "fp32 1 thread", "mdeberta_fp16": "fp16 default"}
    for name, row in duty["served"].items():
        one = row["one_client"].get("adapter", {}).get("session_run_ms", float("nan"))
        two = row["two_clients"].get("adapter", {}).get("session_run_ms", float("nan"))
        ref = duty["inprocess"].get(twins.get(name, ""), {})
        g0, g1 = ref.get("0.0", {}).get("p50_ms", float("nan")), ref.get("1.0", {}).get("p50_ms", float("nan"))
        lines.append(f"| {name} | {one:.2f} | {two:.2f} | {g0:.2f} | {g1:.2f} | {one / g1:.3f} | {two / g0:.3f} |")
    return lines
