"""What SageMaker makes of a model's data before the Triton container starts, as sagemaker-local makes it.

The model.tar.gz (or a repository folder, as its archive would hold it) unpacked as ``/opt/ml/model``; the
container environment it carries (the archive's ``<archive>.env`` sidecar, or a folder's ``sagemaker.env``,
then the given variables); the serve script's checks of the two; and the repository as the server sees it.
Both SageMaker launchers name the endpoint's default model the same way: :func:`default_model_env`.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path

from pytest_triton.archive.model_tar import DEFAULT_MODEL_ENV
from pytest_triton.archive.model_tar import FOLDER_SIDECAR
from pytest_triton.archive.model_tar import folder_env
from pytest_triton.archive.model_tar import read_env_file
from pytest_triton.archive.model_tar import sidecar_env
from pytest_triton.archive.model_tar import unpack_model_archive
from pytest_triton.cloud.serve_script import SINGLE_MODEL_REPOSITORY
from pytest_triton.cloud.serve_script import RepositoryLayout
from pytest_triton.cloud.serve_script import ServePlan
from pytest_triton.cloud.serve_script import serve_plan
from pytest_triton.errors import ConfigError

MODEL_MOUNT = SINGLE_MODEL_REPOSITORY.rstrip("/")  # where SageMaker puts the unpacked model.tar.gz
_MULTI_MODEL = (
    "SAGEMAKER_MULTI_MODEL=true: multi-model endpoints load models per request from S3, which "
    "sagemaker-local does not emulate; test each model as a single-model archive"
)


def default_model_env(env: Mapping[str, str], models: Sequence[str] | None) -> dict[str, str]:
    """``env`` with the one model of ``models`` as the endpoint's default model (None: as ``env`` says)."""
    given = dict(env)
    if models is not None:
        if len(models) != 1:
            raise ConfigError(
                f"models={list(models)!r}: a SageMaker endpoint serves one model (its default model); "
                f"name one, or set {DEFAULT_MODEL_ENV}"
            )
        given.setdefault(DEFAULT_MODEL_ENV, models[0])
    return given


def is_archive(path: Path) -> bool:
    """Whether ``path`` names a model archive (``.tar.gz``, ``.tgz``, ``.tar``) rather than a folder."""
    return path.name.endswith((".tar.gz", ".tgz", ".tar"))


def unpack_as_sagemaker(source: Path, model_dir: Path) -> Path:
    """Unpack a model.tar.gz (or copy a folder as its archive would hold it) into ``model_dir``, as SageMaker does."""
    if not source.exists():
        raise ConfigError(f"{str(source)!r} does not exist; pass a model.tar.gz or a repository folder")
    if is_archive(source):
        unpack_model_archive(source, model_dir)
    elif source.is_dir():
        # as the packaged archive would hold it: nothing hidden (.env, .git), no sidecar
        ignore = shutil.ignore_patterns(".*", FOLDER_SIDECAR, "__pycache__")
        shutil.copytree(source, model_dir, symlinks=False, ignore=ignore)
    else:
        raise ConfigError(f"{str(source)!r} is neither a model.tar.gz nor a repository folder")
    return model_dir


def read_container_env(source: Path, env: Mapping[str, str]) -> dict[str, str]:
    """The container's environment for ``source``: the archive's ``<archive>.env`` or the folder's
    ``sagemaker.env``, then ``env``."""
    if is_archive(source):
        sidecar = sidecar_env(source)
        values = read_env_file(sidecar) if sidecar.is_file() else {}
    else:
        values = folder_env(source)[0]
    values.update(env)
    return values


def server_repository(model_dir: Path, *, in_container: bool) -> str | Path:
    """The repository as the server sees it: /opt/ml/model/ in the container, ``model_dir`` here."""
    return SINGLE_MODEL_REPOSITORY if in_container else model_dir


def serve_script_checks(env: Mapping[str, str], model_dir: Path, *, in_container: bool) -> ServePlan:
    """The serve script's plan for the unpacked ``model_dir`` under ``env``, after its refusals (ConfigError, in
    its words) and sagemaker-local's own: no multi-model endpoint."""
    if env.get("SAGEMAKER_MULTI_MODEL") == "true":
        raise ConfigError(_MULTI_MODEL)
    repository = server_repository(model_dir, in_container=in_container)
    return serve_plan(env, RepositoryLayout.of(model_dir), model_repository=repository)
