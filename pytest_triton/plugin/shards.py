"""``--triton-shard K/N``: this job runs its part of the contract items and says which part in its report.

The split is :func:`pytest_triton.contracts.shards.assign_shards` over the variants of every contracts file
(a variant's parity, latency and relative-latency items stay together). Items that are not contract items
(lint items, the user's tests) are not split: every shard runs them. The report's ``shard`` entry names the
shard, the run and the contracts files it read, so that ``python -m pytest_triton report merge`` can refuse a
missing shard or one of another run instead of printing a partial table.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

import pytest

from pytest_triton.errors import ConfigError
from pytest_triton.plugin import options
from pytest_triton.plugin.contract_items import ContractItem
from pytest_triton.plugin.state import CONTRACTS_KEY

if TYPE_CHECKING:  # pytest_triton.contracts imports numpy: not at plugin import time
    from pytest_triton.contracts.shards import Shard

SHARD_KEY: pytest.StashKey[Shard] = pytest.StashKey()
VARIANTS_KEY = pytest.StashKey[list[str]]()  # the variants this shard runs, by key (FILE::VARIANT)
RUN_VARIABLE = "PYTEST_TRITON_SHARD_RUN"  # names the run the shards belong to where the CI's run id is not enough


def configure_shard(config: pytest.Config) -> None:
    """Read --triton-shard (a usage error when it is malformed or out of range)."""
    text = options.text(config, "triton_shard")
    if not text:
        return
    from pytest_triton.contracts.shards import parse_shard

    try:
        config.stash[SHARD_KEY] = parse_shard(text, os.environ)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from exc


def contracts_name(config: pytest.Config, path: Path) -> str:
    """A contracts file's name as every runner spells it: relative to the rootdir where it is inside."""
    try:
        return path.relative_to(config.rootpath).as_posix()
    except ValueError:
        return path.name


def select_shard(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the contract items of the other shards (pytest counts them as deselected)."""
    shard = config.stash.get(SHARD_KEY, None)
    if shard is None:
        return
    from pytest_triton.contracts.shards import assign_shards

    keys = {
        id(item): f"{contracts_name(config, item.path)}::{item.variant}"
        for item in items
        if isinstance(item, ContractItem)
    }
    groups: dict[str, int] = {}
    for key in keys.values():
        groups[key] = groups.get(key, 0) + 1
    assigned = assign_shards(groups, shard.total)
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:  # an item that is not a contract item has no key: every shard runs it
        mine = id(item) not in keys or assigned[keys[id(item)]] == shard.index
        (kept if mine else dropped).append(item)
    config.stash[VARIANTS_KEY] = sorted(key for key, index in assigned.items() if index == shard.index)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def _run_name(config: pytest.Config) -> str:
    """What tells this run's shards from another run's: PYTEST_TRITON_SHARD_RUN, GitHub's run id and attempt,
    or the checked-out commit."""
    if os.environ.get(RUN_VARIABLE):
        return f"{RUN_VARIABLE}={os.environ[RUN_VARIABLE]}"
    if os.environ.get("GITHUB_RUN_ID"):
        return f"github run {os.environ['GITHUB_RUN_ID']} attempt {os.environ.get('GITHUB_RUN_ATTEMPT', '1')}"
    from pytest_triton.bench.provenance import git_commit

    return f"commit {git_commit(config.rootpath) or 'unknown (not in git)'}"


def _contracts_digest(config: pytest.Config) -> str:
    """sha256 over the contracts files' names and contents: the shards of one run read the same files."""
    state = config.stash.get(CONTRACTS_KEY, None)
    digest = hashlib.sha256()
    for declaration in state.declarations if state is not None else ():
        digest.update(contracts_name(config, declaration.path).encode() + b"\0")
        try:
            digest.update(declaration.path.read_bytes())
        except OSError as exc:  # read and checked when pytest started: gone since
            digest.update(f"unreadable: {exc}".encode())
    return digest.hexdigest()


def in_shard(config: pytest.Config, contracts: str, variant: str) -> bool:
    """Whether this session runs ``variant`` of the contracts file named ``contracts`` (always when not sharded)."""
    if SHARD_KEY not in config.stash:
        return True
    return f"{contracts}::{variant}" in config.stash.get(VARIANTS_KEY, [])


def shard_entry(config: pytest.Config) -> dict[str, Any] | None:
    """The report's ``shard`` entry (None when the run is not sharded)."""
    shard = config.stash.get(SHARD_KEY, None)
    if shard is None:
        return None
    return {
        "index": shard.index,
        "total": shard.total,
        "index_from": shard.source,
        "run": _run_name(config),
        "contracts": _contracts_digest(config),
        "variants": config.stash.get(VARIANTS_KEY, []),
    }
