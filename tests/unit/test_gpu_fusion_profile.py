"""benchmarks.gpu_fusion's reading of an ONNX Runtime profile trace (a hand-written one: three runs)."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
TRACE = Path(__file__).resolve().parent / "data" / "ort_profile_three_runs.json"


@pytest.fixture(scope="module")
def gpu_fusion() -> ModuleType:
    return importlib.import_module("benchmarks.gpu_fusion")


@pytest.fixture
def events() -> list[dict[str, Any]]:
    loaded: list[dict[str, Any]] = json.loads(TRACE.read_text(encoding="utf-8"))
    return loaded


def test_nodes_belong_to_the_run_they_started_in(gpu_fusion: ModuleType, events: list[dict[str, Any]]) -> None:
    durations, runs = gpu_fusion.runs_of(events)
    assert durations == [1.0, 0.6, 0.8]
    # the stray event between two runs and the one without op_name belong to no run
    assert [[e["name"].removesuffix("_kernel_time") for e in run] for run in runs] == [
        ["mm1"],
        ["mm1", "mm2", "sm", "if1", "inner"],
        ["mm1", "mm2", "sm", "if1", "inner"],
    ]


def test_op_profile_averages_the_runs_after_the_warm_ones(gpu_fusion: ModuleType, events: list[dict[str, Any]]) -> None:
    profile = gpu_fusion.op_profile(events, skip=1)
    assert profile["runs"] == 2
    assert profile["model_run_p50_ms"] == pytest.approx(0.7)
    # MatMul (200+100 and 300+100 µs) 0.35 ms, Add 0.1, Softmax (60, 100) 0.08; the If holds the Add: left out
    assert list(profile["ops"]) == ["MatMul", "Add", "Softmax"]
    assert profile["ops"]["MatMul"] == {"ms": pytest.approx(0.35), "share": pytest.approx(0.35 / 0.53), "nodes": 2}
    assert profile["ops"]["Softmax"]["ms"] == pytest.approx(0.08)
    assert profile["node_ms_per_run"] == pytest.approx(0.53)
    assert sum(op["share"] for op in profile["ops"].values()) == pytest.approx(1.0)
    assert profile["nodes"] == 4
    assert profile["control_flow_nodes"] == {"If": 1}
    assert profile["by_provider_ms"] == {
        "CUDAExecutionProvider": pytest.approx(0.43),
        "CPUExecutionProvider": pytest.approx(0.1),
    }


def test_op_profile_without_runs_left_names_the_count(gpu_fusion: ModuleType, events: list[dict[str, Any]]) -> None:
    with pytest.raises(ValueError, match=r"3 model_run events, none left after skip=3"):
        gpu_fusion.op_profile(events, skip=3)
