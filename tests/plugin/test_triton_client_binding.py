"""triton_client serves the session's server only; a server a test starts hands out its own clients."""

from __future__ import annotations

from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "model_repos" / "examples"

pytestmark = pytest.mark.xdist_group("embedded-triton")


def test_without_a_session_server_triton_client_says_where_clients_come_from(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        f"""
        def test_started_by_hand(triton_server_factory, triton_client):
            triton_server_factory.start({str(EXAMPLES)!r})
            triton_client.http
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)  # at setup: nothing was started, no client was bound to another server
    result.stdout.fnmatch_lines(["*triton_server needs a repository*triton_server_factory.start(PATH).clients()*"])


def test_a_started_server_hands_out_its_own_clients(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        f"""
        import pytest_triton


        def test_two_servers(triton_server_factory: pytest_triton.TritonServerFactory) -> None:
            first = triton_server_factory.start({str(EXAMPLES)!r})
            second = triton_server_factory.start({str(EXAMPLES)!r})
            assert first.urls.http != second.urls.http
            clients = first.clients()
            assert clients.server is first
            assert clients.http.is_model_ready("python_add")
            assert second.clients().grpc.is_model_ready("python_add")
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
