from __future__ import annotations

from pathlib import Path

import pytest

BROKEN = 'name: "other"\nbackend: "python"\nmax_batch_size: 0\n'
GOOD = 'name: "good"\nbackend: "python"\nmax_batch_size: 0\n'


def make_repo(root: Path) -> Path:
    for name, config in (("bad", BROKEN), ("good", GOOD)):
        (root / name / "1").mkdir(parents=True)
        (root / name / "config.pbtxt").write_text(config)
        (root / name / "1" / "model.py").write_text("")
    return root


def test_lint_option_collects_one_item_per_model(pytester: pytest.Pytester) -> None:
    repo = make_repo(pytester.path / "repo")
    result = pytester.runpytest("--triton-lint", str(repo), "-v")
    result.stdout.fnmatch_lines(
        [
            "*triton-lint?*bad?*FAILED*",
            "*triton-lint?*good?*PASSED*",
            "*bad/config.pbtxt:1:1: L103 unexpected directory name 'bad' for model 'other', directory name must equal*",
            "*hint: set name: 'bad'*",
        ]
    )
    result.assert_outcomes(passed=1, failed=1)


def test_lint_paths_from_ini(pytester: pytest.Pytester) -> None:
    make_repo(pytester.path / "repo")
    pytester.makeini("[pytest]\ntriton_lint = repo\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)


def test_markers_and_options_are_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(
        ["@pytest.mark.triton_gpu:*", "@pytest.mark.triton_docker:*", "@pytest.mark.triton_cloud:*"]
    )
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(["*Triton model repositories (pytest-triton*", "*--triton-lint=PATH*"])


def test_gpu_marked_tests_are_skipped_with_a_reason(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("import pytest\n@pytest.mark.triton_gpu\ndef test_x():\n    assert False\n")
    result = pytester.runpytest("-rs")
    result.stdout.fnmatch_lines(["*SKIPPED*needs a GPU: run with --gpu on a GPU runner*"])
    result.assert_outcomes(skipped=1)


def test_gpu_option_fails_fast_without_gpu(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest("--gpu")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*GPU mode was asked for (--triton-gpu, or --gpu) but no GPU is visible*"])


def test_plugin_module_imports_nothing_heavy() -> None:
    import subprocess
    import sys

    code = (
        "import sys, pytest_triton.plugin.hooks\n"
        "heavy = [m for m in ('tritonclient', 'onnxruntime', 'onnx', 'docker', 'boto3', 'hypothesis', 'numpy')"
        " if m in sys.modules]\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_bad_target_fails_its_own_item_only(pytester: pytest.Pytester) -> None:
    repo = make_repo(pytester.path / "repo")
    (repo / "bad" / "config.pbtxt").write_text('backend: "python"\ninstance_group [ { kind: 4294967296 } ]\n')
    pytester.makepyfile("def test_plain():\n    pass\n")
    result = pytester.runpytest("--triton-lint", str(repo), "--triton-lint", str(pytester.path / "missing"), "-v")
    result.stdout.fnmatch_lines(
        [
            "*bad/config.pbtxt:2:26: C001 failed to read text proto from bad/config.pbtxt: Value out of range*",
            "*missing: L107 lint target*does not exist*",
        ]
    )
    assert "INTERNALERROR" not in result.stdout.str()
    result.assert_outcomes(passed=2, failed=2)


def test_collected_counts_agree_with_what_runs(pytester: pytest.Pytester) -> None:
    repo = make_repo(pytester.path / "repo")
    pytester.makepyfile("def test_a():\n    pass\ndef test_b():\n    pass\ndef test_c():\n    pass\n")
    listed = pytester.runpytest("--triton-lint", str(repo), "--co", "-q")
    listed.stdout.fnmatch_lines(["*::test_a", "*triton-lint?*bad?", "*triton-lint?*good?", "5 tests collected*"])
    selected = pytester.runpytest("--triton-lint", str(repo), "-m", "triton_lint")
    selected.stdout.fnmatch_lines(["collected 5 items / 3 deselected / 2 selected"])
    selected.assert_outcomes(passed=1, failed=1, deselected=3)


def test_lint_limits_from_option_and_ini(pytester: pytest.Pytester) -> None:
    repo = make_repo(pytester.path / "repo")
    result = pytester.runpytest("--triton-lint", str(repo), "--triton-lint-limit", "max_config_bytes=10")
    result.stdout.fnmatch_lines(["*C004 config.pbtxt is * bytes, over the limit max_config_bytes=10*"])
    result.assert_outcomes(failed=2)
    pytester.makeini("[pytest]\ntriton_lint_limits =\n    max_config_bytes=20\n")
    result = pytester.runpytest("--triton-lint", str(repo))
    result.stdout.fnmatch_lines(["*over the limit max_config_bytes=20*"])
    result = pytester.runpytest("--triton-lint", str(repo), "--triton-lint-limit", "everything=1")
    result.stderr.fnmatch_lines(["*lint limit 'everything=1' is not NAME=N*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
