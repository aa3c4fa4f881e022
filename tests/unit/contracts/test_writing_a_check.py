"""docs/contracts.md's "Writing a contract check" runs: its code registers a check, a contracts file declares
it, a wrong value is one error naming the key, and the check passes and fails on outputs."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_triton.contracts import parse_declaration
from pytest_triton.contracts.checks import DERIVED_CHECKS
from pytest_triton.contracts.checks import DerivedCheck
from pytest_triton.contracts.checks import compare_outputs
from pytest_triton.contracts.checks import register_check
from pytest_triton.contracts.checks import unregister_check
from pytest_triton.errors import ConfigError
from pytest_triton.parity.tensors import tolerance

PAGE = Path(__file__).resolve().parents[3] / "docs" / "contracts.md"
CONTRACTS = """\
[reference]
onnx = "model.onnx"

[variants.fp16]
repository = "repo"
model = "m"

[inputs]
samples = "samples.jsonl"

{outputs}
"""


def _blocks(language: str) -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index("## Writing a contract check") :]
    return re.findall(rf"^```{language}\n(.*?)^```", section, re.S | re.M)


@pytest.fixture
def page_check() -> Iterator[None]:
    (code,) = _blocks("python")
    exec(compile(code, str(PAGE), "exec"), {"__name__": "docs_contracts_example"})
    try:
        yield
    finally:
        unregister_check("mean_abs")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "repo").mkdir()
    (tmp_path / "model.onnx").write_bytes(b"")
    (tmp_path / "samples.jsonl").write_text("")
    return tmp_path


def _declared(folder: Path, outputs: str) -> Any:
    return parse_declaration(CONTRACTS.format(outputs=outputs), folder / "contracts.toml")


@pytest.mark.usefixtures("page_check")
def test_the_page_check_is_declared_and_run(folder: Path) -> None:
    (toml,) = _blocks("toml")
    (check,) = _declared(folder, toml).outputs
    assert check.derived == {"mean_abs": 0.001}
    reference = {"embedding": np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)}
    close = {"embedding": reference["embedding"] + np.float32(0.0005)}
    far = {"embedding": reference["embedding"] + np.array([[0.0, 0.0], [0.01, 0.01]], dtype=np.float32)}
    wide = tolerance("fp32", atol=1.0)

    def run(candidate: dict[str, Any]) -> tuple[bool, str]:
        results = compare_outputs(
            reference, candidate, [check], precision=wide, variant="fp16", reference_name="ref", row_ids=["a", "b"]
        )
        (derived,) = [r for r in results if r.check.startswith("mean_abs")]
        return derived.ok, derived.lines[0]

    assert run(close)[0]
    ok, line = run(far)
    assert not ok
    assert "(allowed <= 0.001) at sample 'b'" in line


@pytest.mark.usefixtures("page_check")
def test_a_wrong_value_of_the_page_check_is_one_error(folder: Path) -> None:
    with pytest.raises(ConfigError, match=r"parity\.outputs\.y\.mean_abs=-1: expected a mean absolute difference >= 0"):
        _declared(folder, "[parity.outputs.y]\nmean_abs = -1\n")


def test_an_unregistered_check_is_an_unknown_key(folder: Path) -> None:
    assert "mean_abs" not in DERIVED_CHECKS
    with pytest.raises(ConfigError, match="unknown key 'mean_abs'"):
        _declared(folder, "[parity.outputs.y]\nmean_abs = 0.1\n")


@pytest.mark.usefixtures("page_check")
def test_a_taken_key_is_refused() -> None:
    with pytest.raises(ConfigError, match="key='mean_abs' is taken"):
        register_check(DERIVED_CHECKS["mean_abs"])
    with pytest.raises(ConfigError, match="key='atol' is taken"):
        register_check(DerivedCheck("atol", DERIVED_CHECKS["mean_abs"].parse, DERIVED_CHECKS["mean_abs"].run))
