"""Run a declaration's parity contract for one variant: fixed samples, or generated inputs shrunk on failure.

With generated inputs, Hypothesis searches (``examples`` inputs at most, ``max_seconds`` at most, from ``seed``)
for an input on which the variant and the reference disagree, and shrinks the first one it finds to a minimal
input; the report prints that input, the worst element and the seed that reproduces the search.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from typing import final

import numpy as np
from numpy.typing import NDArray

from pytest_triton.client.transports import Transport
from pytest_triton.contracts.checks import CheckResult
from pytest_triton.contracts.checks import compare_outputs
from pytest_triton.contracts.checks import compare_text_labels
from pytest_triton.contracts.generated import GeneratedInput
from pytest_triton.contracts.generated import generated_inputs
from pytest_triton.contracts.samples import Sample
from pytest_triton.contracts.samples import load_samples
from pytest_triton.contracts.samples import select_inputs
from pytest_triton.contracts.serving import ContractServers
from pytest_triton.contracts.serving import ServedVariant
from pytest_triton.contracts.serving import batching
from pytest_triton.contracts.spec import Declaration
from pytest_triton.contracts.spec import Generated
from pytest_triton.contracts.spec import Variant
from pytest_triton.contracts.spec import precision_tolerance
from pytest_triton.errors import ConfigError
from pytest_triton.errors import MissingDependency
from pytest_triton.parity.tensors import LabelReport
from pytest_triton.parity.tensors import ParityReport

__all__ = ["ContractRun", "ParityOutcome", "format_tensors"]

LABEL_KEY = "\0label:"  # candidate outputs: a variant's text labels, apart from its compared outputs


@final
@dataclass(frozen=True)
class ParityOutcome:
    """A variant's parity verdict, every check, what inputs it ran on and, on a generated failure, the input."""

    variant: str
    reference: str
    checks: tuple[CheckResult, ...]
    inputs: str
    minimal: str | None = None

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def reports(self) -> tuple[ParityReport | None, LabelReport | None]:
        """For the latency report's parity table: every output's tolerance comparison (under the first one's
        tolerance name) and the first label comparison (argmax or text labels)."""
        numeric = [c.report for c in self.checks if isinstance(c.report, ParityReport)]
        labels = [c.report for c in self.checks if isinstance(c.report, LabelReport)]
        parity = None
        if numeric:
            outputs = tuple(o for r in numeric for o in r.outputs)
            first = numeric[0]
            parity = ParityReport(outputs, first.tolerance, first.reference_name, first.candidate_name)
        return parity, (labels[0] if labels else None)

    def message(self) -> str:
        verdict = "holds" if self.ok else "FAILED"
        lines = [f"parity {verdict}: variant {self.variant!r} vs reference {self.reference!r} on {self.inputs}"]
        if self.minimal is not None:
            lines.append("minimal input that shows the disagreement (shrunk by Hypothesis):")
            lines.extend("  " + line for line in self.minimal.splitlines())
        for check in self.checks:
            if not check.ok or self.ok:
                lines.append(f"- {check.title()}")
                lines.extend("  " + line for line in check.lines)
        return "\n".join(lines)


def format_tensors(tensors: Mapping[str, NDArray[Any]]) -> str:
    """Each tensor on its own lines: name, dtype, shape and (abridged) values."""
    lines = []
    for name, array in tensors.items():
        values = np.array2string(np.asarray(array), threshold=64, edgeitems=4, max_line_width=110)
        lines.append(f"{name} {array.dtype} {list(array.shape)} = {values}")
    return "\n".join(lines)


def _concat(parts: Sequence[Mapping[str, NDArray[Any]]]) -> dict[str, NDArray[Any]]:
    names = parts[0].keys()
    return {n: np.concatenate([np.atleast_1d(np.asarray(p[n])) for p in parts]) for n in names}


def _row_ids(samples: Sequence[Sample]) -> list[str]:
    ids: list[str] = []
    for sample in samples:
        ids.extend([sample.id] if sample.rows == 1 else [f"{sample.id}[{i}]" for i in range(sample.rows)])
    return ids


def infer(
    transport: Transport, model: str, tensors: Mapping[str, NDArray[Any]], outputs: Sequence[str]
) -> dict[str, NDArray[Any]]:
    """Send the tensors ``model`` declares (a sample may hold more) and return ``outputs``."""
    names = [spec.name for spec in transport.input_specs(model)]
    return transport.infer(model, select_inputs(tensors, names), list(outputs))


def working_outputs(folder: Path, model: str, wanted: Sequence[str]) -> tuple[list[str], str | None]:
    """What to ask ``model`` of ``folder`` for so that Triton 2.51 answers with ``wanted``, and a note when that
    is more: an ensemble can deadlock on a request for some of its outputs (lint rule E322), so the smallest set
    holding ``wanted`` that it answers is asked for instead (the extra outputs are not compared)."""
    from pytest_triton.config import read_config
    from pytest_triton.config.ensemble_outputs import DEADLOCK
    from pytest_triton.config.ensemble_outputs import working_request

    path = folder / model / "config.pbtxt"
    try:
        config = read_config(path).message if wanted and path.is_file() else None
    except (OSError, ConfigError):
        config = None  # the server refuses it and says why
    if config is None or config.platform != "ensemble":
        return list(wanted), None
    asked = working_request(config, wanted)
    if len(asked) == len(wanted):
        return asked, None
    alone, extra = ", ".join(wanted), ", ".join(asked[len(wanted) :])
    return asked, (
        f"ensemble {model!r} is asked for {extra} besides {alone}: Triton 2.51 answers a request for only "
        f"{alone} with {DEADLOCK!r} (lint rule E322)"
    )


def search_disagreement(strategy: Any, disagrees: Callable[[Any], bool], generated: Generated) -> Any:
    """The smallest input of ``strategy`` that ``disagrees`` (Hypothesis's search and shrinking, bounded by the
    declaration's ``examples`` and ``seed``), or None when none was found."""
    try:
        from hypothesis import HealthCheck
        from hypothesis import Phase
        from hypothesis import find
        from hypothesis import settings
        from hypothesis.errors import NoSuchExample
    except ImportError as exc:
        raise MissingDependency("hypothesis", "contracts") from exc

    config = settings(
        max_examples=generated.examples,
        deadline=None,
        database=None,
        phases=[Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
    )
    try:
        return find(strategy, disagrees, settings=config, random=random.Random(generated.seed))
    except NoSuchExample:
        return None


@final
class ContractRun:
    """One declaration in one session: serves its variants lazily and keeps the reference's outputs."""

    def __init__(
        self, declaration: Declaration, servers: ContractServers, *, reference: tuple[Transport, str] | None = None
    ) -> None:
        """``reference``: the transport and model to compare with, instead of the declaration's reference (a
        baseline pair: the same variant served from the base ref)."""
        self.declaration = declaration
        self.servers = servers
        self._samples: list[Sample] | None = None
        self._reference: tuple[Transport, str] | None = reference
        self._reference_outputs: dict[str, NDArray[Any]] | None = None
        self._generated: tuple[list[GeneratedInput], bool] | None = None
        self.request_notes: dict[str, str] = {}  # variant name -> why it is asked for more outputs than compared

    # -- inputs ----------------------------------------------------------------------------------------------

    def samples(self) -> list[Sample]:
        if self._samples is None:
            inputs = self.declaration.inputs
            assert inputs.samples is not None
            self._samples = load_samples(inputs.samples, batch_size=inputs.batch_size)
        return self._samples

    def generated_inputs(self) -> tuple[list[GeneratedInput], bool]:
        """What to generate (from the source variant's config.pbtxt) and whether that model batches."""
        if self._generated is None:
            generated = self.declaration.inputs.generated
            assert generated is not None
            source = self.declaration.variants[generated.source]
            folder = self.servers.folder(source.repository)
            self._generated = generated_inputs(
                folder / source.model / "config.pbtxt", generated.tensors, where=str(self.declaration.path)
            )
        return self._generated

    # -- the reference ---------------------------------------------------------------------------------------

    def reference(self) -> tuple[Transport, str]:
        if self._reference is None:
            self._reference = self.servers.reference(self.declaration)
        return self._reference

    def output_names(self) -> list[str]:
        """The outputs compared: the declared ones, else every output the reference returns."""
        if self.declaration.outputs:
            return [o.name for o in self.declaration.outputs]
        transport, model = self.reference()
        if self.declaration.inputs.samples is not None:
            first = self.samples()[0].tensors
        else:
            from pytest_triton.contracts.generated import numpy_request

            specs, batches = self.generated_inputs()
            first = numpy_request(specs, batch_size=1 if batches else None, seed=0)
        return sorted(infer(transport, model, first, []))

    def _reference_on_samples(self) -> dict[str, NDArray[Any]]:
        if self._reference_outputs is None:
            transport, model = self.reference()
            names = self.output_names()
            names = self._reference_request(names)
            self._reference_outputs = _concat([infer(transport, model, s.tensors, names) for s in self.samples()])
        return self._reference_outputs

    # -- parity ----------------------------------------------------------------------------------------------

    def requested_outputs(self, variant: Variant) -> list[str]:
        """What to ask a variant for. Over HTTP: every output (none named); else the compared outputs and labels,
        plus what an ensemble needs to answer them (see :func:`working_outputs`, noted in ``request_notes``)."""
        if variant.protocol == "http":
            return []
        labels = [c.outputs[variant.name] for c in self.declaration.labels if variant.name in c.outputs]
        return self._ask(variant, [variant.output_name(n) for n in self.output_names()] + labels)

    def _ask(self, variant: Variant, wanted: list[str]) -> list[str]:
        asked, note = working_outputs(self.servers.folder(variant.repository), variant.model, wanted)
        if note is not None:
            self.request_notes[variant.name] = note
        return asked

    def _reference_request(self, names: list[str]) -> list[str]:
        """The outputs to ask the reference for: a served reference is an ensemble as often as a variant."""
        served = self.declaration.reference.variant
        return names if served is None else self._ask(self.declaration.variants[served], names)

    def _candidate(self, served: ServedVariant, tensors: Mapping[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
        variant = served.variant
        names = self.output_names()
        found = infer(served.transport, variant.model, variant.rename_inputs(tensors), self.requested_outputs(variant))
        outputs = {n: found[variant.output_name(n)] for n in names if variant.output_name(n) in found}
        for check in self.declaration.labels:  # text labels, under a key no output name can have
            label = check.outputs.get(variant.name)
            if label is not None and label in found:
                outputs[LABEL_KEY + check.name] = found[label]
        return outputs

    def _compare(
        self,
        variant: Variant,
        served: ServedVariant,
        ref: Mapping[str, NDArray[Any]],
        cand: Mapping[str, NDArray[Any]],
        rows: Sequence[str],
    ) -> list[CheckResult]:
        reference_name = self.declaration.reference.name
        results = compare_outputs(
            ref,
            {k: v for k, v in cand.items() if not k.startswith(LABEL_KEY)},
            self.declaration.outputs,
            precision=precision_tolerance(variant.precision_on(served.has_gpu)),
            variant=variant.name,
            reference_name=reference_name,
            row_ids=rows,
        )
        for check in self.declaration.labels:
            if variant.name in check.outputs:
                labels = cand.get(LABEL_KEY + check.name)
                results.append(compare_text_labels(check, ref, labels, variant.name, reference_name, rows))
        return results

    def parity(self, name: str) -> ParityOutcome:
        """Compare variant ``name`` with the reference (raises VariantUnavailable where it cannot run)."""
        variant = self.declaration.variants[name]
        served = self.servers.serve(variant)
        self.reference()
        if self.declaration.inputs.generated is not None:
            return self._parity_generated(variant, served, self.declaration.inputs.generated)
        samples = self.samples()
        reference = self._reference_on_samples()
        candidate = _concat([self._candidate(served, s.tensors) for s in samples])
        checks = self._compare(variant, served, reference, candidate, _row_ids(samples))
        where = os.path.relpath(str(self.declaration.inputs.samples), self.declaration.path.parent)
        text = "; ".join([f"{len(samples)} samples of {where}", *self.notes_for(name)])
        return ParityOutcome(name, self.declaration.reference.name, tuple(checks), text)

    def notes_for(self, name: str) -> list[str]:
        """Why variant ``name`` (or the served reference) was asked for more outputs than compared."""
        keys = dict.fromkeys([name, self.declaration.reference.variant or ""])
        return [self.request_notes[k] for k in keys if k in self.request_notes]

    def _parity_generated(self, variant: Variant, served: ServedVariant, generated: Generated) -> ParityOutcome:
        from pytest_triton.contracts.generated import request_tensors

        specs, batches = self.generated_inputs()
        batch = generated.batch_size if batches else None
        if not batching(self.servers.folder(variant.repository), variant.model):
            batch = None
        transport, model = self.reference()
        names = self._reference_request(self.output_names())
        rows = [f"row {i}" for i in range(batch or 1)]
        deadline = time.monotonic() + generated.max_seconds
        tried = 0
        last: list[CheckResult] = []  # the checks of the last input tried: what a pass reports

        def disagrees(tensors: dict[str, NDArray[Any]]) -> bool:
            nonlocal tried, last
            if time.monotonic() > deadline:
                return False  # out of time: the search (or the shrinking) ends with what it has
            tried += 1
            ref = infer(transport, model, tensors, names)
            last = self._compare(variant, served, ref, self._candidate(served, tensors), rows)
            return not all(c.ok for c in last)

        started = time.monotonic()
        minimal = search_disagreement(request_tensors(specs, batch_size=batch), disagrees, generated)
        spent = time.monotonic() - started
        text = "; ".join(
            [
                f"{tried} generated inputs (seed={generated.seed}, {spent:.1f} s; "
                f"reproduce with [inputs.generate] seed = {generated.seed})",
                *self.notes_for(variant.name),
            ]
        )
        if minimal is None:
            found = f"no disagreement found on {text}; the checks on the last input:"
            checks = [CheckResult("all outputs", "generated inputs", True, (found,)), *last]
            return ParityOutcome(variant.name, self.declaration.reference.name, tuple(checks), text)
        ref = infer(transport, model, minimal, names)
        checks = self._compare(variant, served, ref, self._candidate(served, minimal), rows)
        return ParityOutcome(
            variant.name, self.declaration.reference.name, tuple(checks), text, format_tensors(minimal)
        )
