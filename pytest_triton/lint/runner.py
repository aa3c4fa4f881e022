"""Run every rule over one or more lint targets and collect all findings.

A target is a model repository folder, a single model folder (its siblings are read so
ensembles can be checked, but only the model's own findings are kept), a folder holding
several repositories, or a SageMaker ``model.tar.gz``.
"""

from __future__ import annotations

import re
import tempfile
import traceback
from collections.abc import Callable
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pytest_triton.config import CONFIG_FILENAME
from pytest_triton.config import read_config
from pytest_triton.errors import ConfigSyntaxError
from pytest_triton.lint.context import ModelContext
from pytest_triton.lint.context import Reporter
from pytest_triton.lint.context import RepositoryContext
from pytest_triton.lint.context import read_version
from pytest_triton.lint.finding import Finding
from pytest_triton.lint.rules import model_checks
from pytest_triton.lint.rules import repository_checks

_SUPPRESS = re.compile(r"triton-lint:\s*disable=([A-Z0-9_, ]+)")


def _looks_like_model(folder: Path) -> bool:
    if (folder / CONFIG_FILENAME).exists():
        return True
    return any(child.is_dir() and read_version(child.name) is not None for child in folder.iterdir())


def is_repository(folder: Path) -> bool:
    """A folder with at least one child that looks like a model."""
    try:
        return any(child.is_dir() and _looks_like_model(child) for child in folder.iterdir())
    except OSError:
        return False


def find_repositories(folder: Path) -> list[Path]:
    """Repositories at or below ``folder`` (a folder of repositories, like model_repos/)."""
    if is_repository(folder):
        return [folder]
    found: list[Path] = []
    for child in sorted(folder.iterdir()):
        if child.is_dir() and not child.name.startswith("."):
            found.extend(find_repositories(child))
    return found


def is_model_target(target: Path) -> bool:
    """Whether ``lint_path(target)`` treats ``target`` as one model folder (not a repository)."""
    return target.is_dir() and not is_repository(target) and _looks_like_model(target)


def target_models(target: Path) -> list[Path]:
    """The model folders that ``lint_path(target)`` reports on (none for an archive)."""
    if not target.is_dir():
        return []
    if is_model_target(target):
        return [target]
    return [child for root in find_repositories(target) for child in sorted(root.iterdir()) if child.is_dir()]


def _run(check: Callable[[Any], None], target: ModelContext | RepositoryContext, reporter: Reporter) -> None:
    try:
        check(target)
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
        )


def load_model(folder: Path, reporter: Reporter) -> ModelContext:
    """Read a model folder's config, reporting C002/C003/C001 instead of raising."""
    config = folder / CONFIG_FILENAME
    model = ModelContext(folder=folder, parsed=None, reporter=reporter)
    if not config.exists():
        return model  # layout rules decide whether a missing config is fatal
    try:
        model.parsed = read_config(config)
    except ConfigSyntaxError as exc:
        reporter.add(
            "C001",
            config,
            f"failed to read text proto: {exc.reason}",
            "fix the syntax at this position (Triton refuses the whole model)",
            line=exc.line,
            col=exc.col,
        )
    except OSError as exc:
        reporter.add("C003", config, f"cannot read config: {exc.strerror or exc}", "check permissions")
    return model


def lint_repository(root: Path, reporter: Reporter, **options: Any) -> RepositoryContext:
    """Lint every model folder of ``root``; findings go to ``reporter``."""
    repo = RepositoryContext(root=root, reporter=reporter, **options)
    for child in sorted(root.iterdir()):
        if child.is_dir():
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


def apply_suppressions(findings: Iterable[Finding], files: dict[str, str]) -> list[Finding]:
    """Drop findings whose line carries ``# triton-lint: disable=RULE[,RULE]``."""
    kept: list[Finding] = []
    for finding in findings:
        text = files.get(finding.path)
        if text is not None and finding.line > 0:
            lines = text.splitlines()
            if finding.line <= len(lines):
                match = _SUPPRESS.search(lines[finding.line - 1])
                if match and finding.rule in {r.strip() for r in match.group(1).split(",")}:
                    continue
        kept.append(finding)
    return kept


def _config_texts(repo: RepositoryContext) -> dict[str, str]:
    return {repo.reporter.show(m.config_path): m.parsed.text for m in repo.models.values() if m.parsed is not None}


def lint_path(path: str | Path, *, sagemaker_default_model: str | None = None) -> list[Finding]:
    """Lint one target and return every finding, sorted by path and line."""
    from pytest_triton.lint.tarball import lint_tarball

    target = Path(path)
    reporter = Reporter()
    texts: dict[str, str] = {}
    if target.is_file() and target.name.endswith((".tar.gz", ".tgz", ".tar")):
        with tempfile.TemporaryDirectory(prefix="pytest-triton-lint-") as tmp:
            repo = lint_tarball(target, Path(tmp), reporter, sagemaker_default_model)
            if repo is not None:
                texts = _config_texts(repo)
        return sorted(apply_suppressions(reporter.findings, texts))
    if not target.is_dir():
        what = "does not exist" if not target.exists() else "is neither a folder nor a model.tar.gz"
        reporter.add(
            "L107",
            target,
            f"lint target {str(target)!r} {what}",
            "pass a repository, a model folder or a .tar.gz",
        )
        return reporter.findings
    if is_model_target(target):
        repo = lint_repository(target.parent, reporter, sagemaker_default_model=sagemaker_default_model)
        prefix = str(target) + "/"
        own = [f for f in reporter.findings if f.path == str(target) or f.path.startswith(prefix)]
        return sorted(apply_suppressions(own, _config_texts(repo)))
    repositories = find_repositories(target)
    if not repositories:
        reporter.add("L109", target, "no model folders found (a model folder holds config.pbtxt and version folders)")
    for root in repositories:
        repo = lint_repository(root, reporter, sagemaker_default_model=sagemaker_default_model)
        texts.update(_config_texts(repo))
    return sorted(apply_suppressions(reporter.findings, texts))


def lint_paths(paths: Iterable[str | Path], *, sagemaker_default_model: str | None = None) -> list[Finding]:
    findings: list[Finding] = []
    for path in paths:
        findings.extend(lint_path(path, sagemaker_default_model=sagemaker_default_model))
    return findings
