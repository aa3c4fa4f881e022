"""What rules look at: a repository, its model folders and their parsed configs."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from pytest_triton.config import CONFIG_FILENAME
from pytest_triton.config import ParsedConfig
from pytest_triton.errors import OnnxReadError
from pytest_triton.lint.finding import Finding
from pytest_triton.lint.limits import LintLimits
from pytest_triton.lint.rules import catalog
from pytest_triton.lint.walk import FolderReader
from pytest_triton.onnx_io import OnnxIO
from pytest_triton.onnx_io import read_onnx_io

if TYPE_CHECKING:
    from tritonclient.grpc.model_config_pb2 import ModelConfig

# How Triton 2.51 reads a version folder's name: a name of two or more characters starting
# with '0' is skipped; otherwise std::stoll reads its leading integer ("1.0", "+1", " 2" are
# versions 1, 1 and 2; "v1" is skipped) and the files are then looked up in str(version)/.
_LEADING_INT = re.compile(r"\s*([+-]?[0-9]+)")
INT64_MAX = 2**63 - 1


def read_version(name: str) -> int | None:
    """The version Triton reads from a folder name, or None when it skips the folder.

    A number outside int64 is returned as is: Triton aborts on it (std::out_of_range)."""
    if len(name) > 1 and name.startswith("0"):
        return None
    match = _LEADING_INT.match(name)
    return int(match.group(1)) if match else None


def is_canonical_version(name: str) -> bool:
    version = read_version(name)
    return version is not None and str(version) == name and -INT64_MAX - 1 <= version <= INT64_MAX


@dataclass
class Reporter:
    """Collects findings, each with the model folder it belongs to ('' for the target itself);
    ``display_root``/``display_prefix`` map real paths to what the user should see."""

    findings: list[Finding] = field(default_factory=list)
    display_root: Path | None = None
    display_prefix: str = ""
    limits: LintLimits = field(default_factory=LintLimits)
    owners: list[str] = field(default_factory=list)
    _folders: FolderReader | None = None

    @property
    def folders(self) -> FolderReader:
        """The run's folder listings (each folder read once, unreadable ones reported once)."""
        if self._folders is None:
            self._folders = FolderReader(self)
        return self._folders

    def forget_folders(self) -> None:
        """Drop the run's folder listings (which refer back to this reporter) once no rule reads them."""
        self._folders = None

    def show(self, path: Path) -> str:
        if self.display_root is not None:
            try:
                rel = path.relative_to(self.display_root)
            except ValueError:
                return str(path)
            return f"{self.display_prefix}{rel.as_posix()}" if str(rel) != "." else self.display_prefix.rstrip("/!")
        return str(path)

    def add(
        self,
        rule: str,
        path: Path,
        message: str,
        hint: str = "",
        *,
        line: int = 0,
        col: int = 0,
        model: Path | None = None,
    ) -> None:
        info = catalog.RULES[rule]
        self.findings.append(Finding(self.show(path), line, col, rule, info.severity, message, hint))
        self.owners.append(self.show(model) if model is not None else "")


@dataclass
class ModelContext:
    """One model folder: its name is the folder's name, its config may be missing or broken."""

    folder: Path
    parsed: ParsedConfig | None
    reporter: Reporter
    repository: RepositoryContext | None = None
    # what rules compute once per model (normalized platform/backend, ...), keyed by rule family
    memo: dict[str, Any] = field(default_factory=dict, repr=False)
    _versions: list[int] | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.folder.name

    @functools.cached_property
    def config_path(self) -> Path:
        return self.folder / CONFIG_FILENAME

    @property
    def has_config(self) -> bool:
        """Whether the folder holds a config.pbtxt entry (readable or not)."""
        return CONFIG_FILENAME in self.reporter.folders.names(self.folder)

    def subfolders(self, *below: str) -> list[Path]:
        """Folders in the model folder (or in ``below`` inside it), sorted; none if unreadable."""
        return self.reporter.folders.subfolders(self.folder.joinpath(*below) if below else self.folder)

    @property
    def config(self) -> ModelConfig:
        assert self.parsed is not None, "rules run only on models whose config parsed"
        return self.parsed.message

    def versions(self) -> list[int]:
        """Versions Triton reads from the folder names (sorted; see :func:`read_version`)."""
        if self._versions is None:
            found = {read_version(p.name) for p in self.subfolders()}
            self._versions = sorted(v for v in found if v is not None and -INT64_MAX - 1 <= v <= INT64_MAX)
        return list(self._versions)

    def loaded_versions(self) -> list[int]:
        """Versions Triton loads under the config's version_policy (latest 1 by default)."""
        versions = self.versions()
        if self.parsed is None or not self.config.HasField("version_policy"):
            return versions[-1:]
        policy = self.config.version_policy
        which = policy.WhichOneof("policy_choice")
        if which == "all":
            return versions
        if which == "specific":
            wanted = set(policy.specific.versions)
            return [v for v in versions if v in wanted]
        count = policy.latest.num_versions if which == "latest" else 1
        return versions[-count:] if count > 0 else []

    def report(self, rule: str, message: str, hint: str = "", *field_path: str | int) -> None:
        """Report against config.pbtxt at the line of ``field_path`` (or line 1)."""
        line, col = self.parsed.position(*field_path) if self.parsed and field_path else (1, 1)
        self.reporter.add(rule, self.config_path, message, hint, line=line, col=col, model=self.folder)

    def report_file(self, rule: str, path: Path, message: str, hint: str = "") -> None:
        """Report against a file or folder of the model (no line)."""
        self.reporter.add(rule, path, message, hint, model=self.folder)


@dataclass
class RepositoryContext:
    """A model repository: every folder at its root is a model to Triton, hidden ones too."""

    root: Path
    reporter: Reporter
    models: dict[str, ModelContext] = field(default_factory=dict)
    # set when the repository came from a SageMaker model.tar.gz
    tarball: Path | None = None
    sagemaker_default_model: str | None = None
    # archive members written as empty placeholders (too large, or not read by any rule)
    unextracted: set[Path] = field(default_factory=set)
    # the graph I/O of archive members read from the stream (their placeholders hold no bytes)
    onnx_read: dict[Path, OnnxIO | OnnxReadError] = field(default_factory=dict)

    def holds_content(self, path: Path) -> bool:
        """Whether the file's bytes are there to read (not an archive member left unextracted), or what the
        rules need of it was read from the archive's stream."""
        return path not in self.unextracted or path in self.onnx_read

    def onnx_io(self, path: Path) -> OnnxIO:
        """The ONNX model's graph I/O: as read from the archive stream, else from the file."""
        found = self.onnx_read.get(path)
        if isinstance(found, OnnxReadError):
            raise found
        return found if found is not None else read_onnx_io(path)

    def parsed_models(self) -> Iterator[ModelContext]:
        return (m for m in self.models.values() if m.parsed is not None)
