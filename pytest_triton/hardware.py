"""What accelerator this machine has: the one rule behind --gpu, a launcher's ``has_gpu`` and budget keys."""

from __future__ import annotations

import functools
import os
import platform
import shutil
import subprocess

from pytest_triton.errors import PytestTritonError


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
