from __future__ import annotations

import pytest

from pytest_triton.config import parse_config
from pytest_triton.config import print_config
from pytest_triton.errors import ConfigSyntaxError

MISSING_COMMA = """name: "m"
input [
  { name: "a" data_type: TYPE_FP32 dims: [ 1 ] }
  { name: "b" data_type: TYPE_FP32 dims: [ 1 ] }
]
"""


def test_missing_comma_keeps_protobuf_message_and_position() -> None:
    with pytest.raises(ConfigSyntaxError) as info:
        parse_config(MISSING_COMMA, "m/config.pbtxt")
    assert (info.value.line, info.value.col) == (4, 3)
    assert 'Expected ",", found "{"' in str(info.value)
    assert str(info.value).startswith("m/config.pbtxt:4:3: ")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('name: "m"\nfoo: 1\n', 'has no field named "foo"'),
        ('input { name: "a" data_type: TYPE_FP33 }\n', "has no value named TYPE_FP33"),
        ("dynamic_batching {}\nsequence_batching {}\n", 'another member of oneof "scheduling_choice"'),
    ],
    ids=["unknown-field", "unknown-enum", "two-oneof-members"],
)
def test_schema_errors(text: str, expected: str) -> None:
    with pytest.raises(ConfigSyntaxError, match=expected):
        parse_config(text)


def test_positions_point_at_fields() -> None:
    parsed = parse_config('name: "m"\ninput [\n  { name: "a" },\n  {\n    name: "b"\n    dims: [ 1, 0 ]\n  }\n]\n')
    assert parsed.line("input", 1, "dims") == 6
    assert parsed.position("input", 1, "dims", 1) == (6, 16)
    assert parsed.line("input", 0, "name") == 3
    assert parsed.line("output", 0) == 1  # absent: falls back to line 1


def test_print_writes_max_batch_size_zero_and_round_trips() -> None:
    parsed = parse_config('name: "m"\nbackend: "python"\ninput { name: "a" data_type: TYPE_FP32 dims: 1 }\n')
    text = print_config(parsed.message)
    assert text.splitlines()[1] == "max_batch_size: 0"  # in field-number order, after name
    assert parse_config(text).message == parsed.message


@pytest.mark.parametrize(
    "before",
    [
        "",  # the fast parser meets the long value itself
        'name: "a\\tb"\n',  # an escape: the fast parser gives up first, the check of every token finds it
        "max_batch_size: 0x10\n",  # a hex number: the same
        'name: "bad \\o escape"\n',  # an escape Triton refuses: the length is refused first, as it is read first
    ],
)
def test_a_value_over_max_literal_bytes_is_refused_where_it_stands(before: str) -> None:
    from pytest_triton.errors import ConfigLimitExceeded

    text = f'{before}parameters {{ key: "k" value {{ string_value: "{"x" * 100}" }} }}\n'
    with pytest.raises(ConfigLimitExceeded, match="max_literal_bytes=50") as raised:
        parse_config(text, max_literal_bytes=50)
    assert (raised.value.line, raised.value.col) == (text.count("\n") - 1 + 1, text.splitlines()[-1].index('"x') + 1)
    if "\\o" not in before:  # the escape Triton refuses is refused once the value is within the limit
        assert parse_config(text, max_literal_bytes=200).message.parameters["k"].string_value == "x" * 100
