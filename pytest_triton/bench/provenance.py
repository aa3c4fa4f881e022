"""Where and with what a report was measured: date, commit, versions, hardware key, machine load."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from importlib import metadata
from pathlib import Path
from typing import Any
from typing import final

__all__ = ["Provenance", "collect_provenance", "load_average", "package_version"]


def package_version(name: str) -> str | None:
    """The installed version of distribution ``name`` (None when not installed); imports nothing."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def load_average() -> tuple[float, ...]:
    """The 1, 5 and 15 minute load averages (empty where the platform has none)."""
    try:
        return tuple(round(v, 2) for v in os.getloadavg())
    except (AttributeError, OSError):
        return ()


def git_commit(folder: Path) -> str | None:
    """``HEAD``'s commit of the git work tree holding ``folder`` (``+dirty`` when it has changes), else None."""
    try:
        head = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(folder), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "") if head else None


@final
@dataclass(frozen=True)
class Provenance:
    """The facts a reader needs to compare two reports."""

    date: str
    hardware: str
    python: str
    packages: dict[str, str | None] = field(default_factory=dict)
    triton: str | None = None
    commit: str | None = None
    load_average: tuple[float, ...] = ()
    cpu_count: int | None = None
    unstable: str = "warn"
    inconclusive: str = "warn"
    enforcement: str = ""

    def lines(self) -> list[str]:
        versions = ", ".join(f"{k} {v}" for k, v in self.packages.items() if v)
        load = "/".join(f"{v:g}" for v in self.load_average) or "unknown"
        return [
            f"{self.date}, commit {self.commit or 'not in git'}",
            f"hardware {self.hardware} ({self.cpu_count} CPUs), load average {load} (1/5/15 min, at the report)",
            f"server {self.triton or 'not queried'}, {versions}, Python {self.python}",
            f"unsure verdicts: triton_unstable={self.unstable}, triton_inconclusive={self.inconclusive}; "
            f"{self.enforcement}",
        ]

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["load_average"] = list(self.load_average)
        return out


def collect_provenance(
    hardware: str,
    *,
    root: Path | None = None,
    triton: str | None = None,
    unstable: str = "warn",
    inconclusive: str = "warn",
    enforcement: str = "",
) -> Provenance:
    """Gather the provenance now (``root``: the folder whose git commit is reported, default the working one)."""
    return Provenance(
        date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        hardware=hardware,
        python=platform.python_version(),
        packages={
            name: package_version(name)
            for name in ("pytest-triton", "onnxruntime", "onnxruntime-gpu", "nvidia-pytriton", "pytest")
        },
        triton=triton,
        commit=git_commit(root or Path.cwd()),
        load_average=load_average(),
        cpu_count=os.cpu_count(),
        unstable=unstable,
        inconclusive=inconclusive,
        enforcement=enforcement,
    )
