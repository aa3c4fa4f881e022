"""A contracts file: variants of a model, the reference they answer to, their inputs, parity and latency.

Read from TOML (a file of its own, or the ``[tool.pytest-triton.contracts]`` table of a pyproject.toml) and
validated whole on load: a wrong key or value is one :class:`~pytest_triton.errors.ConfigError` that names the
file, the line, the key path (``variants.fp16.precision``) and the value, with what was expected. Paths are
relative to the file. The format is documented in docs/contracts.md.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_triton.bench.relative import RelativeBudget
from pytest_triton.bench.stats import PERCENTILES
from pytest_triton.config.toml import KeyPath
from pytest_triton.config.toml import TomlDocument
from pytest_triton.config.toml import parse_toml
from pytest_triton.config.toml import read_toml
from pytest_triton.config.values import MAX_BATCH_SIZE
from pytest_triton.config.values import MAX_DIM
from pytest_triton.config.values import MAX_MS
from pytest_triton.config.values import MAX_RATIO
from pytest_triton.config.values import MAX_SECONDS
from pytest_triton.config.values import MAX_TENSOR_ELEMENTS
from pytest_triton.config.values import integer_problem
from pytest_triton.contracts.checks import DERIVED_CHECKS
from pytest_triton.contracts.checks import OUTPUT_KEYS
from pytest_triton.contracts.declaration_streams import check_streams
from pytest_triton.contracts.spec import PRECISIONS
from pytest_triton.contracts.spec import PROTOCOLS
from pytest_triton.contracts.spec import REQUIREMENTS
from pytest_triton.contracts.spec import BaselineLimits
from pytest_triton.contracts.spec import Declaration
from pytest_triton.contracts.spec import Generated
from pytest_triton.contracts.spec import Inputs
from pytest_triton.contracts.spec import LabelCheck
from pytest_triton.contracts.spec import Latency
from pytest_triton.contracts.spec import OutputCheck
from pytest_triton.contracts.spec import Reference
from pytest_triton.contracts.spec import TensorRule
from pytest_triton.contracts.spec import Variant
from pytest_triton.contracts.spec import precision_tolerance
from pytest_triton.contracts.table_reader import TableReader
from pytest_triton.errors import ConfigError
from pytest_triton.parity.tensors import Tolerance

__all__ = ["PYPROJECT_TABLE", "check_declared_files", "load_declaration", "parse_declaration"]

PYPROJECT_TABLE = ("tool", "pytest-triton", "contracts")
MAX_CONCURRENCY = 64  # client threads of one latency item: beyond that the GIL, not the server, is measured


def _variant(read: TableReader, name: str, data: Any) -> Variant:
    keys = ("variants", name)
    known = {"repository", "model", "launcher", "precision", "protocol", "inputs", "outputs", "requires", "budget"}
    data = read.table(data, keys, known)
    repository = read.path_of(data, (*keys, "repository"), "repository")
    if repository.is_file() and not repository.name.endswith((".tar.gz", ".tgz")):
        raise read.bad((*keys, "repository"), data["repository"], "a model repository folder or a model.tar.gz")
    raw = data.get("precision", "fp32")
    precision: dict[str, Any]
    if isinstance(raw, str):
        precision = {"cpu": raw, "gpu": raw}
    elif isinstance(raw, dict) and set(raw) <= {"cpu", "gpu"} and raw:
        precision = {"cpu": raw.get("cpu", raw.get("gpu")), "gpu": raw.get("gpu", raw.get("cpu"))}
    else:
        raise read.bad(
            (*keys, "precision"), raw, f"one of {', '.join(PRECISIONS)} or a table {{ cpu = ..., gpu = ... }}"
        )
    for where, chosen in precision.items():
        if chosen not in PRECISIONS:
            at = (*keys, "precision") if isinstance(raw, str) else (*keys, "precision", where)
            raise read.bad(at, chosen, f"one of {', '.join(repr(p) for p in PRECISIONS)}")
    mappings: dict[str, dict[str, str]] = {}
    for key in ("inputs", "outputs", "budget"):
        value: Any = data.get(key, {})
        if key == "budget" and isinstance(value, str):
            value = {"*": value}
        if not isinstance(value, dict) or not all(isinstance(v, str) and v for v in value.values()):
            raise read.bad((*keys, key), value, 'a table of names (e.g. { logits = "LOGITS" })')
        mappings[key] = value
    launcher = read.string(data, (*keys, "launcher")) if "launcher" in data else None
    if launcher is not None and read.check_launcher is not None:
        try:
            read.check_launcher(launcher)
        except ConfigError as exc:
            raise read.fail(
                (*keys, "launcher"), f"{read.key((*keys, 'launcher'))}={launcher!r}: {exc.reason}"
            ) from None
    return Variant(
        name=name,
        repository=repository,
        model=read.string(data, (*keys, "model")),
        precision=precision,
        launcher=launcher,
        protocol=read.choice(data, (*keys, "protocol"), PROTOCOLS, "http"),
        inputs=mappings["inputs"],
        outputs=mappings["outputs"],
        requires=read.names(data, (*keys, "requires"), REQUIREMENTS),
        budget=mappings["budget"],
    )


def _reference(read: TableReader, data: Any, variants: Mapping[str, Variant]) -> Reference:
    keys = ("reference",)
    if data is None:
        raise read.fail((), '[reference] is missing: give variant = NAME or onnx = "model.onnx"')
    data = read.table(data, keys, {"variant", "onnx", "name"})
    if ("variant" in data) == ("onnx" in data):
        raise read.fail(keys, 'reference: give exactly one of variant = NAME or onnx = "model.onnx"')
    if "variant" in data:
        name = read.string(data, (*keys, "variant"))
        if name not in variants:
            raise read.bad((*keys, "variant"), name, f"one of the variants ({', '.join(variants)})")
        return Reference(name=name, variant=name)
    onnx = read.path_of(data, (*keys, "onnx"), "ONNX file")
    read.require((*keys, "onnx"), "onnxruntime", "onnxruntime", "serve", "runs in this process on ONNX Runtime")
    name = read.string(data, (*keys, "name"), "onnxruntime-inprocess")
    if name in variants:  # latency items name the reference by it
        raise read.bad((*keys, "name"), name, "a name no variant has (the reports call the reference by it)")
    return Reference(name=name, onnx=onnx)


def _tensor_rule(read: TableReader, name: str, data: Any, keys: KeyPath) -> TensorRule:
    data = read.table(data, keys, {"min", "max", "mask", "min_ones", "shape"})
    low = read.number(data, (*keys, "min")) if "min" in data else None  # finite: a generator's bound
    high = read.number(data, (*keys, "max")) if "max" in data else None
    if low is not None and high is not None and high < low:
        raise read.fail((*keys, "max"), f"{read.key((*keys, 'max'))}={high:g} < {read.key((*keys, 'min'))}={low:g}")
    shape = data.get("shape")
    if shape is not None and (
        not isinstance(shape, list)
        or not shape
        or not all(integer_problem(d, 1, MAX_DIM) is None for d in shape)
        or math.prod(shape) > MAX_TENSOR_ELEMENTS
    ):
        raise read.bad(
            (*keys, "shape"),
            shape,
            f"a list of dims from 1 to {MAX_DIM:,} (the config's dims, batch excluded), at most "
            f"{MAX_TENSOR_ELEMENTS:,} elements in all",
        )
    mask = data.get("mask", False)
    if not isinstance(mask, bool):
        raise read.bad((*keys, "mask"), mask, "true or false")
    return TensorRule(
        name,
        low,
        high,
        mask=mask,
        min_ones=read.integer(data, (*keys, "min_ones"), 1, minimum=0, maximum=MAX_TENSOR_ELEMENTS),
        shape=tuple(shape) if shape is not None else None,
    )


def _inputs(read: TableReader, data: Any, variants: Mapping[str, Variant]) -> Inputs:
    keys: tuple[str, ...] = ("inputs",)
    if data is None:
        raise read.fail((), '[inputs] is missing: give samples = "FILE" or an [inputs.generate] table')
    data = read.table(data, keys, {"samples", "batch_size", "generate"})
    if ("samples" in data) == ("generate" in data):
        raise read.fail(keys, 'inputs: give exactly one of samples = "FILE" or [inputs.generate]')
    if "samples" in data:
        samples = read.path_of(data, (*keys, "samples"), "samples file")
        if samples.suffix not in (".jsonl", ".npz"):
            raise read.bad((*keys, "samples"), data["samples"], "a .jsonl (KServe v2 JSON lines) or .npz file")
        return Inputs(samples=samples, batch_size=read.integer(data, (*keys, "batch_size"), 1, maximum=MAX_BATCH_SIZE))
    keys = (*keys, "generate")
    gen = read.table(data["generate"], keys, {"from", "examples", "seed", "max_seconds", "batch_size", "tensors"})
    source = read.string(gen, (*keys, "from"), next(iter(variants)))
    if source not in variants:
        raise read.bad((*keys, "from"), source, f"one of the variants ({', '.join(variants)})")
    tensors = read.table(gen.get("tensors", {}), (*keys, "tensors"), set(gen.get("tensors", {})))
    max_seconds = read.number(gen, (*keys, "max_seconds"), 60.0, minimum=0, maximum=MAX_SECONDS, above=True)
    read.require(keys, "hypothesis", "hypothesis", "contracts", "draws inputs with Hypothesis")
    return Inputs(
        generated=Generated(
            source=source,
            examples=read.integer(gen, (*keys, "examples"), 50),
            seed=read.integer(gen, (*keys, "seed"), 0, minimum=0, maximum=2**63 - 1),
            max_seconds=max_seconds,
            batch_size=read.integer(gen, (*keys, "batch_size"), 2, maximum=MAX_BATCH_SIZE),
            tensors={n: _tensor_rule(read, n, t, (*keys, "tensors", n)) for n, t in tensors.items()},
        )
    )


def _labels(read: TableReader, data: Any, variants: Mapping[str, Variant]) -> tuple[LabelCheck, ...]:
    if data is None:
        return ()
    data = read.table(data, ("parity",), {"outputs", "labels"})
    tables = read.table(data.get("labels", {}), ("parity", "labels"), set(data.get("labels", {})))
    checks = []
    for name, table in tables.items():
        keys = ("parity", "labels", name)
        table = read.table(table, keys, {"from", "names", "variants"})
        names = table.get("names")
        if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
            raise read.bad((*keys, "names"), names, "a list of label names in the order of the output's values")
        outputs = table.get("variants")
        if not isinstance(outputs, dict) or not outputs or not all(isinstance(v, str) and v for v in outputs.values()):
            raise read.bad((*keys, "variants"), outputs, 'a table of variant = "LABEL_OUTPUT"')
        for variant in outputs:
            if variant not in variants:
                raise read.bad((*keys, "variants"), variant, f"one of the variants ({', '.join(variants)})")
        checks.append(LabelCheck(name, read.string(table, (*keys, "from")), tuple(names), outputs))
    return tuple(checks)


def _outputs(read: TableReader, data: Any) -> tuple[OutputCheck, ...]:
    if data is None:
        return ()
    data = read.table(data, ("parity",), {"outputs", "labels"})
    outputs = read.table(data.get("outputs", {}), ("parity", "outputs"), set(data.get("outputs", {})))
    checks = []
    for name, table in outputs.items():
        keys = ("parity", "outputs", name)
        table = read.table(table, keys, {*OUTPUT_KEYS, *DERIVED_CHECKS})
        tol = None
        if "preset" in table or "atol" in table or "rtol" in table:
            preset = read.choice(table, (*keys, "preset"), PRECISIONS, "fp32")
            base = precision_tolerance(preset)
            given = {}
            for key in ("atol", "rtol"):
                if key in table:
                    given[key] = read.number(table, (*keys, key), minimum=0, maximum=MAX_RATIO)
            tol = Tolerance(
                atol=given.get("atol", base.atol),
                rtol=given.get("rtol", base.rtol),
                name=f"{preset}+custom" if given else preset,
            )
        derived: dict[str, Any] = {}
        for key in (key for key in DERIVED_CHECKS if key in table):
            try:
                setting = DERIVED_CHECKS[key].parse(table[key])
            except ValueError as exc:
                raise read.bad((*keys, key), table[key], str(exc)) from None
            if setting is not False:  # a check declared false is off
                derived[key] = setting
        checks.append(OutputCheck(name, tol, derived=derived))
    return tuple(checks)


def _latency(read: TableReader, data: Any, variants: Mapping[str, Variant], reference: Reference) -> Latency | None:
    if data is None:
        return None
    # what can be timed: the variants, and an ONNX reference (in this process) by its name
    timed = (*variants, *([reference.name] if reference.onnx is not None else []))
    keys = ("latency",)
    known = {
        "variants",
        "batch_size",
        "throughput_batch_size",
        "warmup",
        "warm_batch_sizes",
        "concurrency",
        "window_ms",
        "budgets",
        "relative",
        "benchmark",
    }
    data = read.table(data, keys, known)
    concurrency = read.integer(data, (*keys, "concurrency"), 1)
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise read.fail(
            (*keys, "concurrency"),
            f"latency.concurrency={concurrency}: expected 1 to {MAX_CONCURRENCY} clients sending at once (each "
            "its own connection and thread); measure more with perf_analyzer",
        )
    benchmark = data.get("benchmark", False)
    if not isinstance(benchmark, bool):
        raise read.bad((*keys, "benchmark"), benchmark, "true or false")
    if benchmark:
        read.require(
            (*keys, "benchmark"), "pytest_benchmark", "pytest-benchmark", "bench", "records into pytest-benchmark"
        )
    warm = data.get("warm_batch_sizes", [])
    if (
        not isinstance(warm, list)
        or len(warm) > MAX_CONCURRENCY
        or not all(integer_problem(b, 1, MAX_BATCH_SIZE) is None for b in warm)
    ):
        raise read.bad(
            (*keys, "warm_batch_sizes"),
            warm,
            f"a list of at most {MAX_CONCURRENCY} batch sizes from 1 to {MAX_BATCH_SIZE}",
        )
    window = (
        read.number(data, (*keys, "window_ms"), minimum=0, maximum=MAX_MS, above=True) if "window_ms" in data else None
    )
    relative = []
    rules = data.get("relative", [])
    if not isinstance(rules, list):
        raise read.bad((*keys, "relative"), rules, "an array of tables [[latency.relative]]")
    for index, rule in enumerate(rules):
        at: KeyPath = (*keys, "relative", index)
        rule = read.table(rule, at, {"variant", "baseline", "max_ratio", "percentile"})
        pair = {}
        for key in ("variant", "baseline"):
            pair[key] = read.string(rule, (*at, key))
            if pair[key] not in timed:
                raise read.bad((*at, key), pair[key], f"one of the variants or the reference ({', '.join(timed)})")
        ratio = read.number(
            rule, (*at, "max_ratio"), minimum=0, maximum=MAX_RATIO, above=True, hint="1.5: at most 50% slower"
        )
        percentile = read.integer(rule, (*at, "percentile"), 50)
        if percentile not in PERCENTILES:
            raise read.bad((*at, "percentile"), percentile, f"one of {', '.join(map(str, PERCENTILES))}")
        if pair["variant"] == pair["baseline"]:
            raise read.bad((*at, "baseline"), pair["baseline"], "another variant than `variant` (compared with it)")
        name = f"{pair['variant']}/{pair['baseline']}"
        relative.append(
            RelativeBudget(pair["variant"], pair["baseline"], f"p{percentile}_ms", max_ratio=ratio, name=name)
        )
    return Latency(
        variants=read.names(data, (*keys, "variants"), timed) or tuple(variants),
        batch_size=read.integer(data, (*keys, "batch_size"), 1, maximum=MAX_BATCH_SIZE),
        throughput_batch_size=read.integer(data, (*keys, "throughput_batch_size"), 8, maximum=MAX_BATCH_SIZE),
        warmup=read.integer(data, (*keys, "warmup"), 3, minimum=0),
        warm_batch_sizes=tuple(warm),
        concurrency=concurrency,
        window_ms=window,
        budgets=read.path_of(data, (*keys, "budgets"), "budget file") if "budgets" in data else None,
        relative=tuple(relative),
        benchmark=benchmark,
    )


_BASELINE_HINT = "1.10: at most 10% slower; 0.90: 10% fewer/s"


def _baseline(read: TableReader, data: Any, variants: Mapping[str, Variant]) -> BaselineLimits:
    """``[baseline]``: the limits of ``--triton-baseline`` pairs (a ratio of 0 or below is a mistake)."""
    if data is None:
        return BaselineLimits()
    keys = ("baseline",)
    limits = ("max_p50_ratio", "max_p99_ratio", "min_samples_per_s_ratio")
    data = read.table(data, keys, {"variants", *limits})
    given: dict[str, Any] = {}
    for key in limits:
        if key in data:
            given[key] = read.number(data, (*keys, key), minimum=0, maximum=MAX_RATIO, above=True, hint=_BASELINE_HINT)
    return BaselineLimits(**given, variants=read.names(data, (*keys, "variants"), tuple(variants)))


def parse_declaration(
    text: str, path: str | Path, *, check_launcher: Callable[[str], object] | None = None
) -> Declaration:
    """Parse and validate a contracts file's ``text``; ``path`` names it in errors and anchors relative paths.

    ``check_launcher`` raises ConfigError for a launcher name that is not registered (the plugin passes the
    registry's lookup)."""
    return _validate(parse_toml(text, Path(path).resolve()), check_launcher)


def _validate(document: TomlDocument, check_launcher: Callable[[str], object] | None) -> Declaration:
    file = document.path
    data: Any = document.data
    prefix: tuple[str, ...] = ()
    if file.name == "pyproject.toml":
        prefix = PYPROJECT_TABLE
        for key in PYPROJECT_TABLE:
            data = data.get(key) if isinstance(data, dict) else None
        if data is None:
            raise ConfigError(f"no [{'.'.join(PYPROJECT_TABLE)}] table in this pyproject.toml", path=str(file))
    read = TableReader(document, prefix, check_launcher)
    data = read.table(data, (), {"variants", "reference", "inputs", "parity", "latency", "baseline"})
    raw_variants = read.table(data.get("variants", {}), ("variants",), set(data.get("variants", {})))
    if not raw_variants:
        raise read.fail((), "no variants: add at least one [variants.NAME] table with repository and model")
    variants = {name: _variant(read, name, table) for name, table in raw_variants.items()}
    reference = _reference(read, data.get("reference"), variants)
    declaration = Declaration(
        path=file,
        variants=variants,
        reference=reference,
        inputs=_inputs(read, data.get("inputs"), variants),
        outputs=_outputs(read, data.get("parity")),
        labels=_labels(read, data.get("parity"), variants),
        latency=_latency(read, data.get("latency"), variants, reference),
        baseline=_baseline(read, data.get("baseline"), variants),
    )
    for variant in declaration.variants.values():
        for output in variant.outputs:
            if declaration.outputs and output not in {o.name for o in declaration.outputs}:
                raise read.bad(
                    ("variants", variant.name, "outputs"),
                    output,
                    f"an output of [parity.outputs] ({', '.join(o.name for o in declaration.outputs)})",
                )
    check_streams(read, declaration)
    compared = {o.name for o in declaration.outputs}
    for label in declaration.labels:
        if compared and label.source not in compared:
            raise read.bad(
                ("parity", "labels", label.name, "from"),
                label.source,
                f"an output of [parity.outputs] ({', '.join(sorted(compared))})",
            )
    return declaration


def load_declaration(path: str | Path, *, check_launcher: Callable[[str], object] | None = None) -> Declaration:
    """Read (through the guarded reader) and validate a contracts file; any problem is a ConfigError naming it."""
    file = Path(path)
    document = read_toml(file, "pyproject" if file.name == "pyproject.toml" else "contracts")
    return _validate(dataclasses.replace(document, path=file.resolve()), check_launcher)


def check_declared_files(declaration: Declaration) -> None:
    """Read the files a declaration names besides itself (its budgets file, its samples file), so that a bad one
    is one error when the run starts rather than one in every item that uses it."""
    from pytest_triton.bench.budgets import load_budgets
    from pytest_triton.contracts.samples import load_samples

    if declaration.latency is not None and declaration.latency.budgets is not None:
        load_budgets(declaration.latency.budgets)
    if declaration.inputs.samples is not None:
        load_samples(declaration.inputs.samples, batch_size=declaration.inputs.batch_size)
