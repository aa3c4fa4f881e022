"""Rebuild the tabular example: a small classifier of 4 measurements into 3 classes, in three repositories.

    python model_repos/build_tabular.py          # writes model_repos/assets/tabular/ and model_repos/tabular/

- ``assets/tabular/model.onnx``: the classifier in fp32 (4 → 16 → ReLU → 3), made with the ``onnx`` helper
  API from fixed seeded weights (no training framework); ``model_fp16.onnx``: the same weights in fp16, with
  fp32 inputs and outputs (casts at both ends);
- ``tabular/onnx`` and ``tabular/fp16``: ``classifier`` on the onnxruntime backend, dynamic batching;
- ``tabular/ensemble``: ``tabular_pipeline`` = ``classifier`` → ``postprocess`` (python: softmax and class
  name), FEATURES in, LOGITS, PROBABILITIES and LABEL out.

Its contracts are declared in ``model_repos/tabular.contracts.toml``. A unit test checks that a fresh build
equals the committed files.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from pytest_triton.repository import EnsembleStep
from pytest_triton.repository import RepositoryBuilder
from pytest_triton.repository import TensorSpec

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "sources"
LABELS = ("small", "medium", "large")
FEATURES, HIDDEN = 4, 16
MAX_BATCH = 64
SEED = 2026


def classifier_onnx(*, fp16: bool) -> bytes:
    """The classifier as serialized ONNX; the same weights in both precisions."""
    from onnx import TensorProto
    from onnx import helper
    from onnx import numpy_helper

    rng = np.random.default_rng(SEED)
    weights = {
        "w1": rng.normal(0.0, 0.8, (FEATURES, HIDDEN)),
        "b1": rng.normal(0.0, 0.2, (HIDDEN,)),
        "w2": rng.normal(0.0, 0.6, (HIDDEN, len(LABELS))),
        "b2": rng.normal(0.0, 0.2, (len(LABELS),)),
    }
    dtype = np.float16 if fp16 else np.float32
    inits = [numpy_helper.from_array(v.astype(dtype), name) for name, v in weights.items()]
    x = "x16" if fp16 else "features"
    nodes = [
        helper.make_node("MatMul", [x, "w1"], ["h0"]),
        helper.make_node("Add", ["h0", "b1"], ["h1"]),
        helper.make_node("Relu", ["h1"], ["h2"]),
        helper.make_node("MatMul", ["h2", "w2"], ["l0"]),
        helper.make_node("Add", ["l0", "b2"], ["l16" if fp16 else "logits"]),
    ]
    if fp16:
        nodes.insert(0, helper.make_node("Cast", ["features"], ["x16"], to=TensorProto.FLOAT16))
        nodes.append(helper.make_node("Cast", ["l16"], ["logits"], to=TensorProto.FLOAT))
    graph = helper.make_graph(
        nodes,
        "tabular_classifier_fp16" if fp16 else "tabular_classifier",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["batch", FEATURES])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", len(LABELS)])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="build_tabular.py")
    model.ir_version = 8
    return bytes(model.SerializeToString())


def write_assets(folder: Path) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    fp32, fp16 = folder / "model.onnx", folder / "model_fp16.onnx"
    fp32.write_bytes(classifier_onnx(fp16=False))
    fp16.write_bytes(classifier_onnx(fp16=True))
    return fp32, fp16


def _classifier(builder: RepositoryBuilder, model: Path) -> RepositoryBuilder:
    return builder.add_onnx("classifier", model, max_batch_size=MAX_BATCH, max_queue_delay_microseconds=100)


def build_ensemble(root: Path, model: Path) -> RepositoryBuilder:
    logits = TensorSpec("logits", "TYPE_FP32", (len(LABELS),))
    builder = _classifier(RepositoryBuilder(root), model)
    builder.add_python(
        "postprocess",
        file=SOURCES / "tabular_postprocess_model.py",
        inputs=[logits],
        outputs=[TensorSpec("PROBABILITIES", "TYPE_FP32", (len(LABELS),)), TensorSpec("LABEL", "TYPE_STRING", (1,))],
        max_batch_size=MAX_BATCH,
        parameters={"labels": ",".join(LABELS)},
    )
    return builder.add_ensemble(
        "tabular_pipeline",
        max_batch_size=MAX_BATCH,
        inputs=[TensorSpec("FEATURES", "TYPE_FP32", (FEATURES,))],
        outputs=[
            TensorSpec("LOGITS", "TYPE_FP32", (len(LABELS),)),
            TensorSpec("PROBABILITIES", "TYPE_FP32", (len(LABELS),)),
            TensorSpec("LABEL", "TYPE_STRING", (1,)),
        ],
        steps=[
            EnsembleStep("classifier", {"features": "FEATURES"}, {"logits": "LOGITS"}),
            EnsembleStep("postprocess", {"logits": "LOGITS"}, {"PROBABILITIES": "PROBABILITIES", "LABEL": "LABEL"}),
        ],
    )


def build(assets: Path, out: Path) -> list[Path]:
    """Write the assets and the three repositories (each linted); returns the repositories."""
    fp32, fp16 = write_assets(assets)
    builders = [
        _classifier(RepositoryBuilder(out / "onnx"), fp32),
        _classifier(RepositoryBuilder(out / "fp16"), fp16),
        build_ensemble(out / "ensemble", fp32),
    ]
    return [b.build() for b in builders]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--assets", type=Path, default=HERE / "assets" / "tabular", help="Where the ONNX files go")
    parser.add_argument("--out", type=Path, default=HERE / "tabular", help="Where the repositories go")
    args = parser.parse_args(argv)
    for path in build(args.assets, args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
