"""Build an mDeBERTa-v3-base-shaped classifier with random weights and export it to ONNX (fp32 and fp16).

Run with a Python that has torch, transformers, onnx and onnxruntime (its ``transformers.float16``
converter); on the lent GPU machine that is the image's own ``/opt/torch/.venv/bin/python``::

    python -m benchmarks.gpu_build_mdeberta --out /tmp/mdeberta [--tiny]

Writes ``model.onnx`` (fp32), ``model_fp16.onnx`` (fp16 weights and compute, int64 inputs and fp32 logits
kept: ``keep_io_types``) and ``build.json`` (sizes, parameter counts, FLOPs per sequence, timings,
versions). ``--tiny`` builds the 2-layer, hidden-64 shape of ``model_repos/assets/tiny-mdeberta`` to test
the script on a CPU machine. The architecture settings are mDeBERTa-v3's (relative attention, p2c+c2p,
256 position buckets, shared attention keys, no token types); the weights are seeded noise, so only
speed and agreement between the exports mean anything, not the labels.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path
from typing import Any

SEQ = 512
SEED = 20261201
FULL = {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072}
TINY = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 256}
VOCAB = {"full": 250_102, "tiny": 3_000}


def deberta_config(shape: dict[str, int], vocab: int) -> Any:
    from transformers import DebertaV2Config

    return DebertaV2Config(
        vocab_size=vocab,
        **shape,
        hidden_act="gelu",
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        max_position_embeddings=SEQ,
        type_vocab_size=0,
        initializer_range=0.02,
        layer_norm_eps=1e-7,
        relative_attention=True,
        max_relative_positions=-1,
        position_buckets=256,
        norm_rel_ebd="layer_norm",
        share_att_key=True,
        pos_att_type=["p2c", "c2p"],
        position_biased_input=False,
        pooler_hidden_size=shape["hidden_size"],
        pooler_dropout=0.0,
        pooler_hidden_act="gelu",
        num_labels=3,
        pad_token_id=0,
    )


def flops_per_sequence(config: Any, seq: int = SEQ) -> dict[str, float]:
    """Multiply-adds x 2 of one forward pass at ``seq`` tokens (matmuls only; softmax, norms, GELU excluded)."""
    d, layers, inter = config.hidden_size, config.num_hidden_layers, config.intermediate_size
    rel = 2 * config.position_buckets  # relative positions attended (2 x buckets)
    projections = 2 * seq * d * d * 4  # Q, K, V, output
    ffn = 2 * seq * d * inter * 2
    content = 2 * seq * seq * d * 2  # Q.K^T and P.V
    disentangled = 2 * seq * rel * d * 2  # c2p and p2c scores against the relative embeddings
    rel_projections = 2 * rel * d * d * 2  # relative embeddings through the shared Q and K projections
    per_layer = projections + ffn + content + disentangled + rel_projections
    head = 2 * d * d + 2 * d * config.num_labels
    return {
        "per_layer": float(per_layer),
        "linear_per_layer": float(projections + ffn),
        "attention_per_layer": float(content + disentangled + rel_projections),
        "total": float(per_layer * layers + head),
    }


class _LogitsOnly:
    """Wraps the classifier so the export has exactly (input_ids, attention_mask) -> logits."""

    @staticmethod
    def make(model: Any) -> Any:
        import torch

        class LogitsOnly(torch.nn.Module):  # type: ignore[misc]  # torch is untyped here
            def __init__(self) -> None:
                super().__init__()
                self.model = model

            def forward(self, input_ids: Any, attention_mask: Any) -> Any:
                return self.model(input_ids=input_ids, attention_mask=attention_mask).logits

        return LogitsOnly().eval()


def export(model: Any, path: Path, vocab: int) -> str:
    import torch

    ids = torch.randint(5, min(vocab, 3000), (2, SEQ), generator=torch.Generator().manual_seed(SEED))
    mask = torch.ones_like(ids)
    kwargs: dict[str, Any] = {
        "input_names": ["input_ids", "attention_mask"],
        "output_names": ["logits"],
        "dynamic_axes": {name: {0: "batch"} for name in ("input_ids", "attention_mask", "logits")},
        "opset_version": 17,
        "do_constant_folding": True,
    }
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        try:
            torch.onnx.export(_LogitsOnly.make(model), (ids, mask), str(path), dynamo=False, **kwargs)
            return "torch.onnx.export (TorchScript exporter, dynamo=False)"
        except TypeError:  # a torch without the dynamo switch
            torch.onnx.export(_LogitsOnly.make(model), (ids, mask), str(path), **kwargs)
            return "torch.onnx.export"


def to_fp16(source: Path, dest: Path) -> None:
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16

    model = onnx.load(str(source))
    converted = convert_float_to_float16(model, keep_io_types=True, disable_shape_infer=True)
    onnx.save(converted, str(dest))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--tiny", action="store_true", help="the tiny shape (hidden 64, 2 layers) for a CPU test")
    args = parser.parse_args()
    import onnx
    import torch
    import transformers
    from transformers import DebertaV2ForSequenceClassification

    size = "tiny" if args.tiny else "full"
    args.out.mkdir(parents=True, exist_ok=True)
    config = deberta_config(TINY if args.tiny else FULL, VOCAB[size])
    torch.manual_seed(SEED)
    started = time.monotonic()
    model = DebertaV2ForSequenceClassification(config).eval()
    built_s = time.monotonic() - started
    params = sum(p.numel() for p in model.parameters())
    embedding = model.deberta.embeddings.word_embeddings.weight.numel()
    fp32, fp16 = args.out / "model.onnx", args.out / "model_fp16.onnx"
    started = time.monotonic()
    exporter = export(model, fp32, VOCAB[size])
    export_s = time.monotonic() - started
    started = time.monotonic()
    to_fp16(fp32, fp16)
    fp16_s = time.monotonic() - started
    graph = onnx.load(str(fp32), load_external_data=False).graph
    info = {
        "size": size,
        "config": {k: getattr(config, k) for k in ("vocab_size", *FULL, "position_buckets", "pos_att_type")},
        "seq": SEQ,
        "seed": SEED,
        "parameters": params,
        "embedding_parameters": embedding,
        "weight_bytes_fp32": params * 4,
        "weight_bytes_fp16": params * 2,
        "weight_bytes_read_per_forward_fp32": (params - embedding) * 4,  # a forward pass reads 512 embedding rows
        "flops_per_sequence": flops_per_sequence(config),
        "onnx_bytes": {"fp32": fp32.stat().st_size, "fp16": fp16.stat().st_size},
        "onnx_nodes": len(graph.node),
        "exporter": exporter,
        "seconds": {"build": round(built_s, 2), "export_fp32": round(export_s, 2), "convert_fp16": round(fp16_s, 2)},
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__, "onnx": onnx.__version__},
    }
    (args.out / "build.json").write_text(json.dumps(info, indent=2), encoding="utf-8")
    print(json.dumps(info))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
