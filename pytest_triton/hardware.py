"""What accelerator this machine has: used by --gpu and to key latency budgets."""

from __future__ import annotations

import functools
import os
import platform
import shutil
import subprocess

from pytest_triton.errors import PytestTritonError


@functools.cache
def gpu_names() -> tuple[str, ...]:
    """Names of the visible NVIDIA GPUs (empty when none or no driver)."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in {"", "-1"}:
        return ()
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


def require_gpu() -> tuple[str, ...]:
    """Fail fast (before any test runs) when --gpu was asked for and no GPU is visible."""
    names = gpu_names()
    if not names:
        raise PytestTritonError(
            "--gpu was given but no GPU is visible (nvidia-smi found none or is missing; "
            f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r}); "
            "run on a GPU runner, or drop --gpu to run the CPU suite"
        )
    return names


def hardware_key() -> str:
    """A budget key: the first GPU's name (``nvidia-h200``), else ``cpu-<cores>core-<arch>``."""
    names = gpu_names()
    if names:
        return names[0].lower().replace("nvidia ", "nvidia-").replace(" ", "-")
    return f"cpu-{os.cpu_count() or 1}core-{platform.machine()}"
