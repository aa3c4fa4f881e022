"""The ``sagemaker`` launcher: a SageMaker real-time endpoint, deployed for the run or reused read-only.

``--cloud`` deploys the repository (see :mod:`pytest_triton.cloud.deploy`) and removes everything again at
``stop()``; ``--cloud --endpoint NAME`` serves an existing endpoint and changes nothing
(:mod:`pytest_triton.cloud.reuse`). An endpoint has only InvokeEndpoint: ``urls`` has ``sagemaker`` alone,
there is no model control, and the transport is sagemaker-runtime's InvokeEndpoint. Its log is the
CloudWatch log group ``/aws/sagemaker/Endpoints/NAME``.

Settings read (from :class:`~pytest_triton.servers.base.ServeOptions`): :attr:`SageMakerLauncher.setting_keys`.

While a deployment exists, SIGTERM (a cancelled CI job) is turned into KeyboardInterrupt, so that it tears
down as Ctrl-C does; a handler someone else installed is left alone. What SIGKILL leaves is in the ledger
file and carries the run's tag: ``python -m pytest_triton cloud-cleanup`` finds it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import ClassVar
from typing import final

from pytest_triton.client.urls import InferenceEndpoint
from pytest_triton.client.urls import ServerUrls
from pytest_triton.errors import ConfigError
from pytest_triton.errors import ServerError
from pytest_triton.servers.base import Prepared
from pytest_triton.servers.base import ServeOptions
from pytest_triton.servers.process import make_owned_workdir
from pytest_triton.servers.sagemaker.local import default_model_env
from pytest_triton.servers.server import ServerBase
from pytest_triton.servers.wait import ProgressCallback
from pytest_triton.servers.wait import stderr_progress

if TYPE_CHECKING:
    from typing import Self

    from pytest_triton.cloud.aws import AwsClients
    from pytest_triton.cloud.deploy import Deployment
    from pytest_triton.cloud.deploy import DeployOptions
    from pytest_triton.cloud.invoke import InvokeEndpointTransport
    from pytest_triton.cloud.metrics import SplitWindow
    from pytest_triton.cloud.reuse import ExistingEndpoint

ROLE_ENV = "PYTEST_TRITON_SAGEMAKER_ROLE"
# what the NGC tritonserver image inside sagemaker-tritonserver ships (the backends the contracts need)
IMAGE_BACKENDS = frozenset({"onnxruntime", "python", "pytorch", "tensorrt"})


def deploy_options_from(options: ServeOptions) -> DeployOptions:
    """The deployment's options from the launcher settings (``instance_type`` and friends)."""
    from pytest_triton.cloud.deploy import DeployOptions

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
    return DeployOptions(env=dict(options.env), **{k: v for k, v in given.items() if v is not None})


def endpoint_hardware(options: ServeOptions) -> tuple[str, str]:
    """The latency-budget hardware key of the session's endpoint, and where it came from (for the report).

    The key is that of the GPU the instance type carries (ml.g5.xlarge: ``nvidia-a10g``); a reused endpoint's
    instance type is read from its endpoint config (read-only). An instance type with no known GPU is its own
    key: no budget table has it, so its latency is reported, not asserted.
    """
    from pytest_triton.cloud.deploy import DeployOptions
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
    """A SageMaker endpoint serving a repository (deployed now, torn down at stop) or an existing one."""

    name: ClassVar[str] = "sagemaker"
    setting_keys: ClassVar[Mapping[str, str]] = {
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
        from pytest_triton.cloud.deploy import DeployOptions

        if repository is None and endpoint is None:
            raise ConfigError("the sagemaker launcher needs a repository to deploy, or --endpoint NAME to reuse")
        super().__init__(None if repository is None else Path(repository), progress=progress)
        self.deploy = deploy or DeployOptions()
        self.endpoint = endpoint
        self.region = region
        self.staging = staging
        self.deployment: Deployment | None = None
        self.existing: ExistingEndpoint | None = None
        self._clients: AwsClients | None = None
        self._workdir: Path | None = None
        self._name: str | None = None
        self._transports: list[InvokeEndpointTransport] = []
        self._previous_sigterm: Any = None

    @classmethod
    def from_options(
        cls, repository: Path | None, options: ServeOptions, *, models: Sequence[str] | None = None
    ) -> Self:
        """From the common options; ``models`` may only name the one model the endpoint serves."""
        env = default_model_env(options.env, models)
        endpoint = options.setting("endpoint")
        return cls(
            None if endpoint else repository,
            deploy=deploy_options_from(dataclasses.replace(options, env=env)),
            endpoint=endpoint,
            region=options.setting("region"),
            staging=options.staging,
            progress=options.progress,
        )

    # -- what it serves -----------------------------------------------------------------------------------

    @property
    def aws(self) -> AwsClients:
        """The AWS clients of the endpoint's region (an endpoint has no tritonclient ``clients()``)."""
        from pytest_triton.cloud.aws import AwsClients

        if self._clients is None:
            self._clients = AwsClients.connect(self.region)
        return self._clients

    @property
    def reused(self) -> bool:
        return self.endpoint is not None

    @property
    def endpoint_name(self) -> str:
        if self._name is None:
            raise ServerError("SageMakerLauncher is not started; call start() first")
        return self._name

    @property
    def control(self) -> None:
        """None: an endpoint has no model control."""
        return None

    @property
    def backends(self) -> frozenset[str]:
        return IMAGE_BACKENDS

    @property
    def has_gpu(self) -> bool:
        from pytest_triton.cloud.instances import instance_has_gpu

        return instance_has_gpu(self.instance_type)

    @property
    def instance_type(self) -> str:
        """The endpoint's instance type (the reused endpoint's, or the one deployed to)."""
        return self.existing.instance_type if self.existing is not None else self.deploy.instance_type

    @property
    def budget_key(self) -> str | None:
        """The latency-budget hardware key of the endpoint's GPU (``nvidia-a10g`` for ml.g5.*), None if unknown."""
        from pytest_triton.cloud.instances import budget_key

        return budget_key(self.instance_type)

    @property
    def urls(self) -> ServerUrls:
        """``sagemaker`` only: the endpoint's InvokeEndpoint base URL (``.../endpoints/NAME``)."""
        runtime = self.aws.runtime
        return ServerUrls(sagemaker=f"{runtime.meta.endpoint_url}/endpoints/{self.endpoint_name}")

    def _work(self) -> Path:
        if self._workdir is None:
            base = self.staging if self.staging is not None else Path(tempfile.gettempdir())
            base.mkdir(parents=True, exist_ok=True)
            self._workdir = make_owned_workdir(base)  # swept once its process is gone, even after SIGKILL
        return self._workdir

    def prepare(self, source: Path | None = None) -> Prepared:
        """Deploy: lint and package the repository (nothing created in AWS). Reuse: read what the endpoint serves."""
        from pytest_triton.cloud.deploy import Deployment
        from pytest_triton.cloud.reuse import download_model_data
        from pytest_triton.cloud.reuse import inspect_endpoint

        if self._prepared is not None:
            return self._prepared
        if self.endpoint is not None:
            self.existing = inspect_endpoint(self.aws, self.endpoint)
            folder = download_model_data(self.aws, self.existing, self._work() / "model")
            self._name = self.endpoint
            self._prepared = Prepared(
                folder, folder, (self.existing.default_model,), (), (self.existing.describe(),), self.existing.name
            )
            return self._prepared
        repository = Path(source) if source is not None else self.repository
        assert repository is not None
        self.deployment = Deployment(self.aws, repository, self.deploy, self._work(), progress=self.progress)
        archive = self.deployment.package()
        notes = (
            f"deploying {archive.name} to SageMaker ({self.deploy.instance_type}, {self.deployment.image}) "
            f"as run {self.deployment.run_id}",
            *self.deployment.warnings,
        )
        self._prepared = Prepared(repository, repository, (self.deployment.default_model,), (), notes)
        return self._prepared

    # -- lifecycle ------------------------------------------------------------------------------------------

    def start(self) -> Self:
        """Deploy and wait for InService (tearing down on any failure), or check the reused endpoint."""
        self._launched = True
        self.prepare()
        if self.deployment is not None:
            self._catch_sigterm()
            try:
                self._name = self.deployment.deploy()
            except BaseException:
                self._cleanup_workdir()
                self._restore_sigterm()
                raise
            assert self._prepared is not None
            self._prepared = dataclasses.replace(self._prepared, location=self.deployment.model_data_url)
        return self

    def stop(self) -> None:
        """Remove what this run created (nothing for a reused endpoint); DeploymentError lists what is left."""
        self._stopped = True
        try:
            if self.deployment is not None:
                self.deployment.teardown()
        finally:
            self._cleanup_workdir()
            self._restore_sigterm()

    def _catch_sigterm(self) -> None:
        """SIGTERM becomes KeyboardInterrupt (Ctrl-C's teardown) while the endpoint exists; main thread only,
        and only where SIGTERM still has its default action."""
        if threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
            return

        def on_sigterm(signum: int, frame: Any) -> None:
            raise KeyboardInterrupt(f"SIGTERM: removing what run {self.run_id} created")

        self._previous_sigterm = signal.signal(signal.SIGTERM, on_sigterm)

    def _restore_sigterm(self) -> None:
        if self._previous_sigterm is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._previous_sigterm)
            self._previous_sigterm = None

    @property
    def run_id(self) -> str:
        return self.deployment.run_id if self.deployment is not None else ""

    def _cleanup_workdir(self) -> None:
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None

    # -- queries ---------------------------------------------------------------------------------------

    def logs(self) -> str:
        return self.log_tail(10_000)

    def log_tail(self, lines: int = 50) -> str:
        """The last lines of CloudWatch's ``/aws/sagemaker/Endpoints/NAME`` ("" before start)."""
        from pytest_triton.cloud.deploy import endpoint_log_tail

        if self._name is None:
            return ""
        return endpoint_log_tail(self.aws.logs, self._name, events=lines)

    def check_alive(self) -> None:
        """Raise ServerError unless the endpoint is InService (SageMaker restarts its containers itself: there
        is no ``exit_status()``)."""
        status = self.aws.sagemaker.describe_endpoint(EndpointName=self.endpoint_name)["EndpointStatus"]
        if status != "InService":
            raise ServerError(f"endpoint {self.endpoint_name!r} is {status}", log_tail=self.log_tail())

    def _describe(self) -> str:
        return f"endpoint={self._name or self.endpoint!r}, repository={str(self.repository)!r}"

    def transport(self, protocol: InferenceEndpoint = "sagemaker", *, binary: bool = True) -> InvokeEndpointTransport:
        """InvokeEndpoint for the endpoint's default model (its inputs read from the served config.pbtxt)."""
        from pytest_triton.cloud.invoke import InvokeEndpointTransport
        from pytest_triton.cloud.specs import model_input_specs

        if protocol != "sagemaker":
            raise ServerError(
                f"protocol={protocol!r}: a SageMaker endpoint serves only InvokeEndpoint; use transport('sagemaker')"
            )
        prepared = self.prepared
        if prepared is None:
            raise ServerError("SageMakerLauncher is not started; call start() first")
        specs = model_input_specs(prepared.folder, prepared.models[0])
        transport = InvokeEndpointTransport(self.aws.runtime, self.endpoint_name, specs, binary=binary)
        self._transports.append(transport)  # its first calls go into latency_notes()
        return transport

    def latency_notes(self, start: dt.datetime, end: dt.datetime) -> list[str]:
        """For the latency report: the slowest first call per input shape against SageMaker's invocation limit.
        (CloudWatch's split of the window comes later: :meth:`late_latency_note`.)"""
        notes: list[str] = []
        for transport in self._transports:
            notes += transport.slow_first_calls()
        first = {shapes: s for t in self._transports for shapes, s in t.first_calls.items()}
        if first and not notes:
            shapes, seconds = max(first.items(), key=lambda item: item[1])
            notes.append(
                f"first call per input shape ({len(first)} shapes) within SageMaker's "
                f"{self._transports[0].invocation_limit_s:.0f} s invocation limit; slowest {seconds:.2f} s "
                f"with shapes {dict(shapes)}"
            )
        return notes

    def late_latency_note(self, start: dt.datetime, end: dt.datetime) -> SplitWindow:
        """The window between ``start`` and ``end`` whose ModelLatency / OverheadLatency split CloudWatch publishes
        a minute or more later: read at the session's end (:mod:`pytest_triton.cloud.metrics_wait`), when the
        endpoint may be gone already (the read needs only its name)."""
        from pytest_triton.cloud.metrics import SplitWindow

        requests = sum(t.answered_between(start.timestamp(), end.timestamp()) for t in self._transports)
        return SplitWindow(self.endpoint_name, start, end, requests, self.aws.region)
