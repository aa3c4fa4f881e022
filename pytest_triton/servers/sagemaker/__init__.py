"""The SageMaker launchers: ``sagemaker`` (a real endpoint, deployed or reused) and ``sagemaker-local``.

Importing this package does not import boto3; it is imported when an endpoint is deployed or inspected.
"""

from __future__ import annotations
