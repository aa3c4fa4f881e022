"""Where the ledger files of ``--cloud`` runs live, so that ``cloud-cleanup`` finds what a killed run left.

A run writes ``pytest-triton-cloud-<run id>.jsonl`` beside the report (``--triton-report PATH``: in PATH's
folder) or, without a report, into this user's state folder: ``$PYTEST_TRITON_STATE_DIR``, else
``$XDG_STATE_HOME/pytest-triton/cloud``, else ``~/.local/state/pytest-triton/cloud``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

STATE_DIR_ENV = "PYTEST_TRITON_STATE_DIR"
PREFIX = "pytest-triton-cloud-"
SUFFIX = ".jsonl"


def state_dir() -> Path:
    """This user's folder for ledger files (created on first write)."""
    explicit = os.environ.get(STATE_DIR_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "pytest-triton" / "cloud"


def ledger_path(run_id: str, folder: Path | None = None) -> Path:
    """The ledger file of run ``run_id`` in ``folder`` (None: :func:`state_dir`)."""
    return (folder if folder is not None else state_dir()) / f"{PREFIX}{run_id}{SUFFIX}"


def ledger_files(places: Iterable[Path]) -> list[Path]:
    """The ledger files among ``places`` (files as given; folders searched one level deep), oldest first."""
    found: list[Path] = []
    for place in places:
        if place.is_dir():
            found += sorted(place.glob(f"{PREFIX}*{SUFFIX}"))
        elif place.is_file():
            found.append(place)
    return found
