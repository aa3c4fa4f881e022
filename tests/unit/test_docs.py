"""The documentation is current: the lint rule table matches the catalog, and every relative link resolves."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def test_the_lint_rule_table_is_the_catalog() -> None:
    done = subprocess.run(
        [sys.executable, "docs/generate_rules.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_the_check_sees_a_stale_table(tmp_path: Path) -> None:
    # the verdict can flip: a page whose table lacks one rule of the catalog is out of date
    script = (ROOT / "docs" / "generate_rules.py").read_text(encoding="utf-8")
    page = (ROOT / "docs" / "lint.md").read_text(encoding="utf-8")
    stale = re.sub(r"^\| X001 \|.*\n", "", page, flags=re.M)
    assert stale != page
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "generate_rules.py").write_text(script, encoding="utf-8")
    (tmp_path / "docs" / "lint.md").write_text(stale, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "docs/generate_rules.py", "--check"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "rule table differs from the catalog" in done.stderr


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped (hyphens kept), spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {_slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, re.M)}


def _links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return [m.group(1) for m in LINK.finditer(text) if not re.match(r"[a-z]+://|mailto:", m.group(1))]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for link in _links(page):
        target, _, anchor = link.partition("#")
        path = (page.parent / target).resolve() if target else page
        if not path.exists():
            broken.append(f"{link}: {target} does not exist")
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(f"{link}: no heading #{anchor} in {path.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_slug_is_githubs() -> None:
    assert _slug("sagemaker (`--cloud`)") == "sagemaker---cloud"
    assert _slug("What a started server hands out") == "what-a-started-server-hands-out"


def test_the_readme_names_the_two_commands_ci_runs() -> None:
    """The README's two commands are what ``.ci/run`` runs, word for word."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"^pip install -e '\.\[test\]' && (.+)$", readme, re.M)
    assert commands == ["bash .ci/main-job", "python -m pytest -n 2 --dist loadgroup tests"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert all(command in ci for command in commands), f".ci/run does not run {commands} as written"


def test_the_readme_is_a_page() -> None:
    # what it is, install, the two commands, a first test, links: the rest lives in docs/
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines; move detail into docs/"
