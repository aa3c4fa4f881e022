"""``python -m pytest_triton cloud-cleanup``: find what killed ``--cloud`` runs left in AWS, show it, delete it.

Two sources, as AWS's tag-based clean-up guidance has it, plus the run's own record:

- the tag ``pytest-triton-run=<run id>`` that every endpoint, endpoint config and model carries, read with the
  Resource Groups Tagging API (one paginated call for all of them; where the role may not call
  ``tag:GetResources``, SageMaker's own list calls for names ``pytest-triton-*`` and each one's tags), and the S3
  object each model points to;
- the objects under ``pytest-triton/`` in the default bucket ``sagemaker-REGION-ACCOUNT`` (and under any
  ``--s3-uri`` given), whose object tag names the run;
- the ledger files the runs wrote before each create call (:mod:`pytest_triton.cloud.ledger_files`), which
  also name what a run was about to create when it was killed.

Each candidate is checked to exist before it is listed. Nothing is deleted without ``--yes``, and ``--yes``
deletes only the runs named with ``--run`` (or every run found, with ``--all``): another job's run may still be
live. Deletion is the run's own teardown (:meth:`~pytest_triton.cloud.resources.Ledger.teardown`): endpoint
first, an S3 object only when its tag names the run.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from typing import cast

from pytest_triton.cloud.aws import AwsClients
from pytest_triton.cloud.ledger_files import ledger_files
from pytest_triton.cloud.ledger_files import state_dir
from pytest_triton.cloud.resources import NAME_PREFIX
from pytest_triton.cloud.resources import RUN_TAG
from pytest_triton.cloud.resources import Kind
from pytest_triton.cloud.resources import Ledger
from pytest_triton.cloud.resources import Resource
from pytest_triton.cloud.resources import _not_found
from pytest_triton.cloud.resources import expected_owner
from pytest_triton.cloud.resources import split_s3_uri
from pytest_triton.errors import DeploymentError

_TYPES = {"endpoint": "sagemaker:endpoint", "endpoint-config": "sagemaker:endpoint-config", "model": "sagemaker:model"}
# SageMaker's list call of each kind: (paginator, result key, name field, ARN field)
_LISTINGS: dict[Kind, tuple[str, str, str, str]] = {
    "endpoint": ("list_endpoints", "Endpoints", "EndpointName", "EndpointArn"),
    "endpoint-config": ("list_endpoint_configs", "EndpointConfigs", "EndpointConfigName", "EndpointConfigArn"),
    "model": ("list_models", "Models", "ModelName", "ModelArn"),
}
# AWS's JSON APIs say AccessDeniedException, its query APIs (and moto) AccessDenied
_ACCESS_DENIED = frozenset({"AccessDeniedException", "AccessDenied"})
_KEY = re.compile(rf"(?:^|/){NAME_PREFIX}/([0-9]{{8}}-[0-9]{{6}}-[0-9a-f]{{6}})/model\.tar\.gz$")


def _add(ledgers: dict[str, Ledger], run: str, region: str, resource: Resource, account: str | None) -> None:
    ledger = ledgers.setdefault(run, Ledger(run, region, account=account))
    if resource not in ledger.created:
        ledger.created.append(resource)


def find_tagged(
    clients: AwsClients, ledgers: dict[str, Ledger], extra_s3: list[str], say: Callable[[str], None] = print
) -> None:
    """Add to ``ledgers`` every SageMaker resource tagged with a run id, and the runs' S3 objects."""
    account, region = clients.account(), clients.region
    try:
        tagged = list(_tagged_by_tagging_api(clients))
    except Exception as exc:
        if not _access_denied(exc):
            raise
        say(
            "cloud-cleanup: tag:GetResources is not allowed: listing the SageMaker endpoints, "
            f"endpoint configs and models named {NAME_PREFIX}-* and reading their tags instead "
            "(sagemaker:ListEndpoints, ListEndpointConfigs, ListModels, ListTags)"
        )
        tagged = list(_tagged_by_listing(clients))
    for kind, name, run in tagged:
        _add(ledgers, run, region, Resource(kind, name), account)
        if kind == "model":
            url = _model_data_url(clients, name)
            if url.startswith("s3://"):
                _add(ledgers, run, region, Resource("s3-object", url), account)
    places = [(f"sagemaker-{region}-{account}", "")] + [_bucket_prefix(uri) for uri in extra_s3]
    for bucket, prefix in places:
        for key in _keys(clients, bucket, prefix, account):
            match = _KEY.search(key)
            if match:
                _add(ledgers, match.group(1), region, Resource("s3-object", f"s3://{bucket}/{key}"), account)


def _tagged_by_tagging_api(clients: AwsClients) -> Iterator[tuple[Kind, str, str]]:
    """(kind, name, run id) of each resource tagged with a run, in one paginated call (tag:GetResources)."""
    tagging = clients.client("resourcegroupstaggingapi")
    pages = tagging.get_paginator("get_resources").paginate(
        TagFilters=[{"Key": RUN_TAG}], ResourceTypeFilters=list(_TYPES.values())
    )
    for page in pages:
        for mapping in page.get("ResourceTagMappingList", []):
            tags = {t["Key"]: t["Value"] for t in mapping.get("Tags", [])}
            kind, _, name = mapping["ResourceARN"].split(":", 5)[-1].partition("/")  # endpoint-config/NAME
            if kind in _TYPES and RUN_TAG in tags:
                yield cast(Kind, kind), name, tags[RUN_TAG]


def _tagged_by_listing(clients: AwsClients) -> Iterator[tuple[Kind, str, str]]:
    """The same from SageMaker's own list calls (every resource a run creates is named ``pytest-triton-*``) and
    each candidate's tags: for a role without tag:GetResources."""
    sagemaker = clients.sagemaker
    for kind, (operation, key, name_field, arn_field) in _LISTINGS.items():
        for page in sagemaker.get_paginator(operation).paginate(NameContains=NAME_PREFIX):
            for item in page.get(key, []):
                name = str(item[name_field])
                if not name.startswith(f"{NAME_PREFIX}-"):
                    continue
                tags = {t["Key"]: t["Value"] for t in _all_tags(sagemaker, str(item[arn_field]))}
                if RUN_TAG in tags:
                    yield kind, name, tags[RUN_TAG]


def _all_tags(sagemaker: Any, arn: str) -> list[dict[str, str]]:
    tags: list[dict[str, str]] = []
    for page in sagemaker.get_paginator("list_tags").paginate(ResourceArn=arn):
        tags += page.get("Tags", [])
    return tags


def _access_denied(exc: Exception) -> bool:
    """Whether an AWS call was refused for want of permission: AccessDeniedException (AWS's JSON APIs),
    AccessDenied (its query APIs), or an HTTP 403 whose body the client could not read."""
    response: dict[str, Any] = getattr(exc, "response", {}) or {}
    code = str(response.get("Error", {}).get("Code", ""))
    return code in _ACCESS_DENIED or response.get("ResponseMetadata", {}).get("HTTPStatusCode") == 403


def _bucket_prefix(uri: str) -> tuple[str, str]:
    bucket, _, prefix = uri.removeprefix("s3://").rstrip("/").partition("/")
    return bucket, (prefix + "/" if prefix else "")


def _model_data_url(clients: AwsClients, name: str) -> str:
    try:
        model = clients.sagemaker.describe_model(ModelName=name)
    except Exception as exc:
        if _not_found(exc):
            return ""
        raise
    return str((model.get("PrimaryContainer") or {}).get("ModelDataUrl", ""))


def _keys(clients: AwsClients, bucket: str, prefix: str, account: str) -> list[str]:
    from botocore.exceptions import ClientError

    keys: list[str] = []
    try:
        pages = clients.s3.get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix=f"{prefix}{NAME_PREFIX}/", **expected_owner(account)
        )
        for page in pages:
            keys += [item["Key"] for item in page.get("Contents", [])]
    except ClientError as exc:
        if str(exc.response.get("Error", {}).get("Code")) in ("NoSuchBucket", "404", "403", "AccessDenied"):
            return []  # no default bucket (nothing uploaded there), or not ours: nothing of ours in it
        raise
    return keys


def exists(clients: AwsClients, resource: Resource, account: str | None) -> bool:
    """Whether ``resource`` is still there (a ledger names what a run was *about* to create)."""
    sagemaker = clients.sagemaker
    calls: dict[str, Callable[[], Any]] = {
        "endpoint": lambda: sagemaker.describe_endpoint(EndpointName=resource.name),
        "endpoint-config": lambda: sagemaker.describe_endpoint_config(EndpointConfigName=resource.name),
        "model": lambda: sagemaker.describe_model(ModelName=resource.name),
    }
    try:
        if resource.kind == "s3-object":
            bucket, key = split_s3_uri(resource.name)
            clients.s3.head_object(Bucket=bucket, Key=key, **expected_owner(account))
        else:
            calls[resource.kind]()
    except Exception as exc:
        if _not_found(exc) or str(getattr(exc, "response", {}).get("Error", {}).get("Code", "")) == "NoSuchBucket":
            return False
        raise
    return True


def collect(
    clients: AwsClients,
    ledger_places: list[Path],
    extra_s3: list[str],
    *,
    by_tag: bool = True,
    say: Callable[[str], None] = print,
) -> dict[str, Ledger]:
    """Every run with something left: from the ledger files, then by tag; only what still exists is kept."""
    account = clients.account()
    ledgers: dict[str, Ledger] = {}
    for journal in ledger_files(ledger_places):
        try:
            found = Ledger.read(journal)
        except ValueError as exc:  # a FIFO, a device, a file over its limit, a kind this version does not know
            say(f"cloud-cleanup: ledger {journal} not read: {exc}; what it names is still found by its tag")
            continue
        for read in found:
            if read.region != clients.region:
                continue  # another region's run: cloud-cleanup --region REGION
            ledger = ledgers.setdefault(read.run_id, Ledger(read.run_id, read.region, journal=journal, account=account))
            ledger.journal = journal
            for resource in read.left:
                if resource not in ledger.created:
                    ledger.created.append(resource)
    if by_tag:
        find_tagged(clients, ledgers, extra_s3, say)
    for ledger in ledgers.values():
        ledger.created = [r for r in ledger.created if exists(clients, r, account)]
    return {run: ledger for run, ledger in sorted(ledgers.items()) if ledger.left}


def cleanup_main(args: argparse.Namespace, say: Callable[[str], None] = print) -> int:
    """List what is left; with ``--yes``, delete it. Exit 1 when anything is left at the end."""
    if args.yes and not (args.runs or args.all):
        say("cloud-cleanup: --yes deletes only the runs you name: add --run RUN_ID (or --all for every run found)")
        return 2
    clients = AwsClients.connect(args.region)
    ledgers = collect(clients, [state_dir(), *args.ledgers], args.s3_uris, say=say)
    if args.runs:
        ledgers = {run: ledger for run, ledger in ledgers.items() if run in args.runs}
    if not ledgers:
        say(f"cloud-cleanup: nothing tagged {RUN_TAG} or in a ledger is left in {clients.region}")
        return 0
    left = 0
    for run, ledger in ledgers.items():
        where = f" (ledger {ledger.journal})" if ledger.journal is not None else " (found by tag)"
        say(f"run {run}{where}:")
        for resource, command in zip(ledger.left, ledger.commands(), strict=True):
            say(f"  {resource.kind} {resource.name}\n    delete: {command}")
        if not args.yes:
            left += len(ledger.left)
            continue
        try:
            ledger.teardown(clients.sagemaker, clients.s3, progress=lambda line: say(f"  {line}"))
        except DeploymentError as exc:
            say(f"  {exc}")
        left += len(ledger.left)
    if not args.yes:
        say(
            f"cloud-cleanup: {left} resource(s) listed, nothing deleted; delete them with "
            "python -m pytest_triton cloud-cleanup --yes --run RUN_ID"
        )
    return 1 if left else 0
