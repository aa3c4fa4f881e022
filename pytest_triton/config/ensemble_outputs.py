"""Which sets of an ensemble's outputs a request can ask for, as Triton 2.51's ensemble scheduler decides.

A request that names some of an ensemble's outputs is pruned first (``EnsembleContext``'s constructor,
core ``ensemble_scheduler.cc``): starting from the outputs not asked for, each of them counts down the
output_map entries of the step that writes it; a step whose count reaches zero is pruned, and a tensor
whose reading steps are all pruned is not asked for either, one round after the other. An output not
asked for that a later step reads (``LOGITS`` of the example model_repos/scenario07/ensemble, read by
``postprocess``) still prunes the step that writes it, so the reading step never runs and Triton answers with
:data:`DEADLOCK`.

Triton's quirks are kept: a tensor that no step writes (an ensemble input reached by the pruning) counts
against step 0 (``tensor_to_prev_step_[name]`` on a missing name is 0), and a count that went past zero
never reaches it again. A request that names no output asks for all of them: nothing is pruned.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

DEADLOCK = "unexpected deadlock, at least one output is not set while no more ensemble steps can be made"
MAX_ENUMERATED = 10  # outputs: up to 2**10 - 2 subsets are simulated; above that only the given sets are


@dataclass(frozen=True)
class _Step:
    reads: tuple[str, ...]  # input_map values
    writes: tuple[str, ...]  # output_map values, one per output_map entry


def _steps(config: Any) -> list[_Step]:
    steps = config.ensemble_scheduling.step
    return [_Step(tuple(s.input_map.values()), tuple(s.output_map.values())) for s in steps]


def output_names(config: Any) -> list[str]:
    return [str(o.name) for o in config.output]


def _pruned(config: Any, steps: list[_Step], requested: Collection[str]) -> set[int]:
    """The steps Triton prunes for a request of ``requested`` (Triton's backward traversal)."""
    ignored = set(output_names(config)) - set(requested)
    if not ignored or not steps:
        return set()
    readers: dict[str, set[int]] = {}
    writer: dict[str, int] = {}
    for i, step in enumerate(steps):
        for tensor in step.reads:
            readers.setdefault(tensor, set()).add(i)
        for tensor in step.writes:
            writer.setdefault(tensor, i)
    counts: dict[int, int] = {}
    pruned: set[int] = set()
    while ignored:
        found: set[str] = set()
        for tensor in sorted(ignored):
            index = writer.get(tensor, 0)
            counts[index] = counts.get(index, len(steps[index].writes)) - 1
            if counts[index] == 0:
                pruned.add(index)
                for source in steps[index].reads:
                    left = readers.setdefault(source, set())
                    left.discard(index)
                    if not left:
                        found.add(source)
        ignored = found
    return pruned


def request_works(config: Any, requested: Collection[str]) -> bool:
    """Whether a request naming ``requested`` (empty: every output) gets every output it names."""
    outputs = output_names(config)
    wanted = [name for name in requested if name in outputs] or outputs
    steps = _steps(config)
    pruned = _pruned(config, steps, wanted)
    ready = {str(io.name) for io in config.input}
    todo = [s for i, s in enumerate(steps) if i not in pruned]
    progress = True
    while progress:
        progress = False
        for step in list(todo):
            if all(tensor in ready for tensor in step.reads):
                ready.update(step.writes)
                todo.remove(step)
                progress = True
    return all(name in ready for name in wanted)


def _subsets(names: list[str]) -> Iterator[tuple[str, ...]]:
    """Every non-empty proper subset, smallest first, each in the declared order."""
    for size in range(1, len(names)):
        yield from itertools.combinations(names, size)


def failing_output_sets(config: Any) -> list[tuple[str, ...]] | None:
    """The non-empty proper subsets of the outputs whose requests deadlock (None: too many outputs to try)."""
    outputs = output_names(config)
    if len(outputs) > MAX_ENUMERATED:
        return None
    return [subset for subset in _subsets(outputs) if not request_works(config, subset)]


def working_request(config: Any, wanted: Collection[str]) -> list[str]:
    """The outputs to ask for so that a request gets ``wanted``: ``wanted`` itself where that works, else the
    smallest set that holds it and works (every output, where nothing smaller does)."""
    outputs = output_names(config)
    chosen = [name for name in outputs if name in wanted]
    if not chosen or request_works(config, chosen):
        return list(wanted)
    others = [name for name in outputs if name not in chosen]
    if len(outputs) <= MAX_ENUMERATED:
        for size in range(1, len(others)):
            for extra in itertools.combinations(others, size):
                if request_works(config, [*chosen, *extra]):
                    return [*wanted, *extra]
    return [*wanted, *others]
