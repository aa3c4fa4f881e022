"""Fidelity of the plugin's latency measurement against perf_analyzer, on one served model, in one run.

Run as a script (not a timed test)::

    python -m benchmarks.fidelity [--rounds 3] [--repo model_repos/scenario07/onnx] [--interval-ms 2000]

1. Installs perf_analyzer into ``.tools/perf_analyzer/`` (git-ignored) when missing: ``pip download --no-deps
   tritonclient==2.41.0`` into a temporary folder, only ``tritonclient-2.41.0.data/data/bin/perf_analyzer`` is
   taken out of the wheel, and ``lib/`` gets ``libb64.so.0d`` and ``libcudart.so.12`` as symlinks to the hashed
   copies that nvidia-pytriton ships in ``site-packages/nvidia_pytriton.libs``. Nothing enters the package's
   dependencies.
2. Starts one server on the repository (:class:`TritonServerFactory`, local launcher).
3. Writes perf_analyzer ``--input-data`` JSON of real tokenized NLI samples (random ids would index out of the
   vocabulary); the plugin cycles through the same samples in the same order.
4. Alternates, for ``--rounds`` rounds: the plugin (``TritonHttpTransport.infer``, batch 1, concurrency 1,
   time windows of ``--interval-ms``, 3 windows within 10%, at most 10, as perf_analyzer), perf_analyzer
   (same settings), and the plugin with prepared requests (``transport.prepare`` once per sample, then
   ``transport.send``: validation and encoding out of the loop, as perf_analyzer loads its input data once).
5. Client overhead = mean latency - the server's time. perf_analyzer's CSV has ``Client Send``,
   ``Network+Server Send/Recv`` and ``Client Recv`` (their sum is ``Avg latency`` minus server queue and compute);
   the plugin's is its mean latency minus the server's queue + compute (same definition) of the kept windows,
   from Triton's statistics API; the server's full request time (``success``) is shown too.

Goals: the plugin's p50 within 3% of perf_analyzer's; the plugin's client overhead no larger than perf_analyzer's.
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
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from benchmarks.common import ROOT
from benchmarks.common import SAMPLES
from benchmarks.common import TOKENIZER
from benchmarks.common import cpu_model
from benchmarks.common import cycle
from benchmarks.common import tokenized_samples
from benchmarks.common import version
from benchmarks.perf_analyzer import MAX_WINDOWS
from benchmarks.perf_analyzer import STABILITY
from benchmarks.perf_analyzer import STABLE_WINDOWS
from benchmarks.perf_analyzer import TOOL_DIR
from benchmarks.perf_analyzer import WHEEL_VERSION
from benchmarks.perf_analyzer import Result
from benchmarks.perf_analyzer import ToolError
from benchmarks.perf_analyzer import ensure_perf_analyzer
from benchmarks.perf_analyzer import run_perf_analyzer
from benchmarks.perf_analyzer import server_split
from benchmarks.perf_analyzer import write_input_data
from pytest_triton.bench.sampling import Measurement
from pytest_triton.bench.sampling import WindowPolicy
from pytest_triton.bench.sampling import measure
from pytest_triton.bench.server_stats import StatsSnapshot
from pytest_triton.bench.server_stats import fetch_statistics
from pytest_triton.client.rest import TritonRest
from pytest_triton.client.transports import TritonHttpTransport
from pytest_triton.servers.base import ServeOptions
from pytest_triton.servers.factory import ServerFactory

MODEL = "mdeberta"
OUTPUT = "logits"
P50_GOAL = 0.03


# -- measurements ---------------------------------------------------------------------------------------------


def measure_client(tool: str, url: str, call: Callable[[], object], interval_ms: float) -> Result:
    """Sequential calls in perf_analyzer's time windows; the server split of the kept windows."""
    policy = WindowPolicy(
        mode="time",
        window_ms=interval_ms,
        threshold=STABILITY,
        stable_windows=STABLE_WINDOWS,
        max_windows=MAX_WINDOWS,
        max_seconds=None,
    )
    snapshots: list[StatsSnapshot] = []
    m: Measurement = measure(
        call, warmup=10, policy=policy, on_boundary=lambda: snapshots.append(fetch_statistics(url, MODEL))
    )
    kept = len(m.windows) - STABLE_WINDOWS
    split = server_split(snapshots[kept], snapshots[-1], MODEL)
    stats = m.stats()
    mean_us = stats.mean_ms * 1e3
    if split.requests != stats.count:
        print(f"  note: {tool}: server counted {split.requests} requests, client {stats.count}", flush=True)
    return Result(
        tool=tool,
        p50_us=stats.p50_ms * 1e3,
        mean_us=mean_us,
        requests=stats.count,
        stable=m.stable,
        server_request_us=split.request_us,
        server_queue_compute_us=split.queue_us + split.compute_us,
        overhead_us=mean_us - split.queue_us - split.compute_us,
    )


def plugin_call(transport: TritonHttpTransport, request: dict[str, NDArray[Any]]) -> Callable[[], object]:
    """One ``transport.infer`` of ``request`` (the plugin's client as tests use it)."""
    return lambda: transport.infer(MODEL, request, [OUTPUT])


def prepared_call(transport: TritonHttpTransport, request: dict[str, NDArray[Any]]) -> Callable[[], object]:
    """``transport.send`` of a request prepared (validated, encoded) once, as perf_analyzer prepares its data."""
    prepared = transport.prepare(MODEL, request, [OUTPUT])
    return lambda: transport.send(prepared)


# -- report ---------------------------------------------------------------------------------------------------


def _server_version(url: str) -> str:
    return str(TritonRest(url, timeout=10).get_json("/v2", "reading the server metadata").get("version", "?"))


def table(rounds: Sequence[dict[str, Result]]) -> list[str]:
    head = (
        "| round | plugin p50 µs | perf_analyzer p50 µs | ratio | plugin overhead µs | perf_analyzer overhead µs "
        "| plugin latency - server request µs | prepared p50 µs | prepared ratio | prepared overhead µs |"
    )
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]

    def row(label: str, values: Sequence[float]) -> str:
        pl, pa, ratio, plo, pao, plr, ka, ka_ratio, kao = values
        return (
            f"| {label} | {pl:.0f} | {pa:.0f} | {ratio:.3f} | {plo:.0f} | {pao:.0f} | {plr:.0f} "
            f"| {ka:.0f} | {ka_ratio:.3f} | {kao:.0f} |"
        )

    columns: list[list[float]] = []
    for index, r in enumerate(rounds, 1):
        values = [
            r["plugin"].p50_us,
            r["perf_analyzer"].p50_us,
            r["plugin"].p50_us / r["perf_analyzer"].p50_us,
            r["plugin"].overhead_us,
            r["perf_analyzer"].overhead_us,
            r["plugin"].overhead_vs_request_us,
            r["prepared"].p50_us,
            r["prepared"].p50_us / r["perf_analyzer"].p50_us,
            r["prepared"].overhead_us,
        ]
        columns.append(values)
        lines.append(row(str(index), values))
    medians = [statistics.median(c) for c in zip(*columns)]
    lines.append(row("**median**", medians))  # ratios: the median of the per-round ratios
    return lines


def verdict(rounds: Sequence[dict[str, Result]]) -> list[str]:
    def med(tool: str, attr: str) -> float:
        return float(statistics.median(getattr(r[tool], attr) for r in rounds))

    ratios = [r["plugin"].p50_us / r["perf_analyzer"].p50_us for r in rounds]
    ratio = statistics.median(ratios)
    pl_o, pa_o = med("plugin", "overhead_us"), med("perf_analyzer", "overhead_us")
    ka_ratio = statistics.median(r["prepared"].p50_us / r["perf_analyzer"].p50_us for r in rounds)
    ka_o = med("prepared", "overhead_us")
    p50_ok = abs(ratio - 1) <= P50_GOAL
    over_ok = pl_o <= pa_o
    unstable = [f"{n}:{t}" for n, r in enumerate(rounds, 1) for t, res in r.items() if not res.stable]
    return [
        f"- median of per-round p50 ratios plugin/perf_analyzer: {ratio:.3f} (rounds: "
        + ", ".join(f"{x:.3f}" for x in ratios)
        + f"); goal within {P50_GOAL:.0%}: **{'met' if p50_ok else 'NOT met'}**",
        f"- client overhead (mean latency - server queue - compute): plugin {pl_o:.0f} µs vs perf_analyzer "
        f"{pa_o:.0f} µs; goal plugin ≤ perf_analyzer: **{'met' if over_ok else 'NOT met'}** "
        f"(plugin is {pl_o - pa_o:+.0f} µs)",
        "- prepared variant (transport.send of requests encoded once): "
        f"p50 ratio {ka_ratio:.3f}, overhead {ka_o:.0f} µs (goal plugin ≤ perf_analyzer: "
        f"**{'met' if ka_o <= pa_o else 'NOT met'}**, {ka_o - pa_o:+.0f} µs) "
        f"({'within' if abs(ka_ratio - 1) <= P50_GOAL else 'outside'} {P50_GOAL:.0%})",
        f"- windows not stable (within {STABILITY:.0%} over {STABLE_WINDOWS} windows): "
        + (", ".join(unstable) if unstable else "none"),
    ]


# -- main -----------------------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=3, help="A/B rounds (default 3)")
    parser.add_argument("--repo", type=Path, default=ROOT / "model_repos" / "scenario07" / "onnx")
    parser.add_argument("--tokenizer", type=Path, default=TOKENIZER)
    parser.add_argument("--samples", type=Path, default=SAMPLES)
    parser.add_argument("--interval-ms", type=float, default=2000.0, help="measurement window (default 2000)")
    parser.add_argument("--tool-dir", type=Path, default=TOOL_DIR)
    parser.add_argument("--output", type=Path, default=None, help="default benchmarks/results/fidelity-DATE.md")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    output: Path = args.output or ROOT / "benchmarks" / "results" / f"fidelity-{date.today().isoformat()}.md"

    try:
        binary = ensure_perf_analyzer(args.tool_dir)
    except ToolError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    requests = tokenized_samples(args.tokenizer, args.samples)

    rounds: list[dict[str, Result]] = []
    with tempfile.TemporaryDirectory(prefix="fidelity-") as tmp:
        workdir = Path(tmp)
        input_data = workdir / "input_data.json"
        write_input_data(requests, input_data)
        factory = ServerFactory("local", ServeOptions(gpu=False, staging=workdir / "staging"))
        transport: TritonHttpTransport | None = None
        try:
            server = factory.start(args.repo)
            url = server.urls.http
            assert url is not None, "the local launcher serves HTTP"
            server_version = _server_version(url)
            transport = TritonHttpTransport(url)
            plugin_calls = [plugin_call(transport, r) for r in requests]
            prepared_calls = [prepared_call(transport, r) for r in requests]
            for call in plugin_calls:  # warm the server (and the adapter's session) once
                call()
            timeout_s = MAX_WINDOWS * args.interval_ms / 1e3 * 3 + 60
            print(f"server {url} (Triton {server_version}); {len(requests)} samples; {args.rounds} rounds")
            for index in range(1, args.rounds + 1):
                result: dict[str, Result] = {}
                result["plugin"] = measure_client("plugin", url, cycle(plugin_calls), args.interval_ms)
                result["perf_analyzer"] = run_perf_analyzer(
                    binary, url, MODEL, input_data, args.interval_ms, workdir, timeout_s
                )
                result["prepared"] = measure_client("prepared", url, cycle(prepared_calls), args.interval_ms)
                for res in result.values():
                    print(
                        f"  round {index} {res.tool:>13}: p50 {res.p50_us:8.0f} µs  mean {res.mean_us:8.0f} µs  "
                        f"server q+c {res.server_queue_compute_us:8.0f} µs  request {res.server_request_us:8.0f} µs  "
                        f"overhead {res.overhead_us:6.0f} µs  n={res.requests}{'' if res.stable else ' UNSTABLE'}",
                        flush=True,
                    )
                rounds.append(result)
        except ToolError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        finally:
            if transport is not None:
                transport.close()
            factory.stop_all()

    lines = table(rounds)
    repo = args.repo.resolve()
    repo_name = repo.relative_to(ROOT) if repo.is_relative_to(ROOT) else repo
    summary = verdict(rounds)
    print()
    print("\n".join(lines))
    print("\n".join(summary))
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    command = "python -m benchmarks.fidelity " + " ".join(argv if argv is not None else sys.argv[1:])
    text = [
        f"# Latency fidelity: plugin vs perf_analyzer ({date.today().isoformat()})",
        "",
        f"- command: `{command.strip()}`",
        f"- machine: {cpus} CPUs (nproc), {cpu_model()}, {platform.platform()}",
        f"- versions: Python {platform.python_version()}, pytest-triton {version('pytest-triton')}, "
        f"nvidia-pytriton {version('nvidia-pytriton')} (Triton server {server_version}), "
        f"perf_analyzer from tritonclient {WHEEL_VERSION}, numpy {np.__version__}",
        f"- model: {MODEL} from {repo_name}, batch 1, concurrency 1, HTTP, "
        f"{len(requests)} tokenized NLI samples cycled in order",
        f"- windows: {args.interval_ms:g} ms, stable when {STABLE_WINDOWS} windows within {STABILITY:.0%} "
        f"(at most {MAX_WINDOWS}), same for both; rounds alternate plugin / perf_analyzer / plugin prepared",
        "- overhead = mean latency - server queue - server compute (perf_analyzer: Client Send + Network+Server "
        "Send/Recv + Client Recv from its CSV; plugin: Triton statistics API over the kept windows)",
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
