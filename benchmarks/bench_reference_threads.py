"""Why the in-process reference can be slower than the served model: ONNX Runtime's intra-op threads under load.

Run: ``python -m pytest benchmarks/bench_reference_threads.py -p no:xdist -s`` (optionally with busy neighbours,
e.g. two ``python -c "while True: pass"``). It serves scenario 07's ``onnx`` repository on the local launcher and
measures, side by side in alternating windows, one b=1 request of: the served model (HTTP, client tokenizes), the
in-process reference as the contract suite builds it (ONNX Runtime's defaults: one intra-op thread per core,
spinning while it waits for work), the same session with one intra-op thread, and with spinning off. It prints
a table of p50/p90/p99 and each variant's per-round p50 ratio to the served model (median of the kept rounds),
the machine's load and the thread counts of the processes involved.
"""

from __future__ import annotations

import os
import subprocess
from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest

from pytest_triton.bench.interleave import measure_interleaved
from pytest_triton.bench.provenance import load_average
from pytest_triton.bench.sampling import WindowPolicy
from pytest_triton.bench.sampling import warm_up_shapes
from pytest_triton.client.nli import NliClient
from pytest_triton.client.nli import NliSample
from pytest_triton.client.nli import NliTokenizer
from pytest_triton.client.reference import OnnxReference
from pytest_triton.plugin.server_factory import TritonServerFactory
from tests.contracts.conftest import ASSETS
from tests.contracts.conftest import Served
from tests.contracts.conftest import samples  # noqa: F401  (fixtures used below)
from tests.contracts.conftest import serve
from tests.contracts.conftest import tokenizer  # noqa: F401

onnxruntime = pytest.importorskip("onnxruntime", reason="needs onnxruntime (pip install '.[serve]')")


@pytest.fixture
def onnx_served(triton_server_factory: TritonServerFactory) -> Served:
    return serve(triton_server_factory, "onnx", "triton-onnx")


@pytest.fixture
def reference() -> NliClient:
    """The in-process reference as the contracts build it (ONNX Runtime's defaults)."""
    return NliClient(OnnxReference(ASSETS / "model.onnx"), NliTokenizer(ASSETS / "tokenizer.json"))


def _session(threads: int = 0, *, spinning: bool = True) -> Any:
    options = onnxruntime.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
    if not spinning:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(str(ASSETS / "model.onnx"), options, providers=["CPUExecutionProvider"])


def _threads_per_process(name: str) -> dict[str, int]:
    out = subprocess.run(["ps", "-eLo", "pid,comm"], capture_output=True, text=True, check=True).stdout
    return dict(Counter(line.split()[0] for line in out.splitlines() if name in line))


def test_reference_threads(
    onnx_served: Served,
    reference: NliClient,
    tokenizer: NliTokenizer,  # noqa: F811
    samples: list[NliSample],  # noqa: F811
) -> None:
    pair = [samples[0].pair]

    def raw(session: Any) -> object:
        ids, mask = tokenizer.encode(pair)
        return session.run(None, {"input_ids": ids, "attention_mask": mask})

    calls: dict[str, Callable[[], object]] = {
        "served (HTTP)": partial(onnx_served.client(tokenizer).logits, pair),
        "in-process, ORT defaults": partial(reference.logits, pair),
        "in-process, 1 intra-op thread": partial(raw, _session(1)),
        "in-process, no spinning": partial(raw, _session(0, spinning=False)),
    }
    warm_up_shapes(calls, count=5)
    before = load_average()
    run = measure_interleaved(calls, policy=WindowPolicy(mode="time", window_ms=2000, max_windows=6))
    print(f"\n{run.reason}")
    print(f"load average before {before}, after {load_average()}; {os.cpu_count()} CPUs")
    print(f"{'variant':32s} {'p50':>8s} {'p90':>8s} {'p99':>8s} {'n':>5s}  p50 / served (median of rounds)")
    for name, measurement in run.measurements.items():
        s = measurement.stats()
        ratios, _ = run.paired(name, "served (HTTP)", "p50_ms")
        median = sorted(ratios)[len(ratios) // 2]
        print(f"{name:32s} {s.p50_ms:8.2f} {s.p90_ms:8.2f} {s.p99_ms:8.2f} {s.count:5d}  {median:.2f}")
    print(
        f"threads: python backend stubs {_threads_per_process('triton_python')}, this process {os.getpid()}: "
        f"{len(os.listdir(f'/proc/{os.getpid()}/task'))}"
    )
