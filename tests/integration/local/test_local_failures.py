"""Models that fail to load: start() raises ModelLoadError with Triton's own words and leaves nothing behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_triton.errors import ModelLoadError
from pytest_triton.errors import ServerStartError
from pytest_triton.servers import LocalLauncher

from .local_triton_helpers import ADD_CONFIG
from .local_triton_helpers import ADD_MODEL
from .local_triton_helpers import MISSING_COMMA_CONFIG
from .local_triton_helpers import RAISING_MODEL
from .local_triton_helpers import add_model
from .local_triton_helpers import in_group
from .local_triton_helpers import skip_without_embedded_triton
from .local_triton_helpers import write_model

skip_without_embedded_triton()


def _assert_nothing_left(launcher: LocalLauncher) -> None:
    assert launcher.pid is not None
    assert not launcher.running
    assert launcher.process_group is not None
    assert in_group(launcher.process_group) == []
    # only this launcher's regions: session servers of other tests may run in this process
    assert launcher.shm_prefix
    assert not [e for e in os.listdir("/dev/shm") if e.startswith(launcher.shm_prefix)]


def test_initialize_raising_gives_the_python_error(tmp_path: Path) -> None:
    add_model(tmp_path)
    write_model(tmp_path, "broken", RAISING_MODEL, ADD_CONFIG)
    launcher = LocalLauncher(tmp_path, progress=None)
    with pytest.raises(ModelLoadError) as info:
        launcher.start()
    err = info.value
    assert err.model == "broken"
    assert "ValueError: boom from initialize: the weights are missing" in err.reason
    assert "model.py" in err.reason  # Triton's traceback of the stub
    assert "successfully loaded 'add'" in err.log_tail
    assert "--- server log (last lines) ---" in str(err)
    _assert_nothing_left(launcher)


def test_missing_comma_gives_the_parse_error(tmp_path: Path) -> None:
    write_model(tmp_path, "comma", ADD_MODEL, MISSING_COMMA_CONFIG)
    launcher = LocalLauncher(tmp_path, progress=None)
    with pytest.raises(ModelLoadError) as info:
        launcher.start()
    err = info.value
    assert err.model == "comma"
    assert "failed to read text proto" in err.reason
    assert 'Expected ",", found "{"' in err.reason  # protobuf's words, with line:column
    _assert_nothing_left(launcher)


def test_every_failing_model_is_reported(tmp_path: Path) -> None:
    add_model(tmp_path)
    write_model(tmp_path, "broken", RAISING_MODEL, ADD_CONFIG)
    write_model(tmp_path, "comma", ADD_MODEL, MISSING_COMMA_CONFIG)
    with pytest.raises(ModelLoadError) as info:
        LocalLauncher(tmp_path, progress=None).start()
    err = info.value
    assert sorted(err.failures) == ["broken", "comma"]  # each failing model with its own reason
    assert "boom from initialize" in err.failures["broken"]
    assert "failed to read text proto" in err.failures["comma"]
    assert err.reason == err.failures[err.model]
    other = "comma" if err.model == "broken" else "broken"
    assert f"model {other!r} failed to load too: " in str(err)


def test_unknown_model_name(tmp_path: Path) -> None:
    add_model(tmp_path)
    with pytest.raises(ModelLoadError, match="model not found in any model repository") as info:
        LocalLauncher(tmp_path, models=["add", "nope"], progress=None).start()
    assert info.value.model == "nope"


def test_server_init_error_is_reported(tmp_path: Path) -> None:
    # with --exit-on-error=false Triton opens its ports even when its init failed; the index answers 503
    add_model(tmp_path)
    missing = tmp_path / "not-there"
    launcher = LocalLauncher(tmp_path, extra_args=[f"--model-repository={missing}"], progress=None)
    with pytest.raises(ServerStartError, match=f"not usable: Internal: failed to stat file {missing}") as info:
        launcher.start()
    assert "Started HTTPService" in info.value.log_tail
    _assert_nothing_left(launcher)


def test_rejected_argument_is_named(tmp_path: Path) -> None:
    add_model(tmp_path)
    launcher = LocalLauncher(tmp_path, extra_args=["--no-such-flag"], progress=None)
    with pytest.raises(ServerStartError, match="unrecognized option '--no-such-flag'") as info:
        launcher.start()
    assert info.value.exit_code == 1
    assert "Usage:" not in str(info.value)
    assert "--no-such-flag" in str(info.value)
    _assert_nothing_left(launcher)
