"""Rebuild scenario 07's three model repositories and their SageMaker archives.

    python model_repos/build_scenario07.py            # writes model_repos/scenario07/ and dist/

- ``scenario07/onnx``: ``mdeberta`` on the onnxruntime backend (client tokenizes);
- ``scenario07/tensorrt``: the same model with the TensorRT execution accelerator in FP16,
  engine cache enabled and kept inside the model folder (not /tmp);
- ``scenario07/ensemble``: ``ensemble_mdeberta`` = ``tokenize`` → ``mdeberta`` (TensorRT) →
  ``postprocess``, text in, label and score out.

Every repository is written by pytest-triton's RepositoryBuilder and linted; the archives go
to ``model_repos/dist/`` (git-ignored), the ensemble's with its default model recorded beside it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pytest_triton.repository import EnsembleStep
from pytest_triton.repository import RepositoryBuilder
from pytest_triton.repository import TensorRTAccelerator
from pytest_triton.repository import TensorSpec
from pytest_triton.repository.sagemaker import package_model_tar

HERE = Path(__file__).resolve().parent
ASSETS = HERE / "assets" / "tiny-mdeberta"
SOURCES = HERE / "sources"
MAX_LENGTH = 512
MAX_BATCH = 32
QUEUE_DELAY_US = 1000  # scenario 07's max_queue_delay_microseconds
# where SageMaker mounts the archive: the cache stays inside the model folder across restarts
TRT_CACHE = "/opt/ml/model/mdeberta/1/trt_cache"
# one engine profile for every batch size served, so no request shape triggers a rebuild (lint rule A409)
TRT_PROFILE = {
    "trt_profile_min_shapes": f"input_ids:1x{MAX_LENGTH},attention_mask:1x{MAX_LENGTH}",
    "trt_profile_opt_shapes": f"input_ids:8x{MAX_LENGTH},attention_mask:8x{MAX_LENGTH}",
    "trt_profile_max_shapes": f"input_ids:{MAX_BATCH}x{MAX_LENGTH},attention_mask:{MAX_BATCH}x{MAX_LENGTH}",
}


def _labels() -> list[str]:
    id2label = json.loads((ASSETS / "labels.json").read_text())["id2label"]
    return [id2label[str(i)] for i in range(len(id2label))]


def _add_mdeberta(builder: RepositoryBuilder, *, tensorrt: bool) -> RepositoryBuilder:
    return builder.add_onnx(
        "mdeberta",
        ASSETS / "model.onnx",
        max_batch_size=MAX_BATCH,
        max_queue_delay_microseconds=QUEUE_DELAY_US,
        instance_kind="KIND_GPU",
        tensorrt=TensorRTAccelerator(precision_mode="FP16", engine_cache_path=TRT_CACHE, extra=TRT_PROFILE)
        if tensorrt
        else None,
    )


def build_onnx(root: Path) -> RepositoryBuilder:
    return _add_mdeberta(RepositoryBuilder(root), tensorrt=False)


def build_tensorrt(root: Path) -> RepositoryBuilder:
    return _add_mdeberta(RepositoryBuilder(root), tensorrt=True)


def build_ensemble(root: Path) -> RepositoryBuilder:
    text = [TensorSpec("PREMISE", "TYPE_STRING", (1,)), TensorSpec("HYPOTHESIS", "TYPE_STRING", (1,))]
    tokens = [
        TensorSpec("input_ids", "TYPE_INT64", (MAX_LENGTH,)),
        TensorSpec("attention_mask", "TYPE_INT64", (MAX_LENGTH,)),
    ]
    logits = TensorSpec("logits", "TYPE_FP32", (3,))
    builder = _add_mdeberta(RepositoryBuilder(root), tensorrt=True)
    builder.add_python(
        "tokenize",
        file=SOURCES / "tokenize_model.py",
        inputs=text,
        outputs=tokens,
        max_batch_size=MAX_BATCH,
        parameters={"max_length": str(MAX_LENGTH), "pad_id": "0"},
        extra_files={"1/tokenizer.json": ASSETS / "tokenizer.json"},
    )
    builder.add_python(
        "postprocess",
        file=SOURCES / "postprocess_model.py",
        inputs=[logits],
        outputs=[TensorSpec("LABEL", "TYPE_STRING", (1,)), TensorSpec("SCORE", "TYPE_FP32", (1,))],
        max_batch_size=MAX_BATCH,
        parameters={"labels": ",".join(_labels())},
    )
    return builder.add_ensemble(
        "ensemble_mdeberta",
        max_batch_size=MAX_BATCH,
        inputs=text,
        outputs=[
            TensorSpec("LABEL", "TYPE_STRING", (1,)),
            TensorSpec("SCORE", "TYPE_FP32", (1,)),
            TensorSpec("LOGITS", "TYPE_FP32", (3,)),
        ],
        steps=[
            EnsembleStep(
                "tokenize",
                {"PREMISE": "PREMISE", "HYPOTHESIS": "HYPOTHESIS"},
                {"input_ids": "input_ids", "attention_mask": "attention_mask"},
            ),
            EnsembleStep(
                "mdeberta", {"input_ids": "input_ids", "attention_mask": "attention_mask"}, {"logits": "LOGITS"}
            ),
            EnsembleStep("postprocess", {"logits": "LOGITS"}, {"LABEL": "LABEL", "SCORE": "SCORE"}),
        ],
    )


REPOSITORIES = {"onnx": build_onnx, "tensorrt": build_tensorrt, "ensemble": build_ensemble}
DEFAULT_MODELS = {"onnx": None, "tensorrt": None, "ensemble": "ensemble_mdeberta"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=HERE / "scenario07", help="Where the repositories go")
    parser.add_argument("--dist", type=Path, default=HERE / "dist", help="Where the model.tar.gz files go")
    args = parser.parse_args(argv)
    for name, build in REPOSITORIES.items():
        builder = build(args.out / name)
        path = builder.build()  # raises LintFailed with every error
        archive = package_model_tar(path, args.dist / f"{name}.tar.gz", default_model=DEFAULT_MODELS[name])
        notes = [f for f in builder.findings if f.severity != "error"]
        print(f"{path}: {len(builder.model_names)} model(s), {len(notes)} note(s); {archive}")
        for finding in notes:
            print("  " + finding.format().replace("\n", "\n  "))
    return 0


if __name__ == "__main__":
    sys.exit(main())
