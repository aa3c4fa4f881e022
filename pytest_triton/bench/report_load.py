"""A report's JSON read back into :class:`~pytest_triton.bench.report.ReportData`: the inverse of ``to_json``.

Reports cross process boundaries (an xdist worker's rows sent to its controller, a CI shard's file merged by
``python -m pytest_triton report merge``); both come back through :func:`report_from_json`, so a merged table
is rendered by the same code as a single run's. A value of the wrong shape is a :class:`ConfigError` that
names the entry, never a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_triton.bench.absolute import Check
from pytest_triton.bench.absolute import Verdict
from pytest_triton.bench.budgets import Budget
from pytest_triton.bench.engine import Calibration
from pytest_triton.bench.parity_record import OutputRecord
from pytest_triton.bench.parity_record import ParityRecord
from pytest_triton.bench.provenance import Provenance
from pytest_triton.bench.relative import RelativeBudget
from pytest_triton.bench.relative import RelativeResult
from pytest_triton.bench.report import REPORT_VERSION
from pytest_triton.bench.report import ReportData
from pytest_triton.bench.results import VariantResult
from pytest_triton.bench.server_stats import ServerSplit
from pytest_triton.bench.stats import LatencyStats
from pytest_triton.errors import ConfigError

__all__ = ["read_report_json", "report_from_json"]


def read_report_json(path: Path) -> dict[str, Any]:
    """A report file's JSON object, read through the guarded reader (a regular file within the ``report``
    limit: it keeps every latency sample, so generous, still bounded), else a ConfigError."""
    from pytest_triton.archive.files import read_file_text

    text = read_file_text(path, "report")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ConfigError(f"not a report's JSON: {exc}", path=str(path)) from None
    if not isinstance(data, dict):
        raise ConfigError(
            f"not a report's JSON: top level is {type(data).__name__}, expected an object", path=str(path)
        )
    return data


def _fields(cls: Any, data: Mapping[str, Any], tuples: tuple[str, ...] = ()) -> dict[str, Any]:
    """The keys of ``data`` that are fields of dataclass ``cls`` (lists named in ``tuples`` made tuples)."""
    out = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
    for name in tuples:
        if out.get(name) is not None:
            out[name] = tuple(out[name])
    return out


def _number(value: Any) -> float:
    return float(value)  # NaN and infinities are written as their names ("nan", "inf")


def _verdict(data: Mapping[str, Any]) -> Verdict:
    checks = tuple(Check(**_fields(Check, c)) for c in data.get("checks", ()))
    return Verdict(data["status"], data["reason"], checks)


def _optional(data: Any, make: Any) -> Any:
    return None if data is None else make(data)


def _result(data: Mapping[str, Any]) -> VariantResult:
    fields = _fields(VariantResult, data, ("samples_ms", "notes", "load_average", "interleaved_with"))
    fields["verdict"] = _verdict(data["verdict"])
    fields["latency"] = _optional(data.get("latency"), LatencyStats.from_dict)
    fields["throughput"] = _optional(data.get("throughput"), LatencyStats.from_dict)
    fields["server"] = _optional(data.get("server"), ServerSplit.from_dict)
    fields["budget"] = _optional(data.get("budget"), lambda b: Budget(**_fields(Budget, b)))
    fields["calibration"] = _optional(data.get("calibration"), lambda c: Calibration(**_fields(Calibration, c)))
    fields["warmup_s"] = {k: tuple(v) for k, v in data.get("warmup_s", {}).items()}
    return VariantResult(**fields)


def _relative(data: Mapping[str, Any]) -> RelativeResult:
    paired = bool(data.get("paired"))
    return RelativeResult(
        budget=RelativeBudget(**_fields(RelativeBudget, data["budget"])),
        status=data["status"],
        reason=data["reason"],
        variant_value=data.get("variant_value"),
        baseline_value=data.get("baseline_value"),
        stability=data.get("stability", ""),
        paired_ratio=data.get("ratio") if paired else None,
        paired_added=data.get("added") if paired else None,
        rounds=data.get("rounds", 0),
        interval=tuple(data["ratio_interval"]) if data.get("ratio_interval") else None,
        confidence=data.get("confidence", 0.0),
    )


def _output(data: Mapping[str, Any]) -> OutputRecord:
    fields = _fields(OutputRecord, data, ("shape", "worst_index"))
    fields["max_abs_error"] = _number(data["max_abs_error"])
    fields["max_rel_error"] = _number(data["max_rel_error"])
    return OutputRecord(**fields)


def _parity(data: Mapping[str, Any]) -> ParityRecord:
    fields = _fields(ParityRecord, data, ("label_disagreements",))
    fields["outputs"] = tuple(_output(o) for o in data.get("outputs", ()))
    return ParityRecord(**fields)


def _provenance(data: Mapping[str, Any]) -> Provenance:
    return Provenance(**_fields(Provenance, data, ("load_average",)))


def report_from_json(data: Mapping[str, Any], *, source: str = "report") -> ReportData:
    """The :class:`ReportData` a report's JSON holds (``source`` names it in errors)."""
    version = data.get("version")
    if version != REPORT_VERSION:
        raise ConfigError(
            f"report version={version!r}; this pytest-triton reads version {REPORT_VERSION} "
            "(write every report with the same pytest-triton)",
            path=source,
        )
    entry = "results"
    try:
        results = tuple(_result(r) for r in data.get("results", ()))
        entry = "relative"
        relative = tuple(_relative(r) for r in data.get("relative", ()))
        entry = "parity"
        parity = tuple(_parity(p) for p in data.get("parity", ()))
        entry = "provenance"
        provenance = _optional(data.get("provenance"), _provenance)
        explanations = tuple(str(e) for e in data.get("explanations", ()))
        entry = "contracts"
        contracts = tuple({str(k): str(v) for k, v in o.items()} for o in data.get("contracts", ()))
        entry = "shard"
        shard = data.get("shard")
        if shard is not None and not isinstance(shard, dict):
            raise TypeError(f"expected an object, got {type(shard).__name__}")
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ConfigError(f"report entry {entry!r} is not as pytest-triton writes it: {exc!r}", path=source) from exc
    return ReportData(results, relative, parity, provenance, explanations, contracts, shard)
