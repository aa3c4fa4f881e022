"""Triton's wording pulled out of its log (lines copied from Triton 2.51 runs)."""

from __future__ import annotations

from pathlib import Path

from pytest_triton.servers.logs import LogFile
from pytest_triton.servers.logs import condensed
from pytest_triton.servers.logs import last_error
from pytest_triton.servers.logs import loaded_models
from pytest_triton.servers.logs import message
from pytest_triton.servers.logs import model_failure_reason
from pytest_triton.servers.logs import server_error

PARSE_ERROR = [
    'I1129 08:56:31.431649 4152 cuda_memory_manager.cc:117] "CUDA memory pool disabled"',
    "[libprotobuf ERROR /tmp/tritonbuild/tritonserver/build/_deps/repo-third-party-build/grpc-repo/src/grpc/"
    "third_party/protobuf/src/google/protobuf/text_format.cc:337] Error parsing text-format inference.ModelConfig: "
    '3:57: Expected ",", found "{".',
    "E1129 08:56:31.431779 4152 model_repository_manager.cc:1460] \"Poll failed for model directory 'comma': "
    'failed to read text proto from /tmp/exp/repo/comma/config.pbtxt"',
]
INIT_ERROR = [
    'I1129 08:56:31.431836 4152 model_lifecycle.cc:472] "loading: add:1"',
    "I1129 08:56:32.852242 4152 model_lifecycle.cc:839] \"successfully loaded 'add'\"",
    "E1129 08:56:33.066373 4152 model_lifecycle.cc:642] \"failed to load 'bad' version 1: Internal: ValueError: "
    'boom from initialize\\n\\nAt:\\n  /tmp/exp/repo/bad/1/model.py(3): initialize\\n"',
    "I1129 08:56:33.066387 4152 model_lifecycle.cc:777] \"failed to load 'bad'\"",
    "E1129 08:56:33.068293 4152 tritonserver.cc:2607] \"Invalid argument: load failed for model 'bad': version 1 "
    'is at UNAVAILABLE state: Internal: ValueError: boom from initialize\\n"',
    'I1129 08:56:33.072288 4152 http_server.cc:4713] "Started HTTPService at 127.0.0.1:18000"',
]
NOT_FOUND = [
    "E1129 08:56:52.098750 4430 model_repository_manager.cc:1415] \"failed to poll model 'nosuch': model not "
    'found in any model repository."',
]


def test_message_unquotes_and_unescapes() -> None:
    assert message(INIT_ERROR[2]).startswith("failed to load 'bad' version 1: Internal: ValueError: boom")
    assert "\n\nAt:\n  /tmp/exp/repo/bad/1/model.py(3): initialize" in message(INIT_ERROR[2])
    assert message("plain text") == "plain text"
    assert message("I1129 09:05:16.788428 19923 server.cc:604] ") == ""


def test_parse_error_reason_carries_protobufs_line_and_column() -> None:
    reason = model_failure_reason(PARSE_ERROR, "comma")
    assert reason.startswith("Poll failed for model directory 'comma': failed to read text proto from")
    assert '3:57: Expected ",", found "{".' in reason


def test_initialize_error_reason() -> None:
    reason = model_failure_reason(INIT_ERROR, "bad")
    assert reason.startswith("failed to load 'bad' version 1: Internal: ValueError: boom from initialize")
    assert model_failure_reason(INIT_ERROR, "add") == ""


def test_not_found_reason() -> None:
    assert "model not found in any model repository" in model_failure_reason(NOT_FOUND, "nosuch")
    assert model_failure_reason(NOT_FOUND, "nosu") == ""  # the quoted name must match exactly


def test_loaded_models() -> None:
    assert loaded_models(INIT_ERROR) == ({"add"}, {"bad"})


def test_errors() -> None:
    assert server_error(INIT_ERROR).startswith("Invalid argument: load failed for model 'bad'")
    assert last_error(PARSE_ERROR).startswith("Poll failed for model directory 'comma'")
    assert last_error(["error: creating server: Internal - failed to stat file /x"]).startswith("error: creating")
    assert last_error(INIT_ERROR[:2]) == ""


def test_condensed_drops_options_table_keeps_model_table() -> None:
    lines = [
        "I1129 09:05:16.788495 19923 server.cc:674] ",
        "+-------+---------+--------+",
        "| Model | Version | Status |",
        "+-------+---------+--------+",
        "| add   | 1       | READY  |",
        "+-------+---------+--------+",
        "",
        "I1129 09:05:16.797597 19923 tritonserver.cc:2598] ",
        "+------------------+--------+",
        "| Option           | Value  |",
        "+------------------+--------+",
        "| server_id        | triton |",
        "| exit_timeout     | 0      |",
        "+------------------+--------+",
        "",
        'I1129 09:05:16.825568 19923 http_server.cc:4713] "Started HTTPService at 127.0.0.1:47681"',
    ]
    assert condensed(lines) == [
        "I1129 09:05:16.788495 19923 server.cc:674] ",
        "| Model | Version | Status |",
        "| add   | 1       | READY  |",
        "I1129 09:05:16.797597 19923 tritonserver.cc:2598] ",
        'I1129 09:05:16.825568 19923 http_server.cc:4713] "Started HTTPService at 127.0.0.1:47681"',
    ]


def test_log_file_reads_incrementally_and_survives_removal(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    log = LogFile(path)
    assert log.read_new() == []  # not created yet
    path.write_text("one\ntw")
    assert log.read_new() == ["one"]
    with path.open("a") as fh:
        fh.write("o\nthree\n")
    assert log.read_new() == ["two", "three"]
    assert log.read_new() == []
    with path.open("a") as fh:
        fh.write("four\n")
    assert log.lines()[-1] == "four"  # reading everything does not move read_new's cursor
    assert log.read_new() == ["four"]
    assert log.text() == "one\ntwo\nthree\nfour\n"
    assert log.tail(2) == "three\nfour"
    assert log.tail(0) == ""
    log.freeze()
    path.unlink()
    assert log.lines() == ["one", "two", "three", "four"]


NO_VERSION_FOLDER = [
    "I1202 12:00:48.254607 18725 model_lifecycle.cc:839] \"successfully loaded 'add'\"",
    "E1202 12:00:48.254768 18725 model_repository_manager.cc:724] \"failed to load model 'pipe': at least one "
    "version must be available under the version policy of model 'pipe'\"",
]


def test_a_model_without_a_version_folder_gets_tritons_reason_and_a_hint() -> None:
    # Triton 2.51 leaves such a model out of the repository index: its reason is only in the log
    reason = model_failure_reason(NO_VERSION_FOLDER, "pipe")
    assert reason.startswith(
        "failed to load model 'pipe': at least one version must be available under the version policy of model 'pipe'"
    )
    assert "hint: pipe/ has no version folder (e.g. pipe/1/); git keeps no empty folder: put a .gitkeep" in reason
