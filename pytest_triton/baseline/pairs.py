"""Pairs of a baseline run: each declared variant of the working tree beside the same variant at the base ref.

A pair is compared (``changed``), or says why not: its repository did not change (``unchanged``, compared only
when asked), the variant is new in the PR (``new``), or the base's contracts file cannot be read (``no-base``).
The base's variant is the base's own declaration of it (its repository, model and renames at the base), named
``VARIANT@REF`` so that reports and budgets tell the two apart.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from typing import Literal
from typing import final

from numpy.typing import NDArray

from pytest_triton.baseline.source import BaseTree
from pytest_triton.baseline.source import contracts_at_base
from pytest_triton.baseline.source import tree_digest
from pytest_triton.client.transports import InputSpec
from pytest_triton.client.transports import Transport
from pytest_triton.contracts.spec import Declaration
from pytest_triton.contracts.spec import Reference
from pytest_triton.contracts.spec import Variant
from pytest_triton.errors import ConfigError

__all__ = ["AsDeclared", "Pair", "PairStatus", "find_pairs"]

PairStatus = Literal["changed", "unchanged", "new", "no-base"]


@final
@dataclass(frozen=True)
class Pair:
    """A variant of the head's declaration and, where there is one, the same variant at the base."""

    declaration: Declaration  # the head's
    name: str
    label: str  # the base's name in item names (the ref as given, or the base folder's name)
    status: PairStatus
    reason: str = ""  # why it is not compared (or, for a changed pair, what changed)
    base: Variant | None = None  # named ``base_name``

    @property
    def base_name(self) -> str:
        return f"{self.name}@{self.label}"

    @property
    def parity_item(self) -> str:
        return f"parity[{self.base_name}]"

    @property
    def latency_item(self) -> str:
        return f"latency[{self.name}/{self.base_name}]"

    def compared(self, *, unchanged: bool) -> bool:
        """Whether the pair is measured (``unchanged``: also the pairs whose repository did not change)."""
        return self.status == "changed" or (self.status == "unchanged" and unchanged)

    def pair_declaration(self) -> Declaration:
        """The head's declaration with the base variant added and made the reference: parity then compares the
        head's variant with the base's, with the head's inputs and checks."""
        assert self.base is not None
        variants = {**self.declaration.variants, self.base_name: self.base}
        reference = Reference(name=self.base_name, variant=self.base_name)
        return dataclasses.replace(self.declaration, variants=variants, reference=reference)


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _same_call(head: Variant, base: Variant) -> bool:
    return (head.model, dict(head.inputs), dict(head.outputs)) == (base.model, dict(base.inputs), dict(base.outputs))


def find_pairs(
    declaration: Declaration, base: BaseTree, *, check_launcher: Callable[[str], object] | None = None
) -> list[Pair]:
    """Every variant of ``declaration`` (or those its ``[baseline] variants`` names) paired with the base's."""
    from pytest_triton.contracts.declaration import load_declaration

    names = declaration.baseline.variants or tuple(declaration.variants)
    where = _relative(declaration.path, base.head_root)
    try:
        at_base = contracts_at_base(base, declaration.path)
    except ConfigError as exc:
        return [Pair(declaration, n, base.label, "no-base", f"the base cannot be read: {exc}") for n in names]
    if at_base is None:
        reason = f"new in this PR: {where} does not exist at {base.describe()}: no baseline"
        return [Pair(declaration, n, base.label, "new", reason) for n in names]
    try:
        declared = load_declaration(at_base, check_launcher=check_launcher)
    except ConfigError as exc:
        reason = f"no baseline: {where} as it is at {base.describe()} cannot be read: {exc.reason}"
        return [Pair(declaration, n, base.label, "no-base", reason) for n in names]
    pairs = []
    for name in names:
        head = declaration.variants[name]
        if name not in declared.variants:
            reason = f"new in this PR: {where} at {base.describe()} declares no variant {name!r}: no baseline"
            pairs.append(Pair(declaration, name, base.label, "new", reason))
            continue
        own = declared.variants[name]
        variant = dataclasses.replace(own, name=f"{name}@{base.label}", budget={"*": f"{name}@{base.label}"})
        repository = _relative(head.repository, base.head_root)
        if _same_call(head, own) and tree_digest(head.repository) == tree_digest(own.repository):
            reason = (
                f"its repository {repository} is the same at {base.describe()} and in the working tree: "
                "not compared (--triton-baseline-unchanged compares it anyway)"
            )
            pairs.append(Pair(declaration, name, base.label, "unchanged", reason, variant))
        else:
            reason = f"its repository {repository} differs from {base.describe()}'s"
            pairs.append(Pair(declaration, name, base.label, "changed", reason, variant))
    return pairs


@final
class AsDeclared:
    """A variant's transport called by the declaration's names: its input and output renames applied (the base
    variant as the reference of a pair, which the reference code calls by the declaration's names)."""

    def __init__(self, transport: Transport, variant: Variant) -> None:
        self.transport = transport
        self.variant = variant
        self._declared = {model: declared for declared, model in variant.inputs.items()}
        self._outputs = {model: declared for declared, model in variant.outputs.items()}

    def input_specs(self, model: str) -> list[InputSpec]:
        specs = self.transport.input_specs(model)
        return [InputSpec(self._declared.get(s.name, s.name), s.datatype, s.shape) for s in specs]

    def infer(self, model: str, inputs: Mapping[str, NDArray[Any]], outputs: Sequence[str]) -> dict[str, NDArray[Any]]:
        wanted = [self.variant.output_name(o) for o in outputs] if self.variant.protocol != "http" else []
        found = self.transport.infer(model, self.variant.rename_inputs(inputs), wanted)
        named = {self._outputs.get(k, k): v for k, v in found.items()}
        return {k: named[k] for k in outputs if k in named} if outputs else named
