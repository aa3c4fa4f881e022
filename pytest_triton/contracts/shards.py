"""Splitting a contracts run over several CI jobs: which shard this is, and which variants it runs.

The unit of a split is a variant of a contracts file: its parity item, its latency item and the relative
budgets it is held to stay in one shard (they share its servers, and a parity pair is never cut). Variants
are dealt largest first (by item count, then by name) to the shard with the fewest items so far (the lowest
index on a tie): every shard gets the same part in every job that reads the same contracts files, and no
shard holds more than one variant's items above another.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import final

from pytest_triton.errors import ConfigError

__all__ = ["SHARD_INDEX_VARIABLES", "Shard", "assign_shards", "parse_shard"]

SHARD_INDEX_VARIABLES = (
    # Kubernetes sets it in every pod of an Indexed Job (0 .. completions-1)
    "JOB_COMPLETION_INDEX",
    # what a GitHub Actions matrix job sets from ${{ strategy.job-index }} (GitHub has no such variable itself)
    "PYTEST_TRITON_SHARD_INDEX",
)
"""Where ``--triton-shard N`` (a count alone) reads this job's 0-based index, first one set wins."""

_SPEC = re.compile(r"\s*(?:(\d+)\s*/\s*)?(\d+)\s*")


@final
@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (1-based) of ``total``; ``source`` says where the index came from."""

    index: int
    total: int
    source: str = "--triton-shard"

    @property
    def label(self) -> str:
        return f"{self.index}/{self.total}"


def parse_shard(text: str, environ: Mapping[str, str]) -> Shard:
    """``K/N`` (1-based K), or ``N`` with the index read from :data:`SHARD_INDEX_VARIABLES` (0-based there)."""
    usage = (
        "expected K/N (shard K of N, 1-based, e.g. 2/4) or N with the index in "
        + " or ".join(SHARD_INDEX_VARIABLES)
        + " (0-based)"
    )
    match = _SPEC.fullmatch(text)
    if match is None:
        raise ConfigError(f"--triton-shard={text!r}: {usage}")
    total = int(match.group(2))
    if total < 1:
        raise ConfigError(f"--triton-shard={text!r}: N={total} shards; {usage}")
    if match.group(1) is not None:
        index, source = int(match.group(1)), "--triton-shard"
    else:
        found = [(name, environ[name]) for name in SHARD_INDEX_VARIABLES if environ.get(name, "").strip()]
        if not found:
            raise ConfigError(
                f"--triton-shard={text!r}: no shard index: none of {', '.join(SHARD_INDEX_VARIABLES)} is set; {usage}"
            )
        name, value = found[0]
        if not value.strip().isdigit():
            raise ConfigError(f"{name}={value!r}: expected a 0-based shard index, a whole number")
        index, source = int(value) + 1, name
    if not 1 <= index <= total:
        where = "--triton-shard" if source == "--triton-shard" else f"{source} (0-based)"
        raise ConfigError(f"shard {index} of {total} (from {where}): a shard is 1..{total}; {usage}")
    return Shard(index, total, source)


def assign_shards(groups: Mapping[str, int], total: int) -> dict[str, int]:
    """Each group (a variant, by key) with its item count → its shard, 1..``total`` (see the module's rule)."""
    loads = [0] * total
    assigned: dict[str, int] = {}
    for key, size in sorted(groups.items(), key=lambda kv: (-kv[1], kv[0])):
        lightest = min(range(total), key=lambda i: (loads[i], i))
        loads[lightest] += size
        assigned[key] = lightest + 1
    return assigned
