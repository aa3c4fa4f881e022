"""Ensemble rules (E3xx): the checks Triton core 2.51 makes before it loads an ensemble.

Config-level checks follow ``ValidateEnsembleSchedulingConfig`` (core ``model_config_utils.cc``);
the checks that read the step models' configs follow ``ValidateEnsembleConfig``
(``ensemble_utils.cc``) and the repository manager's dependency graph. Triton stops at its
first error; we report every one. Messages quote Triton's sentences, its typos included
(``for ensemble X' is not used``), so a finding and a server log line match by text. A
backend on an ensemble and ensemble_scheduling on another platform are schema rules (S201, S204).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from pytest_triton.lint.context import ModelContext
from pytest_triton.lint.rules.family import Family
from pytest_triton.lint.rules.family import RuleTable
from pytest_triton.lint.rules.schema_common import fmt_shape
from pytest_triton.lint.rules.step_io import ENSEMBLE_PLATFORM
from pytest_triton.lint.rules.step_io import step_io
from pytest_triton.lint.rules.step_io import why_unknown

# the ids of this family (its FAMILY below; the catalogue gathers it)
RULES: RuleTable = [
    ("E301", "error", "platform 'ensemble' without ensemble_scheduling"),
    ("E302", "error", "instance_group set on an ensemble"),
    ("E303", "error", "optimization set on an ensemble"),
    ("E304", "error", "model_warmup set on an ensemble"),
    ("E305", "error", "ensemble has no step"),
    ("E306", "error", "ensemble step lacks model_name, input_map or output_map"),
    ("E307", "error", "ensemble tensor written by more than one output_map entry"),
    ("E308", "error", "ensemble input is not read by any step"),
    ("E309", "error", "ensemble output is not written by the steps"),
    ("E310", "error", "ensemble tensor is never read or never written"),
    ("E311", "error", "ensemble step names a model that is not in the repository"),
    ("E312", "error", "circular dependency between ensembles"),
    ("E313", "error", "ensemble max_batch_size exceeds a step model's"),
    ("E314", "error", "input_map key is not an input of the step model"),
    ("E315", "error", "output_map key is not an output of the step model"),
    ("E316", "error", "step model input is not mapped to an ensemble tensor"),
    ("E317", "error", "inconsistent data type along an ensemble edge"),
    ("E318", "error", "inconsistent shape along an ensemble edge"),
    ("E319", "error", "step requires a model version that will not be loaded"),
    ("E320", "error", "step receives inputs that come from different decoupled models"),
    ("E321", "error", "a step model declares an output twice and the ensemble maps it"),
    ("E323", "info", "ensemble tensor not checked: the step model's I/O is left to its backend's auto-complete"),
]

STEP = ("ensemble_scheduling", 0, "step")
Path = tuple[str | int, ...]


def entry_path(model: ModelContext, prefix: Path, *, key: str | None = None, value: str | None = None) -> Path:
    """The map entry with ``key`` (the last such) or ``value`` (the first), for positions."""
    if model.parsed is None:
        return prefix
    return model.parsed.positions.map_entry(*prefix, key=key, value=value)


# --- config-level checks (ValidateEnsembleSchedulingConfig) --------------------------------------


def config_name(model: ModelContext) -> str:
    return str(model.config.name) or model.name


def is_ensemble(model: ModelContext) -> bool:
    return bool(model.config.platform == ENSEMBLE_PLATFORM and model.config.HasField("ensemble_scheduling"))


def check_platform(model: ModelContext) -> None:
    if model.config.platform == ENSEMBLE_PLATFORM and not model.config.HasField("ensemble_scheduling"):
        message = f"ensemble scheduling must be set for ensemble {config_name(model)} whose platform is ensemble"
        hint = "add ensemble_scheduling { step [ ... ] } mapping the ensemble's tensors through its models"
        model.report("E301", message, hint, "platform")


_NOT_FOR_ENSEMBLES = (
    ("E302", "instance_group", "instance group should not be specified", "set instance_group on the step models"),
    ("E303", "optimization", "optimization should not be specified", "set optimization on the step models"),
    ("E304", "model_warmup", "model_warmup can not be specified", "warm up the step models instead"),
)


@dataclass(eq=False)
class _Tensor:
    name: str
    is_output: bool = False
    ready: bool = False
    prev: list[_Tensor] = field(default_factory=list)
    next: list[_Tensor] = field(default_factory=list)


def check_scheduling(model: ModelContext) -> None:
    if not is_ensemble(model):
        return
    cfg, name = model.config, config_name(model)
    for rule, what, sentence, hint in _NOT_FOR_ENSEMBLES:
        if (cfg.HasField(what) if what == "optimization" else len(getattr(cfg, what))) > 0:
            model.report(rule, f"{sentence} for ensemble '{name}'", f"an ensemble runs no model itself: {hint}", what)
    if not len(cfg.ensemble_scheduling.step):
        hint = "add at least one step with model_name, input_map and output_map"
        model.report("E305", f"must specify 'step' for ensemble '{name}'", hint, "ensemble_scheduling")
        return
    tensors = _build_graph(model, name)
    if tensors is not None:
        _check_flow(model, name, tensors)


def _build_graph(model: ModelContext, name: str) -> dict[str, _Tensor] | None:
    """Triton's BuildEnsembleGraph; None when a step is malformed (Triton stops there)."""
    tensors: dict[str, _Tensor] = {}
    ok = True
    for i, step in enumerate(model.config.ensemble_scheduling.step):
        for what in ("model_name", "input_map", "output_map"):
            if not len(getattr(step, what)):
                ok = False
                hint = "every step needs model_name, input_map and output_map (steps count from 0)"
                model.report("E306", f"must specify '{what}' in step {i} of ensemble '{name}'", hint, *STEP, i)
        produced: list[_Tensor] = []
        for value in step.output_map.values():
            tensor = tensors.setdefault(value, _Tensor(value))
            if tensor.is_output:
                ok = False
                message = f"ensemble tensor '{value}' can appear in an output map only once for ensemble '{name}'"
                where = entry_path(model, (*STEP, i, "output_map"), value=value)
                model.report("E307", f"{message} step {i}", "give each output its own ensemble tensor", *where)
            tensor.is_output = True
            produced.append(tensor)
        for value in step.input_map.values():
            source = tensors.setdefault(value, _Tensor(value))
            for out in produced:
                out.prev.append(source)
                source.next.append(out)
    return tensors if ok else None


def _first_mention(model: ModelContext, tensor: str) -> Path:
    for i, step in enumerate(model.config.ensemble_scheduling.step):
        for what in ("input_map", "output_map"):
            if tensor in getattr(step, what).values():
                return entry_path(model, (*STEP, i, what), value=tensor)
    return ("ensemble_scheduling",)


def _check_flow(model: ModelContext, name: str, tensors: dict[str, _Tensor]) -> None:
    cfg = model.config
    queue: deque[_Tensor] = deque()
    for idx, io in enumerate(cfg.input):
        tensor = tensors.get(io.name)
        if tensor is None:
            hint = "map it into a step's input_map, or remove it from the ensemble's inputs"
            model.report("E308", f"ensemble input '{io.name}' for ensemble {name}' is not used", hint, "input", idx)
            continue
        tensor.ready = True
        queue.append(tensor)
    while queue:
        for nxt in queue.popleft().next:
            if not nxt.ready and all(p.ready for p in nxt.prev):
                nxt.ready = True
                queue.append(nxt)
    for idx, io in enumerate(cfg.output):
        tensor = tensors.get(io.name)
        if tensor is None:
            hint = "write it from a step's output_map, or remove it from the ensemble's outputs"
            model.report("E309", f"ensemble output '{io.name}' for ensemble {name}' is not used", hint, "output", idx)
        elif not tensor.ready:
            message = f"output '{io.name}' for ensemble '{name}' is not written{_not_connected(tensor)}"
            hint = "each tensor a step reads must be an ensemble input or written by an earlier step"
            model.report("E309", message, hint, "output", idx)
    outputs = {io.name for io in cfg.output}
    for tensor in tensors.values():
        if tensor.name not in outputs and (not tensor.ready or not tensor.next):
            message = f"ensemble tensor '{tensor.name}' is unused in ensemble '{name}'"
            hint = "a tensor must be written (an ensemble input or a step output) and read by a later step"
            model.report("E310", message, hint, *_first_mention(model, tensor.name))


def _not_connected(tensor: _Tensor) -> str:
    """Triton's walk back to a tensor that nothing writes."""
    last, seen, prevs = tensor, set(), tensor.prev
    while prevs:
        found = next((n for n in prevs if not n.ready and n.name not in seen), None)
        if found is None:
            break
        seen.add(found.name)
        last, prevs = found, found.prev
    return (
        "" if last.name == tensor.name else f": at least one of its depending tensors, '{last.name}', is not connected"
    )


# --- checks across models (dependency graph and ValidateEnsembleConfig) --------------------------


def check_cycles(model: ModelContext) -> None:
    if not is_ensemble(model) or model.repository is None:
        return
    models = model.repository.models
    seen: set[str] = set()
    steps = list(model.config.ensemble_scheduling.step)
    direct = [i for i, s in enumerate(steps) if s.model_name == model.name]
    for i in direct or [i for i, s in enumerate(steps) if s.model_name in models]:
        first = steps[i].model_name
        last = model if direct else None
        if last is None and first not in seen:
            seen.add(first)
            last = _step_owner(model.name, models[first], models, seen)
        if last is not None:
            message = f"circular dependency between ensembles: {model.name} -> ... -> {last.name} -> {model.name}"
            hint = "an ensemble cannot contain itself, directly or through other ensembles"
            model.report("E312", message, hint, *STEP, i, "model_name")
            return


def _step_owner(name: str, node: ModelContext, models: dict[str, ModelContext], seen: set[str]) -> ModelContext | None:
    """The model whose step is the model ``name``, walking ``node``'s steps depth-first like Triton (a function
    of the module, not a closure: a closure that calls itself is a reference cycle)."""
    if node.parsed is None or not node.config.HasField("ensemble_scheduling"):
        return None
    for up in dict.fromkeys(s.model_name for s in node.config.ensemble_scheduling.step):
        if up == name:
            return node
        if up in models and up not in seen:
            seen.add(up)
            found = _step_owner(name, models[up], models, seen)
            if found is not None:
                return found
    return None


def _loaded_versions(step_model: ModelContext) -> list[int] | None:
    """Versions Triton loads for ``step_model`` under its version_policy (None: cannot tell)."""
    if step_model.parsed is None and step_model.has_config:
        return None
    try:
        return step_model.loaded_versions()
    except OSError:
        return None


def check_step_models(model: ModelContext) -> None:
    if not is_ensemble(model) or model.repository is None:
        return
    cfg, models = model.config, model.repository.models
    positions = model.parsed.positions.positions if model.parsed is not None else {}
    steps = list(cfg.ensemble_scheduling.step)
    missing = sorted({s.model_name for s in steps if s.model_name and s.model_name not in models})
    if missing:
        first = next(i for i, s in enumerate(steps) if s.model_name in missing)
        message = f"ensemble {model.name} contains models that are not available or ambiguous: {', '.join(missing)}"
        hint = f"add a model folder {missing[0]!r} to the repository, or fix model_name"
        model.report("E311", message, hint, *STEP, first, "model_name")
    for i, step in enumerate(steps):
        sibling = models.get(step.model_name)
        if sibling is None:
            continue
        loaded = _loaded_versions(sibling) if step.model_version >= 0 else None
        if loaded is not None and step.model_version not in loaded:
            message = (
                f"ensemble '{model.name}' depends on '{step.model_name}' whose required version "
                f"{step.model_version} is not loaded"
            )
            hint = (
                f"versions that will be loaded: {loaded or 'none'}; add folder {step.model_version}/, widen "
                "the step model's version_policy, or use model_version: -1 (the latest)"
            )
            if step.model_version == 0 and (*STEP, i, "model_version") not in positions:
                hint = f"model_version is not written, so version 0 is required; {hint}"
            model.report("E319", message, hint, *STEP, i, "model_version")
        if sibling.parsed is not None and 0 < sibling.config.max_batch_size < cfg.max_batch_size:
            message = (
                f"ensemble {model.name} allows maximum batch size {cfg.max_batch_size}, but it contains model "
                f"{step.model_name} which only allows maximum batch size to be {sibling.config.max_batch_size}"
            )
            hint = "lower the ensemble's max_batch_size or raise the step model's"
            model.report("E313", message, hint, *STEP, i, "model_name")
    _Mapping(model).run()


@dataclass(eq=False)
class _Node:
    model: str
    dtype: int
    dims: list[int]
    full: list[int]
    where: Path
    decoupled: bool = False
    visited: bool = False
    label: int = 0
    sibling: _Node | None = None
    prev: list[_Node] = field(default_factory=list)
    next: list[_Node] = field(default_factory=list)


def _node(model: str, batching: bool, dtype: int, dims: Any, where: Path) -> _Node:
    shape = [int(d) for d in dims]
    return _Node(model, int(dtype), shape, [-1, *shape] if batching else shape, where)


def _same(a: list[int], b: list[int]) -> bool:
    return len(a) == len(b) and all(x == y or -1 in (x, y) for x, y in zip(a, b, strict=True))


class _Mapping:
    """Triton's ValidateTensorMapping over every step, then its decoupled-branching walk."""

    def __init__(self, model: ModelContext) -> None:
        self.model, self.cfg, self.ens = model, model.config, model.name
        self.models = model.repository.models if model.repository is not None else {}
        self.tensors: dict[str, _Node] = {}
        self.sink = _Node(self.ens, 0, [], [], ("output",))

    def type_name(self, value: int) -> str:
        found = self.cfg.DESCRIPTOR.file.enum_types_by_name["DataType"].values_by_number.get(value)
        return str(found.name) if found is not None else f"TYPE_{value}"

    def merge(self, tensor: str, node: _Node) -> _Node:
        old = self.tensors.setdefault(tensor, node)
        prefix = f"in ensemble {self.ens}, ensemble tensor {tensor}: "
        if old.dtype != node.dtype:
            message = (
                f"{prefix}inconsistent data type: {self.type_name(old.dtype)} is inferred from model {old.model} "
                f"while {self.type_name(node.dtype)} is inferred from model {node.model}"
            )
            self.model.report("E317", message, "make the data_type of both ends equal", *node.where)
        elif not (_same(old.dims, node.dims) or _same(old.full, node.full)):
            message = (
                f"{prefix}inconsistent shape: {fmt_shape(old.full)} is inferred from model {old.model} while "
                f"{fmt_shape(node.full)} is inferred from model {node.model}"
            )
            hint = "dims must agree (-1 matches any size); the batch dimension counts when max_batch_size > 0"
            self.model.report("E318", message, hint, *node.where)
        return old

    def run(self) -> None:
        batching = self.cfg.max_batch_size > 0
        for kind in ("input", "output"):
            for idx, io in enumerate(getattr(self.cfg, kind)):
                dims = io.reshape.shape if io.HasField("reshape") else io.dims
                node = self.tensors.setdefault(io.name, _node(self.ens, batching, io.data_type, dims, (kind, idx)))
                if kind == "output":
                    self.sink.prev.append(node)
                    node.next.append(self.sink)
        known = True
        for i, step in enumerate(self.cfg.ensemble_scheduling.step):
            sibling = self.models.get(step.model_name)
            if sibling is None or sibling.parsed is None:
                known = False
                continue
            scfg, left_open = step_io(sibling)
            if left_open:
                known = False  # the graph has holes: the decoupled walk would follow edges that may not exist
                self.unchecked(i, step, sibling, left_open)
            self.step(i, step, scfg, left_open)
        if known:
            self.decoupled_walk()

    def unchecked(self, i: int, step: Any, sibling: ModelContext, left_open: frozenset[str]) -> None:
        """E323: the ensemble tensors mapped to the I/O a backend fills in at load, which the linter cannot see."""
        why = why_unknown(sibling)
        for kind in sorted(left_open):
            mapped = step.input_map if kind == "input" else step.output_map
            for key, tensor in sorted(mapped.items()):
                message = (
                    f"in ensemble {self.ens}, ensemble tensor {tensor} was not checked against {kind} {key} of "
                    f"model {step.model_name}: its config lists no {kind}s, which Triton fills in at load ({why})"
                )
                hint = (
                    f"declare {step.model_name}'s {kind}s in its config.pbtxt so that their data type and shape "
                    "are checked before the server starts"
                )
                where = entry_path(self.model, (*STEP, i, f"{kind}_map"), key=key)
                self.model.report("E323", message, hint, *where)

    def step(self, i: int, step: Any, scfg: Any, left_open: frozenset[str] = frozenset()) -> None:
        model, ens, name = self.model, self.ens, step.model_name
        batching = scfg.max_batch_size > 0
        inputs = {io.name: io for io in scfg.input}
        outputs = {io.name: io for io in scfg.output}
        for key, tensor in sorted(step.input_map.items()):  # protobuf map order varies by process
            if key not in inputs and "input" not in left_open:
                message = f"in ensemble {ens}, ensemble tensor {tensor} is mapping to non-existing input {key}"
                where = entry_path(model, (*STEP, i, "input_map"), key=key)
                model.report("E314", f"{message} in model {name}", f"inputs of {name}: {', '.join(inputs)}", *where)
        for io in scfg.input:
            if io.name in step.input_map:
                where = entry_path(model, (*STEP, i, "input_map"), key=io.name)
                self.merge(step.input_map[io.name], _node(name, batching, io.data_type, io.dims, where))
            elif not io.optional:
                message = f"in ensemble {ens}, input {io.name} in model {name} is not mapped to any ensemble tensors"
                hint = f'add input_map {{ key: "{io.name}" value: "<ensemble tensor>" }} to step {i}'
                model.report("E316", message, hint, *STEP, i, "input_map")
        produced: list[_Node] = []
        declared = [io.name for io in scfg.output]
        for key, tensor in sorted(step.output_map.items()):
            where = entry_path(model, (*STEP, i, "output_map"), key=key)
            if declared.count(key) > 1:  # Triton maps each declared output, so both land on one tensor
                message = f"in ensemble {ens}, multiple outputs in model {name} are mapped to the same ensemble tensor"
                hint = f"output {key!r} is declared {declared.count(key)} times in {name}'s config: keep one"
                model.report("E321", f"{message} {tensor}", hint, *where)
            io = outputs.get(key)
            if io is None:
                if "output" in left_open:
                    continue
                message = f"in ensemble {ens}, ensemble tensor {tensor} is mapped from non-existing output {key}"
                hint = f"outputs of {name}: {', '.join(outputs)}"
                model.report("E315", f"{message} in model {name}", hint, *where)
            else:
                produced.append(self.merge(tensor, _node(name, batching, io.data_type, io.dims, where)))
        group = _Node(name, 0, [], [], ())
        sources = [self.tensors[t] for _, t in sorted(step.input_map.items()) if t in self.tensors]
        for node in produced:
            node.sibling, node.decoupled = group, bool(scfg.model_transaction_policy.decoupled)
            node.prev.extend(sources)
            for source in sources:
                source.next.append(node)

    def decoupled_walk(self) -> None:
        label, reported = 0, set()
        queue: deque[_Node] = deque()
        for io in self.cfg.input:
            self.tensors[io.name].visited = True
            queue.append(self.tensors[io.name])
        while queue:
            for nxt in queue.popleft().next:
                if nxt.visited or not all(p.visited for p in nxt.prev):
                    continue
                first = nxt.prev[0].label
                if any(p.label != first for p in nxt.prev) and nxt.model not in reported:
                    reported.add(nxt.model)
                    message = (
                        f"in ensemble {self.ens}, step of model '{nxt.model}' receives inputs originated from "
                        "different decoupled models"
                    )
                    hint = "responses of two decoupled models cannot be paired: feed this step from one of them"
                    self.model.report("E320", message, hint, *nxt.where)
                if nxt.sibling is not None and nxt.sibling.visited:
                    nxt.label = nxt.sibling.label
                else:
                    label += nxt.decoupled
                    nxt.label = label if nxt.decoupled else first
                    if nxt.sibling is not None:
                        nxt.sibling.label, nxt.sibling.visited = nxt.label, True
                nxt.visited = True
                queue.append(nxt)


FAMILY = Family(
    "E",
    "ensembles",
    RULES,
    model_checks=[check_platform, check_scheduling, check_cycles, check_step_models],
)
