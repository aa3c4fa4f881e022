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


LISTS = """input [ { name: "a" dims: [ 1, -1, 3 ] reshape: { shape: [ 3, 1 ] } } ]
output { name: "y" dims: 4 dims: 5 dims: [ 6, 7 ] }  # values of one field given singly and in lists
parameters { key: "k" value { string_value: "v" "w" } }
instance_group [ { gpus: [ 0, 1 ] count: 2 }, { gpus: [] kind: KIND_CPU } ]
"""


def _at(text: str, position: tuple[int, int]) -> str:
    line, col = position
    return text.splitlines()[line - 1][col - 1 :]


@pytest.mark.parametrize(
    "text", [LISTS, MIXED, *(path.read_text() for path in CONFIGS)], ids=["lists", "mixed", *map(str, CONFIGS)]
)
def test_each_position_is_where_its_field_or_value_is_written(text: str) -> None:
    index = index_tokens(tokenize(text))
    assert len(index.positions) == len(list(index.positions))
    for path, position in index.positions.items():
        written = _at(text, position)
        if isinstance(path[-1], str):
            assert written.lstrip("[").startswith(path[-1]), (path, written)
        elif path in index.literals:
            literal = index.literals[path]
            assert written.startswith(literal) or written[1:].startswith(literal[:1]), (path, written, literal)


def test_a_list_of_scalars_has_a_position_and_literal_per_value() -> None:
    dims = ", ".join(str(n) for n in range(1, 1001))
    text = f'name: "m"\ninput [ {{ name: "a" dims: [ {dims} ] }} ]\noutput {{ name: "y" dims: 1 dims: [ 2, 3 ] }}\n'
    index = index_tokens(tokenize(text))
    assert [index.literals[("input", 0, "dims", n)] for n in range(1000)] == [str(n) for n in range(1, 1001)]
    assert index.find("input", 0, "dims", 999) == (2, text.splitlines()[1].index("1000") + 1)
    assert ("input", 0, "dims", 1000) not in index.positions
    assert index.find("input", 0, "dims", 1000) == index.find("input", 0, "dims")  # the field, when past the end
    assert [index.literals[("output", 0, "dims", n)] for n in range(3)] == ["1", "2", "3"]
    assert ("output", 0, "dims", 3) not in index.literals
    assert ("input", 0) in index.positions
    assert ("input", 0) not in index.literals  # a message, not a literal
    assert index.map_entries("parameters") == []
    assert dict(index.literals)[("input", 0, "name", 0)] == "a"
