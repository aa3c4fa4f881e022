"""A repository outside this one declares contracts for its own model (no Python test code) and gets parity
and latency items, a report, skips with reasons and failures that name the variant, output and worst element.

Its declaration is the complete example of docs/contracts.md, read from there."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto
from onnx import helper
from onnx import numpy_helper

from pytest_triton.repository import EnsembleStep
from pytest_triton.repository import RepositoryBuilder
from pytest_triton.repository import TensorSpec
from pytest_triton.repository.sagemaker import package_model_tar

pytest.importorskip("pytriton", reason="the embedded tritonserver comes from nvidia-pytriton (pip install '.[serve]')")
pytest.importorskip("onnxruntime", reason="the in-process reference needs onnxruntime (pip install '.[serve]')")

DOCS = Path(__file__).resolve().parents[2] / "docs" / "contracts.md"

pytestmark = pytest.mark.xdist_group("embedded-triton")

POSTPROCESS = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            scores = pb_utils.get_input_tensor_by_name(request, "scores").as_numpy()
            e = np.exp(scores - scores.max(axis=-1, keepdims=True))
            probs = (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)
            responses.append(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("PROBS", probs)]))
        return responses
"""


def docs_example() -> str:
    """The toml block after the "tested example" marker of docs/contracts.md."""
    text = DOCS.read_text(encoding="utf-8")
    match = re.search(r"<!-- tested example[^>]*-->\s*```toml\n(.*?)```", text, re.DOTALL)
    assert match, f"{DOCS} has no toml block after its '<!-- tested example' marker"
    return match.group(1)


def scorer_onnx(path: Path, *, fp16: bool = False, clip: float | None = None) -> Path:
    """4 features -> 3 scores (x @ W + b); ``clip`` caps x first (a variant that drifts for large inputs)."""

    dtype = np.float16 if fp16 else np.float32
    w = np.array([[0.5, -1.0, 0.25], [1.0, 0.5, -0.5], [-0.75, 0.25, 1.0], [0.2, 0.8, -0.3]])
    b = np.array([0.1, -0.2, 0.05])
    inits = [numpy_helper.from_array(w.astype(dtype), "w"), numpy_helper.from_array(b.astype(dtype), "b")]
    nodes = []
    x = "x"
    if fp16:
        nodes.append(helper.make_node("Cast", ["x"], ["x16"], to=TensorProto.FLOAT16))
        x = "x16"
    if clip is not None:
        inits.append(numpy_helper.from_array(np.array(clip, dtype=dtype), "cap"))
        nodes.append(helper.make_node("Min", [x, "cap"], ["capped"]))
        x = "capped"
    nodes += [helper.make_node("MatMul", [x, "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["s"])]
    nodes.append(helper.make_node("Cast", ["s"], ["scores"], to=TensorProto.FLOAT))
    graph = helper.make_graph(
        nodes,
        "scorer",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["n", 3])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(model.SerializeToString())
    return path


def make_project(root: Path, *, fp16_clip: float | None = None) -> None:
    """The other repository: its model, three repositories (one as model.tar.gz) and the docs' declaration."""

    fp32 = scorer_onnx(root / "models" / "scorer.onnx")
    fp16 = scorer_onnx(root / "build" / "scorer_fp16.onnx", fp16=True, clip=fp16_clip)
    RepositoryBuilder(root / "repos" / "fp32").add_onnx("scorer", fp32, max_batch_size=8).build()
    staged = RepositoryBuilder(root / "build" / "fp16").add_onnx("scorer", fp16, max_batch_size=8).build()
    package_model_tar(staged, root / "repos" / "fp16.tar.gz")
    scores = TensorSpec("scores", "TYPE_FP32", (3,))
    pipeline = RepositoryBuilder(root / "repos" / "pipeline").add_onnx("scorer", fp32, max_batch_size=8)
    pipeline.add_python(
        "post", source=POSTPROCESS, inputs=[scores], outputs=[TensorSpec("PROBS", "TYPE_FP32", (3,))], max_batch_size=8
    )
    pipeline.add_ensemble(
        "pipeline",
        max_batch_size=8,
        inputs=[TensorSpec("X", "TYPE_FP32", (4,))],
        outputs=[TensorSpec("SCORES", "TYPE_FP32", (3,)), TensorSpec("PROBS", "TYPE_FP32", (3,))],
        steps=[
            EnsembleStep("scorer", {"x": "X"}, {"scores": "SCORES"}),
            EnsembleStep("post", {"scores": "SCORES"}, {"PROBS": "PROBS"}),
        ],
    ).build()
    (root / "contracts.toml").write_text(docs_example(), encoding="utf-8")


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    make_project(pytester.path)
    return pytester.path


def test_docs_example_gives_parity_and_latency_items_and_a_report(
    pytester: pytest.Pytester, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pytest-benchmark disables itself in any process that sees PYTEST_XDIST_WORKER, which this run inherits
    # from the xdist worker it is started from (README's -n 2): it is not a worker itself
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    result = pytester.runpytest_subprocess(
        "--triton-contracts",
        "contracts.toml",
        "--triton-report",
        "report/run",
        "--benchmark-json",
        "benchmark.json",
        "--junitxml",
        "junit.xml",
        "-p",
        "no:cacheprovider",
        "-rA",
    )
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines(
        [
            "*= triton contracts =*",
            "PASSED   contracts.toml::parity?fp16?: parity holds: variant 'fp16' vs reference 'onnxruntime' on "
            "25 generated inputs (seed=1,*",
            "*relative latency PASS: 'pipeline' / 'fp32' p50_ms = *",
            "*= triton latency =*",
            "PASSED contracts.toml::parity?fp16?",
            "PASSED contracts.toml::parity?pipeline?",
            "PASSED contracts.toml::latency?fp32?",
            "PASSED contracts.toml::latency?onnxruntime?",
            "PASSED contracts.toml::latency?pipeline/fp32?",
        ]
    )
    saved = json.loads((project / "report" / "run.contracts.json").read_text())
    assert [o["check"] for o in saved] == [
        "parity[fp32]",
        "parity[fp16]",
        "parity[pipeline]",
        "latency[fp32]",
        "latency[fp16]",
        "latency[pipeline]",
        "latency[onnxruntime]",
        "latency[pipeline/fp32]",
    ]
    # the latency report holds parity, latency and the declared relative budget side by side
    latency = json.loads((project / "report" / "run.json").read_text())
    assert {r["variant"] for r in latency["results"]} >= {"fp32", "fp16", "pipeline", "onnxruntime"}
    assert [(p["variant"], p["ok"]) for p in latency["parity"]] == [("fp32", True), ("fp16", True), ("pipeline", True)]
    [relative] = latency["relative"]
    assert relative["budget"]["name"] == "contracts.toml: latency[pipeline/fp32] p50"
    assert (relative["budget"]["variant"], relative["budget"]["baseline"], relative["paired"]) == (
        "pipeline",
        "fp32",
        True,
    )
    assert relative["rounds"] >= 9  # the first look
    assert relative["status"] == "pass"
    assert "contracts.toml: latency[pipeline/fp32] p50" in (project / "report" / "run.md").read_text()
    # benchmark = true: pytest-benchmark got every latency item's samples
    benchmarks = json.loads((project / "benchmark.json").read_text())["benchmarks"]
    assert sorted(b["name"] for b in benchmarks) == [
        "latency[fp16]",
        "latency[fp32]",
        "latency[onnxruntime]",
        "latency[pipeline]",
    ]
    # pytest-benchmark's machine info carries the budget hardware key (--benchmark-compare across machines warns)
    machine = json.loads((project / "benchmark.json").read_text())["machine_info"]
    assert machine["triton_hardware"] == latency["provenance"]["hardware"]
    # JUnit XML: each item's verdict, and each latency item's p50, samples/s or ratio, as properties
    properties = junit_properties(project / "junit.xml")
    assert properties["parity[fp16]"]["triton_verdict"] == "passed"
    fp32 = properties["latency[fp32]"]
    assert fp32["triton_verdict"] == "passed"
    assert float(fp32["triton_p50_ms[fp32]"]) > 0
    assert float(fp32["triton_samples_per_s[fp32]"]) > 0
    relative = properties["latency[pipeline/fp32]"]
    name = "contracts.toml: latency[pipeline/fp32] p50"
    assert float(relative[f"triton_ratio[{name}]"]) > 0
    # how sure: the interval of the ratio, the rounds it took, the outcome
    low, high = (float(v) for v in relative[f"triton_ratio_interval[{name}]"].split(".."))
    assert low <= float(relative[f"triton_ratio[{name}]"]) <= high
    assert int(relative[f"triton_rounds[{name}]"]) >= 9
    assert relative[f"triton_verdict[{name}]"] == "pass"


def junit_properties(path: Path) -> dict[str, dict[str, str]]:
    """Test name → its JUnit XML properties."""
    import xml.etree.ElementTree as ET

    cases = ET.parse(path).getroot().iter("testcase")
    return {c.get("name", ""): {p.get("name", ""): p.get("value", "") for p in c.iter("property")} for c in cases}


def test_contract_items_are_collected_like_any_test(pytester: pytest.Pytester, project: Path) -> None:
    args = ("--triton-contracts", "contracts.toml", "--co", "-q", "-p", "no:cacheprovider")
    listed = pytester.runpytest_subprocess(*args)
    listed.stdout.fnmatch_lines(["contracts.toml::parity[[]fp32[]]", "contracts.toml::latency[[]pipeline/fp32[]]"])
    chosen = pytester.runpytest_subprocess(
        *args,
        "-k",
        "parity and not fp16",
        "--deselect",
        "contracts.toml::parity[pipeline]",
    )
    chosen.stdout.fnmatch_lines(["contracts.toml::parity[[]fp32[]]", "1/8 tests collected (7 deselected)*"])


def test_a_drifting_variant_fails_with_the_shrunk_input_and_worst_element(pytester: pytest.Pytester) -> None:
    make_project(pytester.path, fp16_clip=1.5)  # fp16 now caps its inputs at 1.5: wrong only above it
    text = (pytester.path / "contracts.toml").read_text()
    gpu_only = '\n[variants.gpu-only]\nrepository = "repos/fp32"\nmodel = "scorer"\nrequires = ["gpu"]\n'
    (pytester.path / "contracts.toml").write_text(text.replace("[inputs.generate]", gpu_only + "\n[inputs.generate]"))
    result = pytester.runpytest_subprocess(
        "--triton-contracts", "contracts.toml", "-k", "parity", "-p", "no:cacheprovider", "-rs"
    )
    result.assert_outcomes(passed=2, failed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*_ triton-contract: parity?fp16? _*",
            "parity FAILED: variant 'fp16' vs reference 'onnxruntime' on * generated inputs (seed=1, *"
            "reproduce with [[]inputs.generate[]] seed = 1)",
            "minimal input that shows the disagreement (shrunk by Hypothesis):",
            "  x float32 [[]2, 4[]] = *",
            "- scores tolerance (fp16: atol=0.01, rtol=0.01): FAILED",
            "*output 'scores' float32 (2, 3): values differ beyond tolerance",
            "*worst element [[]*]: reference=* candidate=* (|diff|=*, allowed *)",
            "*the worst element is in sample 'row *'",
        ]
    )
    result.stdout.fnmatch_lines(["SKIPPED*contracts.toml*variant 'gpu-only': it needs a GPU: run with --gpu*"])
    # shrunk to what matters: a feature above the cap of 1.5, the others at their simplest (0)
    shown = result.stdout.str().split("x float32 [2, 4] = ", 1)[1].split("- scores", 1)[0]
    values = [float(v) for v in re.findall(r"-?\d+\.?\d*(?:e[-+]?\d+)?", shown)]
    assert len(values) == 8, shown
    assert max(values) > 1.5, shown
    assert values.count(0.0) >= 6, shown


def test_an_invalid_declaration_stops_the_run_naming_file_key_and_value(pytester: pytest.Pytester) -> None:
    (pytester.path / "repos").mkdir()
    pytester.path.joinpath("model.onnx").write_bytes(b"")
    pytester.makefile(
        ".toml",
        contracts='[reference]\nonnx = "model.onnx"\n\n[variants.fast]\nrepository = "repos"\nmodel = "m"\n'
        'precision = "fp8"\n\n[inputs]\ngenerate = {}\n',
    )
    result = pytester.runpytest_subprocess("--triton-contracts", "contracts.toml", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: invalid contracts file: */contracts.toml:7:1: variants.fast.precision='fp8': "
            "expected one of 'fp32', 'tf32', 'fp16', 'int8'"
        ]
    )


SMALL = """\
[reference]
onnx = "model.onnx"

[variants.a]
repository = "repos"
model = "m"

[variants.b]
repository = "repos"
model = "m"{extra}

[inputs]
generate = {{}}

[latency]
variants = ["b"]
"""


def _small(root: Path, extra: str = "") -> str:
    (root / "repos").mkdir(exist_ok=True)
    (root / "model.onnx").write_bytes(b"")
    return SMALL.format(extra=extra)


def test_declarations_from_the_ini_key_and_from_pyproject(pytester: pytest.Pytester) -> None:
    text = _small(pytester.path)
    (pytester.path / "sub").mkdir()
    (pytester.path / "sub" / "c.toml").write_text(
        text.replace('"model.onnx"', '"../model.onnx"').replace('"repos"', '"../repos"')
    )
    (pytester.path / "pytest.ini").write_text("[pytest]\ntriton_contracts = sub/c.toml\n")
    result = pytester.runpytest_subprocess("--co", "-q", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(
        ["sub/c.toml::parity[[]a[]]", "sub/c.toml::parity[[]b[]]", "sub/c.toml::latency[[]b[]]"]
    )
    (pytester.path / "pytest.ini").unlink()
    body = text.replace("[reference]", "[tool.pytest-triton.contracts.reference]")
    for table in ("variants.", "inputs", "latency"):
        body = body.replace(f"[{table}", f"[tool.pytest-triton.contracts.{table}")
    (pytester.path / "pyproject.toml").write_text(body)
    result = pytester.runpytest_subprocess("--co", "-q", "-p", "no:cacheprovider", "-k", "latency")
    result.stdout.fnmatch_lines(["pyproject.toml::latency[[]b[]]", "1/3 tests collected (2 deselected)*"])


def test_an_unknown_launcher_stops_the_run_listing_the_known_ones(pytester: pytest.Pytester) -> None:
    pytester.makefile(".toml", contracts=_small(pytester.path, '\nlauncher = "kubernetes"'))
    result = pytester.runpytest_subprocess("--triton-contracts", "contracts.toml", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: invalid contracts file: */contracts.toml:11:1: "
            "variants.b.launcher='kubernetes': *(known: docker, local, sagemaker, sagemaker-local, url)*"
        ]
    )


def test_latency_at_concurrency_n_sends_from_n_clients(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    make_project(pytester.path)
    text = (pytester.path / "contracts.toml").read_text()
    (pytester.path / "contracts.toml").write_text(text.replace("[latency]\n", "[latency]\nconcurrency = 3\n", 1))
    result = pytester.runpytest_subprocess(
        "--triton-contracts",
        "contracts.toml",
        "-k",
        "latency and fp32 and not pipeline",
        "-p",
        "no:cacheprovider",
        "--triton-report",
        "report/run",
    )
    result.assert_outcomes(passed=1)
    report = json.loads((pytester.path / "report" / "run.json").read_text())
    (row,) = [v for v in report["results"] if "fp32" in v["variant"]]
    assert "3 clients at once (concurrency 3)" in row["notes"]
