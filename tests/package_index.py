"""For the few tests that install from the package index: an environment that reaches it directly.

CI points every proxy variable at a dead port once its installs are done, so that no call to a server the tests
start can go through a proxy; a test that runs pip (a fresh install, pre-commit's hook environment) is an
install, and goes to the index directly.
"""

from __future__ import annotations

from collections.abc import Mapping

PROXY_VARIABLES = frozenset({"http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"})


def without_proxies(env: Mapping[str, str], *also: str) -> dict[str, str]:
    """``env`` without the proxy variables (and without the names in ``also``)."""
    return {k: v for k, v in env.items() if k not in PROXY_VARIABLES and k not in also}
