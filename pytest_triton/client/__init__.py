"""Clients for served models: KServe v2 over HTTP and gRPC, SageMaker bodies, NLI helpers."""

from __future__ import annotations
