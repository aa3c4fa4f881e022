"""The key that keeps model control behind Triton's restricted-API options, and how a binary is asked for them."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from pytest_triton.errors import ConfigError
from pytest_triton.servers.base import tritonserver_args
from pytest_triton.servers.binary import TritonBinary
from pytest_triton.servers.binary import help_text
from pytest_triton.servers.control import ControlKey
from pytest_triton.servers.control import has_restricted_api
from pytest_triton.servers.control import restricts_api
from pytest_triton.servers.control import users_control_key
from pytest_triton.servers.sagemaker.local import control_key_env
from pytest_triton.servers.sagemaker.local import opens_model_control


def test_every_key_is_new_and_its_flags_restrict_model_repository_over_http_and_grpc() -> None:
    key = ControlKey()
    assert key.value != ControlKey().value
    assert len(key.value) == 32
    assert key.flags() == [
        f"--http-restricted-api=model-repository:pytest-triton-control={key.value}",
        f"--grpc-restricted-protocol=model-repository:pytest-triton-control={key.value}",
    ]
    # gRPC metadata under Triton's prefix, so one dict serves tritonclient's HTTP and gRPC clients
    assert key.headers == {"pytest-triton-control": key.value, "triton-grpc-protocol-pytest-triton-control": key.value}
    assert key.value not in repr(key)


def test_the_command_line_has_the_flags_only_with_a_key() -> None:
    key = ControlKey()
    with_key = tritonserver_args("/models", ["add"], [1, 2, 3], control_key=key)
    assert with_key[-2:] == key.flags()
    assert not [arg for arg in tritonserver_args("/models", ["add"], [1, 2, 3]) if "restricted" in arg]


def test_a_given_header_is_parsed_and_a_malformed_one_says_what_to_give() -> None:
    key = ControlKey.parse("X-Admin=s3cret=x")
    assert (key.header, key.value) == ("x-admin", "s3cret=x")
    for bad in ("novalue", "=v", "name="):
        with pytest.raises(ConfigError, match=rf"control_header={bad!r}: give NAME=VALUE"):
            ControlKey.parse(bad)


def test_restricted_api_needs_both_options_in_the_help_text() -> None:
    assert has_restricted_api("  --http-restricted-api <...>\n  --grpc-restricted-protocol <...>\n")
    assert not has_restricted_api("  --http-restricted-api <...>\n")
    assert not has_restricted_api("")


def _script(folder: Path, body: str) -> Path:
    path = folder / "tritonserver"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_help_text_is_read_once_per_binary_file(tmp_path: Path) -> None:
    counter = tmp_path / "count"
    path = _script(tmp_path, f'echo run >> "{counter}"; echo "  --http-restricted-api"; exit 1\n')
    binary = TritonBinary(path)
    assert help_text(binary) == "  --http-restricted-api\n"
    assert help_text(binary) == "  --http-restricted-api\n"
    assert counter.read_text().count("run") == 1
    assert help_text(TritonBinary(tmp_path / "missing")) == ""


def test_sagemaker_local_adds_the_flags_only_where_model_control_is_open() -> None:
    key = ControlKey()
    assert not opens_model_control({})
    assert opens_model_control({"SAGEMAKER_TRITON_ALLOW_GRPC": "true"})
    assert opens_model_control({"SAGEMAKER_TRITON_ADDITIONAL_ARGS": "--allow-http=true"})
    given = {"SAGEMAKER_TRITON_ADDITIONAL_ARGS": "--log-verbose=1"}
    assert control_key_env(given, key) == {
        "SAGEMAKER_TRITON_ADDITIONAL_ARGS": " ".join(["--log-verbose=1", *key.flags()])
    }
    assert control_key_env(given, None) == {}


def test_a_rule_the_user_gives_is_theirs_and_its_key_is_the_one_sent() -> None:
    assert not restricts_api(["--log-verbose=1", "--http-port=8000"])
    http = "--http-restricted-api=shared-memory,model-repository:Admin=s3cret"
    grpc = "--grpc-restricted-protocol=model-repository:grpc-admin=other"
    assert restricts_api([http])
    assert restricts_api([grpc])
    assert users_control_key(["--log-verbose=1", grpc, http]) == ControlKey("s3cret", "admin")  # HTTP's first
    assert users_control_key([grpc]) == ControlKey("other", "grpc-admin")
    # a rule for another API restricts, but holds no model-control key
    assert restricts_api(["--http-restricted-api=statistics:k=v"])
    assert users_control_key(["--http-restricted-api=statistics:k=v"]) is None
