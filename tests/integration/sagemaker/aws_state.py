"""What is left in (offline) AWS: every endpoint, endpoint config, model and S3 object."""

from __future__ import annotations

import boto3


def left_in_aws() -> dict[str, list[str]]:
    sagemaker, s3 = boto3.client("sagemaker"), boto3.client("s3")
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
