from __future__ import annotations

from pathlib import Path

import pytest

from pytest_triton.cloud.serve_script import RepositoryLayout
from pytest_triton.cloud.serve_script import command_line
from pytest_triton.cloud.serve_script import serve_plan
from pytest_triton.cloud.serve_script import unknown_variables
from pytest_triton.errors import ConfigError

ONE = RepositoryLayout(("mdeberta",))
FOUR = RepositoryLayout(("ensemble_mdeberta", "mdeberta", "postprocess", "tokenize"))

DEFAULT_ARGS = (
    "--allow-sagemaker=true",
    "--allow-http=false",
    "--model-control-mode=explicit",
    "--model-repository=/opt/ml/model/",
    "--model-namespacing=true",
    "--allow-grpc=false",
    "--allow-metrics=false",
    "--log-verbose=true",
    "--backend-config=python,shm-default-byte-size=16777216",
    "--backend-config=python,shm-growth-byte-size=1048576",
    "--load-model=mdeberta",
)


def test_defaults_for_one_model_folder_warn_and_load_it() -> None:
    plan = serve_plan({}, ONE)
    assert plan.args == DEFAULT_ARGS
    assert plan.default_model == "mdeberta"
    assert plan.warnings == (
        "No SAGEMAKER_TRITON_DEFAULT_MODEL_NAME provided; the container starts with the only model directory mdeberta",
    )
    assert command_line(plan).startswith("tritonserver --allow-sagemaker=true --allow-http=false ")


@pytest.mark.parametrize(
    ("env", "flag", "value"),
    [
        ({"SAGEMAKER_BIND_TO_PORT": "9090"}, "--sagemaker-port", "9090"),
        ({"SAGEMAKER_SAFE_PORT_RANGE": "20000-20999"}, "--sagemaker-safe-port-range", "20000-20999"),
        ({"SAGEMAKER_TRITON_ALLOW_GRPC": "true"}, "--allow-grpc", "true"),
        ({"SAGEMAKER_TRITON_GRPC_PORT": "9001"}, "--grpc-port", "9001"),
        ({"SAGEMAKER_TRITON_ALLOW_METRICS": "true"}, "--allow-metrics", "true"),
        ({"SAGEMAKER_TRITON_METRICS_PORT": "9002"}, "--metrics-port", "9002"),
        ({"SAGEMAKER_TRITON_THREAD_COUNT": "16"}, "--sagemaker-thread-count", "16"),
        ({"SAGEMAKER_TRITON_BUFFER_MANAGER_THREAD_COUNT": "4"}, "--buffer-manager-thread-count", "4"),
        ({"SAGEMAKER_TRITON_LOG_VERBOSE": "0"}, "--log-verbose", "0"),
        ({"SAGEMAKER_TRITON_LOG_INFO": "false"}, "--log-info", "false"),
        ({"SAGEMAKER_TRITON_LOG_WARNING": "false"}, "--log-warning", "false"),
        ({"SAGEMAKER_TRITON_LOG_ERROR": "true"}, "--log-error", "true"),
        ({"SAGEMAKER_TRITON_DISABLE_MODEL_NAMESPACING": "false"}, "--model-namespacing", "false"),
        ({"SAGEMAKER_TRITON_LOG_VERBOSE": ""}, "--log-verbose", "true"),  # empty counts as unset ([ -n ])
        ({}, "--sagemaker-port", None),
        ({}, "--grpc-port", None),
    ],
)
def test_variables_become_flags(env: dict[str, str], flag: str, value: str | None) -> None:
    assert serve_plan(env, ONE).flag(flag) == value


def test_shm_sizes_are_python_backend_configs() -> None:
    plan = serve_plan(
        {"SAGEMAKER_TRITON_SHM_DEFAULT_BYTE_SIZE": "33554432", "SAGEMAKER_TRITON_SHM_GROWTH_BYTE_SIZE": "2097152"}, ONE
    )
    configs = [a for a in plan.args if a.startswith("--backend-config=")]
    assert configs == [
        "--backend-config=python,shm-default-byte-size=33554432",
        "--backend-config=python,shm-growth-byte-size=2097152",
    ]


@pytest.mark.parametrize(
    ("gpus", "expected"), [(0, []), (2, ["--model-load-gpu-limit", "0:0.5", "--model-load-gpu-limit", "1:0.5"])]
)
def test_model_load_gpu_limit_is_one_flag_per_gpu(gpus: int, expected: list[str]) -> None:
    plan = serve_plan({"SAGEMAKER_TRITON_MODEL_LOAD_GPU_LIMIT": "0.5"}, ONE, gpu_count=gpus)
    found = [
        a
        for i, a in enumerate(plan.args)
        if a == "--model-load-gpu-limit" or plan.args[i - 1] == "--model-load-gpu-limit"
    ]
    assert found == expected


def test_additional_args_split_on_whitespace_without_quotes_and_come_before_load_model() -> None:
    plan = serve_plan({"SAGEMAKER_TRITON_ADDITIONAL_ARGS": "--exit-timeout-secs=5  --log-format='iso8601'"}, ONE)
    assert plan.args[-3:] == ("--exit-timeout-secs=5", "--log-format='iso8601'", "--load-model=mdeberta")


def test_named_default_model_is_loaded_without_warning() -> None:
    plan = serve_plan({"SAGEMAKER_TRITON_DEFAULT_MODEL_NAME": "ensemble_mdeberta"}, FOUR)
    assert plan.default_model == "ensemble_mdeberta"
    assert plan.args[-1] == "--load-model=ensemble_mdeberta"
    assert plan.warnings == ()


def test_model_repository_is_replaced_where_the_archive_was_unpacked(tmp_path: Path) -> None:
    plan = serve_plan({}, ONE, model_repository=tmp_path)
    assert plan.flag("--model-repository") == str(tmp_path)


@pytest.mark.parametrize(
    ("env", "layout", "quote"),
    [
        ({}, FOUR, "More than 1 model directory found in model repository"),
        ({}, RepositoryLayout((".ipynb_checkpoints", "mdeberta")), "More than 1 model directory found"),
        ({}, RepositoryLayout((), root_config=True), "Incorrect directory structure"),
        (
            {"SAGEMAKER_TRITON_DEFAULT_MODEL_NAME": "mdeberta"},
            RepositoryLayout(("mdeberta",), True),
            "Incorrect directory",
        ),
        ({}, RepositoryLayout(()), "No model found in model repository"),
        (
            {"SAGEMAKER_TRITON_DEFAULT_MODEL_NAME": "ensemble"},
            FOUR,
            "SAGEMAKER_TRITON_DEFAULT_MODEL_NAME ensemble does not exist",
        ),
        ({"SAGEMAKER_TRITON_INFERENCE_TYPE": "stream"}, ONE, "Invalid SAGEMAKER_TRITON_INFERENCE_TYPE 'stream'"),
    ],
)
def test_the_script_refuses(env: dict[str, str], layout: RepositoryLayout, quote: str) -> None:
    with pytest.raises(ConfigError, match="the SageMaker Triton container would exit") as info:
        serve_plan(env, layout)
    assert quote in str(info.value)


@pytest.mark.parametrize("inference_type", ["infer", "generate", "generate_stream"])
def test_valid_inference_types(inference_type: str) -> None:
    assert serve_plan({"SAGEMAKER_TRITON_INFERENCE_TYPE": inference_type}, ONE).default_model == "mdeberta"


def test_multi_model_mode_uses_its_dummy_repository_and_skips_the_checks() -> None:
    plan = serve_plan({"SAGEMAKER_MULTI_MODEL": "true"}, RepositoryLayout((), root_config=True))
    assert plan.multi_model
    assert plan.default_model is None
    assert plan.flag("--model-repository") == "/tmp/sagemaker"
    assert not any(a.startswith("--load-model") for a in plan.args)
    assert not serve_plan({"SAGEMAKER_MULTI_MODEL": "True"}, ONE).multi_model  # the script compares to "true"


def test_layout_reads_hidden_folders_and_root_config(tmp_path: Path) -> None:
    (tmp_path / "mdeberta" / "1").mkdir(parents=True)
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / "config.pbtxt").write_text("")
    (tmp_path / "README").write_text("")
    assert RepositoryLayout.of(tmp_path) == RepositoryLayout((".ipynb_checkpoints", "mdeberta"), True)


def test_unknown_variables_are_likely_typos() -> None:
    env = {"SAGEMAKER_TRITON_DEFAULT_MODEL": "x", "SAGEMAKER_TRITON_THREAD_COUNT": "2", "OTHER": "1"}
    assert unknown_variables(env) == ["SAGEMAKER_TRITON_DEFAULT_MODEL"]
