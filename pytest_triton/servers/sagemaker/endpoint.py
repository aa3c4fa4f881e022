"""The ``sagemaker`` launcher: a SageMaker real-time endpoint, deployed for the run or reused read-only.

``--cloud`` deploys the repository (see :mod:`pytest_triton.cloud.deploy`) and removes everything again at
``stop()``; ``--cloud --endpoint NAME`` serves an existing endpoint and changes nothing
(:mod:`pytest_triton.cloud.reuse`). An endpoint has only InvokeEndpoint: ``urls`` has ``sagemaker`` alone,
there is no model control, and the transport is sagemaker-runtime's InvokeEndpoint. Its log is the
CloudWatch log group ``/aws/sagemaker/Endpoints/NAME``.

Settings read (from :class:`~pytest_triton.servers.protocol.ServeOptions`): :attr:`SageMakerLauncher.setting_keys`.

What lies between the launcher and AWS is its :class:`~pytest_triton.cloud.served.ServedEndpoint`: while a
deployment exists, SIGTERM (a cancelled CI job) is turned into KeyboardInterrupt, so that it tears down as
Ctrl-C does; a handler someone else installed is left alone. What SIGKILL leaves is in the ledger file and
carries the run's tag: ``python -m pytest_triton cloud-cleanup`` finds it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import ClassVar
from typing import final

from pytest_triton.client.urls import InferenceEndpoint
from pytest_triton.client.urls import ServerUrls
from pytest_triton.cloud.deploy import DeployOptions
from pytest_triton.cloud.served import ServedEndpoint
from pytest_triton.errors import ConfigError
from pytest_triton.servers.base import ServerBase
from pytest_triton.servers.process import make_owned_workdir
from pytest_triton.servers.protocol import Prepared
from pytest_triton.servers.protocol import ServeOptions
from pytest_triton.servers.sagemaker.model_data import default_model_env
from pytest_triton.servers.wait import ProgressCallback
from pytest_triton.servers.wait import stderr_progress

if TYPE_CHECKING:
    from typing import Self

    from pytest_triton.cloud.aws import AwsClients
    from pytest_triton.cloud.deploy import Deployment
    from pytest_triton.cloud.invoke import InvokeEndpointTransport
    from pytest_triton.cloud.metrics import SplitWindow
    from pytest_triton.cloud.reuse import ExistingEndpoint

ROLE_ENV = "PYTEST_TRITON_SAGEMAKER_ROLE"
# what the NGC tritonserver image inside sagemaker-tritonserver ships (the backends the contracts need)
IMAGE_BACKENDS = frozenset({"onnxruntime", "python", "pytorch", "tensorrt"})

# the settings the launcher reads (:func:`deploy_options_from` turns most into the deployment's options)
ENDPOINT_SETTINGS: Mapping[str, str] = {
    "endpoint": "reuse this InService endpoint, read-only (--triton-endpoint)",
    "report": "the --triton-report path: the ledger of what --cloud creates is written beside it",
    "instance_type": "the endpoint's instance type (default ml.g5.xlarge)",
    "container_release": "the sagemaker-tritonserver container release, e.g. 26.05 (the image's tag)",
    "image": "the image URI to deploy instead of the region's sagemaker-tritonserver (--triton-image)",
    "s3_uri": "where model.tar.gz goes: s3://BUCKET[/PREFIX] (default the sagemaker-REGION-ACCOUNT bucket)",
    "role": f"execution role ARN of the endpoint's model (default ${ROLE_ENV})",
    "region": "the AWS region (default: the AWS configuration's)",
    "poll_interval": "seconds between deployment status reads",
    "deploy_timeout": "seconds to wait for the endpoint to be InService",
}


def deploy_options_from(options: ServeOptions, models: Sequence[str] | None = None) -> DeployOptions:
    """The deployment's options from the launcher settings (``instance_type`` and friends); ``models`` may name
    the one model the endpoint serves (its default model)."""
    given: dict[str, Any] = {
        "instance_type": options.setting("instance_type"),
        "triton_version": options.setting("container_release"),
        "image": options.setting("image"),
        "s3_uri": options.setting("s3_uri"),
        "role": options.setting("role") or os.environ.get(ROLE_ENV) or None,
        "poll_interval": options.setting("poll_interval"),
        "timeout": options.setting("deploy_timeout"),
        "ledger_dir": Path(options.setting("report")).absolute().parent if options.setting("report") else None,
    }
    env = default_model_env(options.env, models)
    return DeployOptions(env=env, **{k: v for k, v in given.items() if v is not None})


def endpoint_hardware(options: ServeOptions) -> tuple[str, str]:
    """The latency-budget hardware key of the session's endpoint, and where it came from (for the report).

    The key is that of the GPU the instance type carries (ml.g5.xlarge: ``nvidia-a10g``); a reused endpoint's
    instance type is read from its endpoint config (read-only). An instance type with no known GPU is its own
    key: no budget table has it, so its latency is reported, not asserted.
    """
    from pytest_triton.cloud.instances import budget_key

    endpoint = options.setting("endpoint")
    if endpoint:
        from pytest_triton.cloud.aws import AwsClients
        from pytest_triton.cloud.reuse import inspect_endpoint

        instance_type = inspect_endpoint(AwsClients.connect(options.setting("region")), endpoint).instance_type
        origin = f"endpoint {endpoint}'s instance type {instance_type}"
    elif options.setting("instance_type"):
        instance_type = str(options.setting("instance_type"))
        origin = f"setting instance_type={instance_type}"
    else:
        instance_type = DeployOptions().instance_type
        origin = f"the default instance type {instance_type}"
    key = budget_key(instance_type)
    if key is None:
        return instance_type, f"{origin}, whose GPU is not known here (pass --triton-hardware KEY to pick a table)"
    return key, f"the GPU of {origin}"


@final
class SageMakerLauncher(ServerBase):
    """A SageMaker endpoint deployed for the run (torn down at stop) or reused, reached through ``served``."""

    name: ClassVar[str] = "sagemaker"
    setting_keys: ClassVar[Mapping[str, str]] = ENDPOINT_SETTINGS
    # only the default model answers /invocations: a repository is served once per model it is called for
    serves_one_model: ClassVar[bool] = True
    runs_here: ClassVar[bool] = False  # the image has its own TensorRT: this machine's is not what it runs

    @classmethod
    def needs_repository(cls, options: ServeOptions) -> bool:
        """Only to deploy: an existing endpoint (``--endpoint``) brings its model and config."""
        return not options.setting("endpoint")

    def __init__(
        self,
        repository: Path | None,
        *,
        deploy: DeployOptions | None = None,
        endpoint: str | None = None,
        region: str | None = None,
        staging: Path | None = None,
        progress: ProgressCallback | None = stderr_progress,
    ) -> None:
        if repository is None and endpoint is None:
            raise ConfigError("the sagemaker launcher needs a repository to deploy, or --endpoint NAME to reuse")
        super().__init__(None if repository is None else Path(repository), progress=progress)
        self.served = ServedEndpoint(
            deploy=deploy or DeployOptions(),
            endpoint=endpoint,
            region=region,
            staging=staging,
            make_workdir=make_owned_workdir,  # swept once its process is gone, even after SIGKILL
            progress=progress,
            what=type(self).__name__,
        )

    @classmethod
    def from_options(
        cls, repository: Path | None, options: ServeOptions, *, models: Sequence[str] | None = None
    ) -> Self:
        """From the common options; ``models`` may only name the one model the endpoint serves."""
        endpoint = options.setting("endpoint")
        return cls(
            None if endpoint else repository,
            deploy=deploy_options_from(options, models),
            endpoint=endpoint,
            region=options.setting("region"),
            staging=options.staging,
            progress=options.progress,
        )

    @property
    def aws(self) -> AwsClients:
        """The AWS clients of the endpoint's region (an endpoint has no tritonclient ``clients()``)."""
        return self.served.aws

    @property
    def deployment(self) -> Deployment | None:
        """This run's deployment (None for a reused endpoint, and before ``prepare()``)."""
        return self.served.deployment

    @property
    def existing(self) -> ExistingEndpoint | None:
        """The reused endpoint as ``prepare()`` read it (None when deploying)."""
        return self.served.existing

    @property
    def reused(self) -> bool:
        return self.served.endpoint is not None

    @property
    def endpoint_name(self) -> str:
        return self.served.endpoint_name

    @property
    def run_id(self) -> str:
        return self.served.run_id

    @property
    def instance_type(self) -> str:
        return self.served.instance_type

    @property
    def budget_key(self) -> str | None:
        return self.served.budget_key

    @property
    def control(self) -> None:
        """None: an endpoint has no model control."""
        return None

    @property
    def backends(self) -> frozenset[str]:
        return IMAGE_BACKENDS

    @property
    def has_gpu(self) -> bool:
        return self.served.has_gpu

    @property
    def urls(self) -> ServerUrls:
        """``sagemaker`` only: the endpoint's InvokeEndpoint base URL (``.../endpoints/NAME``)."""
        return ServerUrls(sagemaker=f"{self.aws.runtime.meta.endpoint_url}/endpoints/{self.endpoint_name}")

    def prepare(self, source: Path | None = None) -> Prepared:
        """Deploy: lint and package the repository (nothing created in AWS). Reuse: read what the endpoint serves."""
        if self._prepared is None:
            c = self.served.prepare(Path(source) if source is not None else self.repository)
            self._prepared = Prepared(c.source, c.folder, (c.default_model,), (), c.notes, c.location)
        return self._prepared

    def start(self) -> Self:
        """Deploy and wait for InService (tearing down on any failure), or check the reused endpoint."""
        self._launched = True
        prepared = self.prepare()
        if location := self.served.start():
            self._prepared = dataclasses.replace(prepared, location=location)
        return self

    def stop(self) -> None:
        """Remove what this run created (nothing for a reused endpoint); DeploymentError lists what is left."""
        self._stopped = True
        self.served.teardown()

    def logs(self) -> str:
        return self.log_tail(10_000)

    def log_tail(self, lines: int = 50) -> str:
        """The last lines of CloudWatch's ``/aws/sagemaker/Endpoints/NAME`` ("" before start)."""
        return self.served.log_tail(lines)

    def check_alive(self) -> None:
        """Raise ServerError unless the endpoint is InService (SageMaker restarts its containers: no exit_status)."""
        self.served.check_in_service()

    def _describe(self) -> str:
        return f"endpoint={self.served.name or self.served.endpoint!r}, repository={str(self.repository)!r}"

    def transport(self, protocol: InferenceEndpoint = "sagemaker", *, binary: bool = True) -> InvokeEndpointTransport:
        """InvokeEndpoint for the endpoint's default model (its inputs read from the served config.pbtxt)."""
        return self.served.transport(protocol, binary=binary)

    def latency_notes(self, start: dt.datetime, end: dt.datetime) -> list[str]:
        """For the latency report: the first calls per input shape against SageMaker's invocation limit."""
        return self.served.latency_notes()

    def late_latency_note(self, start: dt.datetime, end: dt.datetime) -> SplitWindow:
        """The window whose server-side split CloudWatch gives later, read at the session's end (metrics_wait)."""
        return self.served.late_latency_note(start, end)
