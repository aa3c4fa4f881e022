"""TEST DOUBLES of AWS's SageMaker hosting and of the InvokeEndpoint front door, for the offline tests.

moto answers the control plane, S3 and CloudWatch Logs, but it does not host anything: its endpoints are
InService at once and its ``invoke_endpoint`` returns a canned body. These doubles stand in for the parts
of AWS we cannot reach, and nothing else:

- :class:`FakeHosting` patches moto's SageMaker backend (moto runs in this process, as a thread) so that
  CreateEndpoint does what SageMaker does: the endpoint is ``Creating`` while the container starts, here the
  real ``sagemaker-local`` launcher on the model's archive (downloaded from moto's S3) with the model's
  environment, in a container of :attr:`FakeHosting.image` when one is set (as SageMaker runs the image);
  ``InService`` once ``/ping`` answers, ``Failed`` with a FailureReason otherwise; the container's log goes
  to CloudWatch Logs ``/aws/sagemaker/Endpoints/NAME``. It also refuses a duplicate endpoint name (moto
  replaces it) and checks instance types against the API's own list (moto's stops at g4dn/p3 and rejects
  the default ml.g5.xlarge), and mends moto's endpoint-config ARN (a 1-tuple) so that tag search works.
- :class:`FrontDoor` is a small HTTP server with InvokeEndpoint's route (``POST /endpoints/NAME/invocations``)
  that forwards the body to the container's ``/invocations`` (the real Triton SageMaker frontend) and maps
  its errors as SageMaker does: a container error becomes ``ModelError`` (HTTP 424) with
  ``OriginalStatusCode``, ``OriginalMessage`` and ``LogStreamArn``. Like SageMaker, it publishes each
  answered invocation's ``ModelLatency`` (the container's time) and ``OverheadLatency`` (its own) to CloudWatch
  (moto's), in microseconds; moto serves their Average and SampleCount, not ExtendedStatistics.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import re
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from dataclasses import field
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3
import botocore.session
from moto.sagemaker.exceptions import ValidationError
from moto.sagemaker.models import FakeEndpointConfig
from moto.sagemaker.models import SageMakerModelBackend

from pytest_triton.servers.docker.container import TritonContainer
from pytest_triton.servers.sagemaker.local import SageMakerLocalLauncher

ACCOUNT = "123456789012"  # moto's default account
PING_FAILED = (
    "The primary container for production variant AllTraffic did not pass the ping health check. "
    "Please check CloudWatch logs for this endpoint."
)
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _api_instance_types() -> frozenset[str]:
    """The instance types the real CreateEndpointConfig accepts, from botocore's model of the API."""
    model = botocore.session.get_session().get_service_model("sagemaker")
    variant = model.operation_model("CreateEndpointConfig").input_shape.members["ProductionVariants"].member
    return frozenset(variant.members["InstanceType"].enum)


def _arn(config: Any) -> str:
    return str(config.__dict__["_arn"])


def _set_arn(config: Any, value: Any) -> None:
    config.__dict__["_arn"] = value[0] if isinstance(value, tuple) else value


@dataclass
class Hosted:
    """One endpoint's container: its launcher once started, and why it failed otherwise."""

    name: str
    launcher: SageMakerLocalLauncher | None = None
    failure: str = ""
    done: threading.Event = field(default_factory=threading.Event)


class FakeHosting:
    """Endpoints that really start their container (sagemaker-local); see the module docstring."""

    def __init__(self, moto_url: str, region: str, workdir: Path) -> None:
        self.moto_url = moto_url
        self.region = region
        self.workdir = workdir
        self.hosted: dict[str, Hosted] = {}
        self.startup_timeout = 60.0
        self.delay = 0.0  # seconds an endpoint stays Creating before its container starts
        self.deleting = 0.0  # seconds an endpoint stays Deleting after DeleteEndpoint (moto: none)
        self.image: str | None = None  # the endpoints' image: their container runs in docker (None: this machine)
        self.containers: list[str] = []  # ids of the containers endpoints ran in
        self._lock = threading.Lock()
        self._instance_types = _api_instance_types()

    def _client(self, service: str) -> Any:
        return boto3.session.Session(region_name=self.region).client(service, endpoint_url=self.moto_url)

    def install(self, monkeypatch: Any) -> None:
        hosting = self
        original_create = SageMakerModelBackend.create_endpoint
        original_delete = SageMakerModelBackend.delete_endpoint

        def create_endpoint(backend: Any, endpoint_name: str, endpoint_config_name: str, tags: Any) -> Any:
            if endpoint_name in backend.endpoints:  # AWS refuses; moto would replace it
                raise ValidationError(message=f'Cannot create already existing endpoint "{endpoint_name}".')
            endpoint = original_create(backend, endpoint_name, endpoint_config_name, tags)
            endpoint.endpoint_status = "Creating"
            hosting._bring_up(endpoint)
            return endpoint

        def delete_endpoint(backend: Any, endpoint_name: str) -> None:
            if hosting.deleting <= 0 or endpoint_name not in backend.endpoints:
                original_delete(backend, endpoint_name)
                hosting._take_down(endpoint_name)
                return
            backend.endpoints[endpoint_name].endpoint_status = "Deleting"

            def finish() -> None:
                time.sleep(hosting.deleting)
                with contextlib.suppress(Exception):
                    original_delete(backend, endpoint_name)
                hosting._take_down(endpoint_name)

            threading.Thread(target=finish, daemon=True).start()

        def validate_instance_type(config: Any, instance_type: str) -> None:
            if instance_type not in hosting._instance_types:
                raise ValidationError(message=f"Value '{instance_type}' at 'instanceType' failed to satisfy constraint")

        monkeypatch.setattr(SageMakerModelBackend, "create_endpoint", create_endpoint)
        monkeypatch.setattr(SageMakerModelBackend, "delete_endpoint", delete_endpoint)
        monkeypatch.setattr(FakeEndpointConfig, "validate_instance_type", validate_instance_type)
        # moto 5.2.1 stores an endpoint config's ARN as a 1-tuple (a stray comma), which breaks the Resource
        # Groups Tagging API's GetResources for every account that has an endpoint config; unwrap it
        monkeypatch.setattr(FakeEndpointConfig, "arn", property(_arn, _set_arn), raising=False)

    def _bring_up(self, endpoint: Any) -> None:
        hosted = Hosted(endpoint.endpoint_name)
        with self._lock:
            self.hosted[hosted.name] = hosted
        threading.Thread(target=self._start, args=(endpoint, hosted), daemon=True).start()

    def _start(self, endpoint: Any, hosted: Hosted) -> None:
        launcher: SageMakerLocalLauncher | None = None
        try:
            deadline = time.monotonic() + self.delay
            while time.monotonic() < deadline and hosted.name in self.hosted:
                time.sleep(0.1)
            if hosted.name not in self.hosted:
                return  # deleted while Creating
            sagemaker, s3 = self._client("sagemaker"), self._client("s3")
            config = sagemaker.describe_endpoint_config(EndpointConfigName=endpoint.endpoint_config_name)
            model = sagemaker.describe_model(ModelName=config["ProductionVariants"][0]["ModelName"])
            container = model["PrimaryContainer"]
            bucket, key = container["ModelDataUrl"][5:].split("/", 1)
            folder = Path(tempfile.mkdtemp(prefix=f"{hosted.name}-", dir=self.workdir))
            archive = folder / "model.tar.gz"
            s3.download_file(bucket, key, str(archive))
            launcher = SageMakerLocalLauncher(
                archive,
                env=container.get("Environment", {}),
                image=None if self.image is None else TritonContainer(self.image, pull="never"),
                startup_timeout=self.startup_timeout,
                staging=folder,
                progress=None,
            )
            launcher.start()
            if launcher.container is not None and launcher.container.container_id is not None:
                self.containers.append(launcher.container.container_id)
            hosted.launcher = launcher
            self._ship_logs(hosted.name, launcher)  # the log is in CloudWatch before the status changes
            endpoint.endpoint_status = "InService"
        except Exception as exc:
            hosted.failure = f"{type(exc).__name__}: {exc}"
            self._ship_logs(hosted.name, launcher)
            endpoint.endpoint_status = "Failed"
            endpoint.failure_reason = PING_FAILED
        finally:
            if hosted.launcher is None and launcher is not None:
                launcher.stop()
            hosted.done.set()

    def _ship_logs(self, name: str, launcher: SageMakerLocalLauncher | None) -> None:
        """The container's output, in CloudWatch Logs as SageMaker ships it."""
        text = launcher.logs() if launcher is not None else ""
        lines = [line for line in text.splitlines() if line.strip()] or ["(the container wrote nothing)"]
        logs = self._client("logs")
        group = f"/aws/sagemaker/Endpoints/{name}"
        with contextlib.suppress(logs.exceptions.ResourceAlreadyExistsException):
            logs.create_log_group(logGroupName=group)
        stream = "AllTraffic/i-0123456789abcdef0"
        with contextlib.suppress(logs.exceptions.ResourceAlreadyExistsException):
            logs.create_log_stream(logGroupName=group, logStreamName=stream)
        now = int(time.time() * 1000)
        events = [{"timestamp": now + i, "message": line} for i, line in enumerate(lines[-500:])]
        logs.put_log_events(logGroupName=group, logStreamName=stream, logEvents=events)

    def _take_down(self, name: str) -> None:
        with self._lock:
            hosted = self.hosted.pop(name, None)
        if hosted is not None:
            hosted.done.wait(self.startup_timeout + 10)
            if hosted.launcher is not None:
                hosted.launcher.stop()

    def stop_all(self) -> None:
        for name in list(self.hosted):
            self._take_down(name)

    def container_url(self, name: str) -> str | None:
        hosted = self.hosted.get(name)
        if hosted is None or hosted.launcher is None:
            return None
        return hosted.launcher.urls.sagemaker


_ROUTE = re.compile(r"^/endpoints/(?P<name>[^/]+)/invocations$")


class FrontDoor:
    """InvokeEndpoint's route on 127.0.0.1, in front of FakeHosting's containers (see the module docstring)."""

    def __init__(self, hosting: FakeHosting, *, invocation_timeout: float = 60.0) -> None:
        self.hosting = hosting
        self.invocation_timeout = invocation_timeout  # SageMaker's limit for a real-time invocation
        self.requests: list[tuple[str, int]] = []  # (endpoint, bytes) of each invocation received
        self._cloudwatch: Any = None  # made at the first invocation: the fixture sets credentials after this
        door = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                door._handle(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> FrontDoor:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _reply(self, handler: BaseHTTPRequestHandler, status: int, body: bytes, headers: dict[str, str]) -> None:
        handler.send_response(status)
        for key, value in headers.items():
            handler.send_header(key, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def _error(self, handler: BaseHTTPRequestHandler, status: int, code: str, fields: dict[str, Any]) -> None:
        body = json.dumps(fields).encode()
        self._reply(handler, status, body, {"Content-Type": "application/json", "x-amzn-ErrorType": code})

    def _publish(self, name: str, model_s: float, overhead_s: float, at: dt.datetime) -> None:
        dimensions = [{"Name": "EndpointName", "Value": name}, {"Name": "VariantName", "Value": "AllTraffic"}]
        data = [
            {
                "MetricName": metric,
                "Dimensions": dimensions,
                "Value": seconds * 1e6,
                "Unit": "Microseconds",
                "Timestamp": at,  # the request's time, not the publication's: its minute is the one it counts in
            }
            for metric, seconds in (("ModelLatency", model_s), ("OverheadLatency", overhead_s))
        ]
        if self._cloudwatch is None:
            self._cloudwatch = self.hosting._client("cloudwatch")
        self._cloudwatch.put_metric_data(Namespace="AWS/SageMaker", MetricData=data)

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        received = time.monotonic()
        received_at = dt.datetime.now(dt.timezone.utc)
        length = int(handler.headers.get("Content-Length", "0"))
        body = handler.rfile.read(length)
        match = _ROUTE.match(handler.path.split("?")[0])
        if match is None:
            self._error(handler, 404, "UnknownOperationException", {"message": f"no route {handler.path}"})
            return
        name = urllib.parse.unquote(match.group("name"))
        self.requests.append((name, len(body)))
        url = self.hosting.container_url(name)
        if url is None:
            message = f"Endpoint {name} of account {ACCOUNT} not found."
            self._error(handler, 400, "ValidationError", {"message": message})
            return
        group = f"/aws/sagemaker/Endpoints/{name}"
        log_stream = f"arn:aws:logs:{self.hosting.region}:{ACCOUNT}:log-group:{group}"
        request = urllib.request.Request(
            f"{url}/invocations", data=body, headers={"Content-Type": handler.headers.get("Content-Type", "")}
        )
        forwarded = time.monotonic()
        try:
            with _NO_PROXY.open(request, timeout=self.invocation_timeout) as reply:
                payload = reply.read()
                content_type = reply.headers.get("Content-Type", "application/octet-stream")
            answered = time.monotonic()
        except urllib.error.HTTPError as exc:
            original = exc.read().decode("utf-8", "replace")
            kind = "client" if exc.code < 500 else "server"
            message = (
                f'Received {kind} error ({exc.code}) from primary with message "{original}". '
                f"See the CloudWatch log group {group} in account {ACCOUNT} for more information."
            )
            fields = {
                "ErrorCode": f"{kind.upper()}_ERROR_FROM_MODEL",
                "Message": message,
                "OriginalStatusCode": exc.code,
                "OriginalMessage": original,
                "LogStreamArn": log_stream,
            }
            self._error(handler, 424, "ModelError", fields)
            return
        except TimeoutError:
            message = "Your invocation timed out while waiting for a response from container primary."
            self._error(handler, 424, "ModelError", {"Message": message, "LogStreamArn": log_stream})
            return
        self._reply(
            handler, 200, payload, {"Content-Type": content_type, "x-Amzn-Invoked-Production-Variant": "AllTraffic"}
        )
        model_s = answered - forwarded
        self._publish(name, model_s, time.monotonic() - received - model_s, received_at)  # after the reply
