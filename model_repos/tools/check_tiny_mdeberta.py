#!/usr/bin/env python3
"""Check the committed tiny mDeBERTa NLI asset against its samples (no torch needed).

Loads ``model.onnx``, ``tokenizer.json`` and ``labels.json`` from the asset folder, tokenizes every
premise/hypothesis pair of the samples file padded to the model's fixed length (512, as the serving
pipeline does), runs ONNX Runtime on CPU and prints one row per sample. Exits 1 when a prediction is not
the expected label or the top-1 minus top-2 logit gap is below ``--min-gap``.

    python model_repos/tools/check_tiny_mdeberta.py
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
from tokenizers import Tokenizer

MODEL_REPOS = Path(__file__).resolve().parent.parent
DEFAULT_ASSET = MODEL_REPOS / "assets" / "tiny-mdeberta"
DEFAULT_SAMPLES = MODEL_REPOS / "samples" / "nli_samples.jsonl"
MAX_LENGTH = 512
MIN_GAP = 1.0
Int64Array = npt.NDArray[np.int64]
Float32Array = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Sample:
    id: str
    language: str
    premise: str
    hypothesis: str
    label: str


@dataclass(frozen=True)
class Row:
    sample: Sample
    predicted: str
    gap: float

    @property
    def correct(self) -> bool:
        return self.predicted == self.sample.label


def load_samples(path: Path) -> list[Sample]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [Sample(**json.loads(line)) for line in lines if line.strip()]


def load_id2label(asset: Path) -> dict[int, str]:
    raw = json.loads((asset / "labels.json").read_text(encoding="utf-8"))["id2label"]
    return {int(index): label for index, label in raw.items()}


def padded(tokenizer: Tokenizer, length: int = MAX_LENGTH) -> Tokenizer:
    """A copy of ``tokenizer`` that truncates and pads every pair to exactly ``length`` tokens."""
    copy = Tokenizer.from_str(tokenizer.to_str())
    copy.enable_truncation(max_length=length)
    copy.enable_padding(length=length, pad_id=copy.token_to_id("[PAD]"), pad_token="[PAD]")
    return copy


def encode_pairs(tokenizer: Tokenizer, pairs: Sequence[tuple[str, str]]) -> tuple[Int64Array, Int64Array]:
    """``input_ids`` and ``attention_mask`` as INT64 arrays of shape [len(pairs), padded length]."""
    encodings = tokenizer.encode_batch(list(pairs))
    if any(encoding.overflowing for encoding in encodings):
        raise ValueError("a pair is longer than the tokenizer's truncation length")
    input_ids = np.array([encoding.ids for encoding in encodings], dtype=np.int64)
    attention_mask = np.array([encoding.attention_mask for encoding in encodings], dtype=np.int64)
    return input_ids, attention_mask


def open_session(model: Path) -> ort.InferenceSession:
    options = ort.SessionOptions()
    # One thread keeps the logits bit-stable from run to run and machine to machine of one CPU kind.
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])


def onnx_logits(
    session: ort.InferenceSession, input_ids: Int64Array, attention_mask: Int64Array, batch_size: int = 8
) -> Float32Array:
    logits: list[Float32Array] = []
    for start in range(0, len(input_ids), batch_size):
        inputs = {"input_ids": input_ids[start : start + batch_size]}
        inputs["attention_mask"] = attention_mask[start : start + batch_size]
        logits.append(np.asarray(session.run(["logits"], inputs)[0], dtype=np.float32))
    return np.concatenate(logits)


def score(samples: Sequence[Sample], logits: Float32Array, id2label: dict[int, str]) -> list[Row]:
    ranked = np.sort(logits, axis=-1)
    gaps = ranked[:, -1] - ranked[:, -2]
    predicted = logits.argmax(axis=-1)
    return [
        Row(sample, id2label[int(index)], float(gap))
        for sample, index, gap in zip(samples, predicted, gaps, strict=True)
    ]


def failures(rows: Sequence[Row], min_gap: float = MIN_GAP) -> list[Row]:
    return [row for row in rows if not row.correct or row.gap < min_gap]


def format_table(rows: Sequence[Row], min_gap: float = MIN_GAP) -> str:
    # The free text goes last so that CJK characters (two columns wide) cannot break the alignment.
    header = f"{'id':<6} {'lang':<4} {'expected':<13} {'predicted':<13} {'gap':>6}  ok  premise => hypothesis"
    lines = [header, "-" * len(header)]
    for row in rows:
        sample = row.sample
        ok = "ok" if row.correct and row.gap >= min_gap else "FAIL"
        lines.append(
            f"{sample.id:<6} {sample.language:<4} {sample.label:<13} {row.predicted:<13} {row.gap:>6.2f}  "
            f"{ok:<4}{sample.premise} => {sample.hypothesis}"
        )
    return "\n".join(lines)


def evaluate(asset: Path, samples_path: Path) -> list[Row]:
    samples = load_samples(samples_path)
    tokenizer = padded(Tokenizer.from_file(str(asset / "tokenizer.json")))
    input_ids, attention_mask = encode_pairs(tokenizer, [(s.premise, s.hypothesis) for s in samples])
    logits = onnx_logits(open_session(asset / "model.onnx"), input_ids, attention_mask)
    return score(samples, logits, load_id2label(asset))


def summary(rows: Sequence[Row], min_gap: float = MIN_GAP) -> str:
    bad = failures(rows, min_gap)
    smallest = min(row.gap for row in rows)
    return f"{len(rows) - len(bad)}/{len(rows)} samples pass (min gap {smallest:.3f}, required {min_gap})"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--asset", type=Path, default=DEFAULT_ASSET, help="folder with model.onnx etc.")
    parser.add_argument("--samples", type=Path, default=DEFAULT_SAMPLES, help="NLI samples, JSON lines")
    parser.add_argument("--min-gap", type=float, default=MIN_GAP, help="required top-1 minus top-2 logit gap")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    rows = evaluate(args.asset, args.samples)
    print(format_table(rows, args.min_gap))
    print(summary(rows, args.min_gap))
    return 1 if failures(rows, args.min_gap) else 0


if __name__ == "__main__":
    sys.exit(main())
