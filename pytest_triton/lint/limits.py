"""How much the linter reads before it stops with a finding that names the limit.

The defaults are far above any real repository (Triton's own QA configs are a few kilobytes,
the largest in model_repos/ under 2 KB) and low enough that hostile input cannot make the
linter hang or exhaust memory. Each is overridable: ``python -m pytest_triton lint
--max-config-bytes N ...``, and under pytest ``--triton-lint-limit NAME=N`` or the ini option
``triton_lint_limits`` (lines of ``NAME=N``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from pytest_triton.archive.guarded import ArchiveLimits
from pytest_triton.archive.guarded import GiB
from pytest_triton.archive.guarded import MiB
from pytest_triton.archive.guarded import parse_size
from pytest_triton.errors import ConfigError

__all__ = ["GiB", "LintLimits", "MiB", "describe", "parse_size"]


@dataclass(frozen=True)
class LintLimits:
    """Sizes the linter reads at most; a target over a limit gets a finding naming it."""

    # a config.pbtxt larger than this is not parsed (C004): the limit bounds the time and memory of the
    # worst case (all of it small map entries; benchmarks/bench_lint.py measures it)
    max_config_bytes: int = 4 * MiB
    # one string, number or name token longer than this makes the config unreadable (C005)
    max_literal_bytes: int = 1 * MiB
    # a model.tar.gz with more members than this is not linted further (D608)
    max_archive_members: int = 100_000
    # uncompressed bytes read from a model.tar.gz before the linter stops (D608)
    max_archive_bytes: int = 16 * GiB
    # bytes of one archive member written out to be checked (configs, model.py); larger ones are
    # checked by name and size only (D609)
    max_member_bytes: int = 16 * MiB
    # one pax or GNU long-name header of a model.tar.gz; tarfile would hold all of it in memory (D608)
    max_archive_header_bytes: int = 1 * MiB
    # bytes written out in all to check a model.tar.gz's members (configs and model.py files only; ONNX
    # graphs are read from the stream); past it they are checked by name and size only (D611): a small
    # archive of compressible members must not fill a runner's temp space
    max_written_bytes: int = 32 * MiB

    def archive_limits(self) -> ArchiveLimits:
        """The shared archive reader's limits (:mod:`pytest_triton.archive.guarded`) from these."""
        return ArchiveLimits(
            max_members=self.max_archive_members,
            max_total_bytes=self.max_archive_bytes,
            max_header_bytes=self.max_archive_header_bytes,
            max_written_bytes=self.max_written_bytes,
        )

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    def with_values(self, values: Iterable[str]) -> LintLimits:
        """A copy with ``NAME=N`` settings applied (N may use a K, M or G suffix: 16M)."""
        changes: dict[str, int] = {}
        for raw in values:
            name, sep, number = raw.partition("=")
            name = name.strip().replace("-", "_")
            if not sep or name not in self.names():
                raise ConfigError(f"lint limit {raw!r} is not NAME=N; NAME is one of {', '.join(self.names())}")
            changes[name] = parse_size(number, what=name)
        return dataclasses.replace(self, **changes)


def describe(limit: str, value: int) -> str:
    """How a finding names the limit it hit, with the flag that raises it."""
    return (
        f"{limit}={value:,}: raise it with --{limit.replace('_', '-')}=N (CLI) or "
        f"--triton-lint-limit {limit}=N (pytest)"
    )
