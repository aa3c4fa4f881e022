"""An existing endpoint, tested as it is (``--cloud --endpoint NAME``): read, never changed.

Only Describe*, Get* and List* calls are made (and InvokeEndpoint by the tests; GetCallerIdentity gives the
account that S3 calls name as ExpectedBucketOwner): the endpoint must be
InService; the served model is its model's ``SAGEMAKER_TRITON_DEFAULT_MODEL_NAME``, or, when that is not
set, the one model folder of the archive the model points to (read from S3, as the container would).
:data:`READ_ONLY_PREFIXES` is what the tests hold the run to.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from pytest_triton.archive.model_tar import DEFAULT_MODEL_ENV
from pytest_triton.archive.model_tar import unpack_model_archive
from pytest_triton.cloud.aws import AwsClients
from pytest_triton.cloud.resources import expected_owner
from pytest_triton.cloud.resources import split_s3_uri
from pytest_triton.cloud.serve_script import RepositoryLayout
from pytest_triton.cloud.serve_script import serve_plan
from pytest_triton.errors import ConfigError
from pytest_triton.errors import DeploymentError

READ_ONLY_PREFIXES = ("Describe", "Get", "List", "Head", "FilterLogEvents", "InvokeEndpoint")


@dataclass
class ExistingEndpoint:
    """What an InService endpoint serves, as its endpoint config and model describe it."""

    name: str
    config_name: str
    model_name: str
    instance_type: str
    image: str
    model_data_url: str
    environment: dict[str, str] = field(default_factory=dict)
    default_model: str = ""

    def describe(self) -> str:
        return (
            f"reusing endpoint {self.name} (read-only): model {self.model_name}, default model "
            f"{self.default_model}, {self.instance_type}, {self.image}"
        )


def inspect_endpoint(clients: AwsClients, name: str) -> ExistingEndpoint:
    """Describe endpoint ``name`` and what it serves; DeploymentError unless it is InService."""
    from botocore.exceptions import ClientError

    sagemaker = clients.sagemaker
    try:
        endpoint = sagemaker.describe_endpoint(EndpointName=name)
    except ClientError as exc:
        raise ConfigError(
            f"--endpoint={name!r}: {exc.response.get('Error', {}).get('Message', exc)} "
            f"(region {clients.region}); list yours with `aws sagemaker list-endpoints --region {clients.region}`"
        ) from None
    status = endpoint["EndpointStatus"]
    if status != "InService":
        raise DeploymentError(
            f"--endpoint={name!r} is {status}, not InService; it is reused read-only, so nothing here will "
            "change that: wait for it, or deploy a fresh one with --cloud alone",
            failure_reason=str(endpoint.get("FailureReason", "")),
        )
    config_name = endpoint["EndpointConfigName"]
    config = sagemaker.describe_endpoint_config(EndpointConfigName=config_name)
    variants = config["ProductionVariants"]
    if len(variants) != 1:
        names = [v["VariantName"] for v in variants]
        raise ConfigError(f"--endpoint={name!r} has {len(variants)} production variants {names}; one is supported")
    variant = variants[0]
    model = sagemaker.describe_model(ModelName=variant["ModelName"])
    container = model.get("PrimaryContainer") or (model.get("Containers") or [{}])[0]
    found = ExistingEndpoint(
        name=name,
        config_name=config_name,
        model_name=variant["ModelName"],
        instance_type=str(variant.get("InstanceType", "serverless")),
        image=str(container.get("Image", "")),
        model_data_url=str(container.get("ModelDataUrl", "")),
        environment=dict(container.get("Environment", {})),
    )
    found.default_model = found.environment.get(DEFAULT_MODEL_ENV, "")
    return found


def download_model_data(clients: AwsClients, endpoint: ExistingEndpoint, dest: Path) -> Path:
    """Fetch and unpack the endpoint model's archive (S3 GetObject only) into ``dest``; settle its default model."""
    if not endpoint.model_data_url.startswith("s3://"):
        raise ConfigError(f"endpoint {endpoint.name!r}: its model has no s3:// ModelDataUrl to read configs from")
    bucket, key = split_s3_uri(endpoint.model_data_url)
    with tempfile.TemporaryDirectory(prefix="pytest-triton-reuse-") as tmp:
        archive = Path(tmp) / "model.tar.gz"
        owner = expected_owner(clients.account())
        clients.s3.download_file(bucket, key, str(archive), ExtraArgs=owner)
        unpack_model_archive(archive, dest)
    plan = serve_plan(endpoint.environment, RepositoryLayout.of(dest), model_repository=dest)
    assert plan.default_model is not None
    endpoint.default_model = plan.default_model
    return dest


def record_operations(client: Any, seen: list[str]) -> None:
    """Append the name of every operation ``client`` sends to ``seen`` (botocore's before-call event)."""

    def hook(model: Any, **_: Any) -> None:
        seen.append(str(model.name))

    client.meta.events.register("before-call.*.*", hook)


def mutating(operations: list[str]) -> list[str]:
    """The operations that are not read-only (by their name, as AWS names them)."""
    return [op for op in operations if not op.startswith(READ_ONLY_PREFIXES)]
