"""Placeholder: this family's rules are being written."""

from __future__ import annotations

MODEL_CHECKS: list[object] = []
REPOSITORY_CHECKS: list[object] = []
