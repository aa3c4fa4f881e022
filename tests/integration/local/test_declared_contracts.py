"""The declarations this project ships run as another repository would run them: scenario 07 and the tabular
example, their parity items on the embedded Triton (latency items are the main job's: no xdist there)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytriton", reason="the embedded tritonserver comes from nvidia-pytriton (pip install '.[serve]')")
pytest.importorskip("onnxruntime", reason="the in-process reference needs onnxruntime (pip install '.[serve]')")

MODEL_REPOS = Path(__file__).resolve().parents[3] / "model_repos"

pytestmark = pytest.mark.xdist_group("embedded-triton")


def test_shipped_declarations_hold(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess(
        "--triton-contracts",
        str(MODEL_REPOS / "scenario07.contracts.toml"),
        "--triton-contracts",
        str(MODEL_REPOS / "tabular.contracts.toml"),
        "-k",
        "parity",
        "-p",
        "no:cacheprovider",
        "-rA",
    )
    result.assert_outcomes(passed=6, skipped=1)
    result.stdout.fnmatch_lines_random(
        [
            "PASSED   *scenario07.contracts.toml::parity?onnx?: parity holds: * on 24 samples of "
            "samples/nli_samples.kserve.jsonl",
            "PASSED   *scenario07.contracts.toml::parity?onnx-grpc?: *",
            "PASSED   *scenario07.contracts.toml::parity?ensemble?: *",
            "SKIPPED  *scenario07.contracts.toml::parity?tensorrt-fp16?: it needs a GPU: run with --gpu on a GPU*",
            "PASSED   *tabular.contracts.toml::parity?onnx-fp32?: parity holds: * on 40 generated inputs (seed=7,*",
            "PASSED   *tabular.contracts.toml::parity?onnx-fp16?: *",
            "PASSED   *tabular.contracts.toml::parity?ensemble?: *",
        ]
    )
    # the ensembles' text labels are checked against the names of the reference's best logits
    assert result.stdout.str().count("- label labels 'LABEL' vs names of argmax(logits): ok") == 2
    result.stdout.fnmatch_lines(
        ["- all outputs generated inputs: ok", "  no disagreement found on 40 generated inputs*"]
    )
