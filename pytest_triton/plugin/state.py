"""What the plugin remembers of a session, in ``config.stash`` (light: no server, contract or bench code imported).

The plugin's hooks write who is setting up (a fixture, a test) while servers start, and read the servers
back to attach their logs to failing tests and to print the summary. The keys of the contracts', the
baseline's and the bench's state live here too: a hook asks whether a session has them before it imports the
module that owns them, so that a session that uses none of them imports none.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_triton.bench.session import TritonBench
    from pytest_triton.plugin.baseline_items import BaselineState
    from pytest_triton.plugin.contract_items import ContractsState
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
# the contracts files' state: set when the session has a contracts file
CONTRACTS_KEY: pytest.StashKey[ContractsState] = pytest.StashKey()
BASELINE_KEY: pytest.StashKey[BaselineState] = pytest.StashKey()  # set under --triton-baseline
