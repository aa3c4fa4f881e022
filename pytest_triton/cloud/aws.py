"""boto3 clients for the SageMaker flow, made in one place.

The endpoints come from boto3's own configuration: ``AWS_ENDPOINT_URL`` (and the per-service
``AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME`` etc.) point the clients elsewhere, which is how the offline tests
reach moto and the InvokeEndpoint stand-in; nothing here knows about them.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from typing import Any

from pytest_triton.errors import ConfigError
from pytest_triton.errors import MissingDependency


def boto3_session(region: str | None = None) -> Any:
    """A boto3 session for ``region`` (None: the configured default); a clear error without boto3 or a region."""
    try:
        import boto3
    except ImportError:
        raise MissingDependency("boto3", "cloud") from None
    session = boto3.session.Session(region_name=region) if region else boto3.session.Session()
    if not session.region_name:
        raise ConfigError(
            "no AWS region configured: set AWS_REGION (or AWS_DEFAULT_REGION), or `aws configure set region REGION`"
        )
    return session


@dataclass
class AwsClients:
    """The clients one deployment uses, all from one session (one region, one set of credentials)."""

    session: Any
    _made: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def connect(cls, region: str | None = None) -> AwsClients:
        return cls(boto3_session(region))

    @property
    def region(self) -> str:
        return str(self.session.region_name)

    def client(self, service: str) -> Any:
        if service not in self._made:
            from botocore.config import Config

            # adaptive retries ride out throttling; the flow polls with its own interval. InvokeEndpoint is
            # never retried (a retry would hide a slow first call) and waits past SageMaker's own 60 s limit,
            # so that SageMaker's answer (ModelError: timed out) arrives instead of a client-side timeout
            if service == "sagemaker-runtime":
                config = Config(retries={"max_attempts": 1, "mode": "standard"}, read_timeout=70)
            else:
                config = Config(retries={"max_attempts": 8, "mode": "adaptive"})
            config = config.merge(Config(user_agent_extra="pytest-triton"))
            self._made[service] = self.session.client(service, config=config)
        return self._made[service]

    @property
    def sagemaker(self) -> Any:
        return self.client("sagemaker")

    @property
    def runtime(self) -> Any:
        return self.client("sagemaker-runtime")

    @property
    def s3(self) -> Any:
        return self.client("s3")

    @property
    def logs(self) -> Any:
        return self.client("logs")

    @property
    def cloudwatch(self) -> Any:
        return self.client("cloudwatch")

    def account(self) -> str:
        """The caller's account id (sts:GetCallerIdentity)."""
        return str(self.client("sts").get_caller_identity()["Account"])
