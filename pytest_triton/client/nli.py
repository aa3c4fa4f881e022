"""NLI pre- and post-processing: text pairs → token ids → KServe request; logits → label, score.

The payload an NLI client builds, with its failure cases made explicit: an
empty text, a pair longer than ``max_length`` tokens (unless truncation is allowed) or a
malformed tensor raises before any request is sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from typing import final

import numpy as np
from numpy.typing import NDArray

from pytest_triton.client.transports import Transport
from pytest_triton.errors import InferenceError
from pytest_triton.errors import MissingDependency

LABELS: tuple[str, ...] = ("entailment", "neutral", "contradiction")  # mDeBERTa-xnli's order


@dataclass(frozen=True)
class NliResult:
    """One classification: the label, its softmax probability and the raw logits."""

    label: str
    score: float
    logits: tuple[float, ...]


def softmax(logits: NDArray[Any]) -> NDArray[Any]:
    """Row-wise softmax, stable for large logits."""
    shifted = logits - logits.max(axis=-1, keepdims=True)
    exp = np.exp(shifted)
    result: NDArray[Any] = exp / exp.sum(axis=-1, keepdims=True)
    return result


def results_from_logits(logits: NDArray[Any], labels: Sequence[str] = LABELS) -> list[NliResult]:
    if logits.ndim != 2 or logits.shape[1] != len(labels):
        raise InferenceError(f"logits shape={list(logits.shape)} does not match {len(labels)} labels per row")
    if not np.all(np.isfinite(logits)):
        raise InferenceError(f"logits contain NaN or Inf: {logits.tolist()}")
    probs = softmax(logits.astype(np.float64))
    best = probs.argmax(axis=-1)
    return [
        NliResult(labels[int(i)], float(probs[row, int(i)]), tuple(float(x) for x in logits[row]))
        for row, i in enumerate(best)
    ]


@final
class NliTokenizer:
    """A ``tokenizers`` tokenizer.json that encodes premise/hypothesis pairs padded to ``max_length``."""

    def __init__(self, path: str | Path, *, max_length: int = 512, pad_id: int = 0) -> None:
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise MissingDependency("tokenizers", "serve") from exc
        self.path = Path(path)
        if not self.path.is_file():
            raise InferenceError(f"tokenizer file {str(self.path)!r} does not exist")
        self._tokenizer = Tokenizer.from_file(str(self.path))
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        self._truncating = Tokenizer.from_str(self._tokenizer.to_str())
        self._truncating.enable_truncation(max_length, strategy="longest_first")
        self.max_length = max_length
        self.pad_id = pad_id

    def encode(self, pairs: Sequence[tuple[str, str]], *, truncate: bool = False) -> tuple[NDArray[Any], NDArray[Any]]:
        """``input_ids`` and ``attention_mask`` (INT64, [len(pairs), max_length])."""
        if not pairs:
            raise InferenceError("no text pairs to encode")
        ids = np.full((len(pairs), self.max_length), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(pairs), self.max_length), dtype=np.int64)
        for row, (premise, hypothesis) in enumerate(pairs):
            for field, text in (("premise", premise), ("hypothesis", hypothesis)):
                if not isinstance(text, str) or not text.strip():
                    raise InferenceError(f"pair {row}: {field}={text!r} is empty; NLI needs two non-empty texts")
            tokens = self._tokenizer.encode(premise, hypothesis).ids
            if len(tokens) > self.max_length:
                if not truncate:
                    raise InferenceError(
                        f"pair {row} is {len(tokens)} tokens long, more than max_length={self.max_length}; "
                        "shorten it or pass truncate=True"
                    )
                tokens = self._truncating.encode(premise, hypothesis).ids  # longest text first
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        return ids, mask


@final
class NliClient:
    """Classify text pairs on a served model (client-side tokenization) or an ensemble (text in)."""

    def __init__(
        self,
        transport: Transport,
        tokenizer: NliTokenizer | None = None,
        *,
        model: str = "mdeberta",
        ensemble: str = "ensemble_mdeberta",
        labels: Sequence[str] = LABELS,
    ) -> None:
        self.transport = transport
        self.tokenizer = tokenizer
        self.model = model
        self.ensemble = ensemble
        self.labels = tuple(labels)

    def logits(self, pairs: Sequence[tuple[str, str]], *, truncate: bool = False) -> NDArray[Any]:
        """Raw logits [len(pairs), labels] from the model, tokenized here."""
        if self.tokenizer is None:
            raise InferenceError("client-side tokenization needs a tokenizer: NliClient(transport, NliTokenizer(path))")
        ids, mask = self.tokenizer.encode(pairs, truncate=truncate)
        outputs = self.transport.infer(self.model, {"input_ids": ids, "attention_mask": mask}, ["logits"])
        return np.asarray(outputs["logits"], dtype=np.float32)

    def classify(self, pairs: Sequence[tuple[str, str]], *, truncate: bool = False) -> list[NliResult]:
        return results_from_logits(self.logits(pairs, truncate=truncate), self.labels)

    def classify_text(self, pairs: Sequence[tuple[str, str]]) -> list[NliResult]:
        """Send raw text to the ensemble (tokenize → model → postprocess) and read its label and score."""
        if not pairs:
            raise InferenceError("no text pairs to classify")
        for row, pair in enumerate(pairs):
            for field, text in zip(("premise", "hypothesis"), pair):
                if not isinstance(text, str) or not text.strip():
                    raise InferenceError(f"pair {row}: {field}={text!r} is empty; NLI needs two non-empty texts")
        premises = np.array([[p.encode("utf-8")] for p, _ in pairs], dtype=object)
        hypotheses = np.array([[h.encode("utf-8")] for _, h in pairs], dtype=object)
        outputs = self.transport.infer(
            self.ensemble, {"PREMISE": premises, "HYPOTHESIS": hypotheses}, ["LABEL", "SCORE", "LOGITS"]
        )
        labels = [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in outputs["LABEL"].reshape(-1)]
        scores = np.asarray(outputs["SCORE"], dtype=np.float64).reshape(-1)
        logits = np.asarray(outputs["LOGITS"], dtype=np.float32).reshape(len(pairs), -1)
        return [
            NliResult(label, float(score), tuple(float(x) for x in row))
            for label, score, row in zip(labels, scores, logits)
        ]


@dataclass(frozen=True)
class NliSample:
    """A labelled premise/hypothesis pair of the bundled sample set."""

    id: str
    language: str
    premise: str
    hypothesis: str
    label: str

    @property
    def pair(self) -> tuple[str, str]:
        return (self.premise, self.hypothesis)


def load_samples(path: str | Path) -> list[NliSample]:
    """Read a JSON-lines sample set (id, language, premise, hypothesis, label per line)."""
    import json

    samples: list[NliSample] = []
    file = Path(path)
    from pytest_triton.archive.files import read_file_text

    for number, line in enumerate(read_file_text(file, "samples").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            sample = NliSample(
                str(data["id"]), str(data["language"]), data["premise"], data["hypothesis"], data["label"]
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise InferenceError(f"{file}:{number}: not a sample line ({exc!r}); expected {NliSample.__doc__}") from exc
        if sample.label not in LABELS:
            raise InferenceError(f"{file}:{number}: label={sample.label!r} is not one of {LABELS}")
        samples.append(sample)
    return samples
