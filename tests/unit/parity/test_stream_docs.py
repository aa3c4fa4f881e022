"""docs/contracts.md shows model_repos/streaming.contracts.toml's variants as they are, and the file is valid."""

from __future__ import annotations

import re
from pathlib import Path

from pytest_triton.contracts.declaration import load_declaration

ROOT = Path(__file__).resolve().parents[3]


def test_the_documented_stream_declaration_is_the_committed_one() -> None:
    text = (ROOT / "docs" / "contracts.md").read_text(encoding="utf-8")
    match = re.search(
        r"<!-- the declaration of model_repos/streaming.contracts.toml[^>]*-->\s*```toml\n(.*?)```", text, re.S
    )
    assert match, "docs/contracts.md lost its streamed-variants example"
    committed = (ROOT / "model_repos" / "streaming.contracts.toml").read_text(encoding="utf-8")
    lines = [line.split("#")[0].rstrip() for line in match.group(1).splitlines()]
    missing = [line for line in lines if line and line not in committed]
    assert not missing, f"docs/contracts.md shows lines the declaration does not have: {missing}"


def test_the_committed_stream_declaration_reads() -> None:
    declaration = load_declaration(ROOT / "model_repos" / "streaming.contracts.toml")
    assert {v.protocol for v in declaration.variants.values()} == {"stream"}
    assert declaration.reference.variant == "square"
