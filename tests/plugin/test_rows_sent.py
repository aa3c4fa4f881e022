"""Samples/s counts the rows each request sent: Triton's own python_backend examples ``add_sub`` and ``bls``
(max_batch_size 0: one sample per request) report samples/s equal to requests/s, whatever
``throughput_batch_size`` asks for, and say why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_triton.repository import RepositoryBuilder
from pytest_triton.repository import TensorSpec

pytest.importorskip("pytriton", reason="the embedded tritonserver comes from nvidia-pytriton (pip install '.[serve]')")

pytestmark = pytest.mark.xdist_group("embedded-triton")

# python_backend/examples/add_sub/model.py, in short: OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1
ADD_SUB = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            b = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            out = [pb_utils.Tensor("OUTPUT0", a + b), pb_utils.Tensor("OUTPUT1", a - b)]
            responses.append(pb_utils.InferenceResponse(output_tensors=out))
        return responses
"""

# python_backend/examples/bls/sync_model.py, in short: the same I/O, answered by a BLS call to add_sub
BLS = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            inputs = [pb_utils.get_input_tensor_by_name(request, n) for n in ("INPUT0", "INPUT1")]
            call = pb_utils.InferenceRequest(
                model_name="add_sub", requested_output_names=["OUTPUT0", "OUTPUT1"], inputs=inputs
            )
            answer = call.exec()
            if answer.has_error():
                raise pb_utils.TritonModelException(answer.error().message())
            out = [pb_utils.get_output_tensor_by_name(answer, n) for n in ("OUTPUT0", "OUTPUT1")]
            responses.append(pb_utils.InferenceResponse(output_tensors=out))
        return responses
"""

CONTRACTS = """
[reference]
variant = "add_sub"

[variants.add_sub]
repository = "repo"
model = "add_sub"

[variants.bls]
repository = "repo"
model = "bls"

[inputs.generate]
from = "add_sub"
examples = 2
seed = 1

[latency]
variants = ["add_sub", "bls"]
batch_size = 1
throughput_batch_size = 8
warmup = 2
window_ms = 100
"""


def make_examples(root: Path) -> None:
    inputs = [TensorSpec("INPUT0", "TYPE_FP32", (4,)), TensorSpec("INPUT1", "TYPE_FP32", (4,))]
    outputs = [TensorSpec("OUTPUT0", "TYPE_FP32", (4,)), TensorSpec("OUTPUT1", "TYPE_FP32", (4,))]
    builder = RepositoryBuilder(root / "repo").add_python("add_sub", source=ADD_SUB, inputs=inputs, outputs=outputs)
    builder.add_python("bls", source=BLS, inputs=inputs, outputs=outputs).build()
    (root / "contracts.toml").write_text(CONTRACTS, encoding="utf-8")


def test_models_that_do_not_batch_report_samples_per_s_as_requests_per_s(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    make_examples(pytester.path)
    result = pytester.runpytest_subprocess(
        "--triton-contracts", "contracts.toml", "-k", "latency", "-p", "no:cacheprovider", "--triton-report", "out/run"
    )
    result.assert_outcomes(passed=2)
    report = json.loads((pytester.path / "out" / "run.json").read_text())
    rows = {r["variant"]: r for r in report["results"]}
    assert set(rows) == {"add_sub", "bls"}
    for name, row in rows.items():
        for run in (row["latency"], row["throughput"]):
            if run is not None:
                assert run["batch_size"] == 1, (name, run)
                assert run["samples_per_s"] == pytest.approx(run["requests_per_s"]), (name, run)
        assert any("does not batch" in note and "samples/s = requests/s" in note for note in row["notes"]), row
    markdown = (pytester.path / "out" / "run.md").read_text()
    assert "(b=8)" not in markdown
