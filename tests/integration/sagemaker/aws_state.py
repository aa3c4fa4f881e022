"""What is left in (offline) AWS: every endpoint, endpoint config, model and S3 object."""

from __future__ import annotations

from typing import Any

import boto3


def left_in_aws(sagemaker: Any = None, s3: Any = None) -> dict[str, list[str]]:
    """What is there, read with the given clients (default: boto3's from the environment)."""
    sagemaker, s3 = sagemaker or boto3.client("sagemaker"), s3 or boto3.client("s3")
    objects = [
        f"{bucket['Name']}/{item['Key']}"
        for bucket in s3.list_buckets()["Buckets"]
        for item in s3.list_objects_v2(Bucket=bucket["Name"]).get("Contents", [])
    ]
    return {
        "endpoints": [e["EndpointName"] for e in sagemaker.list_endpoints()["Endpoints"]],
        "configs": [c["EndpointConfigName"] for c in sagemaker.list_endpoint_configs()["EndpointConfigs"]],
        "models": [m["ModelName"] for m in sagemaker.list_models()["Models"]],
        "objects": objects,
    }


NOTHING: dict[str, list[str]] = {"endpoints": [], "configs": [], "models": [], "objects": []}
