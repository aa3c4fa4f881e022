"""The plugin is a light guest: loading it, and a whole session that never serves, import none of the project's
serving, measuring or contract code and no heavy library (issue 34's budget: 50 ms and 5 MB per pytest run,
measured by ``python -m benchmarks.bench_plugin_overhead``).

Both checks run in a fresh interpreter: this test process has imported everything already.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

# what loading the plugin may import of the project: the plugin's own modules (all light, but the server factory,
# which imports the servers), the errors, the hardware facts (standard library only: xdist workers' GPUs), the
# servers package (its names are imported when first used) and the session's run id
LIGHT = frozenset(
    {
        "pytest_triton",
        "pytest_triton.errors",
        "pytest_triton.hardware",
        "pytest_triton.servers",
        "pytest_triton.servers.session_run",
    }
)
PLUGIN = "pytest_triton.plugin"
HEAVY_PLUGIN_MODULES = frozenset({"pytest_triton.plugin.server_factory"})
# a session start also reads the launcher registry (the default launcher's name, no launcher class)
SESSION = LIGHT | {"pytest_triton.servers.registry"}
HEAVY = ("numpy", "tritonclient", "docker", "testcontainers", "boto3", "botocore", "onnxruntime", "hypothesis")


def _imported(code: str, cwd: Path) -> set[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS")}
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    found: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return set(found)


def _project(modules: set[str]) -> set[str]:
    """The project's modules of ``modules``, less the plugin's light ones."""
    ours = {name for name in modules if name == "pytest_triton" or name.startswith("pytest_triton.")}
    light_plugin = {n for n in ours if (n == PLUGIN or n.startswith(PLUGIN + ".")) and n not in HEAVY_PLUGIN_MODULES}
    return ours - light_plugin


def _heavy(modules: set[str], heavy: tuple[str, ...] = HEAVY) -> set[str]:
    return {name for name in modules if name.split(".")[0] in heavy}


def test_importing_the_plugin_imports_only_its_options_markers_and_hooks(tmp_path: Path) -> None:
    modules = _imported(
        "import json, sys; import pytest_triton.plugin; print(json.dumps(sorted(sys.modules)))", tmp_path
    )
    assert _project(modules) - LIGHT == set(), "the plugin imports these at load time: import them where used"
    assert _heavy(modules) == set()


def test_a_foreign_session_imports_no_serving_code(tmp_path: Path) -> None:
    # a suite that knows nothing of Triton (its own ini: no conftest of this checkout); the test writes what
    # the whole session imported once the session is over, unconfigure included
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
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
    assert _project(modules) - SESSION == set(), "a session that never serves imported these"
    not_ours = ("hypothesis",)  # hypothesis's own pytest plugin imports it, with or without ours
    assert _heavy(modules, tuple(set(HEAVY) - set(not_ours))) == set()


def test_the_check_sees_a_heavy_import() -> None:
    # the verdict can flip: the server factory and the bench count, the plugin's light modules do not
    imported = {"pytest_triton.plugin.items", "pytest_triton.plugin.server_factory", "pytest_triton.bench.session"}
    assert _project(imported) - LIGHT == {"pytest_triton.plugin.server_factory", "pytest_triton.bench.session"}
