"""The plugin is a light guest: loading it, and a whole session that uses none of its options, import none of the
project's items, serving, measuring or contract code and no heavy library (issue 34's budget: 50 ms and 5 MB per
pytest run, measured by ``python -m benchmarks.bench_plugin_overhead``).

Both checks run in a fresh interpreter: this test process has imported everything already.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# what loading the plugin may import of the project, and all that a whole session that uses none of its options
# may: the plugin's options, hooks and state, the errors and the session's run id (in the servers package, whose
# names are imported when first used). Its items, the xdist and shard glue, the hardware facts and the launcher
# registry are imported by the hook that needs them, once an option or the session's state says so.
LIGHT = frozenset(
    {
        "pytest_triton",
        "pytest_triton.errors",
        "pytest_triton.plugin",
        "pytest_triton.plugin.hooks",
        "pytest_triton.plugin.options",
        "pytest_triton.plugin.state",
        "pytest_triton.servers",
        "pytest_triton.servers.session_run",
    }
)
HEAVY = ("numpy", "tritonclient", "docker", "testcontainers", "boto3", "botocore", "onnxruntime", "hypothesis")


def _imported(code: str, cwd: Path) -> set[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS")}
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    found: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return set(found)


def _beyond_light(modules: set[str]) -> set[str]:
    """The project's modules of ``modules`` that are not in :data:`LIGHT`."""
    return {name for name in modules if name.split(".")[0] == "pytest_triton"} - LIGHT


def _heavy(modules: set[str], heavy: tuple[str, ...] = HEAVY) -> set[str]:
    return {name for name in modules if name.split(".")[0] in heavy}


def test_importing_the_plugin_imports_only_its_options_markers_and_hooks(tmp_path: Path) -> None:
    modules = _imported(
        "import json, sys; import pytest_triton.plugin; print(json.dumps(sorted(sys.modules)))", tmp_path
    )
    assert _beyond_light(modules) == set(), "the plugin imports these at load time: import them where used"
    assert _heavy(modules) == set()


@pytest.mark.parametrize(
    "project_file",
    [
        pytest.param(("pytest.ini", "[pytest]\n"), id="pytest.ini"),
        # a pyproject.toml that does not name us is not parsed: the TOML reader is not imported
        pytest.param(("pyproject.toml", '[project]\nname = "foreign"\n\n[tool.pytest.ini_options]\n'), id="pyproject"),
    ],
)
def test_a_foreign_session_imports_only_the_light_modules(tmp_path: Path, project_file: tuple[str, str]) -> None:
    # a suite that knows nothing of Triton (its own ini: no conftest of this checkout); the test writes what
    # the whole session imported once the session is over, unconfigure included
    name, text = project_file
    (tmp_path / name).write_text(text)
    seen = tmp_path / "modules.json"
    (tmp_path / "test_foreign.py").write_text(
        textwrap.dedent(
            f"""
            import atexit, json, sys

            atexit.register(lambda: open({str(seen)!r}, "w").write(json.dumps(sorted(sys.modules))))

            def test_one():
                assert 1 + 1 == 2
            """
        )
    )
    code = "import json, sys, pytest; code = pytest.main(['-q', '-p', 'no:cacheprovider']); print(json.dumps([]))"
    _imported(code, tmp_path)
    modules = set(json.loads(seen.read_text()))
    assert "pytest_triton.plugin.hooks" in modules, "the plugin did not load: this test measured nothing"
    assert _beyond_light(modules) == set(), "a session that uses none of the plugin's options imported these"
    not_ours = ("hypothesis",)  # hypothesis's own pytest plugin imports it, with or without ours
    assert _heavy(modules, tuple(set(HEAVY) - set(not_ours))) == set()


def test_the_check_sees_a_heavy_import() -> None:
    # the verdict can flip: the plugin's items and the bench count, its options and hooks do not
    imported = {"pytest_triton.plugin.hooks", "pytest_triton.plugin.contract_items", "pytest_triton.bench.session"}
    assert _beyond_light(imported) == {"pytest_triton.plugin.contract_items", "pytest_triton.bench.session"}
