from __future__ import annotations

from pathlib import Path

import pytest

from pytest_triton.cloud.deploy import DeployOptions
from pytest_triton.cloud.deploy import minutes
from pytest_triton.cloud.resources import Ledger
from pytest_triton.cloud.resources import Resource
from pytest_triton.cloud.resources import new_run_id
from pytest_triton.cloud.resources import resource_name
from pytest_triton.cloud.resources import split_s3_uri
from pytest_triton.errors import ConfigError


@pytest.mark.parametrize(
    ("resource", "command"),
    [
        (Resource("endpoint", "e1"), "aws sagemaker delete-endpoint --endpoint-name e1 --region eu-west-1"),
        (
            Resource("endpoint-config", "c1"),
            "aws sagemaker delete-endpoint-config --endpoint-config-name c1 --region eu-west-1",
        ),
        (Resource("model", "m1"), "aws sagemaker delete-model --model-name m1 --region eu-west-1"),
        (Resource("s3-object", "s3://b/k/model.tar.gz"), "aws s3 rm s3://b/k/model.tar.gz --region eu-west-1"),
    ],
)
def test_delete_commands(resource: Resource, command: str) -> None:
    assert resource.delete_command("eu-west-1") == command


def test_names_carry_the_run_id_and_fit_sagemaker() -> None:
    run_id = new_run_id()
    assert len(run_id) == len("20261201-075112-a1b2c3")
    for kind in ("ep", "config", "model"):
        name = resource_name(run_id, kind)
        assert name == f"pytest-triton-{run_id}-{kind}"
        assert len(name) <= 63
    assert new_run_id() != run_id
    with pytest.raises(ValueError, match="longer than 63"):
        resource_name(run_id, "x" * 30)


def test_teardown_order_is_endpoint_config_model_objects() -> None:
    ledger = Ledger("r", "us-east-1")
    for kind, name in (("s3-object", "s3://b/k"), ("model", "m"), ("endpoint-config", "c"), ("endpoint", "e")):
        ledger.record(kind, name)  # type: ignore[arg-type]
    ledger.record("model", "m")  # recorded twice: listed once
    assert [r.kind for r in ledger.left] == ["endpoint", "endpoint-config", "model", "s3-object"]
    ledger.deleted.append(Resource("endpoint", "e"))
    assert ledger.commands()[0] == "aws sagemaker delete-endpoint-config --endpoint-config-name c --region us-east-1"


@pytest.mark.parametrize(("uri", "parts"), [("s3://b/k", ("b", "k")), ("s3://b/a/b/c.tar.gz", ("b", "a/b/c.tar.gz"))])
def test_split_s3_uri(uri: str, parts: tuple[str, str]) -> None:
    assert split_s3_uri(uri) == parts


@pytest.mark.parametrize("uri", ["b/k", "s3://bucket-only", "https://b/k"])
def test_split_s3_uri_refuses(uri: str) -> None:
    with pytest.raises(ValueError, match="is not an s3://BUCKET/KEY URI"):
        split_s3_uri(uri)


@pytest.mark.parametrize(("seconds", "text"), [(0, "0m 00s"), (65.9, "1m 05s"), (905, "15m 05s")])
def test_minutes(seconds: float, text: str) -> None:
    assert minutes(seconds) == text


@pytest.mark.parametrize("timeout", [59, 3601])
def test_startup_health_timeout_bounds(timeout: int) -> None:
    with pytest.raises(ConfigError, match="AWS allows 60 to 3600"):
        DeployOptions(startup_health_timeout=timeout)


def test_a_deployment_names_earlier_runs_that_left_resources(tmp_path: Path) -> None:
    from pytest_triton.cloud.deploy import earlier_leftovers
    from pytest_triton.cloud.ledger_files import ledger_path

    killed = Ledger("20261130-101010-aaaaaa", "us-east-1", journal=ledger_path("20261130-101010-aaaaaa", tmp_path))
    killed.record("model", "pytest-triton-20261130-101010-aaaaaa-model")
    killed.record("endpoint", "pytest-triton-20261130-101010-aaaaaa-ep")
    clean = Ledger("20261130-121212-bbbbbb", "us-east-1", journal=ledger_path("20261130-121212-bbbbbb", tmp_path))
    clean.mark_deleted(clean.record("model", "pytest-triton-20261130-121212-bbbbbb-model"))
    this_run = Ledger("20261201-000000-cccccc", "us-east-1", journal=ledger_path("20261201-000000-cccccc", tmp_path))
    this_run.record("model", "pytest-triton-20261201-000000-cccccc-model")
    (tmp_path / "pytest-triton-cloud-broken.jsonl").write_text('{"run": "x", "kind": "gpu"}\n')
    notes = earlier_leftovers(tmp_path, "20261201-000000-cccccc")
    assert len(notes) == 1
    assert notes[0].startswith("run 20261130-101010-aaaaaa (")
    assert "never deleted 2 resource(s)" in notes[0]
    assert notes[0].endswith(f"python -m pytest_triton cloud-cleanup --ledger {tmp_path}")
    assert earlier_leftovers(tmp_path / "none", "x") == []
