"""Repository-wide pytest configuration: where the shared conformance corpus lives."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).parent
CONFORMANCE = ROOT.parent / "shared" / "conformance"


@pytest.fixture(scope="session")
def conformance_dir() -> Path:
    """The Triton QA conformance corpus beside the checkout (skips with the reason if absent)."""
    if not (CONFORMANCE / "triton-qa").is_dir():
        pytest.skip(f"conformance corpus not found at {CONFORMANCE} (it lives in ../shared/conformance/)")
    return CONFORMANCE
