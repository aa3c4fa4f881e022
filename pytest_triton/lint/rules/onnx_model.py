"""ONNX model vs config rules (O5xx): what the onnxruntime backend checks when it loads a model.

The backend (onnxruntime_backend ``src/onnxruntime.cc``: ``AutoCompleteConfig``,
``ValidateInputs``, ``ValidateOutputs``; ``CompareDimsSupported`` in ``onnxruntime_utils.cc``)
compares the config with the session's inputs and outputs: every model input must be in the
config, config inputs and outputs must exist in the model, data types must be equal, and
dims (after ``reshape``, with the batch dimension in front when max_batch_size > 0) must
match, a model dimension of -1 (symbolic) matching any input dimension; outputs are compared
exactly. We quote its messages.

The model is read by :mod:`pytest_triton.onnx_io` (graph inputs, outputs and initializer names
only; large files are scanned without loading their weights).
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from pytest_triton.dtypes import BY_ONNX
from pytest_triton.errors import OnnxReadError
from pytest_triton.lint.context import ModelContext
from pytest_triton.lint.context import RepositoryContext
from pytest_triton.lint.rules.family import Family
from pytest_triton.lint.rules.family import RuleTable
from pytest_triton.lint.rules.schema_common import enum_label
from pytest_triton.lint.rules.schema_common import fmt_shape
from pytest_triton.lint.rules.schema_common import normalized
from pytest_triton.onnx_io import CONFIG_TO_ONNX
from pytest_triton.onnx_io import ONNX_TO_TRITON
from pytest_triton.onnx_io import OnnxIO
from pytest_triton.onnx_io import Tensor
from pytest_triton.onnx_io import read_onnx_io

# the ids of this family (its FAMILY below; the catalogue gathers it)
RULES: RuleTable = [
    ("O501", "error", "ONNX model file cannot be read"),
    ("O502", "error", "config input is not an input of the ONNX model"),
    ("O503", "error", "ONNX model input is missing from the config"),
    ("O504", "error", "config output is not an output of the ONNX model"),
    ("O505", "error", "data type differs between config and ONNX model"),
    ("O506", "error", "dims differ between config and ONNX model"),
    ("O507", "error", "max_batch_size > 0 but the ONNX model cannot batch"),
    ("O508", "warning", "auto-complete will set max_batch_size to the server default (4)"),
    ("O509", "warning", "inputs and outputs without max_batch_size: the model will not batch"),
]

DEFAULT_MAX_BATCH_SIZE = 4  # tritonserver's --backend-config=default-max-batch-size


# --- the checks ------------------------------------------------------------------------------


def model_files(model: ModelContext) -> list[Path]:
    """The ONNX file of each version folder, as the backend resolves it (a folder holds model.onnx)."""
    name = str(model.config.default_model_filename) or "model.onnx"
    found = []
    for version in model.versions():
        path = model.folder / str(version) / name
        path = path / "model.onnx" if path.is_dir() else path
        if path.is_file():
            found.append(path)
    return found


def _read(model: ModelContext, path: Path) -> OnnxIO:
    return model.repository.onnx_io(path) if model.repository is not None else read_onnx_io(path)


def _can_batch(io: OnnxIO) -> bool:
    """AutoCompleteMaxBatch: every input and output has a variable first dimension."""
    return all(t.dims and t.dims[0] == -1 for t in (*io.inputs.values(), *io.outputs.values()))


class _Check:
    def __init__(self, model: ModelContext) -> None:
        self.model, self.cfg, self.name = model, model.config, model.name
        self.reported: set[tuple[str, str]] = set()
        self.file = ""

    def report(self, rule: str, message: str, hint: str, *path: str | int) -> None:
        if (rule, message) not in self.reported:  # several versions usually hold the same model
            self.reported.add((rule, message))
            self.model.report(rule, message, f"{hint} [checked against {self.file}]", *path)

    def run(self) -> None:
        cfg = self.cfg
        written = self.model.parsed is not None and ("max_batch_size",) in self.model.parsed.positions.positions
        autocomplete = not (len(cfg.input) + len(cfg.batch_input)) or not len(cfg.output)
        if not autocomplete and not written:
            message = (
                "inputs and outputs are listed but max_batch_size is not: Triton skips the onnxruntime "
                "auto-complete and serves the model with max_batch_size 0 (no batching)"
            )
            hint = "write max_batch_size: N > 0 to batch (dims then exclude the batch dimension), or 0 to say so"
            self.model.report("O509", message, hint, "input")
        for path in model_files(self.model):
            self.file = path.relative_to(self.model.folder).as_posix()
            if self.model.repository is not None and not self.model.repository.holds_content(path):
                continue  # an archive member too large to extract (D609)
            try:
                io = _read(self.model, path)
            except OnnxReadError as exc:
                hint = "export the model again, or fix default_model_filename"
                self.model.report_file("O501", path, f"cannot read ONNX model {self.file}: {exc.reason}", hint)
                continue
            batch = self.autocomplete(io, written) if autocomplete else int(cfg.max_batch_size)
            self.compare(io, batch, autofill=autocomplete)

    def autocomplete(self, io: OnnxIO, written: bool) -> int:
        """AutoCompleteMaxBatch: the max_batch_size the backend will serve with."""
        size, missing = int(self.cfg.max_batch_size), "inputs" if not len(self.cfg.input) else "outputs"
        if _can_batch(io) and size == 0:
            message = (
                f"the config lists no {missing} and max_batch_size is {'0' if written else 'not set'}: Triton's "
                f"onnxruntime auto-complete sets max_batch_size to {DEFAULT_MAX_BATCH_SIZE} (the server's "
                "default-max-batch-size) and adds dynamic_batching"
            )
            hint = "write inputs, outputs and max_batch_size explicitly to serve what you benchmarked" + (
                "; max_batch_size: 0 does not stop it, the backend cannot tell 0 from unset" if written else ""
            )
            self.report("O508", message, hint, "max_batch_size")
            return DEFAULT_MAX_BATCH_SIZE
        if not _can_batch(io) and size != 0:
            message = (
                f"autofill failed for model '{self.name}': model does not support batching while non-zero "
                "max_batch_size is specified"
            )
            hint = "every model input and output needs a dynamic first dimension to batch; else max_batch_size: 0"
            self.report("O507", message, hint, "max_batch_size")
        return size

    def compare(self, io: OnnxIO, batch: int, *, autofill: bool) -> None:
        cfg = self.cfg
        if len(cfg.input):
            allowed = sorted({*io.inputs, *io.initializers})
            for i, config_io in enumerate(cfg.input):
                tensor = io.inputs.get(config_io.name) or io.initializers.get(config_io.name)
                if tensor is None:
                    message = f"unexpected inference input '{config_io.name}', allowed inputs are: {', '.join(allowed)}"
                    self.report("O502", message, _suggest(config_io.name, allowed), "input", i, "name")
                else:
                    self.tensor("input", i, config_io, tensor, batch, autofill)
            self.missing_inputs(io, batch)
        if len(cfg.output):
            targets = {t for b in cfg.batch_output for t in b.target_name}
            for i, config_io in enumerate(cfg.output):
                tensor = io.outputs.get(config_io.name)
                if tensor is None:
                    message = (
                        f"unexpected inference output '{config_io.name}', allowed outputs are: "
                        f"{', '.join(sorted(io.outputs))}"
                    )
                    self.report("O504", message, _suggest(config_io.name, io.outputs), "output", i, "name")
                elif config_io.name not in targets:
                    self.tensor("output", i, config_io, tensor, batch, autofill)

    def missing_inputs(self, io: OnnxIO, batch: int) -> None:
        """Every model input must be in the config; the backend compares counts (optional ones excluded)."""
        cfg, seq = self.cfg, self.cfg.sequence_batching
        covered = {i.name for i in cfg.input} | {t for b in cfg.batch_input for t in b.target_name}
        covered |= {c.name for c in seq.control_input} | {s.input_name for s in seq.state}
        expected = sum(not i.optional for i in cfg.input) + len(cfg.batch_input)
        expected += len(seq.control_input) + len(seq.state)
        count = f"unable to load model '{self.name}', configuration expects {expected} inputs, model provides "
        count += str(len(io.inputs))
        missing = [name for name in io.inputs if name not in covered]
        for name in missing:
            tensor = io.inputs[name]
            message = f"ONNX model input '{name}' is not in the configuration"
            message += f" ({count})" if expected != len(io.inputs) else ""
            dims = tensor.dims[1:] if tensor.dims and batch > 0 else tensor.dims or ()
            kind = ONNX_TO_TRITON.get(tensor.elem_type or 0, "INVALID").replace("BYTES", "STRING")
            hint = f'add input {{ name: "{name}" data_type: TYPE_{kind} dims: {fmt_shape(dims)} }}'
            self.report("O503", message, hint, "input")
        overriding = [i.name for i in cfg.input if i.name in io.initializers and not i.optional]
        unknown = [i.name for i in cfg.input if i.name not in io.inputs and i.name not in io.initializers]
        if not missing and not unknown and expected != len(io.inputs):  # unknown ones are O502
            hint = "the config lists more inputs than the model requires"
            if overriding:
                hint = f"{', '.join(overriding)}: initializers of the model, so mark them optional: true"
            self.report("O503", count, hint, "input")

    def tensor(self, kind: str, i: int, config_io: Any, tensor: Tensor, batch: int, autofill: bool) -> None:
        model, label = self.name, f"{kind} '{config_io.name}'"
        if tensor.elem_type is None:
            message = f"model {label} is not a tensor (a sequence, map or optional): the backend serves tensors only"
            self.report("O505", message, "export the model with tensor inputs and outputs", kind, i)
            return
        config_type = enum_label(config_io, "data_type")
        model_type = ONNX_TO_TRITON.get(tensor.elem_type, "INVALID")
        if config_type not in CONFIG_TO_ONNX:
            message = f"unsupported datatype {config_type} for {label} for model '{model}'"
            self.report("O505", message, f"the model provides TYPE_{model_type}", kind, i, "data_type")
        elif CONFIG_TO_ONNX[config_type] != tensor.elem_type:
            message = (
                f"unable to load model '{model}', configuration expects datatype {config_type} for {label}, "
                f"model provides TYPE_{model_type}"
            )
            hint = f"set data_type: TYPE_{model_type.replace('BYTES', 'STRING')}"
            self.report("O505", message, hint, kind, i, "data_type")
        if tensor.dims is not None:
            self.dims(kind, i, config_io, list(tensor.dims), batch, autofill)

    def dims(self, kind: str, i: int, config_io: Any, shape: list[int], batch: int, autofill: bool) -> None:
        model, name = self.name, config_io.name
        where = (kind, i, "reshape" if config_io.HasField("reshape") else "dims")
        dims = [int(d) for d in (config_io.reshape.shape if config_io.HasField("reshape") else config_io.dims)]
        if kind == "input" and config_io.allow_ragged_batch:
            if shape != [-1]:
                message = (
                    f"unable to load model '{model}', configuration expects model provides input with shape [-1]  "
                    f"for ragged input '{name}', model provides {fmt_shape(shape)}"
                )
                self.report("O506", message, "a ragged input must be 1-D with a dynamic size in the model", *where)
            return
        if not shape:
            if any(d != 1 for d in dims):
                message = (
                    f"unable to load model '{model}', scalar tensor '{name}', should only provide 1 in the model "
                    f"configuration when the model doesn't support batching. Model configuration provided: "
                    f"{fmt_shape(dims)}."
                )
                self.report("O506", message, "the model's tensor is a scalar: write dims: [ 1 ]", *where)
            return
        if batch > 0 and shape[0] != -1:
            if not autofill:
                message = (
                    f"model '{model}', tensor '{name}': for the model to support batching the shape should have at "
                    f"least 1 dimension and the first dimension must be -1; but shape expected by the model is "
                    f"{fmt_shape(shape)}"
                )
                hint = "set max_batch_size: 0 (and write the full shape in dims), or export a dynamic batch axis"
                self.report("O507", message, hint, *where)
            return
        full = [-1, *dims] if batch > 0 else dims
        exact = kind == "output"
        if len(shape) == len(full) and all(m == c for m, c in zip(shape, full, strict=True) if exact or m != -1):
            return
        expected = f"the model expects {len(shape)} dimensions (shape {fmt_shape(shape)})"
        prefix = f"model '{model}', tensor '{name}': {expected}"
        if batch > 0:
            message = (
                f"{prefix} but the model configuration specifies {len(full)} dimensions (an initial batch dimension "
                f"because max_batch_size > 0 followed by the explicit tensor shape, making complete shape "
                f"{fmt_shape(full)})"
            )
        else:
            message = f"{prefix} but the model configuration specifies {len(dims)} dimensions (shape {fmt_shape(dims)})"
        self.report("O506", message, _dims_hint(shape, dims, batch, exact), *where)


def _dims_hint(shape: list[int], dims: list[int], batch: int, exact: bool) -> str:
    wanted = shape[1:] if batch > 0 else shape
    hint = f"write dims: {fmt_shape(wanted)}"
    if batch == 0 and len(shape) == len(dims) + 1 and shape[0] == -1:
        hint += " or set max_batch_size > 0: the model has a dynamic batch dimension in front"
    elif exact:
        hint += " (output dims are compared exactly: -1 where the model's dimension is dynamic)"
    elif any(d == -1 for d in dims):
        hint += " (the model fixes a dimension the config leaves as -1)"
    return hint


def _suggest(name: str, choices: Any) -> str:
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f"did you mean {close[0]!r}?" if close else "fix the name to one the model has"


def autocompleted(model: ModelContext) -> Any | None:
    """``model``'s config as the onnxruntime backend completes it at load, or None where it fills nothing in.

    AutoCompleteMaxBatch and AutoCompleteIO on the newest version's file: a config without inputs (batch_input
    entries count as inputs) gets every model input, one without outputs every output, with the model's data
    types and its dims (the batch dimension dropped when max_batch_size > 0; none left: dims [1], with an empty
    reshape when batching). None also where the file cannot be read or completing would
    fail (O501 / O507 say why), so that nothing is checked against a guess.
    """
    if "autocompleted" not in model.memo:  # every ensemble step naming the model asks again
        model.memo["autocompleted"] = _autocomplete(model)
    return model.memo["autocompleted"]


def _autocomplete(model: ModelContext) -> Any | None:
    cfg = model.config
    if normalized(model).backend != "onnxruntime" or (len(cfg.input) + len(cfg.batch_input) and len(cfg.output)):
        return None
    files = model_files(model)
    if not files or (model.repository is not None and not model.repository.holds_content(files[-1])):
        return None
    try:
        io = _read(model, files[-1])
    except OnnxReadError:
        return None
    done = type(cfg)()
    done.CopyFrom(cfg)
    if _can_batch(io) and done.max_batch_size == 0:
        done.max_batch_size = DEFAULT_MAX_BATCH_SIZE
    elif not _can_batch(io) and done.max_batch_size != 0:
        return None
    drop = 1 if done.max_batch_size > 0 else 0
    data_types = cfg.DESCRIPTOR.file.enum_types_by_name["DataType"].values_by_name
    for kind, tensors in (("input", io.inputs), ("output", io.outputs)):
        if len(getattr(done, kind)):
            continue
        for tensor in tensors.values():
            if tensor.elem_type not in BY_ONNX or tensor.dims is None:
                return None
            entry = getattr(done, kind).add(name=tensor.name)
            entry.data_type = data_types[BY_ONNX[tensor.elem_type].config].number
            entry.dims.extend(tensor.dims[drop:] or [1])  # no dims left: [1], reshaped to [] when batching
            if not tensor.dims[drop:] and done.max_batch_size > 0:
                entry.reshape.SetInParent()
    return done


def check_onnx_model(model: ModelContext) -> None:
    if normalized(model).backend == "onnxruntime":
        _Check(model).run()


def check_models_without_config(repo: RepositoryContext) -> None:
    """A model folder with no config.pbtxt and a model.onnx is auto-completed entirely."""
    for model in repo.models.values():
        if model.parsed is not None or model.has_config:
            continue
        subdirs = model.subfolders()
        versions = model.versions()
        # Triton guesses the backend from the first subfolder (a model.plan there wins)
        first = repo.reporter.folders.names(subdirs[0]) if subdirs else set()
        if "model.onnx" not in first or "model.plan" in first:
            continue
        for path in (model.folder / str(v) / "model.onnx" for v in versions):
            path = path / "model.onnx" if path.is_dir() else path
            if not path.is_file() or not repo.holds_content(path):
                continue
            try:
                io = repo.onnx_io(path)
            except OnnxReadError as exc:
                rel = path.relative_to(model.folder).as_posix()
                model.report_file("O501", path, f"cannot read ONNX model {rel}: {exc.reason}", "export the model again")
                return
            if _can_batch(io):
                message = (
                    f"config.pbtxt is missing: Triton's onnxruntime auto-complete serves model '{model.name}' "
                    f"with max_batch_size {DEFAULT_MAX_BATCH_SIZE} (the server's default-max-batch-size) "
                    "and dynamic_batching"
                )
                hint = "write config.pbtxt with inputs, outputs and the max_batch_size you benchmarked"
                model.report_file("O508", model.folder, message, hint)
            break


FAMILY = Family(
    "O",
    "ONNX model vs config",
    RULES,
    model_checks=[check_onnx_model],
    repository_checks=[check_models_without_config],
)
