from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from pytest_triton.client.kserve import decode_response
from pytest_triton.client.kserve import encode_request
from pytest_triton.client.nli import NliClient
from pytest_triton.client.nli import NliTokenizer
from pytest_triton.client.nli import results_from_logits
from pytest_triton.client.transports import InputSpec
from pytest_triton.client.transports import validate_inputs
from pytest_triton.errors import InferenceError

TENSORS: dict[str, NDArray[Any]] = {
    "ids": np.arange(6, dtype=np.int64).reshape(2, 3),
    "x": np.array([[1.5, -2.0]], dtype=np.float32),
    "text": np.array([[b"hello"], ["w\u00f6rld".encode()]], dtype=object),
}


def as_response(body: bytes, header_length: int | None) -> tuple[bytes, int | None]:
    """Turn a request body into the response the server would send for the same tensors."""
    head = json.loads(body[:header_length] if header_length else body)
    head["outputs"] = head.pop("inputs")
    out = json.dumps(head).encode()
    return out + (body[header_length:] if header_length else b""), len(out) if header_length else None


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "json"])
def test_encode_decode_round_trip(binary: bool) -> None:
    body, length = encode_request(TENSORS, binary=binary)
    assert (length is not None) == binary
    decoded = decode_response(*as_response(body, length))
    for name, array in TENSORS.items():
        assert decoded[name].shape == array.shape
        assert decoded[name].tolist() == array.tolist()


def test_decode_error_body() -> None:
    with pytest.raises(InferenceError, match="server error: boom"):
        decode_response(b'{"error": "boom"}', None)
    with pytest.raises(InferenceError, match="not KServe v2 JSON"):
        decode_response(b"<html>", None)


SPECS = [InputSpec("input_ids", "INT64", (-1, 512)), InputSpec("attention_mask", "INT64", (-1, 512))]


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"input_ids": np.zeros((1, 512), np.int32), "attention_mask": np.zeros((1, 512), np.int64)}, "datatype=INT32"),
        ({"input_ids": np.zeros((1, 256), np.int64), "attention_mask": np.zeros((1, 512), np.int64)}, "shape=.1, 256."),
        ({"input_ids": np.zeros((1, 512), np.int64)}, "missing .'attention_mask'."),
    ],
    ids=["dtype", "shape", "missing"],
)
def test_validate_inputs_names_tensor_and_value(inputs: dict[str, NDArray[Any]], message: str) -> None:
    with pytest.raises(InferenceError, match=message):
        validate_inputs("mdeberta", SPECS, inputs)


def test_results_from_logits() -> None:
    (result,) = results_from_logits(np.array([[0.0, 3.0, 1.0]], dtype=np.float32))
    assert result.label == "neutral"
    assert result.score == pytest.approx(np.exp(3) / (1 + np.exp(3) + np.exp(1)))
    with pytest.raises(InferenceError, match="NaN or Inf"):
        results_from_logits(np.array([[np.nan, 0.0, 0.0]]))


@pytest.fixture
def tokenizer_file(tmp_path: Path) -> Path:
    from tokenizers import Tokenizer
    from tokenizers import models
    from tokenizers import pre_tokenizers
    from tokenizers import processors

    vocab = {"[PAD]": 0, "[CLS]": 1, "[SEP]": 2, "[UNK]": 3, "a": 4, "b": 5}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 1), ("[SEP]", 2)]
    )
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    return path


def test_tokenizer_pads_to_max_length(tokenizer_file: Path) -> None:
    ids, mask = NliTokenizer(tokenizer_file, max_length=8).encode([("a b", "b")])
    assert ids.tolist() == [[1, 4, 5, 2, 5, 2, 0, 0]]
    assert mask.tolist() == [[1, 1, 1, 1, 1, 1, 0, 0]]
    assert ids.dtype == np.int64


def test_tokenizer_refuses_long_and_empty_text(tokenizer_file: Path) -> None:
    tokenizer = NliTokenizer(tokenizer_file, max_length=6)
    with pytest.raises(InferenceError, match="7 tokens long, more than max_length=6"):
        tokenizer.encode([("a a a", "b")])
    ids, _ = tokenizer.encode([("a a a", "b")], truncate=True)
    assert ids.tolist() == [[1, 4, 4, 2, 5, 2]]
    with pytest.raises(InferenceError, match="hypothesis=' ' is empty"):
        tokenizer.encode([("a", " ")])


class RecordingTransport:
    def __init__(self) -> None:
        self.calls = 0

    def input_specs(self, model: str) -> list[InputSpec]:
        return SPECS

    def infer(self, model: str, inputs: object, outputs: object) -> dict[str, NDArray[Any]]:
        self.calls += 1
        return {}


def test_bad_input_is_refused_before_any_request(tokenizer_file: Path) -> None:
    transport = RecordingTransport()
    client = NliClient(transport, NliTokenizer(tokenizer_file, max_length=4))
    with pytest.raises(InferenceError):
        client.classify([("a a a", "b")])
    with pytest.raises(InferenceError):
        client.classify_text([("", "b")])
    assert transport.calls == 0
