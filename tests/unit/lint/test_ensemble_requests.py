"""Which output sets an ensemble answers (Triton 2.51's pruning), and what the plugin's clients ask for.

The verdicts on the scenario-07 shape were read from the embedded tritonserver (every subset of LABEL,
SCORE and LOGITS requested over HTTP): {LABEL}, {SCORE}, {LOGITS} and {LABEL, SCORE} fail with the
deadlock message, {LABEL, LOGITS}, {SCORE, LOGITS} and all three work. The differential test checks
the simulation against the server on drawn ensembles.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_triton.config import parse_config
from pytest_triton.config.ensemble_outputs import DEADLOCK
from pytest_triton.config.ensemble_outputs import failing_output_sets
from pytest_triton.config.ensemble_outputs import request_works
from pytest_triton.config.ensemble_outputs import working_request
from pytest_triton.contracts.parity_run import working_outputs


def pipeline(*, scores_read_later: bool = True) -> str:
    """tokenize -> classify -> (LOGITS) -> postprocess -> LABEL, SCORE; LOGITS also an ensemble output."""
    post_in = "LOGITS" if scores_read_later else "HIDDEN"
    out_map = "LOGITS" if scores_read_later else "HIDDEN"
    extra = "" if scores_read_later else 'step { model_name: "copy" input_map { key: "x" value: "HIDDEN" } '
    extra += "" if scores_read_later else 'output_map { key: "y" value: "LOGITS" } }\n'
    return (
        'name: "nli"\nplatform: "ensemble"\nmax_batch_size: 8\n'
        'input { name: "TEXT" data_type: TYPE_STRING dims: [ 1 ] }\n'
        'output { name: "LABEL" data_type: TYPE_STRING dims: [ 1 ] }\n'
        'output { name: "SCORE" data_type: TYPE_FP32 dims: [ 1 ] }\n'
        'output { name: "LOGITS" data_type: TYPE_FP32 dims: [ 3 ] }\n'
        "ensemble_scheduling {\n"
        'step { model_name: "tokenize" input_map { key: "t" value: "TEXT" } output_map { key: "ids" value: "ids" } '
        'output_map { key: "mask" value: "mask" } }\n'
        'step { model_name: "classify" input_map { key: "ids" value: "ids" } input_map { key: "mask" value: "mask" } '
        f'output_map {{ key: "logits" value: "{out_map}" }} }}\n'
        f'step {{ model_name: "post" input_map {{ key: "logits" value: "{post_in}" }} '
        'output_map { key: "LABEL" value: "LABEL" } output_map { key: "SCORE" value: "SCORE" } }\n'
        f"{extra}}}\n"
    )


SCENARIO = parse_config(pipeline()).message


@pytest.mark.parametrize(
    ("requested", "works"),
    [
        (["LABEL"], False),
        (["SCORE"], False),
        (["LOGITS"], False),  # asked for, yet pruned: post is pruned and LOGITS has no reader left
        (["LABEL", "SCORE"], False),
        (["LABEL", "LOGITS"], True),
        (["SCORE", "LOGITS"], True),
        (["LABEL", "SCORE", "LOGITS"], True),
        ([], True),  # no output named: all of them
    ],
)
def test_scenario_shape_verdicts_match_the_server(requested: list[str], works: bool) -> None:
    assert request_works(SCENARIO, requested) is works


def test_failing_sets_and_the_set_a_client_asks_for() -> None:
    assert failing_output_sets(SCENARIO) == [("LABEL",), ("SCORE",), ("LOGITS",), ("LABEL", "SCORE")]
    assert working_request(SCENARIO, ["LABEL"]) == ["LABEL", "LOGITS"]
    assert working_request(SCENARIO, ["LABEL", "SCORE"]) == ["LABEL", "SCORE", "LOGITS"]
    assert working_request(SCENARIO, ["LABEL", "LOGITS"]) == ["LABEL", "LOGITS"]
    assert working_request(SCENARIO, []) == []


def test_outputs_no_step_reads_can_be_asked_for_alone() -> None:
    # LOGITS written by "copy" from HIDDEN, which post reads: no ensemble output is read by a step
    config = parse_config(pipeline(scores_read_later=False)).message
    assert failing_output_sets(config) == []
    assert working_request(config, ["LABEL"]) == ["LABEL"]


def branches(first: str) -> str:
    """Two independent branches, IN1 -> p -> OUT_A and IN2 -> q -> OUT_B; ``first`` is step 0."""
    steps = {
        "p": 'step { model_name: "p" input_map { key: "i" value: "IN1" } output_map { key: "o" value: "OUT_A" } }\n',
        "q": 'step { model_name: "q" input_map { key: "i" value: "IN2" } output_map { key: "o" value: "OUT_B" } }\n',
    }
    return (
        'name: "e"\nplatform: "ensemble"\n'
        'input { name: "IN1" data_type: TYPE_FP32 dims: [ 1 ] }\n'
        'input { name: "IN2" data_type: TYPE_FP32 dims: [ 1 ] }\n'
        'output { name: "OUT_A" data_type: TYPE_FP32 dims: [ 1 ] }\n'
        'output { name: "OUT_B" data_type: TYPE_FP32 dims: [ 1 ] }\n'
        "ensemble_scheduling {\n" + steps[first] + steps["q" if first == "p" else "p"] + "}\n"
    )


@pytest.mark.parametrize(("first", "fails"), [("p", "OUT_A"), ("q", "OUT_B")])
def test_an_ensemble_input_left_without_readers_prunes_step_0(first: str, fails: str) -> None:
    # Triton looks up the writer of every tensor it stops waiting for; an ensemble input has none and the
    # lookup answers step 0: asking for step 0's output alone prunes the other branch, then step 0 itself
    # (both verdicts read from the embedded tritonserver)
    config = parse_config(branches(first)).message
    other = "OUT_B" if fails == "OUT_A" else "OUT_A"
    assert not request_works(config, [fails])
    assert request_works(config, [other])
    assert failing_output_sets(config) == [(fails,)]


def test_a_client_is_told_why_it_asks_for_more(tmp_path: Path) -> None:
    (tmp_path / "nli").mkdir()
    (tmp_path / "nli" / "config.pbtxt").write_text(pipeline())
    asked, note = working_outputs(tmp_path, "nli", ["LABEL"])
    assert asked == ["LABEL", "LOGITS"]
    assert note is not None
    assert "asked for LOGITS besides LABEL" in note
    assert DEADLOCK in note
    assert "E322" in note
    assert working_outputs(tmp_path, "nli", ["LABEL", "LOGITS"]) == (["LABEL", "LOGITS"], None)
    # not an ensemble, no config, or an unreadable one: asked as it is
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "config.pbtxt").write_text('name: "plain"\nbackend: "python"\n')
    assert working_outputs(tmp_path, "plain", ["A"]) == (["A"], None)
    assert working_outputs(tmp_path, "absent", ["A"]) == (["A"], None)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.pbtxt").write_text("platform: ensemble {")
    assert working_outputs(tmp_path, "broken", ["A"]) == (["A"], None)
