"""Scale out on this machine, with real parts: pytest-xdist workers sending their rows to one report, shards run
as separate pytest processes and merged by ``python -m pytest_triton report merge``, and a GPU per worker shown
with a stand-in ``nvidia-smi`` listing two GPUs (read from each launched tritonserver's own environment)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("xdist", reason="the xdist runs need pytest-xdist (pip install pytest-xdist)")
pytest.importorskip("pytriton", reason="the embedded tritonserver comes from nvidia-pytriton (pip install '.[serve]')")
pytest.importorskip("onnxruntime", reason="the in-process reference needs onnxruntime (pip install '.[serve]')")

pytestmark = pytest.mark.xdist_group("embedded-triton")

ROOT = Path(__file__).resolve().parents[2]
TABULAR = ROOT / "model_repos" / "tabular.contracts.toml"
VARIANTS = {"onnx-fp32", "onnx-fp16", "ensemble"}

# two GPUs, as `nvidia-smi --query-gpu=name --format=csv,noheader` lists them
STAND_IN_SMI = "#!/bin/sh\nprintf 'Stand-in GPU A\\nStand-in GPU B\\n'\n"

ECHO = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("Y", pb_utils.get_input_tensor_by_name(
            r, "X").as_numpy())]) for r in requests]
"""

# each worker starts a server and writes down what CUDA_VISIBLE_DEVICES that server process holds
SERVER_ENV_TEST = f"""
import os
from pathlib import Path

from pytest_triton.plugin.workers import latency_skip_reason
from pytest_triton.repository import TensorSpec

ECHO = {ECHO!r}


def test_server_environment(request, triton_repository, triton_server_factory, triton_bench):
    spec = [TensorSpec("X", "TYPE_FP32", (2,))]
    out = [TensorSpec("Y", "TYPE_FP32", (2,))]
    repository = triton_repository.add_python("echo", source=ECHO, inputs=spec, outputs=out).build()
    server = triton_server_factory.start(repository)
    environ = Path(f"/proc/{{server.pid}}/environ").read_bytes().split(b"\\0")
    devices = [e.split(b"=", 1)[1].decode() for e in environ if e.startswith(b"CUDA_VISIBLE_DEVICES=")]
    folder = Path(os.environ["SCALE_OUT"])
    (folder / os.environ["PYTEST_XDIST_WORKER"]).write_text(",".join(devices) or "unset")
    (folder / "latency").mkdir(exist_ok=True)
    (folder / "latency" / os.environ["PYTEST_XDIST_WORKER"]).write_text(str(latency_skip_reason(request.config)))
    triton_bench.record_skipped("row-" + os.environ["PYTEST_XDIST_WORKER"], "a row: where did it run")
"""


def _clean_env() -> dict[str, str]:
    # this suite may itself run under xdist: the inner pytest is a run of its own
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST", "PYTEST_TRITON_SHARD"))}


def _pytest(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """A pytest run of its own in ``cwd`` (a separate process: xdist workers, shards)."""
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]
    return subprocess.run(command, cwd=cwd, env=env or _clean_env(), capture_output=True, text=True, timeout=600)


def test_xdist_workers_write_one_report(tmp_path: Path) -> None:
    prefix = tmp_path / "report"
    run = _pytest(["-n", "2", "--triton-contracts", str(TABULAR), "--triton-report", str(prefix)], tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads((prefix.with_name("report.json")).read_text())
    assert {p["variant"].split(" ")[0] for p in report["parity"]} == VARIANTS
    assert {r["variant"] for r in report["results"]} >= VARIANTS  # latency rows, SKIPPED under xdist here
    items = {o["item"].split("::")[1] for o in report["contracts"]}
    assert items == {f"parity[{v}]" for v in VARIANTS} | {f"latency[{v}]" for v in VARIANTS} | {
        "latency[ensemble/onnx-fp32]"
    }
    markdown = prefix.with_name("report.md").read_text()
    assert all(f"{v} (http, tabular.contracts.toml)" in markdown for v in VARIANTS)


def test_shards_run_apart_and_merge_into_one_verdict(tmp_path: Path) -> None:
    env = {**_clean_env(), "PYTEST_TRITON_SHARD_RUN": "scale-out-test"}
    for index in (1, 2):
        args = ["-p", "no:xdist", "-k", "parity", "--triton-contracts", str(TABULAR)]
        args += ["--triton-shard", f"{index}/2", "--triton-report", str(tmp_path / f"shard{index}")]
        run = _pytest(args, tmp_path, env)
        assert run.returncode == 0, run.stdout + run.stderr
    shard_variants = [set(json.loads((tmp_path / f"shard{i}.json").read_text())["shard"]["variants"]) for i in (1, 2)]
    assert shard_variants[0]
    assert shard_variants[1]
    assert not shard_variants[0] & shard_variants[1]

    merge = [sys.executable, "-m", "pytest_triton", "report", "merge"]
    shards = [str(tmp_path / "shard1.json"), str(tmp_path / "shard2.json")]
    done = subprocess.run([*merge, *shards, "--out", str(tmp_path / "merged")], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verdict: PASS: 3 contract item(s) over 2 shard(s)" in done.stdout
    merged = json.loads((tmp_path / "merged.json").read_text())
    assert {p["variant"] for p in merged["parity"]} == VARIANTS
    assert len(merged["contracts"]) == 3
    assert (tmp_path / "merged.md").is_file()
    assert (tmp_path / "merged.svg").is_file()

    partial = subprocess.run([*merge, shards[1], "--out", str(tmp_path / "partial")], capture_output=True, text=True)
    assert partial.returncode == 2
    assert "shard(s) 1/2 missing" in partial.stderr
    assert not (tmp_path / "partial.json").exists()


def _stand_in_gpus(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(STAND_IN_SMI)
    smi.chmod(0o755)
    env = _clean_env()
    env.pop("CUDA_VISIBLE_DEVICES", None)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    return env


def test_each_worker_server_sees_its_own_gpu(tmp_path: Path) -> None:
    env = _stand_in_gpus(tmp_path)
    out = tmp_path / "seen"
    out.mkdir()
    (tmp_path / "test_env.py").write_text(SERVER_ENV_TEST)
    args = ["-n", "2", "--dist", "each", "--triton-gpu", "--triton-report", str(tmp_path / "report")]
    run = _pytest(args, tmp_path, {**env, "SCALE_OUT": str(out)})
    assert run.returncode == 0, run.stdout + run.stderr
    seen = {path.name: path.read_text() for path in out.iterdir() if path.is_file()}
    assert seen == {"gw0": "0", "gw1": "1"}
    # every row says where it ran, in the one report the controller wrote
    rows = json.loads((tmp_path / "report.json").read_text())["results"]
    assert {r["variant"]: r["notes"] for r in rows} == {
        "row-gw0": ["ran on GPU 0 (xdist worker gw0)"],
        "row-gw1": ["ran on GPU 1 (xdist worker gw1)"],
    }
    # latency runs in a worker with a GPU and 2 CPU cores of its own: not on a 2-core machine
    latency = {path.name: path.read_text() for path in (out / "latency").iterdir()}
    if len(os.sched_getaffinity(0)) // 2 >= 2:
        assert latency == {"gw0": "None", "gw1": "None"}
    else:
        assert (
            "worker gw1 has GPU 1 but 1 CPU core(s) of its own (CPU cores // workers), latency needs 2"
            in (latency["gw1"])
        )


def test_more_workers_than_gpus_is_a_usage_error(tmp_path: Path) -> None:
    env = _stand_in_gpus(tmp_path)
    (tmp_path / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    run = _pytest(["-n", "3", "--triton-gpu"], tmp_path, env)
    assert run.returncode == pytest.ExitCode.USAGE_ERROR, run.stdout + run.stderr
    assert "3 xdist workers over 2 GPU(s) (0, 1): two workers would share a GPU; run with -n 2" in run.stderr


DOCKER_DEVICES_TEST = """
import os
from pathlib import Path


def test_container_devices(triton_server_factory, tmp_path):
    launcher = triton_server_factory.create(tmp_path)  # built, not started: no daemon needed
    (Path(os.environ["SCALE_OUT"]) / os.environ["PYTEST_XDIST_WORKER"]).write_text(str(launcher.container.gpus))
"""


def test_each_worker_container_gets_its_own_gpu(tmp_path: Path) -> None:
    env = _stand_in_gpus(tmp_path)
    out = tmp_path / "seen"
    out.mkdir()
    (tmp_path / "test_docker_devices.py").write_text(DOCKER_DEVICES_TEST)
    args = ["-n", "2", "--dist", "each", "--triton-gpu", "--triton-launcher", "docker"]
    run = _pytest([*args, "--triton-image", "example.org/triton:1"], tmp_path, {**env, "SCALE_OUT": str(out)})
    assert run.returncode == 0, run.stdout + run.stderr
    assert {path.name: path.read_text() for path in out.iterdir()} == {"gw0": "0", "gw1": "1"}
