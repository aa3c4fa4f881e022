"""What every benchmark script shares: the project's root, the machine's description, NLI requests, cycling.

Light: the standard library only at import (a benchmark of the plugin's own load runs where little is installed);
numpy and the plugin's NLI client are imported by :func:`tokenized_samples`.
"""

from __future__ import annotations

import itertools
import platform
from collections.abc import Callable
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

if TYPE_CHECKING:
    from numpy.typing import NDArray

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
TOKENIZER = ROOT / "model_repos" / "assets" / "tiny-mdeberta" / "tokenizer.json"
SAMPLES = ROOT / "model_repos" / "samples" / "nli_samples.jsonl"


def cycle(calls: Sequence[Callable[[], object]]) -> Callable[[], object]:
    """One call that runs ``calls`` in turn, round and round."""
    it = itertools.cycle(calls)
    return lambda: next(it)()


def tokenized_samples(tokenizer: Path, samples: Path) -> list[dict[str, NDArray[Any]]]:
    """One batch-1 request per NLI sample: ``input_ids`` and ``attention_mask`` INT64 [1, 512]."""
    from pytest_triton.client.nli import NliTokenizer
    from pytest_triton.client.nli import load_samples

    rows = load_samples(samples)
    ids, mask = NliTokenizer(tokenizer).encode([(r.premise, r.hypothesis) for r in rows], truncate=True)
    return [{"input_ids": ids[i : i + 1], "attention_mask": mask[i : i + 1]} for i in range(len(rows))]


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"
