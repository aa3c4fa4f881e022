"""Start-to-ready time of the local launcher on a one-python-model repository.

Run as a benchmark: ``python -m pytest benchmarks/bench_server_start.py -p no:xdist --benchmark-only``;
as a script: ``python -m benchmarks.bench_server_start [--rounds 5]`` prints median/min/max of the bare
binary, of LocalLauncher (with and without Triton's config auto-completion) and of stop(), then where the
time goes in the last start (from Triton's log timestamps). Goal: ≤ 2 s on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from pytest_triton.client.rest import TritonRest
from pytest_triton.servers.binary import find_tritonserver
from pytest_triton.servers.local.launcher import LocalLauncher
from pytest_triton.servers.ports import reserve_ports

MODEL = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [
            pb_utils.InferenceResponse([pb_utils.Tensor("Y", pb_utils.get_input_tensor_by_name(r, "X").as_numpy())])
            for r in requests
        ]
"""
CONFIG = """name: "identity"
backend: "python"
max_batch_size: 0
input [ { name: "X" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ -1 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
"""


def make_repository(root: Path) -> Path:
    """A repository with one python model, ``identity``."""
    (root / "identity" / "1").mkdir(parents=True, exist_ok=True)
    (root / "identity" / "config.pbtxt").write_text(CONFIG)
    (root / "identity" / "1" / "model.py").write_text(MODEL.lstrip())
    return root


def bare_start(repository: Path) -> float:
    """The binary alone: Popen, poll /v2/health/ready every 10 ms, SIGINT. Returns start-to-ready seconds."""
    binary = find_tritonserver()
    with reserve_ports(3) as ports:
        http, grpc, metrics = ports.ports
        cmd = [
            str(binary.path),
            f"--model-repository={repository}",
            "--model-control-mode=explicit",
            "--load-model=identity",
            f"--http-port={http}",
            f"--grpc-port={grpc}",
            f"--metrics-port={metrics}",
            "--http-address=127.0.0.1",
            "--grpc-address=127.0.0.1",
            "--metrics-address=127.0.0.1",
            "--exit-timeout-secs=0",
        ]
        if binary.backend_directory is not None:
            cmd.append(f"--backend-directory={binary.backend_directory}")
        rest = TritonRest(f"http://127.0.0.1:{http}", timeout=1.0)
        started = time.monotonic()
        proc = subprocess.Popen(cmd, env=binary.environ(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            while not rest.ready():
                if proc.poll() is not None:
                    raise RuntimeError(f"tritonserver exited with {proc.returncode}")
                time.sleep(0.01)
            return time.monotonic() - started
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait()


def launcher_start(repository: Path, **options: Any) -> tuple[float, float, str]:
    """LocalLauncher: (start-to-ready s, stop s, log)."""
    launcher = LocalLauncher(repository, progress=None, **options)
    started = time.monotonic()
    launcher.start()
    ready = time.monotonic() - started
    started = time.monotonic()
    launcher.stop()
    return ready, time.monotonic() - started, launcher.logs()


_STAMP = re.compile(r"^[IWEF](\d{4} \d\d:\d\d:\d\d\.\d{6}) .*?\] (.*)$")


def timeline(log: str) -> list[tuple[float, str]]:
    """(seconds since the first log line, message) for the milestones of a start."""
    milestones = (
        "loading: ",
        "TRITONBACKEND_ModelInstanceInitialize",
        "successfully loaded",
        "Started GRPCInferenceService",
        "Started HTTPService",
        "Started Metrics Service",
    )
    points: list[tuple[float, str]] = []
    first: datetime | None = None
    for line in log.splitlines():
        match = _STAMP.match(line)
        if match is None:
            continue
        when = datetime.strptime(match.group(1), "%m%d %H:%M:%S.%f")
        first = first or when
        if any(m in match.group(2) for m in milestones):
            points.append(((when - first).total_seconds(), match.group(2).strip('"')[:70]))
    return points


@pytest.fixture(scope="module")
def repository() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="bench-triton-") as root:
        yield make_repository(Path(root))


@pytest.mark.parametrize("auto_complete_config", [True, False], ids=["default", "no-auto-complete"])
def test_start_to_ready(benchmark: Any, repository: Path, auto_complete_config: bool) -> None:
    def setup() -> tuple[tuple[LocalLauncher], dict[str, Any]]:
        return (LocalLauncher(repository, progress=None, auto_complete_config=auto_complete_config),), {}

    def target(launcher: LocalLauncher) -> None:
        launcher.start()

    def teardown(launcher: LocalLauncher) -> None:
        launcher.stop()

    benchmark.pedantic(target, setup=setup, teardown=teardown, rounds=5)


def _row(name: str, samples: list[float]) -> str:
    return f"{name:<52} {statistics.median(samples):>7.3f} {min(samples):>7.3f} {max(samples):>7.3f}  n={len(samples)}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Start-to-ready time of the local launcher")
    parser.add_argument("--rounds", type=int, default=5, help="Starts per variant")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-triton-") as root:
        repository = make_repository(Path(root))
        launcher_start(repository)  # warm the backend cache folder and the page cache
        results: dict[str, list[float]] = {}
        logs: dict[str, str] = {}
        for name, options in (("default", {}), ("no-auto-complete", {"auto_complete_config": False})):
            starts, stops = [], []
            for _ in range(args.rounds):
                ready, stop, log = launcher_start(repository, **options)
                starts.append(ready)
                stops.append(stop)
                logs[name] = log
            results[f"LocalLauncher start-to-ready ({name})"] = starts
            results[f"LocalLauncher stop ({name})"] = stops
        results["bare tritonserver start-to-ready (poll 10 ms)"] = [bare_start(repository) for _ in range(args.rounds)]
    print(f"{'seconds, ' + str(os.cpu_count()) + ' cores':<52} {'median':>7} {'min':>7} {'max':>7}")
    for name, samples in results.items():
        print(_row(name, samples))
    for name, log in logs.items():
        print(f"\nwhere the time goes, last start ({name}), from Triton's log:")
        for offset, text in timeline(log):
            print(f"  +{offset:6.3f} s  {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
