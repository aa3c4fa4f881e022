"""Deployment pitfalls: SageMaker packaging, batching shapes, image contents."""

from __future__ import annotations

import os
from pathlib import Path

from pytest_triton.archive.files import RefusedFile
from pytest_triton.archive.model_tar import DEFAULT_MODEL_ENV
from pytest_triton.archive.model_tar import read_env_file
from pytest_triton.archive.model_tar import sidecar_env
from pytest_triton.lint.context import ModelContext
from pytest_triton.lint.context import RepositoryContext
from pytest_triton.lint.rules.family import Family
from pytest_triton.lint.rules.family import RuleTable
from pytest_triton.lint.walk import describe_access

RULES: RuleTable = [  # D601 and D606-D611 are reported while a model.tar.gz is read (lint/tarball.py)
    ("D601", "error", "SageMaker tarball has config.pbtxt at its root"),
    ("D602", "warning", "several models without SAGEMAKER_TRITON_DEFAULT_MODEL_NAME"),
    ("D603", "error", "SAGEMAKER_TRITON_DEFAULT_MODEL_NAME names no model folder"),
    ("D604", "info", "variable-length dims with dynamic batching only batch same-shape requests"),
    ("D605", "warning", "TensorFlow platform has no backend in -py3 images from 24.08 on"),
    ("D606", "error", "unsafe member in model.tar.gz"),
    ("D607", "error", "model.tar.gz cannot be read"),
    ("D608", "error", "model.tar.gz exceeds a lint limit (members, total bytes or header size)"),
    ("D609", "info", "archive member too large to check: checked by name and size only"),
    ("D610", "warning", "model.tar.gz holds hidden files (.env, .git/): SageMaker unpacks them"),
    ("D611", "warning", "model.tar.gz write budget reached: later members checked by name and size only"),
    ("D612", "error", "the model.tar.gz.env sidecar is not a small regular file beside the archive"),
]


def _sidecar_default(repo: RepositoryContext, archive: Path) -> str | None:
    """SAGEMAKER_TRITON_DEFAULT_MODEL_NAME from ``<archive>.env``, read only if it is a small regular file
    beside the archive (D612 otherwise: a FIFO would block the run, /dev/zero would never end)."""
    sidecar = sidecar_env(archive)
    if not os.path.lexists(sidecar):
        return None
    try:
        return read_env_file(sidecar, root=archive.parent).get(DEFAULT_MODEL_ENV)
    except RefusedFile as refused:
        reason = refused.fact if refused.os_error is None else describe_access(sidecar, refused.os_error)
        hint = f"write {sidecar.name} as a plain text file of KEY=VALUE lines beside the archive, or remove it"
        repo.reporter.add("D612", sidecar, f"sidecar {sidecar.name} {reason}", hint)
        return None


def check_sagemaker_default_model(repo: RepositoryContext) -> None:
    if repo.tarball is None and repo.sagemaker_default_model is None:
        return  # not a SageMaker target: several models are fine
    default = repo.sagemaker_default_model
    where = repo.tarball or repo.root
    if default is None and repo.tarball is not None:
        default = _sidecar_default(repo, repo.tarball)
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


FAMILY = Family(
    "D",
    "deployment",
    RULES,
    model_checks=[check_variable_dims_with_batching, check_tensorflow_platform],
    repository_checks=[check_sagemaker_default_model],
)
