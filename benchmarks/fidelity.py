"""Fidelity of the plugin's latency measurement against perf_analyzer and tritonclient.http, on one server.

Run from the project's root (not a timed test)::

    python -m benchmarks.fidelity [--rounds 5] [--repo model_repos/scenario07/onnx] [--window-ms 1000]

One server (local launcher), one model, batch 1, concurrency 1, HTTP, the same tokenized NLI samples cycled in
the same order by every arm. Each round measures every arm for the same short time (``--windows`` windows of
``--window-ms``, taken as they come: no arm waits for its own stability), in an order that rotates from round to
round, so that the server's drift lands on every arm alike (the interleaving of the relative budgets,
``pytest_triton.bench.interleave``). The arms:

- ``plugin``: ``TritonHttpTransport.infer`` (the plugin's client as tests use it);
- ``prepared``: ``TritonHttpTransport.send`` of requests encoded once (as perf_analyzer loads its data once);
- ``perf_analyzer``: the binary from the tritonclient 2.41.0 wheel (``benchmarks.perf_analyzer``);
- ``tritonclient``: ``tritonclient.http.InferenceServerClient.infer`` with binary tensors and inputs built once
  (the library the hand-written client replaces).

Reported per round and as the median of the per-round (paired) ratios: each arm's p50 over perf_analyzer's, and
each arm's client overhead = mean latency - the server's queue + compute over the same requests (perf_analyzer:
Client Send + Network+Server Send/Recv + Client Recv from its CSV; the others: Triton's statistics API).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from datetime import UTC
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from benchmarks.common import RESULTS
from benchmarks.common import ROOT
from benchmarks.common import SAMPLES
from benchmarks.common import TOKENIZER
from benchmarks.common import cpu_model
from benchmarks.common import cycle
from benchmarks.common import tokenized_samples
from benchmarks.common import version
from benchmarks.perf_analyzer import STABLE_WINDOWS
from benchmarks.perf_analyzer import TOOL_DIR
from benchmarks.perf_analyzer import WHEEL_VERSION
from benchmarks.perf_analyzer import Result
from benchmarks.perf_analyzer import ToolError
from benchmarks.perf_analyzer import ensure_perf_analyzer
from benchmarks.perf_analyzer import run_perf_analyzer
from benchmarks.perf_analyzer import server_split
from benchmarks.perf_analyzer import write_input_data
from pytest_triton.bench.sampling import WindowPolicy
from pytest_triton.bench.sampling import measure
from pytest_triton.bench.server_stats import StatsSnapshot
from pytest_triton.bench.server_stats import fetch_statistics
from pytest_triton.client.rest import TritonRest
from pytest_triton.client.transports import TritonHttpTransport
from pytest_triton.servers.factory import ServerFactory
from pytest_triton.servers.protocol import ServeOptions

MODEL = "mdeberta"
OUTPUT = "logits"
P50_GOAL = 0.03
ARMS = ("plugin", "prepared", "perf_analyzer", "tritonclient")
ANY_SPREAD = 1000.0  # a stability threshold no window misses: the fixed windows are taken as they come


def measure_client(tool: str, url: str, model: str, call: Callable[[], object], window_ms: float) -> Result:
    """``STABLE_WINDOWS`` time windows of sequential calls, taken as they come; the server split of them."""
    policy = WindowPolicy(
        mode="time",
        window_ms=window_ms,
        threshold=ANY_SPREAD,
        stable_windows=STABLE_WINDOWS,
        max_windows=STABLE_WINDOWS,
        max_seconds=None,
    )
    snapshots: list[StatsSnapshot] = []
    m = measure(call, warmup=5, policy=policy, on_boundary=lambda: snapshots.append(fetch_statistics(url, model)))
    split = server_split(snapshots[0], snapshots[-1], model)
    stats = m.stats()
    mean_us = stats.mean_ms * 1e3
    return Result(
        tool=tool,
        p50_us=stats.p50_ms * 1e3,
        mean_us=mean_us,
        requests=stats.count,
        stable=True,
        server_request_us=split.request_us,
        server_queue_compute_us=split.queue_us + split.compute_us,
        overhead_us=mean_us - split.queue_us - split.compute_us,
    )


def plugin_calls(transport: TritonHttpTransport, model: str, requests: Sequence[dict[str, NDArray[Any]]]) -> Any:
    """One ``transport.infer`` per request (the plugin's client as tests use it)."""
    return [lambda r=r: transport.infer(model, r, [OUTPUT]) for r in requests]


def prepared_calls(transport: TritonHttpTransport, model: str, requests: Sequence[dict[str, NDArray[Any]]]) -> Any:
    """``transport.send`` of each request prepared (validated, encoded) once."""
    prepared = [transport.prepare(model, r, [OUTPUT]) for r in requests]
    return [lambda p=p: transport.send(p) for p in prepared]


def tritonclient_calls(client: Any, model: str, requests: Sequence[dict[str, NDArray[Any]]]) -> Any:
    """``tritonclient.http`` infer calls with binary tensors, the InferInput objects built once per request."""
    import tritonclient.http as httpclient

    calls = []
    for request in requests:
        inputs = []
        for name, array in request.items():
            item = httpclient.InferInput(name, list(array.shape), "INT64")
            item.set_data_from_numpy(array, binary_data=True)
            inputs.append(item)
        outputs = [httpclient.InferRequestedOutput(OUTPUT, binary_data=True)]
        calls.append(lambda i=inputs, o=outputs: client.infer(model, i, outputs=o).as_numpy(OUTPUT))
    return calls


def interleaved_rounds(arms: Mapping[str, Callable[[], Result]], rounds: int) -> list[dict[str, Result]]:
    """``rounds`` rounds of every arm once, the order rotated by one arm each round (drift lands on all)."""
    names = list(arms)
    out: list[dict[str, Result]] = []
    for index in range(rounds):
        order = names[index % len(names) :] + names[: index % len(names)]
        result = {name: arms[name]() for name in order}
        for res in result.values():
            print(
                f"  round {index + 1} {res.tool:>13}: p50 {res.p50_us:8.0f} µs  mean {res.mean_us:8.0f} µs  "
                f"server q+c {res.server_queue_compute_us:8.0f} µs  overhead {res.overhead_us:6.0f} µs  "
                f"n={res.requests}",
                flush=True,
            )
        out.append({name: result[name] for name in names})
    return out


def table(rounds: Sequence[dict[str, Result]]) -> list[str]:
    """Per round: every arm's p50, its ratio to perf_analyzer's, its client overhead; then the medians."""
    arms = list(rounds[0])

    def cells(arm: str) -> list[str]:
        own = ["p50 µs", "overhead µs"] if arm == "perf_analyzer" else ["p50 µs", "/ perf_analyzer", "overhead µs"]
        return [f"{arm} {c}" for c in own]

    head = ["round", *(c for a in arms for c in cells(a))]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    columns: list[list[float]] = []
    kinds: list[str] = []
    for index, r in enumerate(rounds, 1):
        base = r["perf_analyzer"].p50_us
        values: list[float] = []
        kinds = []
        for a in arms:
            values.append(r[a].p50_us)
            kinds.append("us")
            if a != "perf_analyzer":
                values.append(r[a].p50_us / base)
                kinds.append("ratio")
            values.append(r[a].overhead_us)
            kinds.append("us")
        columns.append(values)
        lines.append(f"| {index} | " + " | ".join(_cell(k, v) for k, v in zip(kinds, values)) + " |")
    medians = [statistics.median(c) for c in zip(*columns)]
    lines.append("| **median** | " + " | ".join(_cell(k, v) for k, v in zip(kinds, medians)) + " |")
    return lines


def _cell(kind: str, value: float) -> str:
    return f"{value:.3f}" if kind == "ratio" else f"{value:.0f}"


def verdict(rounds: Sequence[dict[str, Result]]) -> list[str]:
    """The medians of the paired per-round ratios and overheads, against the goals."""

    def ratios(arm: str) -> list[float]:
        return [r[arm].p50_us / r["perf_analyzer"].p50_us for r in rounds]

    def overhead(arm: str) -> float:
        return float(statistics.median(r[arm].overhead_us for r in rounds))

    pa = overhead("perf_analyzer")
    lines = []
    for arm in (a for a in rounds[0] if a != "perf_analyzer"):
        ratio = statistics.median(ratios(arm))
        within = sum(abs(x - 1) <= P50_GOAL for x in ratios(arm))
        lines.append(
            f"- {arm}: median of per-round p50 ratios to perf_analyzer {ratio:.3f} "
            f"({', '.join(f'{x:.3f}' for x in ratios(arm))}; {within} of {len(rounds)} rounds within "
            f"{P50_GOAL:.0%}); client overhead {overhead(arm):.0f} µs vs perf_analyzer {pa:.0f} µs "
            f"({overhead(arm) - pa:+.0f} µs)"
        )
    if "tritonclient" in rounds[0]:
        pl = [r["plugin"].p50_us / r["tritonclient"].p50_us for r in rounds]
        lines.append(
            f"- plugin / tritonclient.http p50: median {statistics.median(pl):.3f} "
            f"({', '.join(f'{x:.3f}' for x in pl)}); overhead {overhead('plugin'):.0f} vs "
            f"{overhead('tritonclient'):.0f} µs"
        )
    return lines


def run_fidelity(
    url: str,
    model: str,
    requests: Sequence[dict[str, NDArray[Any]]],
    *,
    binary: Path,
    workdir: Path,
    rounds: int,
    window_ms: float,
) -> list[dict[str, Result]]:
    """The interleaved rounds of the four arms against one running server (also used by the GPU phase)."""
    import tritonclient.http as httpclient

    input_data = workdir / "input_data.json"
    write_input_data(requests, input_data)
    transport = TritonHttpTransport(url)
    client = httpclient.InferenceServerClient(url.split("://", 1)[-1], connection_timeout=60, network_timeout=300)
    try:
        plugin = cycle(plugin_calls(transport, model, requests))
        prepared = cycle(prepared_calls(transport, model, requests))
        library = cycle(tritonclient_calls(client, model, requests))
        for _ in requests:  # warm the server (and the adapter's session) once
            plugin()
        timeout_s = STABLE_WINDOWS * window_ms / 1e3 * 4 + 120
        arms: dict[str, Callable[[], Result]] = {
            "plugin": lambda: measure_client("plugin", url, model, plugin, window_ms),
            "prepared": lambda: measure_client("prepared", url, model, prepared, window_ms),
            "perf_analyzer": lambda: run_perf_analyzer(
                binary,
                url,
                model,
                input_data,
                window_ms,
                workdir,
                timeout_s,
                stability=ANY_SPREAD,
                max_trials=STABLE_WINDOWS,
            ),
            "tritonclient": lambda: measure_client("tritonclient", url, model, library, window_ms),
        }
        return interleaved_rounds(arms, rounds)
    finally:
        transport.close()
        client.close()


def _server_version(url: str) -> str:
    return str(TritonRest(url, timeout=10).get_json("/v2", "reading the server metadata").get("version", "?"))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5, at least 5)")
    parser.add_argument("--repo", type=Path, default=ROOT / "model_repos" / "scenario07" / "onnx")
    parser.add_argument("--tokenizer", type=Path, default=TOKENIZER)
    parser.add_argument("--samples", type=Path, default=SAMPLES)
    parser.add_argument("--window-ms", type=float, default=1000.0, help="one window (default 1000); 3 per arm")
    parser.add_argument("--tool-dir", type=Path, default=TOOL_DIR)
    parser.add_argument("--conditions", default="", help="what else ran on the machine (written to the report)")
    parser.add_argument("--output", type=Path, default=None, help="default benchmarks/results/fidelity-DATE.md")
    args = parser.parse_args(argv)
    if args.rounds < 5:
        parser.error(f"--rounds={args.rounds}: at least 5 rounds (fewer say more about the server than the client)")
    today = datetime.now(UTC)
    output: Path = args.output or RESULTS / f"fidelity-{today:%Y-%m-%d}.md"
    try:
        binary = ensure_perf_analyzer(args.tool_dir)
    except ToolError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    requests = tokenized_samples(args.tokenizer, args.samples)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="fidelity-") as tmp:
        workdir = Path(tmp)
        factory = ServerFactory("local", ServeOptions(gpu=False, staging=workdir / "staging"))
        try:
            server = factory.start(args.repo)
            url = server.urls.http
            assert url is not None, "the local launcher serves HTTP"
            server_version = _server_version(url)
            adapted = [a.describe() for a in server.prepared.adapted] if server.prepared else []
            print(f"server {url} (Triton {server_version}); {len(requests)} samples; {args.rounds} rounds")
            rounds = run_fidelity(
                url, MODEL, requests, binary=binary, workdir=workdir, rounds=args.rounds, window_ms=args.window_ms
            )
        except ToolError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        finally:
            factory.stop_all()
    lines, summary = table(rounds), verdict(rounds)
    print("\n".join(["", *lines, *summary]))
    repo = args.repo.resolve()
    repo_name = repo.relative_to(ROOT) if repo.is_relative_to(ROOT) else repo
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    command = "python -m benchmarks.fidelity " + " ".join(argv if argv is not None else sys.argv[1:])
    text = [
        f"# Latency fidelity, interleaved: plugin, perf_analyzer, tritonclient.http ({today:%Y-%m-%d %H:%M} UTC)",
        "",
        f"- command: `{command.strip()}`",
        f"- machine: {cpus} CPUs (nproc), {cpu_model()}, {platform.platform()}; load average before "
        f"{', '.join(f'{x:.2f}' for x in load_before)}, after {', '.join(f'{x:.2f}' for x in os.getloadavg())}",
        f"- conditions: {args.conditions or 'not stated'}",
        f"- versions: Python {platform.python_version()}, pytest-triton {version('pytest-triton')}, "
        f"nvidia-pytriton {version('nvidia-pytriton')} (Triton server {server_version}), "
        f"perf_analyzer from tritonclient {WHEEL_VERSION}, tritonclient {version('tritonclient')}, "
        f"numpy {np.__version__}",
        f"- model: {MODEL} from {repo_name}, batch 1, concurrency 1, HTTP, {len(requests)} tokenized NLI samples "
        "cycled in order; engine path: " + ("; ".join(adapted) or "native backend"),
        f"- rounds: {len(rounds)}, each arm {STABLE_WINDOWS} windows of {args.window_ms:g} ms taken as they come, "
        f"the order rotating ({', '.join(ARMS)} first, then shifted by one each round)",
        "- overhead = mean latency - server queue - server compute (perf_analyzer: Client Send + Network+Server "
        "Send/Recv + Client Recv from its CSV; the others: Triton statistics API over the same windows)",
        "",
        *lines,
        "",
        *summary,
        "",
    ]
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text("\n".join(text), encoding="utf-8")
    print(f"\nwrote {output}")
    return 0


if __name__ == "__main__":
    started = time.monotonic()
    code = main()
    print(f"({time.monotonic() - started:.0f} s)")
    sys.exit(code)
