"""Deployment pitfalls: SageMaker packaging, batching shapes, image contents."""

from __future__ import annotations

from pathlib import Path

from pytest_triton.archive.model_tar import DEFAULT_MODEL_ENV
from pytest_triton.archive.model_tar import read_env_file
from pytest_triton.archive.model_tar import sidecar_env
from pytest_triton.lint.context import ModelContext
from pytest_triton.lint.context import RepositoryContext


def check_sagemaker_default_model(repo: RepositoryContext) -> None:
    if repo.tarball is None and repo.sagemaker_default_model is None:
        return  # not a SageMaker target: several models are fine
    default = repo.sagemaker_default_model
    where = repo.tarball or repo.root
    if default is None and repo.tarball is not None and sidecar_env(repo.tarball).exists():
        default = read_env_file(sidecar_env(repo.tarball)).get(DEFAULT_MODEL_ENV)
    models = sorted(name for name in repo.models if not name.startswith("."))
    if default is not None:
        if default not in repo.models:
            repo.reporter.add(
                "D603",
                where,
                f"{DEFAULT_MODEL_ENV}={default!r} names no model folder (models: {', '.join(models) or 'none'})",
                "set it to the folder name of the model SageMaker should invoke",
            )
        return
    if len(models) > 1:
        repo.reporter.add(
            "D602",
            where,
            f"{len(models)} model folders ({', '.join(models)}) but no {DEFAULT_MODEL_ENV}: the SageMaker "
            "Triton container cannot tell which model /invocations serves",
            f"set {DEFAULT_MODEL_ENV} in the endpoint's environment (and record it in "
            f"{sidecar_env(Path(where.name)).name}), or pass --sagemaker-default-model NAME",
        )


def check_variable_dims_with_batching(model: ModelContext) -> None:
    config = model.config
    if not config.HasField("dynamic_batching") or config.max_batch_size <= 0:
        return
    for index, tensor in enumerate(config.input):
        if -1 in tensor.dims:
            model.report(
                "D604",
                f"input {tensor.name!r} has variable dims {list(tensor.dims)} with dynamic batching: only "
                "requests of the same shape are batched together",
                "pad every request to the maximum length (e.g. a tokenizer's max_length, 512) and fix the dims, "
                "or accept smaller batches",
                "input",
                index,
                "dims",
            )


def check_tensorflow_platform(model: ModelContext) -> None:
    config = model.config
    if config.platform.startswith("tensorflow_") or config.backend == "tensorflow":
        field = "platform" if config.platform else "backend"
        model.report(
            "D605",
            f"{field} {getattr(config, field)!r}: NGC tritonserver -py3 images from 24.08 on carry no "
            "TensorFlow backend",
            "convert the model to ONNX or TensorRT, or pin an image older than 24.08",
            field,
        )


REPOSITORY_CHECKS = [check_sagemaker_default_model]
MODEL_CHECKS = [check_variable_dims_with_batching, check_tensorflow_platform]
