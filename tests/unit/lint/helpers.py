"""Small helpers to write repositories for rule tests."""

from __future__ import annotations

from pathlib import Path

from pytest_triton.lint import Finding
from pytest_triton.lint import lint_path


def write_model(root: Path, name: str, config: str, files: dict[str, str | bytes] | None = None) -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.pbtxt").write_text(config)
    for rel, content in (files or {}).items():
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)
    return folder


def rules(findings: list[Finding]) -> list[str]:
    return [f.rule for f in findings]


def lint_rules(path: Path) -> list[str]:
    return rules(lint_path(path))
