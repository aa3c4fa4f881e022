"""What rules look at: a repository, its model folders and their parsed configs."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_triton.config import CONFIG_FILENAME
from pytest_triton.config import ParsedConfig
from pytest_triton.lint.finding import Finding
from pytest_triton.lint.rules import catalog

if TYPE_CHECKING:
    from tritonclient.grpc.model_config_pb2 import ModelConfig

# Triton reads a version folder only if its whole name is a non-negative integer without
# leading zeros (it parses the name with std::stoll and compares it back).
VERSION_DIR = re.compile(r"^(0|[1-9][0-9]*)$")


@dataclass
class Reporter:
    """Collects findings; ``display`` maps real paths to what the user should see."""

    findings: list[Finding] = field(default_factory=list)
    display_root: Path | None = None
    display_prefix: str = ""

    def show(self, path: Path) -> str:
        if self.display_root is not None:
            try:
                rel = path.relative_to(self.display_root)
            except ValueError:
                return str(path)
            return f"{self.display_prefix}{rel.as_posix()}" if str(rel) != "." else self.display_prefix.rstrip("/!")
        return str(path)

    def add(self, rule: str, path: Path, message: str, hint: str = "", *, line: int = 0, col: int = 0) -> None:
        info = catalog.RULES[rule]
        self.findings.append(Finding(self.show(path), line, col, rule, info.severity, message, hint))


@dataclass
class ModelContext:
    """One model folder: its name is the folder's name, its config may be missing or broken."""

    folder: Path
    parsed: ParsedConfig | None
    reporter: Reporter
    repository: RepositoryContext | None = None

    @property
    def name(self) -> str:
        return self.folder.name

    @property
    def config_path(self) -> Path:
        return self.folder / CONFIG_FILENAME

    @property
    def config(self) -> ModelConfig:
        assert self.parsed is not None, "rules run only on models whose config parsed"
        return self.parsed.message

    def versions(self) -> list[int]:
        """Version folders Triton would read (sorted)."""
        return sorted(int(p.name) for p in self.folder.iterdir() if p.is_dir() and VERSION_DIR.match(p.name))

    def report(self, rule: str, message: str, hint: str = "", *field_path: str | int) -> None:
        """Report against config.pbtxt at the line of ``field_path`` (or line 1)."""
        line, col = self.parsed.position(*field_path) if self.parsed and field_path else (1, 1)
        self.reporter.add(rule, self.config_path, message, hint, line=line, col=col)

    def report_file(self, rule: str, path: Path, message: str, hint: str = "") -> None:
        """Report against a file or folder of the model (no line)."""
        self.reporter.add(rule, path, message, hint)


@dataclass
class RepositoryContext:
    """A model repository: every folder at its root is a model to Triton, hidden ones too."""

    root: Path
    reporter: Reporter
    models: dict[str, ModelContext] = field(default_factory=dict)
    # set when the repository came from a SageMaker model.tar.gz
    tarball: Path | None = None
    sagemaker_default_model: str | None = None

    def parsed_models(self) -> Iterator[ModelContext]:
        return (m for m in self.models.values() if m.parsed is not None)
