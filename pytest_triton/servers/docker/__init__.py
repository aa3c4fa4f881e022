"""The docker launcher and its runner: Triton in a container of an NGC image (or one like it).

Importing this package does not import docker-py or testcontainers; they are imported when a container starts.
"""

from __future__ import annotations
