"""A report read back from its JSON is the same report; shards merge into one only when they are every shard
of one run; the verdict fails when anything failed (python -m pytest_triton report merge)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_triton.__main__ import main
from pytest_triton.bench.absolute import Check
from pytest_triton.bench.absolute import Verdict
from pytest_triton.bench.budgets import Budget
from pytest_triton.bench.merge import failures
from pytest_triton.bench.merge import merge_reports
from pytest_triton.bench.parity_record import OutputRecord
from pytest_triton.bench.parity_record import ParityRecord
from pytest_triton.bench.provenance import collect_provenance
from pytest_triton.bench.relative import RelativeBudget
from pytest_triton.bench.relative import RelativeResult
from pytest_triton.bench.report import ReportData
from pytest_triton.bench.report import to_json
from pytest_triton.bench.report import to_markdown
from pytest_triton.bench.report_load import report_from_json
from pytest_triton.bench.results import VariantResult
from pytest_triton.bench.stats import summarize
from pytest_triton.errors import ConfigError


def _report(index: int, *, total: int = 2, run: str = "run 7", failed: bool = False) -> ReportData:
    name = f"v{index}"
    latency = summarize([1_000_000 + 10_000 * i for i in range(50)])
    check = Check("p50_ms", 1.0, 1.1, latency.p50_ms, not failed)
    result = VariantResult(
        name,
        "cpu-2core-x86_64",
        Verdict("fail" if failed else "pass", "p50 over budget" if failed else "within budget", (check,)),
        latency=latency,
        budget=Budget("cpu-2core-x86_64", name, "budgets.toml", p50_ms=1.0),
        samples_ms=(1.0, 1.01),
        notes=("ran on GPU 1 (xdist worker gw1)",),
    )
    output = OutputRecord("logits", True, None, "float32", (4, 3), 12, 0, 0.0, float("nan"), (0, 1), 1.5, 1.5, 1e-4)
    parity = ParityRecord(name, "onnxruntime-fp32", "fp32", "atol=1e-4", (output,), 4, 4, (), "http, c.toml")
    relative = RelativeResult(
        RelativeBudget("cpu-2core-x86_64", name, "ref", "p50_ms", "c.toml", 0.25, max_ratio=2.0),
        "pass",
        "within",
        1.0,
        2.0,
        paired_ratio=0.5,
        rounds=3,
    )
    outcome = {
        "item": f"c.toml::parity[{name}]",
        "check": f"parity[{name}]",
        "status": "failed" if failed else "passed",
    }
    return ReportData(
        (result, VariantResult.skipped(f"{name}-trt", "cpu-2core-x86_64", "TensorRT is not installed")),
        (relative,),
        (parity,),
        collect_provenance("cpu-2core-x86_64", root=Path.cwd()),
        ("why",),
        (outcome,),
        {"index": index, "total": total, "run": run, "contracts": "abc", "variants": [f"c.toml::{name}"]},
    )


def test_report_read_back_from_json_is_the_same_report() -> None:
    data = _report(1)
    text = json.dumps(to_json(data), allow_nan=False)
    back = report_from_json(json.loads(text))
    assert to_json(back) == to_json(data)
    assert to_markdown(back) == to_markdown(data)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"version": 1}, r"report version=1; this pytest-triton reads version 2"),
        ({"results": [{"variant": "x"}]}, r"report entry 'results' is not as pytest-triton writes it"),
        ({"shard": [1, 2]}, r"report entry 'shard' is not as pytest-triton writes it"),
    ],
)
def test_a_report_not_as_written_is_refused(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        report_from_json({**to_json(_report(1)), **change}, source="a.json")


def test_shards_merge_in_shard_order() -> None:
    merged = merge_reports([("b.json", _report(2)), ("a.json", _report(1))])
    assert [r.variant for r in merged.results] == ["v1", "v1-trt", "v2", "v2-trt"]
    assert [o["item"] for o in merged.contracts] == ["c.toml::parity[v1]", "c.toml::parity[v2]"]
    assert merged.explanations[0] == "merged from 2 shard(s) of run 7"
    assert merged.shard is None  # the merge is the whole run, not a shard of it
    assert failures(merged) == []


@pytest.mark.parametrize(
    ("parts", "message"),
    [
        ([("a.json", _report(1))], r"shard\(s\) 2/2 missing: have 1/2 of run 7"),
        ([("a.json", _report(1)), ("b.json", _report(1))], r"b.json: shard 1/2 is also a.json"),
        ([("a.json", _report(1)), ("b.json", _report(2, run="run 8"))], r"b.json: run 'run 8' differs"),
        ([("a.json", _report(1)), ("b.json", _report(2, total=3))], r"shard count 3 differs from a.json's 2"),
        ([("a.json", dataclasses.replace(_report(1), shard=None))], r"a.json: not a shard's report"),
        ([], r"no reports to merge"),
    ],
)
def test_shards_that_are_not_one_whole_run_are_refused(parts: list[tuple[str, ReportData]], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        merge_reports(parts)


def test_contracts_files_of_another_run_are_refused() -> None:
    other = _report(2)
    other = dataclasses.replace(other, shard={**(other.shard or {}), "contracts": "def"})
    with pytest.raises(ConfigError, match=r"contracts files \(sha256\) 'def' differs from a.json's 'abc'"):
        merge_reports([("a.json", _report(1)), ("b.json", other)])


def test_failures_name_failed_items_and_rows() -> None:
    merged = merge_reports([("a.json", _report(1)), ("b.json", _report(2, failed=True))])
    assert failures(merged) == ["c.toml::parity[v2]", "latency row v2"]


def _write(path: Path, data: ReportData) -> str:
    path.write_text(json.dumps(to_json(data), allow_nan=False))
    return str(path)


def test_report_merge_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one, two = _write(tmp_path / "1.json", _report(1)), _write(tmp_path / "2.json", _report(2, failed=True))
    assert main(["report", "merge", one, two, "--out", str(tmp_path / "all")]) == 1
    out = capsys.readouterr().out
    assert "verdict: FAIL: 2 failed of 2 contract item(s): c.toml::parity[v2]; latency row v2" in out
    merged = json.loads((tmp_path / "all.json").read_text())
    assert [r["variant"] for r in merged["results"]] == ["v1", "v1-trt", "v2", "v2-trt"]
    assert "v2-trt" in (tmp_path / "all.md").read_text()
    assert (tmp_path / "all.svg").read_text().startswith("<svg")

    assert main(["report", "merge", one, _write(tmp_path / "3.json", _report(2)), "--out", str(tmp_path / "ok")]) == 0
    assert "verdict: PASS: 2 contract item(s) over 2 shard(s), none failed" in capsys.readouterr().out

    assert main(["report", "merge", one, "--out", str(tmp_path / "part")]) == 2
    assert "report merge: shard(s) 2/2 missing" in capsys.readouterr().err
    assert not (tmp_path / "part.json").exists()
    (tmp_path / "bad.json").write_text("[1]")
    assert main(["report", "merge", str(tmp_path / "bad.json"), "--out", str(tmp_path / "x")]) == 2
    assert "top level is list, expected an object" in capsys.readouterr().err
