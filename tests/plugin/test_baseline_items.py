"""``--triton-baseline REF``: a pull request's variants against the base's, side by side in one run.

A git repository with a base commit and three pull requests on it: one that changes nothing the model does, one
whose python step is about 30% slower, one whose weight drifted so that one output element moves by more than
the tolerance. Each run passes, fails the latency pair, or fails the parity pair, and its verdict table names
the cause. Beside the compared variant: one whose repository did not change (skipped, saying so) and one new in
the PR (no baseline, saying so).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("pytriton", reason="the embedded tritonserver comes from nvidia-pytriton (pip install '.[serve]')")
pytest.importorskip("hypothesis", reason="generated inputs need Hypothesis (pip install '.[contracts]')")

pytestmark = pytest.mark.xdist_group("embedded-triton")

CONFIG = """\
name: "{name}"
backend: "python"
max_batch_size: 8
input [
  {{ name: "A" data_type: TYPE_FP32 dims: [ 4 ] }},
  {{ name: "B" data_type: TYPE_FP32 dims: [ 4 ] }}
]
output [ {{ name: "SUM" data_type: TYPE_FP32 dims: [ 4 ] }} ]
instance_group [ {{ kind: KIND_CPU count: 1 }} ]
"""

# A + WEIGHTS * B after a python step of STEP_S seconds (a sleep: the step dominates the request, and it takes
# no core from the two servers' and the client's work on a loaded machine)
MODEL = """\
import time

import numpy as np
import triton_python_backend_utils as pb_utils

STEP_S = {step}
WEIGHTS = np.array({weights}, dtype=np.float32)


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "A").as_numpy()
            b = pb_utils.get_input_tensor_by_name(request, "B").as_numpy()
            time.sleep(STEP_S)
            responses.append(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("SUM", a + WEIGHTS * b)]))
        return responses
"""

CONTRACTS = """\
[reference]
variant = "add"

[variants.add]
repository = "repos/add"
model = "add"

[variants.same]
repository = "repos/same"
model = "add"
{extra}
[inputs.generate]
from = "add"
examples = 30
seed = 3
max_seconds = 30
batch_size = 2

[latency]
variants = ["add"]
batch_size = 1
throughput_batch_size = 1
warmup = 5
window_ms = 1000

[baseline]
max_p50_ratio = 1.10
min_samples_per_s_ratio = 0.90
"""

FRESH = '\n[variants.fresh]\nrepository = "repos/add"\nmodel = "add"\n'
STEP_S = 0.05  # the step dominates the request: a loaded machine's overhead compresses the ratio less
WEIGHTS = [1.0, 1.0, 1.0, 1.0]


def _git(root: Path, *args: str) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(root)}
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env, timeout=60)


def write_model(
    root: Path, folder: str, *, step: float = STEP_S, weights: list[float] = WEIGHTS, note: str = ""
) -> None:
    model = root / "repos" / folder / "add"
    (model / "1").mkdir(parents=True, exist_ok=True)
    (model / "config.pbtxt").write_text(CONFIG.format(name="add"), encoding="utf-8")
    (model / "1" / "model.py").write_text(note + MODEL.format(step=step, weights=weights), encoding="utf-8")


def make_base(root: Path) -> None:
    """The base commit (tagged ``base``): two repositories of the same model and a contracts file."""
    _git(root, "init", "-q", "-b", "main")
    _git(root, "config", "user.email", "ci@example.com")
    _git(root, "config", "user.name", "ci")
    write_model(root, "add")
    write_model(root, "same")
    (root / "contracts.toml").write_text(CONTRACTS.format(extra=""), encoding="utf-8")
    (root / ".gitignore").write_text("report/\n__pycache__/\n", encoding="utf-8")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "base")
    _git(root, "tag", "base")


def open_pr(root: Path, branch: str, **change: object) -> None:
    """A pull request on the base: ``add``'s model changed as given, and a variant ``fresh`` new in it."""
    _git(root, "checkout", "-q", "-B", branch, "base")
    write_model(root, "add", **change)  # type: ignore[arg-type]
    (root / "contracts.toml").write_text(CONTRACTS.format(extra=FRESH), encoding="utf-8")
    _git(root, "commit", "-q", "-am", branch)


def run_verdict(pytester: pytest.Pytester) -> tuple[pytest.RunResult, str]:
    result = pytester.runpytest_subprocess(
        "--triton-contracts",
        "contracts.toml",
        "--triton-baseline",
        "base",
        "--triton-verdict",
        "report/pr-verdict.md",
        "-m",
        "triton_baseline",
        "-p",
        "no:cacheprovider",
        "-rfs",
    )
    verdict = (pytester.path / "report" / "pr-verdict.md").read_text(encoding="utf-8")
    return result, verdict


def ratio(verdict: str, column: int) -> float:
    """The ratio of the ``add`` row's column (1: p50, 2: p99, 3: samples/s)."""
    row = next(line for line in verdict.splitlines() if line.startswith("| `add`"))
    cell = row.split(" | ")[column]
    found = re.search(r"\(([\d.]+)×", cell)
    assert found, row
    return float(found.group(1))


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    make_base(pytester.path)
    return pytester.path


def test_an_unchanged_model_passes_both_pairs(pytester: pytest.Pytester, project: Path) -> None:
    open_pr(project, "comment-only", note="# reformatted, same computation\n")
    result, verdict = run_verdict(pytester)
    print(f"ratios p50={ratio(verdict, 1):.3f} samples/s={ratio(verdict, 3):.3f}")
    result.assert_outcomes(passed=2, skipped=4)
    # a pass, or an INCONCLUSIVE on a loaded machine, which the table says (both pass the item by default)
    result.stdout.fnmatch_lines(["*= triton verdict =*", "*against base (*"])
    row = next(line for line in verdict.splitlines() if line.startswith("| `add`"))
    assert "✅ pass" in row or "⚠️ INCONCLUSIVE" in row, row
    assert "❌" not in verdict, verdict
    result.stdout.fnmatch_lines(
        [
            "SKIPPED*contracts.toml*variant 'fresh': new in this PR: contracts.toml at base (*) declares no "
            "variant 'fresh': no baseline",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "SKIPPED*contracts.toml*variant 'same': its repository repos/same is the same at base (*) and in the "
            "working tree: not compared (--triton-baseline-unchanged compares it anyway)"
        ]
    )
    assert verdict.startswith("<!-- pytest-triton verdict -->\n")
    assert re.search(r"\| `add` \| [\d.]+ → [\d.]+ ms \([\d.]+× \[[\d.]+, [\d.]+\], ≤ 1\.10×\)", verdict), verdict
    assert "| `fresh` | – | – | – | – | ➖ skipped: new |" in verdict
    assert "| `same` | – | – | – | – | ➖ skipped: unchanged |" in verdict


def test_a_slower_python_step_fails_the_latency_pair(pytester: pytest.Pytester, project: Path) -> None:
    open_pr(project, "slower", step=STEP_S * 1.3)
    result, verdict = run_verdict(pytester)
    print(f"ratios p50={ratio(verdict, 1):.3f} samples/s={ratio(verdict, 3):.3f}")
    result.assert_outcomes(passed=1, failed=1, skipped=4)
    result.stdout.fnmatch_lines(["FAILED contracts.toml::latency[[]add/add@base[]]*"])
    row = next(line for line in verdict.splitlines() if line.startswith("| `add`"))
    # the cause named: p50 over 1.10x or samples/s under 0.90x (one of them may be inconclusive on a loaded machine)
    assert re.search(r"❌ FAIL: .*(p50 fail|samples/s fail)", row), row
    assert "parity" not in row.split("❌ FAIL")[-1], row
    assert ratio(verdict, 1) > 1.10, row


def test_a_drifted_weight_fails_the_parity_pair_naming_the_element(pytester: pytest.Pytester, project: Path) -> None:
    open_pr(project, "drift", weights=[1.0, 1.0, 1.01, 1.0])
    result, verdict = run_verdict(pytester)
    print(f"ratios p50={ratio(verdict, 1):.3f} samples/s={ratio(verdict, 3):.3f}")
    result.assert_outcomes(passed=1, failed=1, skipped=4)
    result.stdout.fnmatch_lines(
        [
            "*parity FAILED: variant 'add' vs reference 'add@base' on * generated inputs (seed=3,*",
            "minimal input that shows the disagreement (shrunk by Hypothesis):",
            "*worst element [[]*, 2[]]: reference=* candidate=*",
            "FAILED contracts.toml::parity[[]add@base[]]*",
        ]
    )
    row = next(line for line in verdict.splitlines() if line.startswith("| `add`"))
    # the worst element is in the drifted column (index 2 of SUM's 4)
    assert re.search(r"❌ SUM\[\d+, 2\]: base .* PR .* \(\\\|diff\\\| [\d.e-]+, allowed [\d.e-]+\)", row), row
    assert "❌ FAIL: parity" in row, row
    assert "p50 fail" not in row, row


def test_an_unknown_ref_or_no_contracts_file_stops_the_run_saying_what_to_do(
    pytester: pytest.Pytester, project: Path
) -> None:
    result = pytester.runpytest_subprocess("--triton-contracts", "contracts.toml", "--triton-baseline", "origin/nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: --triton-baseline='origin/nope': git knows no such commit in *fetch-depth: 0*"]
    )
    result = pytester.runpytest_subprocess("--triton-baseline", "base")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --triton-baseline='base' compares declared variants, and this run has no *"])


def test_shards_split_the_pairs_and_each_table_holds_its_own(pytester: pytest.Pytester, project: Path) -> None:
    open_pr(project, "comment-only", note="# reformatted, same computation\n")
    tables = []
    for index in (1, 2):
        result = pytester.runpytest_subprocess(
            *("--triton-contracts", "contracts.toml", "--triton-baseline", "base", "-m", "triton_baseline"),
            *("--triton-shard", f"{index}/2", "--triton-verdict", f"report/shard-{index}.md", "-p", "no:cacheprovider"),
        )
        assert result.ret == 0, result.stdout.str()
        tables.append((pytester.path / "report" / f"shard-{index}.md").read_text(encoding="utf-8"))
    rows = [{line.split("`")[1] for line in table.splitlines() if line.startswith("| `")} for table in tables]
    assert rows[0], tables[0]
    assert rows[1], tables[1]
    assert not rows[0] & rows[1]  # a pair is in one shard's table only
    assert rows[0] | rows[1] == {"add", "same", "fresh"}
