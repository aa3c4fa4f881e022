"""The position index scans each top-level field when a path under it is first asked: asked in any order, it
gives what a scan of the whole text gives."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from pytest_triton.config.positions import index_tokens
from pytest_triton.config.positions import tokenize

ROOT = Path(__file__).resolve().parents[3]
CONFIGS = sorted(ROOT.glob("model_repos/**/config.pbtxt"))
MIXED = """name: "m"
input [ { name: "a" dims: [ 1, 2 ] }, { name: "b" dims: [ 3 ] } ]
parameters { key: "k1" value { string_value: "v1" } }
output { name: "y" dims: [ 4 ] }
parameters: { key: "k2" value { string_value: "a" "b" } } ;
input < name: "c" dims: 5 >
max_batch_size: 8
"""


@pytest.mark.parametrize("text", [MIXED, *(path.read_text() for path in CONFIGS)], ids=["mixed", *map(str, CONFIGS)])
def test_fields_scanned_when_asked_agree_with_a_whole_scan(text: str) -> None:
    whole = index_tokens(tokenize(text), at_once=True)
    expected = dict(whole.positions)
    assert expected  # the config has fields
    paths = list(expected)
    random.Random(7).shuffle(paths)  # not text order: each top-level field is scanned on its own
    lazy = index_tokens(tokenize(text))
    assert {path: lazy.find(*path) for path in paths} == expected
    assert dict(lazy.literals) == dict(whole.literals)
    assert lazy.map_entries("parameters") == whole.map_entries("parameters")
