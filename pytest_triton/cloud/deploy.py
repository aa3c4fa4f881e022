"""Deploy a model repository to a SageMaker real-time endpoint, wait for it, and remove it again.

The flow of ``pytest --cloud``: lint (errors stop it, with every finding), package model.tar.gz with the model
folders at its root, check it as the container's serve script would, upload it to S3, CreateModel with the
``sagemaker-tritonserver`` image of the region, CreateEndpointConfig, CreateEndpoint, then poll
DescribeEndpoint with a progress line per poll (boto3's ``endpoint_in_service`` waiter would block 30 s at a
time for up to an hour, silently). A Failed endpoint raises :class:`DeploymentError` with SageMaker's
FailureReason and the tail of the CloudWatch log group ``/aws/sagemaker/Endpoints/NAME``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from pytest_triton.archive.model_tar import DEFAULT_MODEL_ENV
from pytest_triton.cloud.aws import AwsClients
from pytest_triton.cloud.images import DEFAULT_TRITON_VERSION
from pytest_triton.cloud.images import triton_image_uri
from pytest_triton.cloud.instances import instance_has_gpu
from pytest_triton.cloud.ledger_files import ledger_files
from pytest_triton.cloud.ledger_files import ledger_path
from pytest_triton.cloud.ledger_files import state_dir
from pytest_triton.cloud.resources import RUN_TAG
from pytest_triton.cloud.resources import Ledger
from pytest_triton.cloud.resources import expected_owner
from pytest_triton.cloud.resources import new_run_id
from pytest_triton.cloud.resources import resource_name
from pytest_triton.cloud.resources import run_tags
from pytest_triton.cloud.serve_script import RepositoryLayout
from pytest_triton.cloud.serve_script import serve_plan
from pytest_triton.cloud.serve_script import unknown_variables
from pytest_triton.errors import ConfigError
from pytest_triton.errors import DeploymentError
from pytest_triton.errors import LintFailed

DEFAULT_INSTANCE_TYPE = "ml.g5.xlarge"
DEFAULT_STARTUP_HEALTH_TIMEOUT = 900  # s; TensorRT builds its engines at load. AWS allows 60..3600
DEFAULT_AMI_VERSION = "al2023-ami-sagemaker-inference-gpu-4-1"  # driver 580 / CUDA 13.0, which 26.05 needs
VARIANT = "AllTraffic"
LOG_TAIL_EVENTS = 50

Progress = Callable[[str], None]


@dataclass(frozen=True)
class DeployOptions:
    """What ``--cloud`` deploys to: instance, image, where the archive goes, and how long to wait."""

    instance_type: str = DEFAULT_INSTANCE_TYPE
    triton_version: str = DEFAULT_TRITON_VERSION
    image: str | None = None  # overrides the image table
    s3_uri: str | None = None  # s3://bucket[/prefix]; None: sagemaker-<region>-<account>
    role: str | None = None  # ExecutionRoleArn
    env: Mapping[str, str] = field(default_factory=dict)  # container environment, over the folder's sagemaker.env
    startup_health_timeout: int = DEFAULT_STARTUP_HEALTH_TIMEOUT
    ami_version: str | None = DEFAULT_AMI_VERSION  # only sent for GPU instances
    poll_interval: float = 10.0
    timeout: float = 3600.0
    ledger_dir: Path | None = None  # where the ledger file goes (None: the state folder of cloud-cleanup)

    def __post_init__(self) -> None:
        if not 60 <= self.startup_health_timeout <= 3600:
            raise ConfigError(
                f"ContainerStartupHealthCheckTimeoutInSeconds={self.startup_health_timeout!r}: AWS allows 60 to 3600"
            )


def minutes(seconds: float) -> str:
    """``4m 05s`` for progress lines."""
    whole = int(seconds)
    return f"{whole // 60}m {whole % 60:02d}s"


def lint_for_sagemaker(archive: Path) -> list[Any]:
    """Lint the archive as SageMaker would unpack it; raise LintFailed on any error, return the warnings."""
    from pytest_triton.lint.runner import lint_path

    findings = lint_path(archive)
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        raise LintFailed(
            f"{archive}: {len(errors)} lint error(s); nothing was deployed:\n" + "\n".join(str(f) for f in findings),
            findings,
        )
    return findings


@dataclass
class Deployment:
    """One endpoint of one run: what was packaged, what was created (the ledger) and where it serves."""

    clients: AwsClients
    repository: Path
    options: DeployOptions
    workdir: Path
    progress: Progress | None = None
    run_id: str = field(default_factory=new_run_id)
    archive: Path | None = None
    env: dict[str, str] = field(default_factory=dict)
    default_model: str = ""
    warnings: list[str] = field(default_factory=list)
    model_data_url: str = ""
    image: str = ""
    ledger: Ledger | None = None

    @property
    def endpoint_name(self) -> str:
        return resource_name(self.run_id, "ep")

    def _say(self, line: str) -> None:
        if self.progress is not None:
            self.progress(line)

    # -- before anything is created ---------------------------------------------------------------

    def package(self) -> Path:
        """Package, lint and check the archive as the serve script would; nothing is created in AWS."""
        from pytest_triton.archive.model_tar import sidecar_env
        from pytest_triton.repository.sagemaker import package_model_tar

        if self.archive is not None:
            return self.archive
        root = self.repository
        if not root.is_dir():
            raise ConfigError(f"--cloud: repository {str(root)!r} is not a folder")
        from pytest_triton.archive.model_tar import folder_env

        recorded, notes = folder_env(root)  # sagemaker.env (or the SAGEMAKER_TRITON_* lines of a legacy .env)
        self.warnings += notes
        env = {**recorded, **self.options.env}
        layout = RepositoryLayout.of(root)
        default = env.get(DEFAULT_MODEL_ENV) or None
        if default is None and len([f for f in layout.folders if not f.startswith(".")]) == 1:
            default = next(f for f in layout.folders if not f.startswith("."))
        archive = package_model_tar(root, self.workdir / "model.tar.gz", default_model=default)
        if default is not None:
            env[DEFAULT_MODEL_ENV] = default
        sidecar_env(archive).write_text("".join(f"{k}={v}\n" for k, v in sorted(env.items())), encoding="utf-8")
        self.warnings += [str(f) for f in lint_for_sagemaker(archive)]
        plan = serve_plan(env, RepositoryLayout.of(root))  # the container's own refusals, before any upload
        self.warnings += list(plan.warnings)
        self.warnings += [f"{name} is not a variable the serve script reads" for name in unknown_variables(env)]
        for note in earlier_leftovers(self.options.ledger_dir or state_dir(), self.run_id):
            self._say(note)
            self.warnings.append(note)
        assert plan.default_model is not None
        self.default_model = plan.default_model
        env[DEFAULT_MODEL_ENV] = plan.default_model
        self.env = env
        self.image = self.options.image or triton_image_uri(
            self.clients.region, self.options.triton_version, gpu=instance_has_gpu(self.options.instance_type)
        )
        self.archive = archive
        return archive

    def _role(self) -> str:
        if not self.options.role:
            raise ConfigError(
                "--triton-cloud needs the IAM role SageMaker runs the model with: pass --triton-setting "
                "role=arn:aws:iam::ACCOUNT:role/NAME or set PYTEST_TRITON_SAGEMAKER_ROLE"
            )
        return self.options.role

    def _s3_target(self) -> tuple[str, str]:
        if self.options.s3_uri:
            uri = self.options.s3_uri.rstrip("/")
            bucket, _, prefix = uri.removeprefix("s3://").partition("/")
            if not uri.startswith("s3://") or not bucket:
                raise ConfigError(f"setting s3_uri={self.options.s3_uri!r} is not s3://BUCKET[/PREFIX]")
            return bucket, (prefix + "/" if prefix else "")
        bucket = f"sagemaker-{self.clients.region}-{self.clients.account()}"
        self._ensure_bucket(bucket)
        return bucket, ""

    def _owner(self) -> dict[str, str]:
        return expected_owner(self.clients.account())

    def _ensure_bucket(self, bucket: str) -> None:
        """The SageMaker SDK's default bucket: created when missing, never deleted (other runs share it).

        Its name is predictable, so someone else may have created it first: HeadBucket with
        ExpectedBucketOwner answers 403 then, and nothing is uploaded."""
        from botocore.exceptions import ClientError

        s3 = self.clients.s3
        try:
            s3.head_bucket(Bucket=bucket, **self._owner())
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code"))
            if code in ("403", "AccessDenied", "Forbidden"):
                raise DeploymentError(
                    f"S3 bucket {bucket!r} exists but is not owned by account {self.clients.account()} (or is not "
                    "readable by it); nothing was uploaded. Pass --s3-uri s3://YOUR-BUCKET/PREFIX"
                ) from None
            if code not in ("404", "NoSuchBucket", "NotFound"):
                raise
            self._say(f"creating S3 bucket {bucket} (kept after the run, as the SageMaker SDK's default bucket)")
            if self.clients.region == "us-east-1":
                s3.create_bucket(Bucket=bucket)
            else:
                s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": self.clients.region})

    # -- creation ------------------------------------------------------------------------------------

    def deploy(self) -> str:
        """Create everything and wait for InService; return the endpoint name. On failure, tear down first."""
        archive = self.package()
        role = self._role()
        journal = ledger_path(self.run_id, self.options.ledger_dir)
        self.ledger = Ledger(self.run_id, self.clients.region, journal=journal, account=self.clients.account())
        self._say(f"run {self.run_id}: what it creates is written to {journal} before each create call")
        try:
            self._create(archive, role)
            self.wait_in_service()
        except BaseException as exc:
            self._teardown_after(exc)
            raise
        return self.endpoint_name

    def _create(self, archive: Path, role: str) -> None:
        assert self.ledger is not None
        ledger, sagemaker, tags = self.ledger, self.clients.sagemaker, run_tags(self.run_id)
        bucket, prefix = self._s3_target()
        key = f"{prefix}pytest-triton/{self.run_id}/model.tar.gz"
        self.model_data_url = f"s3://{bucket}/{key}"
        self._say(f"uploading {archive.name} ({archive.stat().st_size} bytes) to {self.model_data_url}")
        ledger.record("s3-object", self.model_data_url)
        self.clients.s3.upload_file(
            str(archive), bucket, key, ExtraArgs={"Tagging": f"{RUN_TAG}={self.run_id}", **self._owner()}
        )
        model = resource_name(self.run_id, "model")
        self._say(f"creating model {model} with {self.image}")
        ledger.record("model", model)
        sagemaker.create_model(
            ModelName=model,
            ExecutionRoleArn=role,
            PrimaryContainer={"Image": self.image, "ModelDataUrl": self.model_data_url, "Environment": self.env},
            Tags=tags,
        )
        config = resource_name(self.run_id, "config")
        variant: dict[str, Any] = {
            "VariantName": VARIANT,
            "ModelName": model,
            "InitialInstanceCount": 1,
            "InstanceType": self.options.instance_type,
            "ContainerStartupHealthCheckTimeoutInSeconds": self.options.startup_health_timeout,
        }
        if self.options.ami_version and instance_has_gpu(self.options.instance_type):
            variant["InferenceAmiVersion"] = self.options.ami_version
        self._say(f"creating endpoint config {config} ({self.options.instance_type})")
        ledger.record("endpoint-config", config)
        sagemaker.create_endpoint_config(EndpointConfigName=config, ProductionVariants=[variant], Tags=tags)
        self._say(f"creating endpoint {self.endpoint_name}")
        ledger.record("endpoint", self.endpoint_name)
        sagemaker.create_endpoint(EndpointName=self.endpoint_name, EndpointConfigName=config, Tags=tags)

    def wait_in_service(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        """Poll DescribeEndpoint until InService, with a progress line per poll; Failed raises with the reason."""
        name, sagemaker = self.endpoint_name, self.clients.sagemaker
        start = clock()
        while True:
            described = sagemaker.describe_endpoint(EndpointName=name)
            status = described["EndpointStatus"]
            elapsed = clock() - start
            self._say(f"endpoint {name}: {status} ({minutes(elapsed)})")
            if status == "InService":
                return
            if status in ("Failed", "OutOfService", "Deleting"):
                raise DeploymentError(
                    f"endpoint {name!r} is {status} after {minutes(elapsed)} (instance {self.options.instance_type}, "
                    f"image {self.image})",
                    failure_reason=str(described.get("FailureReason", "")),
                    log_tail=endpoint_log_tail(self.clients.logs, name),
                )
            if elapsed >= self.options.timeout:
                raise DeploymentError(
                    f"endpoint {name!r} still {status} after {minutes(elapsed)}; raise the timeout or look at "
                    f"CloudWatch log group /aws/sagemaker/Endpoints/{name}",
                    log_tail=endpoint_log_tail(self.clients.logs, name),
                )
            time.sleep(self.options.poll_interval)

    # -- removal -------------------------------------------------------------------------------------

    def teardown(self) -> None:
        """Delete what this run created (nothing else); DeploymentError lists what could not be deleted."""
        if self.ledger is None or not self.ledger.left:
            return
        self._say(f"removing what run {self.run_id} created: {', '.join(r.name for r in self.ledger.left)}")
        self.ledger.teardown(
            self.clients.sagemaker,
            self.clients.s3,
            progress=self.progress,
            poll_interval=min(5.0, self.options.poll_interval),
        )

    def _teardown_after(self, original: BaseException) -> None:
        try:
            self.teardown()
        except DeploymentError as exc:  # keep the deployment's own error; add what is left
            original.add_note(str(exc))


def endpoint_log_tail(logs: Any, endpoint: str, *, events: int = LOG_TAIL_EVENTS, since_s: float = 3600.0) -> str:
    """The last ``events`` lines of ``/aws/sagemaker/Endpoints/NAME`` written in the last ``since_s`` seconds
    (a reused endpoint's group holds months), or a line saying why there are none."""
    from botocore.exceptions import ClientError

    group = f"/aws/sagemaker/Endpoints/{endpoint}"
    start_ms = int((time.time() - since_s) * 1000)
    lines: list[str] = []
    try:
        for page in logs.get_paginator("filter_log_events").paginate(logGroupName=group, startTime=start_ms):
            lines += [f"[{e.get('logStreamName', '')}] {e['message'].rstrip()}" for e in page.get("events", [])]
            lines = lines[-events:]
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code == "ResourceNotFoundException":
            return f"(no CloudWatch log group {group}: the container wrote nothing, or never started)"
        return f"(could not read CloudWatch log group {group}: {code})"
    return "\n".join(lines) if lines else f"(nothing in CloudWatch log group {group} in the last {since_s:.0f} s)"


def earlier_leftovers(folder: Path, run_id: str) -> list[str]:
    """A note for each earlier run whose ledger file in ``folder`` names resources it never deleted (a run that
    was killed, or whose teardown failed): they may still cost money until cloud-cleanup removes them."""
    notes = []
    for journal in ledger_files([folder]):
        try:
            ledgers = Ledger.read(journal)
        except (OSError, ValueError):
            continue  # not readable as a ledger: cloud-cleanup says why
        for ledger in ledgers:
            if ledger.run_id != run_id and ledger.left:
                notes.append(
                    f"run {ledger.run_id} ({journal}) never deleted {len(ledger.left)} resource(s) it created; see "
                    f"what is still there with: python -m pytest_triton cloud-cleanup --ledger {journal.parent}"
                )
    return notes
