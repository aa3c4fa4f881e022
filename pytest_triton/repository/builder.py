"""Build Triton model repositories in code: configs go through Triton's own schema.

repo = (
    RepositoryBuilder(tmp_path / "models")
    .add_onnx("classifier", "model.onnx", max_batch_size=8)
    .add_python("post", source=POSTPROCESS, inputs=[...], outputs=[...])
    .add_ensemble("pipeline", steps=[...], inputs=[...], outputs=[...])
)
path = repo.build()   # writes everything, lints it, raises LintFailed on errors
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from pytest_triton.config import model_config_class
from pytest_triton.config import write_config
from pytest_triton.errors import ConfigError
from pytest_triton.errors import LintFailed
from pytest_triton.repository.layout import check_name
from pytest_triton.repository.layout import check_relative
from pytest_triton.repository.layout import inside
from pytest_triton.repository.tensors import ONNX_TO_TRITON
from pytest_triton.repository.tensors import TensorSpec

if TYPE_CHECKING:
    from pytest_triton.lint.finding import Finding
    from pytest_triton.onnx_io import Tensor

if sys.version_info >= (3, 11):
    from typing import Self
else:  # pragma: no cover
    from typing_extensions import Self


@dataclass(frozen=True)
class EnsembleStep:
    """One step: ``input_map`` is step input → ensemble tensor, ``output_map`` step output → tensor."""

    model_name: str
    input_map: Mapping[str, str]
    output_map: Mapping[str, str]
    model_version: int = -1


@dataclass(frozen=True)
class TensorRTAccelerator:
    """The onnxruntime backend's TensorRT execution accelerator and its parameters."""

    precision_mode: str = "FP16"
    max_workspace_size_bytes: int = 1 << 30
    engine_cache_path: str | None = None  # relative paths are resolved inside the model folder
    extra: Mapping[str, str] = field(default_factory=dict)


@dataclass
class _PendingModel:
    config: Any
    files: dict[str, Path | bytes | str]


def _specs(tensors: Sequence[TensorSpec], kind: str, model: str) -> list[TensorSpec]:
    names = [t.name for t in tensors]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(f"model {model!r}: {kind} names {duplicates} are given twice")
    return list(tensors)


def onnx_io(path: Path, max_batch_size: int) -> tuple[list[TensorSpec], list[TensorSpec]]:
    """Inputs and outputs of an ONNX file as config dims (batch dimension dropped if batching)."""
    from pytest_triton.onnx_io import read_onnx_io

    found = read_onnx_io(path)

    def spec(tensor: Tensor) -> TensorSpec:
        dims = list(tensor.dims or ())
        if max_batch_size > 0:
            dims = dims[1:]
        data_type = ONNX_TO_TRITON.get(tensor.elem_type, "TYPE_INVALID") if tensor.elem_type is not None else ""
        return TensorSpec(tensor.name, data_type or "TYPE_INVALID", tuple(dims))

    return [spec(t) for t in found.inputs.values()], [spec(t) for t in found.outputs.values()]


class RepositoryBuilder:
    """Build a model repository in ``root``; add models, then ``build()`` writes and lints it."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._models: dict[str, _PendingModel] = {}
        self.findings: list[Finding] = []

    @property
    def model_names(self) -> list[str]:
        return list(self._models)

    def _new_config(self, name: str, max_batch_size: int) -> Any:
        check_name(name, "model name")
        if name in self._models:
            raise ConfigError(f"model {name!r} is added twice to the repository at {self.root}")
        if max_batch_size < 0:
            raise ConfigError(f"model {name!r}: max_batch_size={max_batch_size} must be >= 0")
        config = model_config_class()(name=name, max_batch_size=max_batch_size)
        return config

    @staticmethod
    def _set_io(config: Any, inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec]) -> None:
        for tensor in _specs(inputs, "input", config.name):
            config.input.add(name=tensor.name, data_type=tensor.data_type, dims=list(tensor.dims))
        for tensor in _specs(outputs, "output", config.name):
            config.output.add(name=tensor.name, data_type=tensor.data_type, dims=list(tensor.dims))

    def add_config(self, config: Any, files: Mapping[str, Path | bytes | str] | None = None) -> Self:
        """Add a model from a ModelConfig message; ``files`` maps paths in the model folder to content.

        The name and every path are checked here (one folder name; relative paths that stay inside the
        model folder), since ``write()`` replaces the folder of each name."""
        check_name(config.name, "model name (config.name)")
        if config.name in self._models:
            raise ConfigError(f"model {config.name!r} is added twice to the repository at {self.root}")
        for rel in files or {}:
            check_relative(rel, f"model {config.name!r}: file path")
        self._models[config.name] = _PendingModel(config, dict(files or {}))
        return self

    def add_onnx(
        self,
        name: str,
        model: str | Path,
        *,
        max_batch_size: int = 0,
        inputs: Sequence[TensorSpec] | None = None,
        outputs: Sequence[TensorSpec] | None = None,
        max_queue_delay_microseconds: int | None = None,
        preferred_batch_sizes: Sequence[int] = (),
        instance_kind: str = "KIND_CPU",
        instance_count: int = 1,
        tensorrt: TensorRTAccelerator | None = None,
        versions: Sequence[int] = (1,),
    ) -> Self:
        """Add an ONNX model served by the onnxruntime backend; I/O is read from the file if not given."""
        source = Path(model)
        if not source.is_file():
            raise ConfigError(f"model {name!r}: ONNX file {str(source)!r} does not exist")
        config = self._new_config(name, max_batch_size)
        config.backend = "onnxruntime"
        found_inputs, found_outputs = onnx_io(source, max_batch_size)
        self._set_io(config, inputs if inputs is not None else found_inputs, outputs or found_outputs)
        if max_queue_delay_microseconds is not None or preferred_batch_sizes:
            config.dynamic_batching.max_queue_delay_microseconds = max_queue_delay_microseconds or 0
            config.dynamic_batching.preferred_batch_size.extend(preferred_batch_sizes)
        config.instance_group.add(kind=instance_kind, count=instance_count)
        if tensorrt is not None:
            self._add_tensorrt_accelerator(config, tensorrt)
        files: dict[str, Path | bytes | str] = {f"{v}/model.onnx": source for v in versions}
        return self.add_config(config, files)

    @staticmethod
    def _add_tensorrt_accelerator(config: Any, trt: TensorRTAccelerator) -> None:
        accel = config.optimization.execution_accelerators.gpu_execution_accelerator.add(name="tensorrt")
        params = {
            "precision_mode": trt.precision_mode,
            "max_workspace_size_bytes": str(trt.max_workspace_size_bytes),
            **dict(trt.extra),
        }
        if trt.engine_cache_path is not None:
            params["trt_engine_cache_enable"] = "true"
            params["trt_engine_cache_path"] = trt.engine_cache_path
        for key, value in params.items():
            accel.parameters[key] = value

    def add_python(
        self,
        name: str,
        *,
        source: str | None = None,
        file: str | Path | None = None,
        inputs: Sequence[TensorSpec] = (),
        outputs: Sequence[TensorSpec] = (),
        max_batch_size: int = 0,
        instance_count: int = 1,
        parameters: Mapping[str, str] | None = None,
        extra_files: Mapping[str, Path | bytes | str] | None = None,
        versions: Sequence[int] = (1,),
    ) -> Self:
        """Add a python-backend model from source text or a file (it becomes ``<version>/model.py``)."""
        if (source is None) == (file is None):
            raise ConfigError(f"model {name!r}: give exactly one of source= or file= for model.py")
        code: Path | str = Path(file) if file is not None else str(source)
        config = self._new_config(name, max_batch_size)
        config.backend = "python"
        self._set_io(config, inputs, outputs)
        config.instance_group.add(kind="KIND_CPU", count=instance_count)
        for key, value in (parameters or {}).items():
            config.parameters[key].string_value = value
        files: dict[str, Path | bytes | str] = {f"{v}/model.py": code for v in versions}
        files.update(extra_files or {})
        return self.add_config(config, files)

    def add_ensemble(
        self,
        name: str,
        *,
        steps: Sequence[EnsembleStep],
        inputs: Sequence[TensorSpec],
        outputs: Sequence[TensorSpec],
        max_batch_size: int = 0,
    ) -> Self:
        """Add an ensemble; its version folder 1/ holds only a .gitkeep (Triton needs the folder, git
        keeps no empty folders: a clone without 1/ fails with "at least one version must be available")."""
        config = self._new_config(name, max_batch_size)
        config.platform = "ensemble"
        self._set_io(config, inputs, outputs)
        for step in steps:
            entry = config.ensemble_scheduling.step.add(model_name=step.model_name, model_version=step.model_version)
            for key, value in step.input_map.items():
                entry.input_map[key] = value
            for key, value in step.output_map.items():
                entry.output_map[key] = value
        return self.add_config(config, {"1/.gitkeep": b""})

    def add_tensorrt(
        self,
        name: str,
        plan: str | Path,
        *,
        inputs: Sequence[TensorSpec],
        outputs: Sequence[TensorSpec],
        max_batch_size: int = 0,
        versions: Sequence[int] = (1,),
    ) -> Self:
        """Add a serialized TensorRT engine (model.plan); it runs only where TensorRT exists."""
        config = self._new_config(name, max_batch_size)
        config.platform = "tensorrt_plan"
        self._set_io(config, inputs, outputs)
        config.instance_group.add(kind="KIND_GPU", count=1)
        return self.add_config(config, {f"{v}/model.plan": Path(plan) for v in versions})

    def write(self) -> Path:
        """Write every model folder without linting; returns the repository path."""
        self.root.mkdir(parents=True, exist_ok=True)
        for name, pending in self._models.items():
            folder = inside(self.root, self.root / check_name(name, "model name"), f"model {name!r}")
            if folder.is_symlink():
                raise ConfigError(f"model {name!r}: {str(folder)!r} is a link; not replaced (remove it yourself)")
            if folder.exists():
                shutil.rmtree(folder)
            folder.mkdir()
            write_config(pending.config, folder)
            for rel, content in pending.files.items():
                target = inside(folder, folder / check_relative(rel, f"model {name!r}: file path"), f"model {name!r}")
                if rel.endswith("/"):
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                if isinstance(content, Path):
                    shutil.copyfile(content, target)
                elif isinstance(content, bytes):
                    target.write_bytes(content)
                else:
                    target.write_text(content, encoding="utf-8")
        return self.root

    def build(self, *, strict: bool = True) -> Path:
        """Write the repository and lint it; raise :class:`LintFailed` on any error (if ``strict``)."""
        from pytest_triton.lint import lint_path

        path = self.write()
        self.findings = lint_path(path)
        errors = [f for f in self.findings if f.severity == "error"]
        if errors and strict:
            listing = "\n".join(f.format() for f in errors)
            raise LintFailed(f"repository {path} has {len(errors)} lint error(s):\n{listing}", errors)
        return path
