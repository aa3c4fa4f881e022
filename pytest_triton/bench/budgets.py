"""Latency budgets: a TOML file keyed by hardware, then variant (the verdict of a measurement against one is
:mod:`pytest_triton.bench.absolute`).

::

    [nvidia-a10g]                      # a hardware key, as pytest_triton.hardware.hardware_key() spells it
    source = "seed 002, ml.g5.xlarge"  # where the numbers come from (required here or per variant)
    tolerance = 0.10                   # optional, default 0.10; a variant may override it
    batch_size = 1                     # optional: the batch size the percentiles were measured at (default 1)
    throughput_batch_size = 8          # optional: the batch size of samples_per_s (default 8)

    [nvidia-a10g.triton-ort-gpu]       # a variant
    p50_ms = 27.3                      # any of p50_ms, p90_ms, p95_ms, p99_ms: maximums
    p99_ms = 28.6
    samples_per_s = 57                 # a minimum

A percentile above ``budget * (1 + tolerance)`` fails; throughput below ``budget * (1 - tolerance)`` fails.
A hardware key (or a variant) that the file does not have means *measure and report, do not assert*: the verdict
is ``report-only``.

A budget says which engine path it was written on (``path``: ``adapter``, the python-backend ONNX Runtime adapter;
``native``, the backend the config names; ``in-process``), on the hardware table or per variant::

    [nvidia-h200]
    path = "adapter"                   # every variant below was measured through the adapter

A row measured on another path than its budget's is ``not-comparable`` (neither passed nor failed, with the
reason): an adapter number never judges a native-backend run, nor the other way round. A budget without
``path`` judges any path (the report says the budget did not state one).

A hardware table may say that its absolute numbers are not to be asserted (a shared, noisy machine) and why::

    [cpu-2core-x86_64]
    enforce_absolute = false
    enforce_reason = "shared 2-core CI runner: absolute latency measures the neighbours"

Its absolute budgets are then still checked and shown, with a ``report-only`` verdict that gives the reason; its
relative budgets (``[[<hardware>.relative]]``, see :mod:`pytest_triton.bench.relative`) are asserted.

Every value is validated on load; a bad one raises :class:`ConfigError` naming the file, the line, the key path
(``nvidia-a10g.triton-ort-gpu.p99_ms``) and the value.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any
from typing import final

from pytest_triton.bench.engine import BUDGET_PATHS
from pytest_triton.bench.engine import EnginePath
from pytest_triton.bench.relative import RELATIVE_METRICS
from pytest_triton.bench.relative import RelativeBudget
from pytest_triton.bench.stats import PERCENTILES
from pytest_triton.config.toml import KeyPath
from pytest_triton.config.toml import TomlDocument
from pytest_triton.config.toml import dotted
from pytest_triton.config.toml import parse_toml
from pytest_triton.config.toml import read_toml
from pytest_triton.config.values import MAX_BATCH_SIZE
from pytest_triton.config.values import MAX_MS
from pytest_triton.config.values import MAX_RATE
from pytest_triton.config.values import MAX_RATIO
from pytest_triton.config.values import integer_problem
from pytest_triton.config.values import number_problem
from pytest_triton.errors import ConfigError

__all__ = [
    "Budget",
    "BudgetFile",
    "HardwarePolicy",
    "load_budgets",
    "parse_budgets",
]

DEFAULT_TOLERANCE = 0.10
_LIMITS = tuple(f"p{p}_ms" for p in PERCENTILES)
_SHARED_KEYS = {"source", "tolerance", "batch_size", "throughput_batch_size", "notes", "path"}
# a streamed (decoupled) variant's limits: maximums in ms, except responses_per_s (a minimum); ttft_ms and
# total_ms are their p50 (bench/streams.py measures them)
STREAM_LIMIT_KEYS = ("ttft_p50_ms", "ttft_p99_ms", "gap_p50_ms", "gap_p90_ms", "gap_p99_ms", "total_p50_ms")
STREAM_KEY_ALIASES = {"ttft_ms": "ttft_p50_ms", "total_ms": "total_p50_ms"}
_STREAM_KEYS = {*STREAM_LIMIT_KEYS, *STREAM_KEY_ALIASES, "responses_per_s"}
_VARIANT_KEYS = {*_LIMITS, "samples_per_s", *_SHARED_KEYS, *_STREAM_KEYS}
_HARDWARE_KEYS = {"enforce_absolute", "enforce_reason", "relative"}
_RELATIVE_KEYS = {
    "name",
    "variant",
    "baseline",
    "metric",
    "max_ratio",
    "max_added_ms",
    "min_ratio",
    "source",
    "tolerance",
    "notes",
}


@final
@dataclass(frozen=True)
class Budget:
    """The limits of one variant on one hardware; a limit left out is not checked."""

    hardware: str
    variant: str
    source: str
    tolerance: float = DEFAULT_TOLERANCE
    p50_ms: float | None = None
    p90_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None
    samples_per_s: float | None = None
    batch_size: int = 1
    throughput_batch_size: int = 8
    notes: str = ""
    path: EnginePath | None = None  # the engine path it was written on (None: not stated, judges any path)
    stream: Mapping[str, float] = field(default_factory=dict)  # a streamed variant's limits (STREAM_LIMIT_KEYS)

    def percentile_limits(self) -> dict[int, float]:
        return {p: v for p in PERCENTILES if (v := getattr(self, f"p{p}_ms")) is not None}

    def describe(self) -> str:
        """Compact text for a table cell: ``p50≤15.4 p99≤17.4 ms ≥185/s ±10%``."""
        parts = [f"p{p}≤{v:g}" for p, v in self.percentile_limits().items()]
        text = " ".join(parts) + (" ms" if parts else "")
        if self.samples_per_s is not None:
            text += f" ≥{self.samples_per_s:g}/s"
        return f"{text.strip()} ±{self.tolerance:.0%}"

    def as_dict(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__dataclass_fields__}


@final
@dataclass(frozen=True)
class HardwarePolicy:
    """What a hardware table asserts: absolute budgets too (known hardware) or only relative ones, and why."""

    enforce_absolute: bool = True
    reason: str = ""
    batch_size: int = 1
    throughput_batch_size: int = 8

    def as_dict(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__dataclass_fields__}


@final
@dataclass(frozen=True)
class BudgetFile:
    """Every budget of a file: ``budgets[hardware][variant]``, ``relative[hardware]``, ``policies[hardware]``."""

    path: Path | None
    budgets: Mapping[str, Mapping[str, Budget]]
    relative: Mapping[str, tuple[RelativeBudget, ...]] = field(default_factory=dict)
    policies: Mapping[str, HardwarePolicy] = field(default_factory=dict)

    def lookup(self, hardware: str, variant: str) -> Budget | None:
        return self.budgets.get(hardware, {}).get(variant)

    def policy(self, hardware: str) -> HardwarePolicy:
        return self.policies.get(hardware, HardwarePolicy())

    def relative_budgets(self, hardware: str, variants: Collection[str]) -> tuple[RelativeBudget, ...]:
        """The relative budgets of ``hardware`` whose variant and baseline are both among ``variants``."""
        return tuple(r for r in self.relative.get(hardware, ()) if r.variant in variants and r.baseline in variants)

    def missing_reason(self, hardware: str, variant: str) -> str:
        """Why :meth:`lookup` found nothing, for a report-only verdict."""
        where = str(self.path) if self.path else "the budget file"
        if hardware not in self.budgets:
            known = ", ".join(sorted(self.budgets)) or "none"
            return f"no budgets for hardware {hardware!r} in {where} (it has: {known}): measured and reported only"
        known = ", ".join(sorted(self.budgets[hardware])) or "none"
        return f"no budget for variant {variant!r} under {hardware!r} in {where} (it has: {known}): reported only"


class _Validator:
    def __init__(self, document: TomlDocument) -> None:
        self.document = document

    def fail(self, table: KeyPath, key: str | None, message: str) -> ConfigError:
        return self.document.error((*table, key) if key is not None else table, message)

    def number(self, table: KeyPath, key: str, value: Any, what: str, maximum: float) -> float:
        where = dotted((*table, key))
        problem = number_problem(value, 0, maximum, above=True)
        if problem is not None:
            raise self.fail(table, key, f"{where}={value!r}: expected {what}, {problem}")
        return float(value)

    def shared(self, table: KeyPath, data: Mapping[str, Any], base: dict[str, Any]) -> dict[str, Any]:
        out = dict(base)
        for key in _SHARED_KEYS & data.keys():
            value = data[key]
            where = dotted((*table, key))
            if key == "path":
                if value not in BUDGET_PATHS:
                    choices = ", ".join(repr(p) for p in BUDGET_PATHS)
                    raise self.fail(table, key, f"{where}={value!r}: expected the engine path, one of {choices}")
                out[key] = value
            elif key in ("source", "notes"):
                if not isinstance(value, str) or (key == "source" and not value.strip()):
                    raise self.fail(table, key, f"{where}={value!r}: expected a non-empty string")
                out[key] = value
            elif key == "tolerance":
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
                    raise self.fail(
                        table, key, f"{where}={value!r}: expected a fraction 0 <= tolerance < 1 (0.1 = 10%)"
                    )
                out[key] = float(value)
            else:
                problem = integer_problem(value, 1, MAX_BATCH_SIZE)
                if problem is not None:
                    raise self.fail(table, key, f"{where}={value!r}: expected a batch size, {problem}")
                out[key] = value
        return out

    def variant(self, hardware: str, name: str, data: Any, base: dict[str, Any]) -> Budget:
        table = (hardware, name)
        if not isinstance(data, dict):
            raise self.fail((hardware,), name, f"{hardware}.{name}={data!r}: expected a table of limits")
        for key in data:
            if key not in _VARIANT_KEYS:
                allowed = ", ".join(sorted(_VARIANT_KEYS))
                raise self.fail(table, key, f"{hardware}.{name}.{key}: unknown key; allowed keys: {allowed}")
        fields = self.shared(table, data, base)
        for key in (*_LIMITS, "samples_per_s"):
            if key in data:
                rate = key == "samples_per_s"
                what = "a number of samples per second" if rate else "milliseconds"
                fields[key] = self.number(table, key, data[key], what, MAX_RATE if rate else MAX_MS)
        stream = {}
        for key in sorted(_STREAM_KEYS & set(data)):
            rate = key == "responses_per_s"
            what = "a number of responses per second" if rate else "milliseconds"
            stream[STREAM_KEY_ALIASES.get(key, key)] = self.number(
                table, key, data[key], what, MAX_RATE if rate else MAX_MS
            )
        if stream:
            fields["stream"] = stream
        if not fields.get("source"):
            raise self.fail(table, None, f"{hardware}.{name}: no source; say where the numbers come from")
        limits = [(k, fields[k]) for k in _LIMITS if k in fields]
        for (k1, v1), (k2, v2) in itertools.pairwise(limits):
            if v1 > v2:
                raise self.fail(table, k2, f"{hardware}.{name}.{k2}={v2!r} is below {k1}={v1!r}: percentiles must rise")
        return Budget(hardware=hardware, variant=name, **fields)

    def relative(self, hardware: str, index: int, data: Any, base: dict[str, Any]) -> RelativeBudget:
        table: KeyPath = (hardware, "relative", index)
        where = f"{hardware}.relative[{index}]"
        if not isinstance(data, dict):
            raise self.fail((hardware,), "relative", f"{where}={data!r}: expected a [[{hardware}.relative]] table")
        for key in data:
            if key not in _RELATIVE_KEYS:
                known = ", ".join(sorted(_RELATIVE_KEYS))
                raise self.fail(table, key, f"{where}.{key}: unknown key; allowed keys: {known}")
        fields: dict[str, Any] = {"source": base.get("source", ""), "tolerance": base["tolerance"]}
        for key in ("name", "variant", "baseline", "source", "notes"):
            if key in data:
                value = data[key]
                if not isinstance(value, str) or (key != "notes" and not value.strip()):
                    raise self.fail(table, key, f"{where}.{key}={value!r}: expected a non-empty string")
                fields[key] = value
        for key in ("variant", "baseline"):
            if key not in fields:
                raise self.fail(table, None, f"{where}: no {key}; name the {key} variant")
        metric = data.get("metric", "p50_ms")
        if metric not in RELATIVE_METRICS:
            raise self.fail(
                table, "metric", f"{where}.metric={metric!r}: expected one of {', '.join(RELATIVE_METRICS)}"
            )
        fields["metric"] = metric
        if "tolerance" in data:
            fields["tolerance"] = self.shared(table, {"tolerance": data["tolerance"]}, {})["tolerance"]
        allowed: tuple[str, ...] = ("min_ratio",) if metric == "samples_per_s" else ("max_ratio", "max_added_ms")
        for key in ("max_ratio", "max_added_ms", "min_ratio"):
            if key in data:
                if key not in allowed:
                    raise self.fail(table, key, f"{where}.{key}: not a limit of metric={metric!r}; use {allowed}")
                limit = MAX_MS if key == "max_added_ms" else MAX_RATIO
                fields[key] = self.number(table, key, data[key], "a limit", limit)
        if not any(k in fields for k in allowed):
            raise self.fail(table, None, f"{where}: no limit; give {' or '.join(allowed)}")
        if not fields["source"]:
            raise self.fail(table, None, f"{where}: no source; say where the numbers come from")
        return RelativeBudget(hardware=hardware, **fields)

    def policy(self, hardware: str, table: Mapping[str, Any], base: Mapping[str, Any]) -> HardwarePolicy:
        enforce = table.get("enforce_absolute", True)
        if not isinstance(enforce, bool):
            raise self.fail(
                (hardware,), "enforce_absolute", f"{hardware}.enforce_absolute={enforce!r}: expected true or false"
            )
        reason = table.get("enforce_reason", "")
        if not isinstance(reason, str):
            raise self.fail((hardware,), "enforce_reason", f"{hardware}.enforce_reason={reason!r}: expected a string")
        if not enforce and not reason.strip():
            raise self.fail(
                (hardware,),
                "enforce_absolute",
                f"{hardware}.enforce_absolute=false needs enforce_reason: say why absolute numbers are not asserted",
            )
        return HardwarePolicy(
            enforce_absolute=enforce,
            reason=reason,
            batch_size=base.get("batch_size", 1),
            throughput_batch_size=base.get("throughput_batch_size", 8),
        )


def parse_budgets(text: str, path: str | Path | None = None) -> BudgetFile:
    """Parse and validate budget TOML ``text`` (``path`` only names it in errors)."""
    return _validate(parse_toml(text, Path(path) if path is not None else Path("<budgets>")), path is not None)


def _validate(document: TomlDocument, named: bool) -> BudgetFile:
    data = document.data
    check = _Validator(document)
    budgets: dict[str, dict[str, Budget]] = {}
    relative: dict[str, tuple[RelativeBudget, ...]] = {}
    policies: dict[str, HardwarePolicy] = {}
    for hardware, table in data.items():
        if not isinstance(table, dict):
            raise check.fail((), hardware, f"{hardware}={table!r}: expected a [hardware] table of variants")
        base = check.shared((hardware,), table, {"tolerance": DEFAULT_TOLERANCE})
        policies[hardware] = check.policy(hardware, table, base)
        entries = table.get("relative", [])
        if not isinstance(entries, list):
            raise check.fail((hardware,), "relative", f"{hardware}.relative: expected [[{hardware}.relative]] tables")
        relative[hardware] = tuple(check.relative(hardware, i, entry, base) for i, entry in enumerate(entries))
        budgets[hardware] = {}
        for name, value in table.items():
            if name in _SHARED_KEYS or name in _HARDWARE_KEYS:
                continue
            if not isinstance(value, dict):
                allowed = ", ".join(sorted(_SHARED_KEYS))
                raise check.fail(
                    (hardware,), name, f"{hardware}.{name}={value!r}: not a variant table nor one of {allowed}"
                )
            budgets[hardware][name] = check.variant(hardware, name, value, base)
    return BudgetFile(document.path if named else None, budgets, relative, policies)


def load_budgets(path: str | Path) -> BudgetFile:
    """Load a budget file through the guarded reader; any problem is a ConfigError naming it."""
    return _validate(read_toml(Path(path), "budgets"), True)
