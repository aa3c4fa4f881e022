"""What the plugin remembers of a session's servers, in ``config.stash`` (light: no server code imported).

The plugin's hooks write who is setting up (a fixture, a test) while servers start, and read the servers
back to attach their logs to failing tests and to print the summary.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_triton.bench.session import TritonBench
    from pytest_triton.servers.protocol import TritonServer


@dataclass
class SessionState:
    servers: list[TritonServer] = field(default_factory=list)
    # who started each server: a fixture name or a test's node id, by id() of the server
    owners: dict[int, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    dead: set[int] = field(default_factory=set)  # id() of servers already reported as ended on their own
    starting: list[str] = field(default_factory=list)  # the fixtures being set up now, innermost last
    changes: list[str] = field(default_factory=list)  # what launchers changed to serve repositories

    def summary_lines(self) -> list[str]:
        """The terminal summary's ``triton`` section: what launchers changed (each once), then the notes."""
        return list(dict.fromkeys(self.changes)) + self.notes


STATE_KEY = pytest.StashKey[SessionState]()


def session_state(config: pytest.Config) -> SessionState:
    if STATE_KEY not in config.stash:
        config.stash[STATE_KEY] = SessionState()
    return config.stash[STATE_KEY]


def started_servers(config: pytest.Config) -> bool:
    """Whether this session started a server (its server code is imported then, not before)."""
    state = config.stash.get(STATE_KEY, None)
    return state is not None and bool(state.servers)


BENCH_KEY: pytest.StashKey[TritonBench] = pytest.StashKey()  # the session's latency bench (made when first asked for)
