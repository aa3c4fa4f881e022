"""ort_placement on the CPU: a real ONNX Runtime session, profiled, with a provider that takes no node."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime", reason="placement reads an ONNX Runtime session's profile")

from pytest_triton.errors import PlacementError  # noqa: E402
from pytest_triton.repository.ort_placement import PlacementReport  # noqa: E402
from pytest_triton.repository.ort_placement import nodes_from_trace  # noqa: E402
from pytest_triton.repository.ort_placement import placement  # noqa: E402

TINY_MDEBERTA = Path(__file__).resolve().parents[3] / "model_repos" / "assets" / "tiny-mdeberta" / "model.onnx"


def _model(path: Path) -> Path:
    import onnx
    from onnx import TensorProto
    from onnx import helper
    from onnx import numpy_helper

    weight = numpy_helper.from_array(np.ones((4, 3), dtype=np.float32), "W")
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["X", "W"], ["h"], name="matmul"),
            helper.make_node("Tanh", ["h"], ["Y"], name="tanh"),
        ],
        "two",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["batch", 3])],
        [weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def _fallback_provider() -> str:
    """A provider this onnxruntime offers besides the CPU one, which takes none of these nodes."""
    others = [p for p in ort.get_available_providers() if p not in ("CPUExecutionProvider", "CUDAExecutionProvider")]
    if not others:
        pytest.skip(f"this onnxruntime offers no second provider to fall back from: {ort.get_available_providers()}")
    return str(others[0])


def test_every_node_on_the_wanted_cpu_provider(tmp_path: Path) -> None:
    report = placement(_model(tmp_path / "m.onnx"), ["CPUExecutionProvider"], batch=3)
    assert [(n.name, n.op_type) for n in report.nodes] == [("matmul", "MatMul"), ("tanh", "Tanh")]
    assert report.by_provider() == {"CPUExecutionProvider": 2}
    assert report.off_wanted_nodes == ()
    assert report.cpu_nodes == ()
    assert report.memcpy_nodes == ()
    report.assert_within(max_cpu_nodes=0, max_memcpy_nodes=0)


def test_nodes_that_fall_back_to_the_cpu_are_listed_and_fail_the_contract(tmp_path: Path) -> None:
    wanted = _fallback_provider()
    report = placement(_model(tmp_path / "m.onnx"), [wanted, "CPUExecutionProvider"])
    assert report.wanted == wanted
    assert [n.name for n in report.cpu_nodes] == ["matmul", "tanh"]
    assert report.off_wanted_ops() == {"MatMul": 1, "Tanh": 1}
    assert report.to_json()["cpu_nodes"] == 2
    with pytest.raises(PlacementError, match=r"2 nodes ran off \w+ \(max_cpu_nodes=0\): matmul \(MatMul\)") as err:
        report.assert_within(max_cpu_nodes=0)
    assert err.value.report is report
    report.assert_within(max_cpu_nodes=2)


def test_tiny_mdeberta_relative_position_ops_are_reported(tmp_path: Path) -> None:
    """DeBERTa's log-bucket position arithmetic (Sign, Abs, Log, Ceil) is among the nodes listed."""
    wanted = _fallback_provider()
    report = placement(TINY_MDEBERTA, [wanted, "CPUExecutionProvider"], batch=2)
    ops = report.off_wanted_ops()
    assert {"Sign", "Abs", "Log", "Ceil"} <= set(ops)
    assert "model.onnx" in report.describe()
    assert f"off {wanted}" in report.describe()


def test_trace_reading_counts_memcpy_apart_and_each_node_once() -> None:
    def event(name: str, op: str, provider: str) -> dict[str, object]:
        return {"cat": "Node", "name": f"{name}_kernel_time", "args": {"op_name": op, "provider": provider}}

    trace: list[dict[str, object]] = [
        {"cat": "Session", "name": "model_run", "args": {}},
        event("Range_1", "Range", "CPUExecutionProvider"),
        event("Memcpy_token_0", "MemcpyFromHost", "CUDAExecutionProvider"),
        event("MatMul_2", "MatMul", "CUDAExecutionProvider"),
        event("MatMul_2", "MatMul", "CUDAExecutionProvider"),  # a second run of the same node
    ]
    nodes = nodes_from_trace(trace)
    report = PlacementReport("m", "CUDAExecutionProvider", ("CUDAExecutionProvider", "CPUExecutionProvider"), nodes)
    assert len(report.nodes) == 3
    assert [n.name for n in report.cpu_nodes] == ["Range_1"]
    assert [n.op_type for n in report.memcpy_nodes] == ["MemcpyFromHost"]
    with pytest.raises(PlacementError, match=r"1 Memcpy nodes \(max_memcpy_nodes=0\)"):
        report.assert_within(max_cpu_nodes=1, max_memcpy_nodes=0)
