from __future__ import annotations

import os

import pytest

from pytest_triton.servers import session_run


def test_a_session_gets_a_run_of_its_own_and_gives_the_old_one_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_TRITON_RUN_ID", "outer")
    run, previous = session_run.begin_session_run()
    assert (previous, os.environ["PYTEST_TRITON_RUN_ID"]) == ("outer", run)
    assert run != "outer"
    session_run.end_session_run(previous)
    assert os.environ["PYTEST_TRITON_RUN_ID"] == "outer"
