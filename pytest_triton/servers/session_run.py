"""The run id of a pytest session: one per session, shared by its xdist workers through the environment.

Whatever a launcher leaves behind it can label with the run (the docker launcher labels its containers with it),
so that the session's controller can clean up at its end what its workers started, even those killed on the way
(:func:`pytest_triton.servers.registry.end_session`).
"""

from __future__ import annotations

import os
import uuid

RUN_ID_ENV = "PYTEST_TRITON_RUN_ID"


def run_id() -> str:
    """This run's id: ``$PYTEST_TRITON_RUN_ID`` (set by :func:`begin_session_run`, inherited by xdist workers),
    or a new one set here on first use."""
    value = os.environ.get(RUN_ID_ENV)
    if not value:
        value = uuid.uuid4().hex[:16]
        os.environ[RUN_ID_ENV] = value
    return value


def begin_session_run() -> tuple[str, str | None]:
    """A new run for a pytest session that is not an xdist worker: (its id, the id it replaces).

    A session never adopts an inherited id: a nested pytest would otherwise end by removing the outer
    session's containers. The id is put in the environment for the session's xdist workers; give the
    replaced one to :func:`end_session_run`."""
    previous = os.environ.get(RUN_ID_ENV)
    value = uuid.uuid4().hex[:16]
    os.environ[RUN_ID_ENV] = value
    return value, previous


def end_session_run(previous: str | None) -> None:
    """Put back the run id that :func:`begin_session_run` replaced (an in-process nested session ends)."""
    if previous is None:
        os.environ.pop(RUN_ID_ENV, None)
    else:
        os.environ[RUN_ID_ENV] = previous
