"""The fast parser builds exactly protobuf's message, and accepts nothing protobuf refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from google.protobuf import text_format
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from pytest_triton.config import model_config_class
from pytest_triton.config.fastparse import Unsupported
from pytest_triton.config.fastparse import build_message
from pytest_triton.config.positions import tokenize

WORKTREE = Path(__file__).resolve().parents[3]
CORPUS = [
    *sorted((WORKTREE / "model_repos").rglob("config.pbtxt")),
    *sorted((WORKTREE.parent / "shared" / "conformance").rglob("config.pbtxt")),
]
TEXTS = [path.read_text(encoding="utf-8", errors="replace") for path in CORPUS]
# pieces a mutation inserts: the grammar's punctuation, odd numbers, escapes, duplicates
PIECES = [
    "{", "}", "[", "]", ":", ",", ";", "<", ">", '"', "'", "\\", "#", " ", "\n", "-", "+", ".", "0", "07", "0x1F",
    "1e5", "1.5f", "inf", "nan", "true", "True", "t", "TYPE_FP32", "KIND_GPU", "4294967296", '"a\\n"', "dims: [1]",
    "max_batch_size: 8", "name: \"x\"", "input { }", "parameters { key: \"k\" value { string_value: \"v\" } }",
]  # fmt: skip


def fast(text: str) -> Any:
    message = model_config_class()()
    try:
        build_message(tokenize(text), message)
    except Unsupported:
        return None
    return message


def reference(text: str) -> Any:
    message = model_config_class()()
    try:
        text_format.Parse(text, message)
    except (text_format.ParseError, ValueError):
        return None
    return message


def test_corpus_is_there() -> None:
    assert len(TEXTS) > 100


def test_fast_path_matches_protobuf_on_every_corpus_config() -> None:
    taken = 0
    for path, text in zip(CORPUS, TEXTS):
        built = fast(text)
        if built is not None:
            taken += 1
            assert built == reference(text), path
    assert taken > len(TEXTS) // 2  # the fast path is the common case


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(TEXTS), st.lists(st.tuples(st.floats(0, 1), st.integers(0, 3), st.sampled_from(PIECES)), max_size=4)
)
def test_fast_path_never_accepts_more_than_protobuf(text: str, edits: list[tuple[float, int, str]]) -> None:
    for where, cut, piece in edits:
        at = int(where * len(text))
        text = text[:at] + piece + text[at + cut :]
    built = fast(text)
    if built is not None:
        expected = reference(text)
        assert expected is not None, f"fast path accepted what protobuf refuses:\n{text}"
        assert built == expected


@pytest.mark.parametrize(
    "text",
    [
        "max_batch_size: 1 max_batch_size: 1",
        "max_batch_size: 8,,",
        "input [ { dims: [ 1, 2, ] } ]",
        "dynamic_batching { } dynamic_batching { }",
        "max_batch_size 8",
        "instance_group [ { kind: 5 } ]",
        'name: "x\\"y"',
    ],
)
def test_fast_path_hands_unusual_text_to_protobuf(text: str) -> None:
    assert fast(text) is None
