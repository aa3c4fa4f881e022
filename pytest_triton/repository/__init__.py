"""Build model repositories and stage them for a server (ONNX adapter, SageMaker packaging)."""

from __future__ import annotations

from pytest_triton.repository.builder import EnsembleStep
from pytest_triton.repository.builder import RepositoryBuilder
from pytest_triton.repository.builder import TensorRTAccelerator
from pytest_triton.repository.tensors import TensorSpec

__all__ = ["EnsembleStep", "RepositoryBuilder", "TensorRTAccelerator", "TensorSpec"]
