"""``python -m pytest_triton init REPO``: contracts files for an existing model repository, green as written.

One contracts file per model (a file holds one reference, and two models of a repository rarely compute the
same thing, so parity is declared only where it must hold): the model over HTTP is the reference, the same
model over gRPC must agree with it, and both get latency rows (reported; asserted once a budgets file is
recorded with ``--triton-budgets-record``). A decoupled model gets one streamed variant (Triton's HTTP endpoint
refuses it). Numeric inputs are drawn by Hypothesis from the config (``[inputs.generate]``); a model with a
text input gets a samples file with placeholder values. Every file says, in comments, what to change.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_triton.errors import ConfigError

__all__ = ["ModelSignature", "init_main", "read_signature", "render_contracts", "write_contracts"]

DEFAULT_OUT = "triton-contracts"
VARIABLE_DIM = 4  # what a -1 dim is generated as (an [inputs.generate.tensors.NAME] shape changes it)
LATENCY_WINDOW_MS = 500  # short windows: a first run in seconds, not minutes (raise it for steadier numbers)
MAX_THROUGHPUT_BATCH = 8
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class TensorSignature:
    name: str
    config_type: str  # TYPE_FP32
    dims: tuple[int, ...]  # batch excluded; -1 where variable


@dataclass(frozen=True)
class ModelSignature:
    """What init needs of one model's config.pbtxt."""

    name: str
    max_batch_size: int
    decoupled: bool
    backend: str  # backend or platform, for the comments
    inputs: tuple[TensorSignature, ...]
    requires: tuple[str, ...] = ()  # what the variants need to run: skipped with the reason where it is missing

    @property
    def has_text(self) -> bool:
        return any(t.config_type == "TYPE_STRING" for t in self.inputs)


def read_signature(model_dir: Path) -> ModelSignature:
    """The signature of the model in ``model_dir`` (its config.pbtxt); ConfigError naming the file otherwise."""
    from pytest_triton.config import read_config

    config_path = model_dir / "config.pbtxt"
    if not config_path.is_file():
        raise ConfigError(
            f"{config_path} does not exist: init reads each model's inputs from its config.pbtxt (write one, or "
            "save what a running Triton answers to GET v2/models/NAME/config)"
        )
    config = read_config(config_path).message
    type_names = config.DESCRIPTOR.file.enum_types_by_name["DataType"].values_by_number
    inputs = tuple(
        TensorSignature(t.name, str(type_names[t.data_type].name), tuple(int(d) for d in t.dims)) for t in config.input
    )
    if not inputs:
        raise ConfigError(f"{config_path} declares no input: init cannot write inputs for the model")
    requires = []
    if any(group.kind == group.KIND_GPU for group in config.instance_group):
        requires.append("gpu")
    if config.platform == "tensorrt_plan" or config.backend == "tensorrt":
        requires.append("tensorrt")
    return ModelSignature(
        requires=tuple(requires),
        name=config.name or model_dir.name,
        max_batch_size=int(config.max_batch_size),
        decoupled=bool(config.model_transaction_policy.decoupled),
        backend=config.backend or config.platform or "unknown",
        inputs=inputs,
    )


def _key(name: str) -> str:
    """A TOML key: bare where TOML allows it (errors then find its line), quoted otherwise."""
    return name if _BARE_KEY.fullmatch(name) else json.dumps(name)


def _toml(value: Any) -> str:
    """A TOML value: JSON's string and number syntax are TOML's too; lists as TOML arrays."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value)


def _relative(target: Path, start: Path) -> str:
    return Path(os.path.relpath(target.resolve(), start.resolve())).as_posix()


def render_contracts(model: ModelSignature, repository: Path, out_dir: Path, samples: str | None) -> str:
    """The contracts file of ``model`` (served from ``repository``), to be written in ``out_dir``; ``samples``
    names its samples file (models with text inputs) or is None (generated inputs)."""
    repo = _relative(repository, out_dir)
    name = model.name
    requires = [f"requires = {_toml(list(model.requires))}       # skipped with the reason where missing"]
    requires = requires if model.requires else []
    batching = model.max_batch_size > 0
    lines = [
        f"# Contracts of model {name!r} ({model.backend}) in {repo}, written by `python -m pytest_triton init`.",
        f"#   pytest -p no:xdist --triton-contracts {out_dir.as_posix()}/{name}.contracts.toml",
        "# Paths are relative to this file. Every key: python -m pytest_triton docs contracts",
        "#",
        "# As written it checks that the model answers, the same over every protocol it is called on (parity),",
        "# and how fast (latency: measured and reported; to assert it, run once with",
        f"# --triton-budgets-record {out_dir.as_posix()}/budgets.toml, then runs read that file, beside this one).",
        "# What to change: the input ranges below to values your model accepts; a reference of your own",
        '# ([reference] onnx = "model.onnx", or another variant: a model at another precision, an ensemble);',
        "# [parity.outputs.NAME] with argmax / top_k / cosine / atol for what must agree.",
        "",
    ]
    if model.decoupled:
        lines += [
            "# a decoupled model: Triton's HTTP endpoint refuses it, so it is called over the gRPC stream and is",
            "# its own reference (add a second streamed variant, e.g. another version, to get a parity item)",
            "[reference]",
            f"variant = {_toml(name)}",
            "",
            f"[variants.{_key(name)}]",
            f"repository = {_toml(repo)}",
            f"model = {_toml(name)}",
            'protocol = "stream"',
            *requires,
            "",
        ]
    else:
        grpc = f"{name}-grpc"
        lines += [
            "[reference]",
            f"variant = {_toml(name)}            # the model over HTTP: every other variant must agree with it",
            "",
            f"[variants.{_key(name)}]",
            f"repository = {_toml(repo)}",
            f"model = {_toml(name)}",
            'precision = "fp32"                  # the tolerance preset (fp32: atol = rtol = 1e-4)',
            *requires,
            "",
            f"[variants.{_key(grpc)}]         # the same model over gRPC: same answers, other client path",
            f"repository = {_toml(repo)}",
            f"model = {_toml(name)}",
            'protocol = "grpc"',
            *requires,
            "",
        ]
    if samples is not None:
        lines += [
            "# text inputs cannot be generated: these samples hold placeholder values; put real requests there",
            "[inputs]",
            f"samples = {_toml(samples)}",
            "",
        ]
    else:
        lines += [
            "# inputs drawn by Hypothesis from the config (pip install 'pytest-triton[contracts]')",
            "[inputs.generate]",
            f"from = {_toml(name)}",
            "examples = 20",
            "seed = 0",
            "max_seconds = 30",
        ]
        if batching:
            lines.append(f"batch_size = {min(2, model.max_batch_size)}")
        lines.append("")
        for tensor in model.inputs:
            lines += _tensor_rule(tensor)
    throughput = min(MAX_THROUGHPUT_BATCH, model.max_batch_size) if batching else 1
    lines += [
        "[latency]",
        "batch_size = 1",
        f"throughput_batch_size = {throughput}",
        "warmup = 3",
        f"window_ms = {LATENCY_WINDOW_MS}                      # per window; raise it for steadier numbers",
        "",
    ]
    return "\n".join(lines)


def _tensor_rule(tensor: TensorSignature) -> list[str]:
    kind = tensor.config_type.removeprefix("TYPE_")
    lines = [f"[inputs.generate.tensors.{_key(tensor.name)}]   # {kind} {list(tensor.dims)}"]
    if kind.startswith("FP") or kind == "BF16":
        lines += ["min = -1.0", "max = 1.0"]
    elif kind != "BOOL":
        lines += ["min = 0                             # integers in [min, max): e.g. token ids below the vocab size"]
        lines += ["max = 100"]
    if any(d < 1 for d in tensor.dims):
        shape = [VARIABLE_DIM if d < 1 else d for d in tensor.dims]
        lines.append(f"shape = {_toml(shape)}                     # the config's -1 dims, as sent")
    return [*lines, ""]


def sample_lines(model: ModelSignature, count: int = 3) -> list[str]:
    """KServe v2 JSON request lines with placeholder values for every input of ``model``."""
    from pytest_triton.dtypes import BY_CONFIG

    out = []
    for index in range(count):
        tensors = []
        for tensor in model.inputs:
            dims = [1 if d < 1 else d for d in tensor.dims]
            shape = [1, *dims] if model.max_batch_size > 0 else dims
            size = 1
            for d in shape:
                size *= d
            kind = tensor.config_type
            value: Any
            if kind == "TYPE_STRING":
                value = f"placeholder text {index}"
            elif kind == "TYPE_BOOL":
                value = index % 2 == 0
            elif kind.startswith(("TYPE_FP", "TYPE_BF")):
                value = 0.25 * index
            else:
                value = index
            datatype = BY_CONFIG[kind].kserve
            tensors.append({"name": tensor.name, "shape": shape, "datatype": datatype, "data": [value] * size})
        out.append(json.dumps({"id": f"{model.name}-{index}", "inputs": tensors}))
    return out


def write_contracts(repository: Path, out_dir: Path, *, force: bool = False) -> list[Path]:
    """Write a contracts file (and, for text inputs, a samples file) per model of ``repository`` into
    ``out_dir``; returns the contracts files. An existing file is kept unless ``force``."""
    from pytest_triton.repository.layout import model_folders

    repository = repository.resolve()
    names = model_folders(repository)
    if not names:
        raise ConfigError(
            f"{repository} holds no model folder: init needs a model repository (a folder of model folders)"
        )
    models = [read_signature(repository / n) for n in names]
    planned: dict[Path, str] = {}
    written = []
    for model in models:
        samples = f"{model.name}.samples.jsonl" if model.has_text else None
        if samples is not None:
            planned[out_dir / samples] = "\n".join(sample_lines(model)) + "\n"
        path = out_dir / f"{model.name}.contracts.toml"
        planned[path] = render_contracts(model, repository, out_dir, samples)
        written.append(path)
    existing = [str(p) for p in planned if p.exists()]
    if existing and not force:
        raise ConfigError(
            f"{len(existing)} file(s) exist: {', '.join(existing)}; kept: pass --force to overwrite them, "
            "or --out another folder"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    for path, text in planned.items():
        path.write_text(text, encoding="utf-8")
    return written


def build_parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Write a contracts file per model of REPO that runs green as written: the model over HTTP as "
        "the reference, over gRPC held to it (a decoupled model: over the gRPC stream), inputs generated from "
        "its config.pbtxt, latency rows. Comments in each file say what to change.",
    )
    parser.add_argument("repository", metavar="REPO", type=Path, help="The model repository (a folder of models)")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(DEFAULT_OUT),
        metavar="DIR",
        help="Folder for the contracts files, one per model (default: %(default)s)",
    )
    parser.add_argument("--force", action="store_true", help="Overwrite files that exist")
    return parser


def init_main(argv: Sequence[str], prog: str = "python -m pytest_triton init") -> int:
    """Write the files, then say how to run them; a bad repository is one line on stderr and exit 2."""
    args = build_parser(prog).parse_args(argv)
    try:
        files = write_contracts(args.repository, args.out, force=args.force)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for path in files:
        print(f"wrote {path}")
    import importlib.util

    if importlib.util.find_spec("hypothesis") is None:  # [inputs.generate] needs it when the files are run
        print("generated inputs need Hypothesis, not installed here: pip install 'pytest-triton[contracts]'")
    given = " ".join(f"--triton-contracts {p}" for p in files)
    budgets = args.out / "budgets.toml"
    print(f"\nrun them:           pytest -p no:xdist {given}")
    print(f"record budgets:     pytest -p no:xdist {given} --triton-budgets-record {budgets}")
    print(f"then every run asserts {budgets} (the budget file beside the first contracts file)")
    return 0
