"""What accelerator this machine has: the one rule behind --gpu, a launcher's ``has_gpu`` and budget keys."""

from __future__ import annotations

import functools
import os
import platform
import shutil
import subprocess
from collections.abc import Sequence

from pytest_triton.errors import PytestTritonError

WORKER_GPUS_ENV = "PYTEST_TRITON_WORKER_GPUS"
"""The GPU ids an xdist worker was given under --triton-gpu (as in CUDA_VISIBLE_DEVICES): the docker launcher's
default ``gpu_devices``."""


def gpu_names() -> tuple[str, ...]:
    """Names of the visible NVIDIA GPUs: what ``nvidia-smi`` lists, none when CUDA_VISIBLE_DEVICES hides them
    all ("" or "-1") or there is no driver."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", "x").strip() in {"", "-1"}:
        return ()
    return _listed_gpus()


@functools.cache
def _listed_gpus() -> tuple[str, ...]:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return ()
    try:
        out = subprocess.run(
            [smi, "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    return tuple(line.strip() for line in out.splitlines() if line.strip())


def gpu_visible() -> bool:
    """Whether at least one GPU is visible here (see :func:`gpu_names`)."""
    return bool(gpu_names())


def _cuda_visible_devices() -> str:
    value = os.environ.get("CUDA_VISIBLE_DEVICES")
    return "CUDA_VISIBLE_DEVICES is unset" if value is None else f"CUDA_VISIBLE_DEVICES={value!r}"


def require_gpu() -> tuple[str, ...]:
    """Fail fast (before any test runs) when GPU mode (--triton-gpu, or --gpu) was asked for and no GPU is visible."""
    names = gpu_names()
    if not names:
        raise PytestTritonError(
            "GPU mode was asked for (--triton-gpu, or --gpu) but no GPU is visible "
            "(nvidia-smi found none or is missing; "
            f"{_cuda_visible_devices()}); "
            "run on a GPU runner, or drop the option to run the CPU suite"
        )
    return names


def hardware_key() -> str:
    """A budget key: the first GPU's name (``nvidia-h200``), else ``cpu-<cores>core-<arch>``."""
    names = gpu_names()
    if names:
        return names[0].lower().replace("nvidia ", "nvidia-").replace(" ", "-")
    return f"cpu-{os.cpu_count() or 1}core-{platform.machine()}"


def gpu_pool() -> tuple[str, ...]:
    """The GPUs a run hands out to its workers: the entries of CUDA_VISIBLE_DEVICES where it lists some (ids or
    UUIDs, as the user narrowed them), else the indexes of the GPUs ``nvidia-smi`` lists (0 .. M-1)."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None and listed.strip() not in {"", "-1"}:
        return tuple(entry.strip() for entry in listed.split(",") if entry.strip())
    return tuple(str(index) for index in range(len(gpu_names())))


def assign_gpus(worker: int, workers: int, pool: Sequence[str]) -> tuple[str, ...]:
    """The GPUs of xdist worker ``worker`` (0-based) of ``workers``: each gets k = M // N of the M GPUs of
    ``pool``, worker i the i-th run of k (``workers == M``: one each; M a multiple of N: M/N each; otherwise the
    last M - N*k stay idle). More workers than GPUs would share one (and each other's latency): refused."""
    if not 0 <= worker < workers:
        raise ValueError(f"worker={worker!r} of workers={workers!r}")
    if workers > len(pool):
        raise PytestTritonError(
            f"{workers} xdist workers over {len(pool)} GPU(s) ({', '.join(pool) or 'none'}): two workers would "
            f"share a GPU; run with -n {len(pool)} or fewer (each worker gets its own GPU), or without --triton-gpu"
        )
    share = len(pool) // workers
    return tuple(pool[worker * share : (worker + 1) * share])


def assign_cores(worker: int, workers: int, cores: Sequence[int]) -> tuple[int, ...]:
    """The CPU cores of xdist worker ``worker`` of ``workers``: an equal run of ``cores`` each (the rest idle);
    empty when there are fewer cores than workers."""
    share = len(cores) // workers if workers > 0 else 0
    ordered = sorted(cores)
    return tuple(ordered[worker * share : (worker + 1) * share])
