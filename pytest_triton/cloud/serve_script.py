"""The SageMaker Triton container's ``serve`` script, as a pure function: environment in, command line out.

The DLC (``docker/sagemaker/serve`` in triton-inference-server/server) turns ``SAGEMAKER_*`` variables into
``tritonserver`` flags and refuses some repositories before Triton starts. :func:`serve_plan` does the same
from the variables and the repository's layout, so that ``sagemaker-local`` starts Triton exactly as an
endpoint would, and so that the refusals are found before an upload. What it follows, from the script:

- always ``--allow-sagemaker=true --allow-http=false --model-control-mode=explicit``, then
  ``--model-repository`` (``/opt/ml/model/``; ``/tmp/sagemaker`` when ``SAGEMAKER_MULTI_MODEL=true``) and
  ``--model-namespacing=true`` (``SAGEMAKER_TRITON_DISABLE_MODEL_NAMESPACING`` gives its value);
- gRPC and metrics are off unless ``SAGEMAKER_TRITON_ALLOW_GRPC`` / ``_ALLOW_METRICS`` say otherwise;
  verbose logging is on unless ``SAGEMAKER_TRITON_LOG_VERBOSE`` says otherwise; the python backend gets
  16 MiB default and 1 MiB growth shared-memory sizes unless ``SAGEMAKER_TRITON_SHM_*`` give others;
- ``SAGEMAKER_TRITON_MODEL_LOAD_GPU_LIMIT`` becomes one ``--model-load-gpu-limit I:LIMIT`` per GPU;
- ``SAGEMAKER_TRITON_ADDITIONAL_ARGS`` is split on whitespace with no quote handling (the script expands
  it unquoted);
- outside multi-model mode: a ``config.pbtxt`` at the root is refused ("Incorrect directory structure");
  the default model must be a folder of the repository and is loaded with ``--load-model``; with none
  named, a single folder is used (with a warning) and several are refused. The script counts every
  folder, hidden ones too (``find -mindepth 1 -maxdepth 1 -type d``): a stray ``.ipynb_checkpoints``
  makes a one-model archive a two-folder one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pytest_triton.archive.model_tar import DEFAULT_MODEL_ENV
from pytest_triton.errors import ConfigError

SINGLE_MODEL_REPOSITORY = "/opt/ml/model/"
MULTI_MODEL_REPOSITORY = "/tmp/sagemaker"
INFERENCE_TYPES = ("infer", "generate", "generate_stream")

# variable -> flag, in the order the script appends them; a value of None in _DEFAULTS means "only if set"
_FLAGS: tuple[tuple[str, str, str | None], ...] = (
    ("SAGEMAKER_TRITON_DISABLE_MODEL_NAMESPACING", "--model-namespacing", "true"),
    ("SAGEMAKER_BIND_TO_PORT", "--sagemaker-port", None),
    ("SAGEMAKER_SAFE_PORT_RANGE", "--sagemaker-safe-port-range", None),
    ("SAGEMAKER_TRITON_ALLOW_GRPC", "--allow-grpc", "false"),
    ("SAGEMAKER_TRITON_ALLOW_METRICS", "--allow-metrics", "false"),
    ("SAGEMAKER_TRITON_METRICS_PORT", "--metrics-port", None),
    ("SAGEMAKER_TRITON_GRPC_PORT", "--grpc-port", None),
    ("SAGEMAKER_TRITON_BUFFER_MANAGER_THREAD_COUNT", "--buffer-manager-thread-count", None),
    ("SAGEMAKER_TRITON_THREAD_COUNT", "--sagemaker-thread-count", None),
    ("SAGEMAKER_TRITON_LOG_VERBOSE", "--log-verbose", "true"),
    ("SAGEMAKER_TRITON_LOG_INFO", "--log-info", None),
    ("SAGEMAKER_TRITON_LOG_WARNING", "--log-warning", None),
    ("SAGEMAKER_TRITON_LOG_ERROR", "--log-error", None),
)
_BACKEND_CONFIGS: tuple[tuple[str, str, str | None], ...] = (
    ("SAGEMAKER_TRITON_SHM_DEFAULT_BYTE_SIZE", "python,shm-default-byte-size", "16777216"),
    ("SAGEMAKER_TRITON_SHM_GROWTH_BYTE_SIZE", "python,shm-growth-byte-size", "1048576"),
    ("SAGEMAKER_TRITON_TENSORFLOW_VERSION", "tensorflow,version", None),
)
SERVE_VARIABLES = frozenset(
    {name for name, _, _ in _FLAGS + _BACKEND_CONFIGS}
    | {
        DEFAULT_MODEL_ENV,
        "SAGEMAKER_MULTI_MODEL",
        "SAGEMAKER_TRITON_MODEL_LOAD_GPU_LIMIT",
        "SAGEMAKER_TRITON_ADDITIONAL_ARGS",
        "SAGEMAKER_TRITON_INFERENCE_TYPE",
        "SAGEMAKER_TRITON_OVERRIDE_PING_MODE",
    }
)


@dataclass(frozen=True)
class RepositoryLayout:
    """What the serve script looks at in ``/opt/ml/model``: its folders (hidden ones too) and a root config."""

    folders: tuple[str, ...]
    root_config: bool = False

    @classmethod
    def of(cls, root: Path) -> RepositoryLayout:
        """Read the layout of an unpacked model.tar.gz."""
        folders = tuple(sorted(p.name for p in root.iterdir() if p.is_dir()))
        return cls(folders, (root / "config.pbtxt").is_file())


@dataclass(frozen=True)
class ServePlan:
    """What the serve script would run: the arguments after ``tritonserver`` and the model it serves."""

    args: tuple[str, ...]
    default_model: str | None  # None in multi-model mode
    warnings: tuple[str, ...] = ()
    multi_model: bool = False

    def flag(self, name: str) -> str | None:
        """The value of the last ``--name=value`` argument (None if absent)."""
        value = None
        for arg in self.args:
            if arg.startswith(f"{name}="):
                value = arg.split("=", 1)[1]
        return value


def _refuse(message: str, hint: str) -> ConfigError:
    return ConfigError(f"the SageMaker Triton container would exit: {message}; {hint}")


def serve_plan(
    env: Mapping[str, str],
    layout: RepositoryLayout,
    *,
    gpu_count: int = 0,
    model_repository: str | os.PathLike[str] = SINGLE_MODEL_REPOSITORY,
) -> ServePlan:
    """The ``tritonserver`` arguments the DLC's serve script derives from ``env`` for a repository ``layout``.

    ``model_repository`` replaces ``/opt/ml/model/`` (where sagemaker-local unpacked the archive);
    ``gpu_count`` is what ``nvidia-smi -L`` would count. Raises :class:`ConfigError` quoting the script's
    own error where it would exit before Triton starts.
    """

    def given(name: str) -> str | None:
        value = env.get(name, "")
        return value or None  # the script tests `-n`: an empty value counts as unset

    multi_model = given("SAGEMAKER_MULTI_MODEL") == "true"
    repository = MULTI_MODEL_REPOSITORY if multi_model else os.fspath(model_repository)
    args = ["--allow-sagemaker=true", "--allow-http=false", "--model-control-mode=explicit"]
    args.append(f"--model-repository={repository}")
    for name, flag, default in _FLAGS:
        value = given(name) or default
        if value is not None:
            args.append(f"{flag}={value}")
    for name, setting, default in _BACKEND_CONFIGS:
        value = given(name) or default
        if value is not None:
            args.append(f"--backend-config={setting}={value}")
    limit = given("SAGEMAKER_TRITON_MODEL_LOAD_GPU_LIMIT")
    if limit is not None:
        for index in range(gpu_count):
            args += ["--model-load-gpu-limit", f"{index}:{limit}"]
    extra = given("SAGEMAKER_TRITON_ADDITIONAL_ARGS")
    if extra is not None:
        args += extra.split()
    if multi_model:
        return ServePlan(tuple(args), None, multi_model=True)
    if layout.root_config:
        raise _refuse(
            '"ERROR: Incorrect directory structure. Model directory needs to contain the top level folder"',
            "model.tar.gz must hold <model>/config.pbtxt and <model>/1/, not config.pbtxt at its root",
        )
    inference_type = given("SAGEMAKER_TRITON_INFERENCE_TYPE")
    if inference_type is not None and inference_type not in INFERENCE_TYPES:
        raise _refuse(
            f"\"ERROR: Invalid SAGEMAKER_TRITON_INFERENCE_TYPE '{inference_type}'\"",
            f"set SAGEMAKER_TRITON_INFERENCE_TYPE to one of {', '.join(INFERENCE_TYPES)}",
        )
    warnings: list[str] = []
    default_model = given(DEFAULT_MODEL_ENV)
    if default_model is not None:
        if default_model not in layout.folders:
            raise _refuse(
                f'"ERROR: Directory with provided {DEFAULT_MODEL_ENV} {default_model} does not exist"',
                f"{DEFAULT_MODEL_ENV}={default_model!r} must name a folder of the archive "
                f"(folders: {list(layout.folders)})",
            )
    elif not layout.folders:
        raise _refuse('"ERROR: No model found in model repository"', "package at least one model folder")
    elif len(layout.folders) == 1:
        default_model = layout.folders[0]
        warnings.append(
            f"No {DEFAULT_MODEL_ENV} provided; the container starts with the only model directory {default_model}"
        )
    else:
        raise _refuse(
            f'"ERROR: More than 1 model directory found in model repository" (directories: {" ".join(layout.folders)})',
            f"set {DEFAULT_MODEL_ENV} to the model to serve (the ensemble, with several models), "
            "or remove the extra folders (hidden ones count too)",
        )
    args.append(f"--load-model={default_model}")
    return ServePlan(tuple(args), default_model, tuple(warnings))


def unknown_variables(env: Mapping[str, str]) -> list[str]:
    """``SAGEMAKER_TRITON_*`` names in ``env`` that the serve script does not read (likely typos)."""
    return sorted(k for k in env if k.startswith("SAGEMAKER_TRITON_") and k not in SERVE_VARIABLES)


def command_line(plan: ServePlan, binary: str = "tritonserver") -> str:
    """The command line as one string, for logs and reports."""
    return " ".join([binary, *plan.args])
