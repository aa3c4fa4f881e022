"""sagemaker-local beside the local launcher, on the same one-python-model repository.

``python -m benchmarks.sagemaker_local [--rounds 5] [--requests 200]`` prints, for each launcher, the median
start-to-ready time (the local launcher: every model ready; sagemaker-local: unpacking model.tar.gz, then
``/ping`` 200) and the median round trip of one small request (Triton HTTP, binary tensors, for the local
launcher; ``/invocations`` with the binary+json body for sagemaker-local), with the ratios between them.
Machine-dependent: compare the ratios, not the times.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from pytest_triton.repository.sagemaker import package_model_tar
from pytest_triton.servers.local.launcher import LocalLauncher
from pytest_triton.servers.sagemaker.local import SageMakerLocalLauncher

ROOT = Path(__file__).resolve().parents[1]
A = np.arange(8, dtype=np.float32).reshape(2, 4)


def _measure(start: Callable[[], Any], protocol: str, requests: int) -> tuple[float, float]:
    began = time.perf_counter()
    launcher = start()
    ready = time.perf_counter() - began
    try:
        transport = launcher.transport(protocol)
        transport.infer("python_add", {"A": A, "B": A}, ["SUM"])  # first call outside the timing
        times = []
        for _ in range(requests):
            t0 = time.perf_counter()
            transport.infer("python_add", {"A": A, "B": A}, ["SUM"])
            times.append(time.perf_counter() - t0)
    finally:
        launcher.stop()
    return ready, statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-sagemaker-local-"))
    try:
        shutil.copytree(ROOT / "model_repos" / "examples" / "python_add", work / "repo" / "python_add")
        archive = package_model_tar(work / "repo", work / "model.tar.gz", default_model="python_add")
        variants: dict[str, tuple[Callable[[], Any], str]] = {
            "local (HTTP)": (lambda: LocalLauncher(work / "repo", progress=None).start(), "http"),
            "sagemaker-local (/invocations)": (
                lambda: SageMakerLocalLauncher(archive, progress=None).start(),
                "sagemaker",
            ),
        }
        results: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in variants}
        for _ in range(args.rounds):  # interleaved, so both see the same machine load
            for name, (start, protocol) in variants.items():
                ready, rtt = _measure(start, protocol, args.requests)
                results[name][0].append(ready)
                results[name][1].append(rtt)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base_ready = statistics.median(results["local (HTTP)"][0])
    base_rtt = statistics.median(results["local (HTTP)"][1])
    print(f"{args.rounds} rounds, {args.requests} requests each (medians)")
    print(f"{'launcher':34} {'ready s':>8} {'ratio':>6} {'request ms':>11} {'ratio':>6}")
    for name, (ready_times, round_trips) in results.items():
        r, q = statistics.median(ready_times), statistics.median(round_trips)
        print(f"{name:34} {r:8.2f} {r / base_ready:6.2f} {q * 1000:11.3f} {q / base_rtt:6.2f}")


if __name__ == "__main__":
    main()
