"""The endpoint one ``sagemaker`` launcher serves: deployed for the run, or an existing one reused read-only.

:class:`ServedEndpoint` holds everything between the launcher and AWS for one endpoint: the AWS clients of its
region, its own work folder (the packaged archive, or the reused endpoint's unpacked model), the
:class:`~pytest_triton.cloud.deploy.Deployment` or the :class:`~pytest_triton.cloud.reuse.ExistingEndpoint`,
its CloudWatch log, and the InvokeEndpoint transports handed out, which the latency report reads.

While a deployment exists, SIGTERM (a cancelled CI job) is turned into KeyboardInterrupt, so that it tears
down as Ctrl-C does; a handler someone else installed is left alone, and so is SIGTERM off the main thread.

Importing this module does not import boto3 or numpy.
"""

from __future__ import annotations

import datetime as dt
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from pytest_triton.client.urls import InferenceEndpoint
from pytest_triton.cloud.aws import AwsClients
from pytest_triton.cloud.deploy import Deployment
from pytest_triton.cloud.deploy import DeployOptions
from pytest_triton.cloud.deploy import Progress
from pytest_triton.cloud.deploy import endpoint_log_tail
from pytest_triton.cloud.instances import budget_key
from pytest_triton.cloud.instances import instance_has_gpu
from pytest_triton.cloud.metrics import SplitWindow
from pytest_triton.cloud.reuse import ExistingEndpoint
from pytest_triton.cloud.reuse import download_model_data
from pytest_triton.cloud.reuse import inspect_endpoint
from pytest_triton.errors import ServerError

if TYPE_CHECKING:
    from pytest_triton.cloud.invoke import InvokeEndpointTransport


def temporary_workdir(base: Path) -> Path:
    """A fresh folder under ``base`` (the default maker of a :class:`ServedEndpoint`'s work folder)."""
    return Path(tempfile.mkdtemp(prefix="pytest-triton-endpoint-", dir=base))


@dataclass(frozen=True)
class EndpointContents:
    """What the endpoint serves, as ``prepare()`` found it: the repository (``source``), the folder holding its
    configs here, the default model (the one ``/invocations`` answers for), notes for the report, and where
    the endpoint reads it ("" until a deployment has uploaded it; the endpoint's name when reused)."""

    source: Path
    folder: Path
    default_model: str
    notes: tuple[str, ...]
    location: str = ""


class ServedEndpoint:
    """A deployment of a repository for this run (``endpoint`` None), or the existing endpoint ``endpoint``.

    ``make_workdir(base)`` makes the work folder under ``staging`` (default: the system's temporary folder) on
    first use; it is removed at :meth:`teardown`. ``what`` names the owner in the error of a call made before
    the endpoint is there.
    """

    def __init__(
        self,
        *,
        deploy: DeployOptions,
        endpoint: str | None = None,
        region: str | None = None,
        staging: Path | None = None,
        make_workdir: Callable[[Path], Path] = temporary_workdir,
        progress: Progress | None = None,
        what: str = "the endpoint",
    ) -> None:
        self.deploy = deploy
        self.endpoint = endpoint
        self.region = region
        self.staging = staging
        self.progress = progress
        self.what = what
        self.deployment: Deployment | None = None
        self.existing: ExistingEndpoint | None = None
        self.name: str | None = None  # known once reused (prepare) or deployed (start)
        self.contents: EndpointContents | None = None  # what prepare() found
        self._make_workdir = make_workdir
        self._clients: AwsClients | None = None
        self._workdir: Path | None = None
        self._transports: list[InvokeEndpointTransport] = []
        self._previous_sigterm: Any = None

    @property
    def aws(self) -> AwsClients:
        """The AWS clients of the endpoint's region (connected on first use)."""
        if self._clients is None:
            self._clients = AwsClients.connect(self.region)
        return self._clients

    @property
    def endpoint_name(self) -> str:
        """The endpoint's name; ServerError before it is reused (``prepare()``) or deployed (``start()``)."""
        if self.name is None:
            raise ServerError(f"{self.what} is not started; call start() first")
        return self.name

    @property
    def run_id(self) -> str:
        """The run id the deployment's resources are tagged with ("" for a reused endpoint)."""
        return self.deployment.run_id if self.deployment is not None else ""

    @property
    def instance_type(self) -> str:
        """The endpoint's instance type (the reused endpoint's, or the one deployed to)."""
        return self.existing.instance_type if self.existing is not None else self.deploy.instance_type

    @property
    def has_gpu(self) -> bool:
        """Whether the endpoint's instance type has NVIDIA GPUs."""
        return instance_has_gpu(self.instance_type)

    @property
    def budget_key(self) -> str | None:
        """The latency-budget hardware key of the endpoint's GPU (``nvidia-a10g`` for ml.g5.*), None if unknown."""
        return budget_key(self.instance_type)

    # -- lifecycle ------------------------------------------------------------------------------------------

    def prepare(self, repository: Path | None) -> EndpointContents:
        """Reuse: read what the endpoint serves (read-only). Deploy: lint and package ``repository``; nothing is
        created in AWS yet. Once only: a second call returns what the first found."""
        if self.contents is None:
            self.contents = self._reuse(self.endpoint) if self.endpoint is not None else self._package(repository)
        return self.contents

    def _reuse(self, endpoint: str) -> EndpointContents:
        existing = self.existing = inspect_endpoint(self.aws, endpoint)
        folder = download_model_data(self.aws, existing, self._work() / "model")
        self.name = endpoint
        return EndpointContents(folder, folder, existing.default_model, (existing.describe(),), existing.name)

    def _package(self, repository: Path | None) -> EndpointContents:
        assert repository is not None
        deployment = Deployment(self.aws, repository, self.deploy, self._work(), progress=self.progress)
        self.deployment = deployment
        archive = deployment.package()
        notes = (
            f"deploying {archive.name} to SageMaker ({self.deploy.instance_type}, {deployment.image}) "
            f"as run {deployment.run_id}",
            *deployment.warnings,
        )
        return EndpointContents(repository, repository, deployment.default_model, notes)

    def start(self) -> str:
        """Deploy what ``prepare()`` packaged and wait for InService, SIGTERM caught meanwhile (on any failure
        the deployment is torn down, the work folder removed and SIGTERM restored); return the S3 URL the
        endpoint reads the archive from. Reused: nothing to do, and ""."""
        if self.deployment is None:
            return ""
        self._catch_sigterm()
        try:
            self.name = self.deployment.deploy()
        except BaseException:
            self._remove_workdir()
            self._restore_sigterm()
            raise
        return self.deployment.model_data_url

    def teardown(self) -> None:
        """Remove what this run created (nothing for a reused endpoint), the work folder, and the SIGTERM
        handler; DeploymentError lists what is left."""
        try:
            if self.deployment is not None:
                self.deployment.teardown()
        finally:
            self._remove_workdir()
            self._restore_sigterm()

    def _work(self) -> Path:
        if self._workdir is None:
            base = self.staging if self.staging is not None else Path(tempfile.gettempdir())
            base.mkdir(parents=True, exist_ok=True)
            self._workdir = self._make_workdir(base)
        return self._workdir

    def _remove_workdir(self) -> None:
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None

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

    # -- what it answers ----------------------------------------------------------------------------------

    def log_tail(self, lines: int = 50) -> str:
        """The last lines of CloudWatch's ``/aws/sagemaker/Endpoints/NAME`` ("" before the name is known)."""
        if self.name is None:
            return ""
        return endpoint_log_tail(self.aws.logs, self.name, events=lines)

    def check_in_service(self) -> None:
        """Raise ServerError unless the endpoint is InService."""
        status = self.aws.sagemaker.describe_endpoint(EndpointName=self.endpoint_name)["EndpointStatus"]
        if status != "InService":
            raise ServerError(f"endpoint {self.endpoint_name!r} is {status}", log_tail=self.log_tail())

    def transport(self, protocol: InferenceEndpoint = "sagemaker", *, binary: bool = True) -> InvokeEndpointTransport:
        """InvokeEndpoint for the default model (its inputs read from the served config.pbtxt); its first calls go
        into :meth:`latency_notes`, its answers into :meth:`late_latency_note`."""
        from pytest_triton.cloud.invoke import InvokeEndpointTransport
        from pytest_triton.cloud.specs import model_input_specs

        if protocol != "sagemaker":
            raise ServerError(
                f"protocol={protocol!r}: a SageMaker endpoint serves only InvokeEndpoint; use transport('sagemaker')"
            )
        if self.contents is None:
            raise ServerError(f"{self.what} is not started; call start() first")
        specs = model_input_specs(self.contents.folder, self.contents.default_model)
        transport = InvokeEndpointTransport(self.aws.runtime, self.endpoint_name, specs, binary=binary)
        self._transports.append(transport)
        return transport

    def latency_notes(self) -> list[str]:
        """The slowest first call per input shape of the transports handed out, against SageMaker's invocation
        limit: every call over it, else one line naming the slowest."""
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
        a minute or more later, with the calls the transports had answered in it (the read needs only the name,
        so it works after the endpoint is gone)."""
        requests = sum(t.answered_between(start.timestamp(), end.timestamp()) for t in self._transports)
        return SplitWindow(self.endpoint_name, start, end, requests, self.aws.region)
