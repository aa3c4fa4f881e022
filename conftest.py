"""Repository-wide pytest configuration: where the shared conformance corpus lives, and Hypothesis profiles.

Hypothesis profiles: ``local`` (the default) searches at random, a new seed each run; ``ci`` is derandomized
(the same examples every run, from each test's own source), so a red CI run is the code's doing and
reproduces. ``ci`` is chosen where ``CI`` is set (GitHub Actions sets ``CI=true``; ``.ci/run`` sets
``HYPOTHESIS_PROFILE=ci``), ``HYPOTHESIS_PROFILE=NAME`` picks either one anywhere.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).parent
CONFORMANCE = ROOT.parent / "shared" / "conformance"


def _hypothesis_profiles() -> None:
    try:
        from hypothesis import settings
    except ImportError:  # the tests that use Hypothesis are skipped where it is missing
        return
    # both on Hypothesis's own defaults, never on whatever profile is loaded now (registering again, with ``ci``
    # loaded, would make ``local`` inherit its derandomize)
    base = settings.get_profile("default")
    settings.register_profile("local", parent=base)
    settings.register_profile("ci", parent=base, derandomize=True, database=None, print_blob=True)
    chosen = os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "local")
    settings.load_profile(chosen)


_hypothesis_profiles()


@pytest.fixture(scope="session")
def conformance_dir() -> Path:
    """The Triton QA conformance corpus beside the checkout (skips with the reason if absent)."""
    if not (CONFORMANCE / "triton-qa").is_dir():
        pytest.skip(f"conformance corpus not found at {CONFORMANCE} (it lives in ../shared/conformance/)")
    return CONFORMANCE
