"""The rule that gives xdist workers their GPUs and CPU cores (pytest_triton.hardware), table-driven."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_triton import hardware
from pytest_triton.errors import PytestTritonError
from pytest_triton.hardware import assign_cores
from pytest_triton.hardware import assign_gpus
from pytest_triton.hardware import gpu_pool


@pytest.mark.parametrize(
    ("workers", "pool", "expected"),
    [
        (2, ("0", "1"), [("0",), ("1",)]),  # N == M: one each
        (1, ("0", "1"), [("0", "1")]),  # one worker: every GPU
        (2, ("0", "1", "2", "3"), [("0", "1"), ("2", "3")]),  # M a multiple of N: M/N each
        (2, ("0", "1", "2"), [("0",), ("1",)]),  # otherwise M // N each, the rest idle
        (3, ("4", "5", "6"), [("4",), ("5",), ("6",)]),  # CUDA_VISIBLE_DEVICES's own ids are handed out
    ],
)
def test_assign_gpus(workers: int, pool: tuple[str, ...], expected: list[tuple[str, ...]]) -> None:
    assert [assign_gpus(i, workers, pool) for i in range(workers)] == expected


@pytest.mark.parametrize(("workers", "pool"), [(3, ("0", "1")), (2, ("0",)), (1, ())])
def test_more_workers_than_gpus_is_refused(workers: int, pool: tuple[str, ...]) -> None:
    with pytest.raises(PytestTritonError, match=rf"{workers} xdist workers over {len(pool)} GPU\(s\).*run with -n"):
        assign_gpus(0, workers, pool)


@pytest.mark.parametrize(
    ("workers", "cores", "expected"),
    [
        (2, [0, 1], [(0,), (1,)]),  # this machine: one core each, too few to measure latency
        (2, [3, 2, 1, 0], [(0, 1), (2, 3)]),
        (3, list(range(8)), [(0, 1), (2, 3), (4, 5)]),
        (4, [0, 1], [(), (), (), ()]),
    ],
)
def test_assign_cores(workers: int, cores: list[int], expected: list[tuple[int, ...]]) -> None:
    assert [assign_cores(i, workers, cores) for i in range(workers)] == expected


def test_gpu_pool_is_cuda_visible_devices_else_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\nprintf 'GPU A\\nGPU B\\nGPU C\\n'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    hardware._listed_gpus.cache_clear()
    try:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        assert gpu_pool() == ("0", "1", "2")
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2, GPU-5f3c")
        assert gpu_pool() == ("2", "GPU-5f3c")
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
        assert gpu_pool() == ()
    finally:
        hardware._listed_gpus.cache_clear()
