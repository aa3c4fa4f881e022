"""Fidelity of the plugin's latency measurement against perf_analyzer, on one served model, in one run.

Run as a script (not a timed test)::

    python benchmarks/fidelity.py [--rounds 3] [--repo model_repos/scenario07/onnx] [--interval-ms 2000]

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
import csv
import importlib.util
import io
import itertools
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import zipfile
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pytest_triton.bench.sampling import Measurement
from pytest_triton.bench.sampling import WindowPolicy
from pytest_triton.bench.sampling import measure
from pytest_triton.bench.server_stats import PhaseSplit
from pytest_triton.bench.server_stats import StatsSnapshot
from pytest_triton.bench.server_stats import fetch_statistics
from pytest_triton.bench.server_stats import stats_delta
from pytest_triton.client.nli import NliTokenizer
from pytest_triton.client.nli import load_samples
from pytest_triton.client.rest import TritonRest
from pytest_triton.client.transports import TritonHttpTransport
from pytest_triton.servers.base import ServeOptions
from pytest_triton.servers.factory import ServerFactory

ROOT = Path(__file__).resolve().parent.parent
TOOL_DIR = ROOT / ".tools" / "perf_analyzer"
WHEEL_VERSION = "2.41.0"
WHEEL_MEMBER = f"tritonclient-{WHEEL_VERSION}.data/data/bin/perf_analyzer"
LIBRARIES = {"libb64.so.0d": "libb64-*.so.0d*", "libcudart.so.12": "libcudart-*.so.12*"}
MODEL = "mdeberta"
OUTPUT = "logits"
P50_GOAL = 0.03
STABILITY = 0.10
STABLE_WINDOWS = 3
MAX_WINDOWS = 10


class ToolError(RuntimeError):
    """perf_analyzer could not be installed or run; the message names what is missing."""


# -- perf_analyzer installation -----------------------------------------------------------------------------------


def _pytriton_libs() -> Path:
    import site

    roots = [Path(p) for p in (*site.getsitepackages(), site.getusersitepackages())]
    spec = importlib.util.find_spec("pytriton")
    if spec is not None and spec.origin:
        roots.insert(0, Path(spec.origin).resolve().parent.parent)
    for root in roots:
        if (root / "nvidia_pytriton.libs").is_dir():
            return root / "nvidia_pytriton.libs"
    raise ToolError(
        "nvidia_pytriton.libs not found in site-packages (looked in "
        + ", ".join(str(r) for r in roots)
        + "); install nvidia-pytriton, which ships libb64 and libcudart"
    )


def _link_libraries(lib_dir: Path) -> None:
    libs = _pytriton_libs()
    lib_dir.mkdir(parents=True, exist_ok=True)
    for canonical, pattern in LIBRARIES.items():
        found = sorted(libs.glob(pattern))
        if not found:
            raise ToolError(f"{canonical} for perf_analyzer: no {pattern} in {libs}")
        link = lib_dir / canonical
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(found[0])


def _missing_libraries(binary: Path, lib_dir: Path) -> list[str]:
    if shutil.which("ldd") is None:
        return []
    env = {**os.environ, "LD_LIBRARY_PATH": _ld_path(lib_dir)}
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, env=env, check=False).stdout
    return [line.split("=>")[0].strip() for line in out.splitlines() if "not found" in line]


def _ld_path(lib_dir: Path) -> str:
    return os.pathsep.join(p for p in (str(lib_dir), os.environ.get("LD_LIBRARY_PATH", "")) if p)


def ensure_perf_analyzer(tool_dir: Path = TOOL_DIR) -> Path:
    """The perf_analyzer binary in ``tool_dir/bin`` (installed there when missing), its libraries in ``lib``."""
    binary = tool_dir / "bin" / "perf_analyzer"
    lib_dir = tool_dir / "lib"
    if not binary.is_file():
        print(f"installing perf_analyzer from tritonclient=={WHEEL_VERSION} into {tool_dir} ...", flush=True)
        with tempfile.TemporaryDirectory(prefix="perf-analyzer-") as tmp:
            command = [sys.executable, "-m", "pip", "download", "--no-deps", f"tritonclient=={WHEEL_VERSION}"]
            result = subprocess.run([*command, "-d", tmp], capture_output=True, text=True, check=False)
            wheels = sorted(Path(tmp).glob(f"tritonclient-{WHEEL_VERSION}-*.whl"))
            if result.returncode != 0 or not wheels:
                tail = (result.stderr or result.stdout).strip().splitlines()[-3:]
                raise ToolError(f"could not download the tritonclient=={WHEEL_VERSION} wheel: {' | '.join(tail)}")
            with zipfile.ZipFile(wheels[0]) as wheel:
                if WHEEL_MEMBER not in wheel.namelist():
                    raise ToolError(f"{wheels[0].name} has no {WHEEL_MEMBER} (not a Linux x86_64 wheel?)")
                binary.parent.mkdir(parents=True, exist_ok=True)
                partial = binary.with_suffix(".partial")
                with wheel.open(WHEEL_MEMBER) as src, partial.open("wb") as dst:
                    shutil.copyfileobj(src, dst)
                partial.chmod(0o755)
                partial.replace(binary)
    if not all((lib_dir / name).exists() for name in LIBRARIES):
        _link_libraries(lib_dir)
    missing = _missing_libraries(binary, lib_dir)
    if missing:
        raise ToolError(f"perf_analyzer at {binary} still misses shared libraries: {', '.join(missing)}")
    return binary


# -- inputs -----------------------------------------------------------------------------------------------------


def tokenized_samples(tokenizer: Path, samples: Path) -> list[dict[str, NDArray[Any]]]:
    """One batch-1 request per NLI sample: ``input_ids`` and ``attention_mask`` INT64 [1, 512]."""
    rows = load_samples(samples)
    ids, mask = NliTokenizer(tokenizer).encode([(r.premise, r.hypothesis) for r in rows], truncate=True)
    return [{"input_ids": ids[i : i + 1], "attention_mask": mask[i : i + 1]} for i in range(len(rows))]


def write_input_data(requests: Sequence[dict[str, NDArray[Any]]], path: Path) -> None:
    """perf_analyzer's ``--input-data`` JSON: one entry per request, tensors without the batch dimension."""
    data = [{name: array[0].tolist() for name, array in request.items()} for request in requests]
    path.write_text(json.dumps({"data": data}), encoding="utf-8")


# -- measurements ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    """One measurement's p50 and mean (µs) and the server's time per request over the same requests."""

    tool: str
    p50_us: float
    mean_us: float
    requests: int
    stable: bool
    server_request_us: float
    server_queue_compute_us: float
    overhead_us: float  # mean latency - server queue - server compute (perf_analyzer's definition)

    @property
    def overhead_vs_request_us(self) -> float:
        """Mean latency minus the server's whole request time (``success``) from the statistics API."""
        return self.mean_us - self.server_request_us


def _split(before: StatsSnapshot, after: StatsSnapshot) -> PhaseSplit:
    split = stats_delta(before, after, models=[MODEL]).for_model(MODEL)
    if split is None or split.requests == 0:
        raise RuntimeError(f"the statistics API shows no {MODEL} requests in the window")
    return split


def _cycling(calls: Sequence[Callable[[], object]]) -> Callable[[], object]:
    it = itertools.cycle(calls)
    return lambda: next(it)()


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
    split = _split(snapshots[kept], snapshots[-1])
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


def _csv_float(row: dict[str, str], column: str) -> float:
    if column not in row:
        raise ToolError(f"perf_analyzer's CSV has no {column!r} column; it has {sorted(row)}")
    return float(row[column])


def run_perf_analyzer(
    binary: Path, url: str, input_data: Path, interval_ms: float, workdir: Path, timeout_s: float
) -> Result:
    """One perf_analyzer run (batch 1, concurrency 1); p50, mean and client/server split from its CSV (µs)."""
    host_port = urllib.parse.urlsplit(url).netloc
    report = workdir / "perf_analyzer.csv"
    report.unlink(missing_ok=True)
    command = [
        str(binary),
        *("-m", MODEL, "-u", host_port, "-i", "http", "-b", "1", "--concurrency-range", "1"),
        *("--measurement-interval", str(int(interval_ms)), "--input-data", str(input_data), "-f", str(report)),
        *("--stability-percentage", str(int(STABILITY * 100)), "--max-trials", str(MAX_WINDOWS)),
    ]
    env = {**os.environ, "LD_LIBRARY_PATH": _ld_path(binary.parent.parent / "lib")}
    before = fetch_statistics(url, MODEL)
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout_s, check=False)
    after = fetch_statistics(url, MODEL)
    if proc.returncode != 0 or not report.is_file():
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise ToolError(f"perf_analyzer exited {proc.returncode}: {' '.join(command)}\n{tail}")
    rows = list(csv.DictReader(io.StringIO(report.read_text(encoding="utf-8"))))
    if not rows:
        raise ToolError(f"perf_analyzer wrote no rows to {report}")
    row = rows[0]
    server = sum(
        _csv_float(row, c)
        for c in ("Server Queue", "Server Compute Input", "Server Compute Infer", "Server Compute Output")
    )
    client = sum(_csv_float(row, c) for c in ("Client Send", "Network+Server Send/Recv", "Client Recv"))
    split = _split(before, after)  # every request of the run (perf_analyzer keeps only its last windows)
    # 2.41's CSV has no "Avg latency" column: its components add up to it; the console report prints it.
    printed = re.search(r"Avg latency: (\d+) usec", proc.stdout)
    mean_us = float(printed.group(1)) if printed else client + server
    stable = "Failed to obtain stable measurement" not in proc.stdout + proc.stderr
    throughput = _csv_float(row, "Inferences/Second")
    return Result(
        tool="perf_analyzer",
        p50_us=_csv_float(row, "p50 latency"),
        mean_us=mean_us,
        requests=round(throughput * STABLE_WINDOWS * interval_ms / 1e3),
        stable=stable,
        server_request_us=split.request_us,  # statistics API, every request of the run
        server_queue_compute_us=server,
        overhead_us=client,
    )


# -- report ---------------------------------------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


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
    parser.add_argument("--tokenizer", type=Path, default=ROOT / "model_repos/assets/tiny-mdeberta/tokenizer.json")
    parser.add_argument("--samples", type=Path, default=ROOT / "model_repos/samples/nli_samples.jsonl")
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
                result["plugin"] = measure_client("plugin", url, _cycling(plugin_calls), args.interval_ms)
                result["perf_analyzer"] = run_perf_analyzer(
                    binary, url, input_data, args.interval_ms, workdir, timeout_s
                )
                result["prepared"] = measure_client("prepared", url, _cycling(prepared_calls), args.interval_ms)
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
    command = "python benchmarks/fidelity.py " + " ".join(argv if argv is not None else sys.argv[1:])
    text = [
        f"# Latency fidelity: plugin vs perf_analyzer ({date.today().isoformat()})",
        "",
        f"- command: `{command.strip()}`",
        f"- machine: {cpus} CPUs (nproc), {_cpu_model()}, {platform.platform()}",
        f"- versions: Python {platform.python_version()}, pytest-triton {_version('pytest-triton')}, "
        f"nvidia-pytriton {_version('nvidia-pytriton')} (Triton server {server_version}), "
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
