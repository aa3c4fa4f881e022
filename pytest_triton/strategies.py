"""Hypothesis strategies for Triton model configs, repositories and request tensors.

    from pytest_triton.strategies import model_configs, repositories

    @given(model_configs(max_batch_size=8))
    def test_round_trip(config): ...

Importing this module imports Hypothesis; the plugin never does.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from pytest_triton.config import model_config_class
from pytest_triton.config import print_config

__all__ = ["ModelFolder", "RepositorySpec", "model_configs", "repositories", "tensor_names", "write_repository"]

DATA_TYPES = (
    "TYPE_BOOL",
    "TYPE_INT8",
    "TYPE_INT32",
    "TYPE_INT64",
    "TYPE_FP16",
    "TYPE_FP32",
    "TYPE_FP64",
    "TYPE_STRING",
)
_NAME_CHARS = string.ascii_letters + string.digits + "_"


def tensor_names() -> st.SearchStrategy[str]:
    """Names Triton accepts for tensors and models: letters, digits and underscores."""
    return st.text(_NAME_CHARS, min_size=1, max_size=12).filter(lambda s: not s[0].isdigit())


def _validate_range(name: str, low: int, high: int) -> None:
    if low < 0:
        raise ValueError(f"Cannot have {name}={low} < 0")
    if high < low:
        raise ValueError(f"Cannot have max_{name}={high} < min_{name}={low}")


@st.composite
def _config(draw: st.DrawFn, backend: str, max_batch_size: int | None, max_tensors: int) -> Any:
    config = model_config_class()(name=draw(tensor_names()), backend=backend)
    mbs = draw(st.integers(0, 64)) if max_batch_size is None else max_batch_size
    config.max_batch_size = mbs
    names = draw(st.lists(tensor_names(), min_size=2, max_size=2 * max_tensors, unique=True))
    half = max(1, len(names) // 2)
    for kind, tensor_names_ in (("input", names[:half]), ("output", names[half:])):
        for name in tensor_names_:
            dims = draw(st.lists(st.one_of(st.just(-1), st.integers(1, 512)), min_size=1, max_size=4))
            getattr(config, kind).add(name=name, data_type=draw(st.sampled_from(DATA_TYPES)), dims=dims)
    if mbs > 0 and draw(st.booleans()):
        sizes = draw(st.lists(st.integers(1, mbs), max_size=3, unique=True))
        config.dynamic_batching.preferred_batch_size.extend(sorted(sizes))
        config.dynamic_batching.max_queue_delay_microseconds = draw(st.integers(0, 10_000))
    if draw(st.booleans()):
        config.instance_group.add(kind="KIND_CPU", count=draw(st.integers(1, 4)))
    return config


def model_configs(
    backend: str = "python",
    *,
    max_batch_size: int | None = None,
    max_tensors: int = 3,
) -> st.SearchStrategy[Any]:
    """Valid ``inference.ModelConfig`` messages for ``backend`` (python, onnxruntime, ...)."""
    if max_batch_size is not None:
        _validate_range("batch_size", 0, max_batch_size)
    _validate_range("tensors", 1, max_tensors)
    return _config(backend, max_batch_size, max_tensors)


@dataclass(frozen=True)
class ModelFolder:
    """A model folder to write: its config text and its files (relative path → bytes)."""

    folder: str
    config_text: str | None
    files: dict[str, bytes]


@dataclass(frozen=True)
class RepositorySpec:
    models: tuple[ModelFolder, ...]


@st.composite
def _model_folder(draw: st.DrawFn) -> ModelFolder:
    config = draw(model_configs())
    folder = config.name
    return ModelFolder(folder, print_config(config), {"1/model.py": b"class TritonPythonModel:\n    pass\n"})


def repositories(*, min_models: int = 1, max_models: int = 4) -> st.SearchStrategy[RepositorySpec]:
    """Lint-clean python-model repositories (write them with :func:`write_repository`)."""
    _validate_range("models", min_models, max_models)
    return st.lists(_model_folder(), min_size=min_models, max_size=max_models, unique_by=lambda m: m.folder).map(
        lambda models: RepositorySpec(tuple(models))
    )


def write_repository(spec: RepositorySpec, root: Path, *, extra: Sequence[ModelFolder] = ()) -> Path:
    """Write ``spec`` (and ``extra`` folders) under ``root``; returns ``root``."""
    from pytest_triton.repository.layout import check_name
    from pytest_triton.repository.layout import check_relative

    root.mkdir(parents=True, exist_ok=True)
    for model in (*spec.models, *extra):
        folder = root / check_name(model.folder, "ModelFolder.folder")
        for rel in model.files:
            check_relative(rel, f"ModelFolder {model.folder!r}: file path")
        folder.mkdir(parents=True, exist_ok=True)
        if model.config_text is not None:
            (folder / "config.pbtxt").write_text(model.config_text, encoding="utf-8")
        for rel, data in model.files.items():
            target = folder / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    return root
