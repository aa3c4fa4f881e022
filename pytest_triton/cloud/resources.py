"""What a run creates in AWS, under names and tags of its own, and how it is all removed again.

Every resource gets a name that carries the run id (``pytest-triton-<run id>-<kind>``) and the tag
``pytest-triton-run=<run id>``. The ledger records a resource *before* the call that creates it, so that an
interrupt between the call and its answer still leaves it on the list to delete (deleting something that
was never made is a no-op). Teardown deletes in reverse order (endpoint, endpoint config, model, S3 objects),
deletes an S3 object only when its tag says this run made it, and reports whatever it could not delete as
the exact aws CLI commands to finish by hand, also when a second Ctrl-C stops it half-way.

The ledger also lives in a file (``journal``, JSON lines, fsync'ed before each create call), so that a run
killed with SIGKILL, by the OOM killer or with its xdist worker still leaves the list behind:
``python -m pytest_triton cloud-cleanup`` reads it (and finds the same resources by their tag).
"""

from __future__ import annotations

import json
import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any
from typing import Literal

from pytest_triton.archive.files import write_private
from pytest_triton.errors import DeploymentError

RUN_TAG = "pytest-triton-run"
NAME_PREFIX = "pytest-triton"
MAX_NAME = 63  # SageMaker names: [a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}

Kind = Literal["endpoint", "endpoint-config", "model", "s3-object"]
_ORDER: dict[str, int] = {"endpoint": 0, "endpoint-config": 1, "model": 2, "s3-object": 3}


def new_run_id() -> str:
    """A run id that sorts by time and does not collide: ``20261201-075112-a1b2c3``."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


def resource_name(run_id: str, kind: str) -> str:
    """``pytest-triton-<run id>-<kind>``, within SageMaker's 63 characters."""
    name = f"{NAME_PREFIX}-{run_id}-{kind}"
    if len(name) > MAX_NAME:
        raise ValueError(f"resource name {name!r} is longer than {MAX_NAME} characters")
    return name


def run_tags(run_id: str) -> list[dict[str, str]]:
    return [{"Key": RUN_TAG, "Value": run_id}]


@dataclass(frozen=True)
class Resource:
    """One thing a run created: a SageMaker resource by name, or an S3 object as ``s3://bucket/key``."""

    kind: Kind
    name: str

    def delete_command(self, region: str) -> str:
        """The aws CLI command that deletes it."""
        if self.kind == "s3-object":
            return f"aws s3 rm {self.name} --region {region}"
        option = {"endpoint": "endpoint-name", "endpoint-config": "endpoint-config-name", "model": "model-name"}
        return f"aws sagemaker delete-{self.kind} --{option[self.kind]} {self.name} --region {region}"


def split_s3_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/key`` -> (bucket, key)."""
    if not uri.startswith("s3://") or "/" not in uri[5:]:
        raise ValueError(f"{uri!r} is not an s3://BUCKET/KEY URI")
    bucket, key = uri[5:].split("/", 1)
    return bucket, key


def expected_owner(account: str | None) -> dict[str, str]:
    """``ExpectedBucketOwner=ACCOUNT`` for an S3 call: S3 refuses (403) a bucket of another account, so a
    bucket someone else created under the predictable default name never receives or gives up our objects."""
    return {"ExpectedBucketOwner": account} if account else {}


def _not_found(exc: Exception) -> bool:
    response: dict[str, Any] = getattr(exc, "response", {}) or {}
    error = response.get("Error", {})
    code = str(error.get("Code", ""))
    message = str(error.get("Message", ""))
    return code in ("NoSuchKey", "404", "NotFound", "ResourceNotFound") or (
        code == "ValidationException" and ("Could not find" in message or "does not exist" in message)
    )


def _to_stderr(line: str) -> None:
    # sys.__stderr__: pytest's capture must not swallow the list of what is left after an interrupt
    stream = sys.__stderr__ or sys.stderr
    stream.write(line + "\n")
    stream.flush()


@dataclass
class Ledger:
    """The resources of one run, in creation order, and their teardown."""

    run_id: str
    region: str
    created: list[Resource] = field(default_factory=list)
    deleted: list[Resource] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # why something was not deleted (e.g. an S3 tag mismatch)
    journal: Path | None = None  # the ledger's file: one JSON line per resource before it is created
    account: str | None = None  # the caller's account, sent as ExpectedBucketOwner on every S3 call

    def record(self, kind: Kind, name: str) -> Resource:
        """Put ``name`` on the ledger (and into its file, on disk) before the call that creates it."""
        resource = Resource(kind, name)
        if resource not in self.created:
            self._write(resource, "creating")
            self.created.append(resource)
        return resource

    def _write(self, resource: Resource, state: str) -> None:
        if self.journal is None:
            return
        line = {
            "run": self.run_id,
            "region": self.region,
            "kind": resource.kind,
            "name": resource.name,
            "state": state,
            "delete": resource.delete_command(self.region),
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        self.journal.parent.mkdir(parents=True, exist_ok=True)
        # synced: a SIGKILL or power cut right after the create call keeps this line
        write_private(self.journal, json.dumps(line) + "\n", append=True, sync=True)

    def mark_deleted(self, resource: Resource) -> None:
        if resource not in self.deleted:
            self.deleted.append(resource)
            self._write(resource, "deleted")

    @classmethod
    def read(cls, journal: Path) -> list[Ledger]:
        """The ledgers a journal file holds (one per run id in it), each with what it says is still there."""
        ledgers: dict[str, Ledger] = {}
        from pytest_triton.archive.files import read_file_bytes

        # a byte cut by the kill is replaced, not fatal: that line names nothing created yet
        text = read_file_bytes(journal, "ledger").decode("utf-8", errors="replace")
        for number, raw in enumerate(text.splitlines(), 1):
            if not raw.strip():
                continue
            try:
                line = json.loads(raw)
                run, region, kind, name, state = (line[k] for k in ("run", "region", "kind", "name", "state"))
            except (ValueError, KeyError, TypeError):
                continue  # a line cut short by the kill: what it named was not created yet
            if kind not in _ORDER:
                raise ValueError(f"{journal}:{number}: kind={kind!r} is not one of {sorted(_ORDER)}")
            ledger = ledgers.setdefault(run, cls(run, region))
            resource = Resource(kind, name)
            if resource not in ledger.created:
                ledger.created.append(resource)
            if state == "deleted" and resource not in ledger.deleted:
                ledger.deleted.append(resource)
        return list(ledgers.values())

    @property
    def left(self) -> list[Resource]:
        """What is still to delete, in teardown order."""
        remaining = [r for r in self.created if r not in self.deleted]
        return sorted(remaining, key=lambda r: (_ORDER[r.kind], -self.created.index(r)))

    def commands(self) -> tuple[str, ...]:
        return tuple(r.delete_command(self.region) for r in self.left)

    def teardown(
        self,
        sagemaker: Any,
        s3: Any,
        *,
        progress: Callable[[str], None] | None = None,
        endpoint_gone_timeout: float = 600.0,
        poll_interval: float = 5.0,
    ) -> None:
        """Delete everything on the ledger; raise DeploymentError listing the commands for what is left.

        A KeyboardInterrupt (a second Ctrl-C) stops the deletions, prints what is left, and propagates.
        """
        failures: list[str] = []
        try:
            for resource in self.left:
                try:
                    self._delete(resource, sagemaker, s3, endpoint_gone_timeout, poll_interval, progress)
                except Exception as exc:  # keep deleting the others; report this one
                    if _not_found(exc):
                        self.mark_deleted(resource)
                        continue
                    failures.append(f"{resource.kind} {resource.name}: {exc}")
                    continue
                self.mark_deleted(resource)
                if progress is not None:
                    progress(f"deleted {resource.kind} {resource.name}")
        except KeyboardInterrupt:
            _to_stderr(f"pytest-triton: teardown of run {self.run_id} interrupted; still there, delete with:")
            for command in self.commands():
                _to_stderr(f"  {command}")
            raise
        if self.left:
            raise DeploymentError(
                f"teardown of run {self.run_id} could not delete everything:\n  " + "\n  ".join(failures),
                left=self.commands(),
            )

    def _delete(
        self,
        resource: Resource,
        sagemaker: Any,
        s3: Any,
        gone_timeout: float,
        interval: float,
        progress: Callable[[str], None] | None,
    ) -> None:
        if resource.kind == "endpoint":
            sagemaker.delete_endpoint(EndpointName=resource.name)
            _wait_endpoint_gone(sagemaker, resource.name, gone_timeout, interval, progress)
        elif resource.kind == "endpoint-config":
            sagemaker.delete_endpoint_config(EndpointConfigName=resource.name)
        elif resource.kind == "model":
            sagemaker.delete_model(ModelName=resource.name)
        else:
            bucket, key = split_s3_uri(resource.name)
            owner = expected_owner(self.account)
            tagging = s3.get_object_tagging(Bucket=bucket, Key=key, **owner)
            tags = {t["Key"]: t["Value"] for t in tagging["TagSet"]}
            if tags.get(RUN_TAG) != self.run_id:
                self.kept.append(f"{resource.name}: tag {RUN_TAG}={tags.get(RUN_TAG)!r}, not this run's; left alone")
                self.deleted.append(resource)  # not ours to delete: nothing left to report
                return
            s3.delete_object(Bucket=bucket, Key=key, **owner)


def _wait_endpoint_gone(
    sagemaker: Any, name: str, timeout: float, interval: float, progress: Callable[[str], None] | None
) -> None:
    """Its config and model go once the endpoint is gone: wait until DescribeEndpoint says not found."""
    start = time.monotonic()
    deadline = start + timeout
    while time.monotonic() < deadline:
        try:
            status = sagemaker.describe_endpoint(EndpointName=name)["EndpointStatus"]
        except Exception as exc:
            if _not_found(exc):
                return
            raise
        if status != "Deleting":
            return
        if progress is not None:
            progress(f"endpoint {name}: Deleting ({time.monotonic() - start:.0f} s)")
        time.sleep(interval)
    raise DeploymentError(f"endpoint {name!r} still Deleting after {timeout:.0f} s")
