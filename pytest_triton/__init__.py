"""pytest-triton: lint, serve and contract-test NVIDIA Triton model repositories."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
