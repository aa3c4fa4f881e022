"""Run every rule over one or more lint targets and collect all findings.

A target is a model repository folder, a single model folder (its siblings are read so
ensembles can be checked, but only the model's own findings are kept), a folder holding
several repositories, or a SageMaker ``model.tar.gz``. Whatever the target holds, linting
ends with findings: a rule that raises is X001, an unreadable path L111, a link loop L112,
a size over a limit C004/C005/D608.
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
import stat
import tempfile
import traceback
import warnings
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from pytest_triton.archive.files import RefusedFile
from pytest_triton.archive.files import read_file_bytes
from pytest_triton.config import CONFIG_FILENAME
from pytest_triton.config.model import decode_config
from pytest_triton.config.model import parse_config
from pytest_triton.errors import ConfigError
from pytest_triton.lint.context import ModelContext
from pytest_triton.lint.context import Reporter
from pytest_triton.lint.context import RepositoryContext
from pytest_triton.lint.context import read_version
from pytest_triton.lint.finding import Finding
from pytest_triton.lint.limits import LintLimits
from pytest_triton.lint.limits import describe
from pytest_triton.lint.rules import model_checks
from pytest_triton.lint.rules import repository_checks
from pytest_triton.lint.walk import FolderReader
from pytest_triton.lint.walk import describe_access
from pytest_triton.lint.walk import folder_identity

_SUPPRESS = re.compile(r"triton-lint:\s*disable=([A-Z0-9_, ]+)")
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar")


@dataclass
class LintResult:
    """The findings of one target, grouped by the model folder they belong to.

    ``groups`` maps each model folder (as displayed) to its findings, in folder order; the key
    ``""`` holds what belongs to the target itself (repository root, archive, the path).
    """

    target: Path
    groups: dict[str, list[Finding]] = field(default_factory=dict)

    @property
    def findings(self) -> list[Finding]:
        return sorted(f for group in self.groups.values() for f in group)


def _looks_like_model(folder: Path, folders: FolderReader) -> bool:
    entries = folders.entries(folder)
    return any(e.name == CONFIG_FILENAME for e in entries) or any(
        e.is_dir and read_version(e.name) is not None for e in entries
    )


def is_repository(folder: Path, folders: FolderReader | None = None) -> bool:
    """A folder with at least one child that looks like a model."""
    folders = folders or FolderReader(Reporter())
    return any(_looks_like_model(child, folders) for child in folders.subfolders(folder))


def find_repositories(folder: Path, folders: FolderReader, seen: set[tuple[int, int]] | None = None) -> list[Path]:
    """Repositories at or below ``folder`` (a folder of repositories, like model_repos/).

    Each real folder is visited once: a link back to a folder already seen is reported (L112)."""
    seen = set() if seen is None else seen
    identity = folder_identity(folder)
    if identity is not None:
        if identity in seen:
            folders.reporter.add(
                "L112",
                folder,
                f"{str(folder)!r} leads back to a folder already searched ({os.path.realpath(folder)!r}); "
                "it is not followed",
                "remove the link, or point it outside the folder being linted",
            )
            return []
        seen.add(identity)
    if is_repository(folder, folders):
        return [folder]
    found: list[Path] = []
    for child in folders.subfolders(folder):
        if not child.name.startswith("."):
            found.extend(find_repositories(child, folders, seen))
    return found


def is_model_target(target: Path, folders: FolderReader | None = None) -> bool:
    """Whether ``lint_path(target)`` treats ``target`` as one model folder (not a repository)."""
    folders = folders or FolderReader(Reporter())
    return target.is_dir() and not is_repository(target, folders) and _looks_like_model(target, folders)


def _run(check: Callable[[Any], None], target: ModelContext | RepositoryContext, reporter: Reporter) -> None:
    model = target.folder if isinstance(target, ModelContext) else None
    try:
        check(target)
    except OSError as exc:  # a path the rule needed could not be read: say which, not a traceback
        where = target.folder if isinstance(target, ModelContext) else target.root
        reporter.folders.unreadable(Path(exc.filename) if exc.filename else where, exc)
    except Exception as exc:  # a rule bug must not hide the other findings
        where = target.config_path if isinstance(target, ModelContext) else target.root
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        reporter.add(
            "X001",
            where,
            f"rule {check.__module__}.{check.__name__} raised {type(exc).__name__}: {exc} "
            f"({Path(frame.filename).name}:{frame.lineno})",
            "this is a bug in pytest-triton; the other rules still ran",
            line=1,
            col=1,
            model=model,
        )


def _read_config_bytes(config: Path, reporter: Reporter, model: Path) -> bytes | None:
    """The file's bytes, or None with a finding (unreadable, not a regular file, a link out of the repository,
    over the size limit)."""
    limit = reporter.limits.max_config_bytes
    try:
        return read_file_bytes(config, "config", root=model.parent, limit=limit)
    except RefusedFile as refused:
        if refused.os_error is not None:
            reason = describe_access(config, refused.os_error)
            reporter.add("C003", config, f"cannot read config: {reason}", "check permissions", model=model)
        elif refused.refusal == "too large":
            message = f"config.pbtxt {refused.fact}, over the limit {describe('max_config_bytes', limit)}"
            hint = "a model config is a few kilobytes: generated content belongs in the model's files"
            reporter.add("C004", config, message, hint, line=1, col=1, model=model)
        elif refused.refusal == "outside root":
            hint = "Triton reads it, but the linter quotes only the repository's own files: copy it in"
            reporter.add("L114", config, f"config.pbtxt {refused.fact}", hint, model=model)
        else:
            reporter.add("C003", config, f"config.pbtxt {refused.fact}", "make it a plain text file", model=model)
    return None


def load_model(folder: Path, reporter: Reporter) -> ModelContext:
    """Read a model folder's config, reporting C001/C003/C004/C005 instead of raising."""
    model = ModelContext(folder=folder, parsed=None, reporter=reporter)
    config = model.config_path
    if not model.has_config:
        return model  # layout rules decide whether a missing config is fatal
    data = _read_config_bytes(config, reporter, folder)
    if data is None:
        return model
    try:
        model.parsed = parse_config(
            decode_config(data, str(config)), str(config), max_literal_bytes=reporter.limits.max_literal_bytes
        )
    except ConfigError as exc:
        rule = "C005" if "max_literal_bytes" in exc.reason else "C001"
        reporter.add(
            rule,
            config,
            f"failed to read text proto from {folder.name}/{CONFIG_FILENAME}: {exc.reason}",
            "fix the syntax at this position (Triton refuses the whole model)"
            if rule == "C001"
            else "a literal this long is not a model setting: move the data into the model's files",
            line=exc.line or 1,
            col=exc.col or 1,
            model=folder,
        )
    return model


def lint_repository(
    root: Path, reporter: Reporter, *, include: Path | None = None, **options: Any
) -> RepositoryContext:
    """Lint every model folder of ``root`` (and ``include``, when ``root`` cannot be listed)."""
    repo = RepositoryContext(root=root, reporter=reporter, **options)
    children = reporter.folders.subfolders(root)
    if include is not None and include not in children:
        children = [*children, include]
    for child in children:
        model = load_model(child, reporter)
        model.repository = repo
        repo.models[child.name] = model
    for check in repository_checks():
        _run(check, repo, reporter)
    model_rules = model_checks()
    for model in repo.parsed_models():
        for check in model_rules:
            _run(check, model, reporter)
    return repo


def suppressed_rules(text: str) -> dict[int, frozenset[str]]:
    """The rules each line of ``text`` disables (``# triton-lint: disable=RULE[,RULE]``), by 1-based line.

    Read once per file: a config with tens of thousands of findings must not be scanned once per finding."""
    if "triton-lint" not in text:
        return {}
    disabled: dict[int, frozenset[str]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if "triton-lint" in line and (match := _SUPPRESS.search(line)):
            disabled[number] = frozenset(rule.strip() for rule in match.group(1).split(","))
    return disabled


def apply_suppressions(findings: Iterable[Finding], files: dict[str, str]) -> list[Finding]:
    """Drop findings whose line carries ``# triton-lint: disable=RULE[,RULE]``."""
    kept: list[Finding] = []
    disabled_in: dict[str, dict[int, frozenset[str]]] = {}
    for finding in findings:
        disabled = disabled_in.get(finding.path)
        if disabled is None:
            text = files.get(finding.path)
            disabled = disabled_in[finding.path] = suppressed_rules(text) if text is not None else {}
        if finding.rule in disabled.get(finding.line, ()):
            continue
        kept.append(finding)
    return kept


def _unlinked(repo: RepositoryContext) -> RepositoryContext:
    """``repo`` with its models' links back to it cut once the rules ran: the run's contexts then hold no
    cycle, and are freed as the run returns instead of by one collector pass over everything the run made
    when the collector is enabled again (~10% of the time of a 10,000-model run)."""
    for model in repo.models.values():
        model.repository = None
    return repo


def _config_texts(repo: RepositoryContext) -> dict[str, str]:
    return {repo.reporter.show(m.config_path): m.parsed.text for m in repo.models.values() if m.parsed is not None}


def _grouped(
    reporter: Reporter, texts: dict[str, str], models: list[str], keep: Callable[[str, str], bool]
) -> LintResult:
    """The run's findings by owner; ``keep(owner, path)`` says which belong to the target."""
    kept = set(map(id, apply_suppressions(reporter.findings, texts)))
    groups: dict[str, list[Finding]] = {name: [] for name in models}
    for finding, owner in zip(reporter.findings, reporter.owners):
        if id(finding) in kept and keep(owner, finding.path):
            groups.setdefault(owner, []).append(finding)
    return LintResult(Path(), {key: sorted(value) for key, value in groups.items()})


def _lint(target: Path, reporter: Reporter, sagemaker_default_model: str | None) -> LintResult:
    from pytest_triton.lint.tarball import lint_tarball

    folders = reporter.folders
    try:
        info = target.stat()
    except FileNotFoundError:
        reporter.add("L107", target, f"lint target {str(target)!r} does not exist", _TARGET_HINT)
        return _grouped(reporter, {}, [], lambda owner, path: True)
    except OSError as exc:  # behind a folder this user cannot search
        blocked = _blocked_ancestor(target)
        folders.unreadable(blocked or target, exc, what="folder")
        return _grouped(reporter, {}, [], lambda owner, path: True)
    if stat.S_ISREG(info.st_mode) and target.name.endswith(ARCHIVE_SUFFIXES):
        with tempfile.TemporaryDirectory(prefix="pytest-triton-lint-") as tmp:
            archived = lint_tarball(target, Path(tmp), reporter, sagemaker_default_model)
            if archived is None:
                return _grouped(reporter, {}, [], lambda owner, path: True)
            inside = [reporter.show(m.folder) for m in archived.models.values()]
            archived_texts = _config_texts(_unlinked(archived))
            return _grouped(reporter, archived_texts, inside, lambda owner, path: True)
    if not stat.S_ISDIR(info.st_mode):
        reporter.add(
            "L107", target, f"lint target {str(target)!r} is neither a folder nor a model.tar.gz", _TARGET_HINT
        )
        return _grouped(reporter, {}, [], lambda owner, path: True)
    if is_model_target(target, folders):
        parent = target.parent
        repo = lint_repository(parent, reporter, include=target, sagemaker_default_model=sagemaker_default_model)
        own = reporter.show(target)
        # the model's own findings, and the repository folder's if it could not be read
        unlisted = reporter.show(parent) if folders.was_unreadable(parent) else None
        own_texts = _config_texts(_unlinked(repo))
        return _grouped(reporter, own_texts, [own], lambda owner, path: owner == own or path == unlisted)
    texts: dict[str, str] = {}
    models: list[str] = []
    repositories = find_repositories(target, folders)
    if not repositories and not folders.was_unreadable(target):
        reporter.add("L109", target, "no model folders found (a model folder holds config.pbtxt and version folders)")
    for root in repositories:
        repo = lint_repository(root, reporter, sagemaker_default_model=sagemaker_default_model)
        texts.update(_config_texts(_unlinked(repo)))
        models += [reporter.show(m.folder) for m in repo.models.values()]
    return _grouped(reporter, texts, models, lambda owner, path: True)


_TARGET_HINT = "pass a repository, a model folder or a .tar.gz"


def _blocked_ancestor(target: Path) -> Path | None:
    """The outermost folder above ``target`` that this user cannot search, if any."""
    for folder in reversed(target.absolute().parents):
        if not os.access(folder, os.X_OK):
            return folder
    return None


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while linting: the run keeps every parsed config alive until
    it ends, and gen-2 passes over them cost a quarter of the time at a few thousand models."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _warning_findings(reporter: Reporter, target: Path, warned: list[warnings.WarningMessage]) -> list[Finding]:
    """X002 for each distinct warning a library gave while linting ``target``: shown, never raised."""
    start = len(reporter.findings)
    for text, where in dict.fromkeys(
        (f"{w.category.__name__}: {w.message}", f"{Path(w.filename).name}:{w.lineno}") for w in warned
    ):
        reporter.add(
            "X002",
            target,
            f"a library warned while linting: {text} ({where})",
            "the findings are complete; the warning was caught, not raised (report it if it names the config)",
        )
    return reporter.findings[start:]


def lint_target(
    path: str | Path, *, sagemaker_default_model: str | None = None, limits: LintLimits | None = None
) -> LintResult:
    """Lint one target; its findings grouped by model folder. Never raises for what the target holds."""
    target = Path(path)
    reporter = Reporter(limits=limits or LintLimits())
    try:
        with _collector_paused(), warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")  # under -W error a library's warning would end the run as X001
            result = _lint(target, reporter, sagemaker_default_model)
        result.groups.setdefault("", []).extend(_warning_findings(reporter, target, warned))
    except RecursionError as exc:
        reporter.add("X001", target, f"linting stopped: {exc}", "this is a bug in pytest-triton")
        result = _grouped(reporter, {}, [], lambda owner, path: True)
    except Exception as exc:  # the last guard: a bug is one finding of this target, not a traceback
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        reporter.add(
            "X001",
            target,
            f"linting raised {type(exc).__name__}: {exc} ({Path(frame.filename).name}:{frame.lineno})",
            "this is a bug in pytest-triton; please report it with the target",
        )
        result = _grouped(reporter, {}, [], lambda owner, path: True)
    result.target = target
    reporter.forget_folders()  # no cycle left (see _unlinked)
    return result


def lint_path(
    path: str | Path, *, sagemaker_default_model: str | None = None, limits: LintLimits | None = None
) -> list[Finding]:
    """Lint one target and return every finding, sorted by path and line."""
    return lint_target(path, sagemaker_default_model=sagemaker_default_model, limits=limits).findings


def lint_paths(
    paths: Iterable[str | Path], *, sagemaker_default_model: str | None = None, limits: LintLimits | None = None
) -> list[Finding]:
    findings: list[Finding] = []
    for path in paths:
        findings.extend(lint_path(path, sagemaker_default_model=sagemaker_default_model, limits=limits))
    return findings
