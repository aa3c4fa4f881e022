"""pytest-xdist workers: a GPU (and CPU cores) of their own under --triton-gpu, and their rows sent home.

Under ``--triton-gpu`` each worker gets its share of the GPUs (:func:`pytest_triton.hardware.assign_gpus`):
``CUDA_VISIBLE_DEVICES`` of the worker's process, inherited by every local tritonserver and the in-process
reference, and the docker launcher's default ``gpu_devices`` (:data:`~pytest_triton.hardware.WORKER_GPUS_ENV`).
It also gets an equal run of the CPU cores it may use; a worker with at least :data:`MIN_LATENCY_CORES` of
them is pinned to them (its servers inherit the pinning) and measures latency, since nothing else shares its
GPU or its cores. Every other worker skips latency items, saying why.

Each worker sends its report (rows and contract outcomes, as the report's JSON) through xdist's own channel,
``workeroutput``; the controller reads it back when the worker goes down and writes one report for the run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import replace
from typing import TYPE_CHECKING
from typing import Any

import pytest

from pytest_triton.errors import PytestTritonError
from pytest_triton.hardware import WORKER_GPUS_ENV
from pytest_triton.hardware import assign_cores
from pytest_triton.hardware import assign_gpus
from pytest_triton.hardware import gpu_pool
from pytest_triton.plugin import options
from pytest_triton.plugin.state import BENCH_KEY
from pytest_triton.plugin.state import CONTRACTS_KEY

if TYPE_CHECKING:
    from pytest_triton.bench.session import TritonBench

MIN_LATENCY_CORES = 2  # one for the client's loop, one for the server: fewer and each measures the other
REPORT_KEY = "pytest_triton_report"  # the worker's report JSON in xdist's workeroutput
SHARED_CORES = "latency is measured without xdist: here other tests share the cores (run with -p no:xdist)"


@dataclass(frozen=True)
class WorkerShare:
    """What one xdist worker has to itself: GPU ids (CUDA_VISIBLE_DEVICES entries) and CPU cores."""

    worker: str
    gpus: tuple[str, ...]
    cores: tuple[int, ...]


SHARE_KEY = pytest.StashKey[WorkerShare]()


def _worker(config: pytest.Config) -> tuple[str, int, int] | None:
    """(worker id, 0-based index, worker count) of this session's own xdist worker input; None elsewhere (a
    pytest run started from a worker inherits PYTEST_XDIST_WORKER but is not distributed itself)."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None:
        return None
    name = str(workerinput["workerid"])
    return name, int(name.removeprefix("gw")), int(workerinput["workercount"])


def check_workers(config: pytest.Config) -> None:
    """On the controller, before any worker starts: refuse ``-n N`` with --triton-gpu where N workers cannot
    each have a GPU of their own (a usage error saying what to do)."""
    workers = getattr(config.option, "numprocesses", None)
    if _worker(config) is not None or not isinstance(workers, int) or workers < 1:
        return
    if options.flag(config, "triton_gpu"):
        try:
            assign_gpus(0, workers, gpu_pool())
        except PytestTritonError as exc:
            raise pytest.UsageError(str(exc)) from exc


def configure_worker(config: pytest.Config) -> None:
    """Give this xdist worker its GPUs and CPU cores under --triton-gpu (see the module)."""
    worker = _worker(config)
    if worker is None or not options.flag(config, "triton_gpu"):
        return
    name, index, count = worker
    try:
        gpus = assign_gpus(index, count, gpu_pool())
    except PytestTritonError as exc:
        raise pytest.UsageError(str(exc)) from exc
    os.environ["CUDA_VISIBLE_DEVICES"] = os.environ[WORKER_GPUS_ENV] = ",".join(gpus)
    cores: tuple[int, ...] = ()
    if hasattr(os, "sched_getaffinity"):
        cores = assign_cores(index, count, sorted(os.sched_getaffinity(0)))
        if len(cores) >= MIN_LATENCY_CORES:
            os.sched_setaffinity(0, cores)
    config.stash[SHARE_KEY] = WorkerShare(name, gpus, cores)


def device_label(config: pytest.Config) -> str:
    """Which GPU(s) this session's servers see, for its rows ("GPU 1"); empty without --triton-gpu."""
    if not options.flag(config, "triton_gpu"):
        return ""
    share = config.stash.get(SHARE_KEY, None)
    gpus = share.gpus if share is not None else gpu_pool()
    label = f"GPU {','.join(gpus)}" if gpus else "GPU (none listed)"
    return f"{label} (xdist worker {share.worker})" if share is not None else label


def latency_skip_reason(config: pytest.Config) -> str | None:
    """Why this session measures no latency (None: it does): an xdist worker without a GPU and
    :data:`MIN_LATENCY_CORES` CPU cores of its own shares what it would measure with the other workers."""
    worker = _worker(config)
    if worker is None:
        return None
    share = config.stash.get(SHARE_KEY, None)
    if share is None:
        return SHARED_CORES + "; with --triton-gpu each worker gets a GPU of its own and measures"
    if len(share.cores) < MIN_LATENCY_CORES:
        return (
            f"{SHARED_CORES}; worker {share.worker} has GPU {','.join(share.gpus)} but {len(share.cores)} CPU "
            f"core(s) of its own (CPU cores // workers), latency needs {MIN_LATENCY_CORES}: run fewer workers"
        )
    return None


def send_report(config: pytest.Config) -> None:
    """On a worker at session end: its rows and contract outcomes, as the report's JSON, into workeroutput."""
    workeroutput: dict[str, Any] | None = getattr(config, "workeroutput", None)
    if workeroutput is None:
        return
    from pytest_triton.bench.report import ReportData
    from pytest_triton.bench.report import to_json

    bench = config.stash.get(BENCH_KEY, None)
    contracts = config.stash.get(CONTRACTS_KEY, None)
    outcomes = tuple(contracts.outcomes) if contracts is not None else ()
    if bench is None and not outcomes:
        return
    from pytest_triton.plugin.shards import shard_entry

    data = bench.report(config.rootpath) if bench is not None else ReportData()
    data = replace(data, contracts=outcomes, shard=shard_entry(config))
    workeroutput[REPORT_KEY] = json.dumps(to_json(data), allow_nan=False)


def receive_report(node: Any, config: pytest.Config, bench: Callable[[], TritonBench]) -> None:
    """On the controller, as a worker goes down: its rows join the session's bench and its outcomes the
    session's contract outcomes, so the controller's summary and ``--triton-report`` hold every worker's."""
    text = getattr(node, "workeroutput", {}).get(REPORT_KEY)
    if text is None:
        return
    from pytest_triton.bench.report_load import report_from_json

    name = getattr(getattr(node, "gateway", None), "id", "?")
    data = report_from_json(json.loads(text), source=f"xdist worker {name}")
    if data.results or data.relative or data.parity:
        session = bench()
        session.results.extend(data.results)
        session.relative.extend(data.relative)
        session.parity.extend(data.parity)
        session.explanations.extend(e for e in data.explanations if e not in session.explanations)
        if session.triton_version is None and data.provenance is not None:
            session.triton_version = data.provenance.triton
    contracts = config.stash.get(CONTRACTS_KEY, None)
    if contracts is not None:
        contracts.outcomes.extend(dict(o) for o in data.contracts)
    if data.shard is not None:  # a sharded run under xdist: the workers collected, the controller did not
        from pytest_triton.plugin.shards import VARIANTS_KEY

        known = config.stash.setdefault(VARIANTS_KEY, [])
        known.extend(v for v in data.shard.get("variants", ()) if v not in known)
        known.sort()
