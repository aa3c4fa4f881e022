"""The rules of a declaration of streamed (decoupled) variants, checked when the contracts file is read."""

from __future__ import annotations

from pytest_triton.contracts.spec import Declaration
from pytest_triton.contracts.spec import Variant
from pytest_triton.contracts.table_reader import TableReader
from pytest_triton.errors import ConfigError


def _decoupled(variant: Variant) -> bool:
    """Whether the variant's model declares ``model_transaction_policy { decoupled: true }`` (False where its
    config cannot be read here: a model.tar.gz, a missing file; the server then says what it refuses)."""
    from pytest_triton.config import read_config

    path = variant.repository / variant.model / "config.pbtxt"
    if not path.is_file():
        return False
    try:
        return bool(read_config(path).message.model_transaction_policy.decoupled)
    except (OSError, ConfigError):
        return False


def check_streams(read: TableReader, declaration: Declaration) -> None:
    """A decoupled model is called over the stream, and a declaration of streams compares streams only."""
    streamed = [v for v in declaration.variants.values() if v.protocol == "stream"]
    for variant in declaration.variants.values():
        if variant.protocol != "stream" and _decoupled(variant):
            raise read.fail(
                ("variants", variant.name, "protocol"),
                f"{read.key(('variants', variant.name, 'protocol'))}={variant.protocol!r}: model {variant.model!r} is "
                "decoupled (model_transaction_policy { decoupled: true }): it answers a request with any number of "
                "responses, which Triton's HTTP endpoint refuses ('HTTP end point doesn't support models with "
                'decoupled transaction policy\') and a plain gRPC call cannot collect; use protocol = "stream"',
            )
    if not streamed:
        return
    others = sorted(v.name for v in declaration.variants.values() if v.protocol != "stream")
    if others:
        raise read.fail(
            ("variants", others[0], "protocol"),
            f"variants {others} are not streamed while {[v.name for v in streamed]} are: streams are compared "
            'response by response with streams only; give every variant protocol = "stream" or split the file',
        )
    if declaration.reference.variant is None:
        raise read.fail(
            ("reference", "onnx"),
            "reference.onnx: the variants are streamed, and an ONNX file answers one response per request; "
            "give reference = { variant = NAME }, one of the streamed variants",
        )
    if declaration.latency is not None and declaration.latency.relative:
        raise read.fail(
            ("latency", "relative"),
            "latency.relative: relative budgets of streams are not supported yet; give the variants absolute "
            "stream budgets (ttft_ms, gap_p99_ms, ... in the budget file)",
        )
