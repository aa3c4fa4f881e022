"""AWS SageMaker: image URIs, deployment of a model repository to an endpoint, and its teardown.

Importing this package loads only the standard library; boto3 is imported where a client is made.
"""

from __future__ import annotations
