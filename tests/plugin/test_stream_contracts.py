"""A repository declares contracts for its decoupled model and gets stream parity and stream latency items.

The repository holds model_repos/streaming's stream_repeat three ways: as it is (the reference), with a
longer pause before each response (a slowed variant) and with one response dropped (a lossy variant).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

pytest.importorskip("pytriton", reason="the embedded tritonserver comes from nvidia-pytriton (pip install '.[serve]')")

pytestmark = pytest.mark.xdist_group("embedded-triton")

EXAMPLES = Path(__file__).resolve().parents[2] / "model_repos" / "streaming"

DECLARATION = """
[reference]
variant = "repeat"

[variants.repeat]
repository = "repo"
model = "stream_repeat"
protocol = "stream"

[variants.slow]
repository = "repo"
model = "stream_slow"
protocol = "stream"

[variants.lossy]
repository = "repo"
model = "stream_lossy"
protocol = "stream"

[inputs]
samples = "samples.jsonl"

[latency]
variants = ["repeat", "slow"]
warmup = 2
window_ms = 300
budgets = "budgets.toml"
"""

BUDGETS = """
[streaming-test]
source = "this test: 2 ms pauses answer well within these; 60 ms pauses cannot"
tolerance = 0.0

[streaming-test.repeat]
source = "this test"
ttft_ms = 40
gap_p99_ms = 40

[streaming-test.slow]
source = "this test"
ttft_ms = 40
gap_p99_ms = 40
"""


def _variant(repo: Path, name: str, **parameters: str) -> None:
    folder = repo / name
    shutil.copytree(EXAMPLES / "stream_repeat", folder)
    config = (folder / "config.pbtxt").read_text(encoding="utf-8").replace('"stream_repeat"', f'"{name}"', 1)
    for key, value in parameters.items():
        pattern = rf'key: "{key}" value: {{ string_value: "[^"]*" }}'
        config, count = re.subn(pattern, f'key: "{key}" value: {{ string_value: "{value}" }}', config)
        assert count == 1
    (folder / "config.pbtxt").write_text(config, encoding="utf-8")


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    repo = pytester.path / "repo"
    repo.mkdir()
    shutil.copytree(EXAMPLES / "stream_repeat", repo / "stream_repeat")
    _variant(repo, "stream_slow", pause_ms="60")
    _variant(repo, "stream_lossy", drop_index="3")
    sample = {"id": "five", "inputs": [{"name": "IN", "shape": [5], "datatype": "INT32", "data": [7, 8, 9, 10, 11]}]}
    (pytester.path / "samples.jsonl").write_text(json.dumps(sample) + "\n", encoding="utf-8")
    (pytester.path / "contracts.toml").write_text(DECLARATION, encoding="utf-8")
    (pytester.path / "budgets.toml").write_text(BUDGETS, encoding="utf-8")
    return pytester


def test_stream_parity_and_latency_name_what_broke(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess(
        "-p", "no:cacheprovider", "--triton-contracts", "contracts.toml", "--triton-hardware", "streaming-test", "-rA"
    )
    result.assert_outcomes(passed=2, failed=2)
    out = result.stdout.str()
    # the slowed variant's streams agree with the reference's: only its times differ
    assert re.search(r"PASSED.*contracts.toml::parity\[slow\]", out), out
    assert "streams agree: 'slow' sent 5 response(s), 'repeat' sent 5" in out, out
    # the lossy one names the first response that differs
    assert re.search(r"FAILED.*parity\[lossy\]", out), out
    assert "streams differ at response 3: 'lossy' sent 4 response(s), 'repeat' sent 5" in out, out
    assert "output 'IDX'" in out, out
    # the slowed one fails its time to first response and gap budget; the example holds its own
    assert re.search(r"FAILED.*latency\[slow\]", out), out
    assert re.search(r"slow: FAILED: gap_p99_ms \d+\.\d\d ms > 40\.00 ms; ttft_p50_ms \d+\.\d\d ms > 40\.00 ms", out), (
        out
    )
    assert re.search(r"PASSED.*latency\[repeat\].*repeat: PASSED", out), out


def test_a_decoupled_model_declared_over_http_is_refused_when_read(project: pytest.Pytester) -> None:
    text = DECLARATION.replace('model = "stream_lossy"\nprotocol = "stream"', 'model = "stream_lossy"')
    (project.path / "contracts.toml").write_text(text, encoding="utf-8")
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "--triton-contracts", "contracts.toml")
    assert result.ret != 0
    result.stderr.fnmatch_lines(
        ["*contracts.toml:*variants.lossy.protocol='http': model 'stream_lossy' is decoupled*protocol = \"stream\"*"]
    )


def test_a_stream_declaration_needs_a_streamed_reference(project: pytest.Pytester) -> None:
    text = DECLARATION.replace('[reference]\nvariant = "repeat"', '[reference]\nonnx = "model.onnx"')
    (project.path / "contracts.toml").write_text(text, encoding="utf-8")
    (project.path / "model.onnx").write_bytes(b"")
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "--triton-contracts", "contracts.toml")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*reference.onnx: the variants are streamed*reference = { variant = NAME }*"])
