#!/usr/bin/env python3
"""Write scenario 07's sample set as KServe v2 JSON lines, the samples file of its contracts.

Each line holds one pair as every variant needs it: ``input_ids`` and ``attention_mask`` (INT64 [1, 512],
tokenized here, as scenario 07's client does) for the model, ``PREMISE`` and ``HYPOTHESIS`` (BYTES [1, 1])
for the ensemble. A unit test checks that the committed file equals a fresh run.

    python model_repos/tools/make_nli_kserve_samples.py
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pytest_triton.client.nli import NliTokenizer
from pytest_triton.client.nli import load_samples

MODEL_REPOS = Path(__file__).resolve().parent.parent
SAMPLES = MODEL_REPOS / "samples" / "nli_samples.jsonl"
TOKENIZER = MODEL_REPOS / "assets" / "tiny-mdeberta" / "tokenizer.json"
OUT = MODEL_REPOS / "samples" / "nli_samples.kserve.jsonl"
MAX_LENGTH = 512


def kserve_lines(samples: Path = SAMPLES, tokenizer: Path = TOKENIZER) -> list[str]:
    encoder = NliTokenizer(tokenizer, max_length=MAX_LENGTH)
    lines = []
    for sample in load_samples(samples):
        ids, mask = encoder.encode([sample.pair])
        inputs = [
            {"name": "input_ids", "shape": [1, MAX_LENGTH], "datatype": "INT64", "data": ids.reshape(-1).tolist()},
            {
                "name": "attention_mask",
                "shape": [1, MAX_LENGTH],
                "datatype": "INT64",
                "data": mask.reshape(-1).tolist(),
            },
            {"name": "PREMISE", "shape": [1, 1], "datatype": "BYTES", "data": [sample.premise]},
            {"name": "HYPOTHESIS", "shape": [1, 1], "datatype": "BYTES", "data": [sample.hypothesis]},
        ]
        lines.append(json.dumps({"id": sample.id, "inputs": inputs}, ensure_ascii=False, separators=(",", ":")))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=OUT, help="Where the JSON lines go")
    args = parser.parse_args(argv)
    args.out.write_text("\n".join(kserve_lines()) + "\n", encoding="utf-8")
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
