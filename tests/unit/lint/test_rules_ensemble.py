"""Ensemble rules (E3xx): one failing and one passing repository per rule id.

Each case is an ensemble config whose expected line is marked ``# <-``, plus the step models
it uses: python models with a version folder, so a correct repository lints clean.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from pytest_triton.config import parse_config
from pytest_triton.lint import lint_path
from pytest_triton.lint.rules import catalog
from tests.unit.lint.helpers import write_model

MARK = "# <-"
Pairs = Sequence[tuple[str, str]]
Repo = tuple[str, dict[str, str], tuple[str, ...]]


def step_model(name: str, *, batch: int = 8, dtype: str = "TYPE_FP32", dims: str = "16", extra: str = "") -> str:
    return (
        f'name: "{name}"\nbackend: "python"\nmax_batch_size: {batch}\n'
        f'input [ {{ name: "INPUT0" data_type: {dtype} dims: [ {dims} ] }} ]\n'
        f'output [ {{ name: "OUTPUT0" data_type: {dtype} dims: [ {dims} ] }} ]\n{extra}'
    )


def step(model: str | None, ins: Pairs, outs: Pairs, *, version: int | None = -1, mark: object = None) -> str:
    """One step, a field per line; ``mark`` names the line to mark: "step", "model_name",
    "model_version", ("in", key) or ("out", key)."""

    def tag(what: object) -> str:
        return f" {MARK}" if what == mark else ""

    lines = ["    {" + tag("step")]
    if model is not None:
        lines.append(f'      model_name: "{model}"' + tag("model_name"))
    if version is not None:
        lines.append(f"      model_version: {version}" + tag("model_version"))
    lines += [f'      input_map {{ key: "{k}" value: "{v}" }}' + tag(("in", k)) for k, v in ins]
    lines += [f'      output_map {{ key: "{k}" value: "{v}" }}' + tag(("out", k)) for k, v in outs]
    return "\n".join([*lines, "    }"])


def io(kind: str, names: Sequence[str], *, dims: str = "16", mark: str | None = None) -> str:
    entries = [
        f'  {{ name: "{n}" data_type: TYPE_FP32 dims: [ {dims} ] }}' + (f" {MARK}" if n == mark else "") for n in names
    ]
    return f"{kind} [\n" + ",\n".join(entries) + "\n]\n"


def ensemble(
    steps: Sequence[str],
    *,
    name: str = "ens",
    batch: int = 4,
    inputs: Sequence[str] = ("IN",),
    outputs: Sequence[str] = ("OUT",),
    mark_io: str | None = None,
    tail: str = "",
) -> str:
    head = f'name: "{name}"\nplatform: "ensemble"\nmax_batch_size: {batch}\n'
    ios = io("input", inputs, mark=mark_io) + io("output", outputs, mark=mark_io)
    return f"{head}{ios}ensemble_scheduling {{\n  step [\n" + ",\n".join(steps) + f"\n  ]\n}}\n{tail}"


A = step("a", [("INPUT0", "IN")], [("OUTPUT0", "mid")])
B = step("b", [("INPUT0", "mid")], [("OUTPUT0", "OUT")])
BASE = ensemble([A, B])
STEPS = {"a": step_model("a"), "b": step_model("b")}
ONE = ("1",)

DECOUPLED = step_model("rep", batch=0, extra="model_transaction_policy { decoupled: true }\n")
JOIN = (
    'name: "join"\nbackend: "python"\nmax_batch_size: 0\n'
    'input [ { name: "X" data_type: TYPE_FP32 dims: [ 16 ] }, { name: "Y" data_type: TYPE_FP32 dims: [ 16 ] } ]\n'
    'output [ { name: "Z" data_type: TYPE_FP32 dims: [ 16 ] } ]\n'
)


def fan_in(first: str, second: str, *, second_reads: str = "IN") -> str:
    """IN -> first -> x and second_reads -> second -> y, then (x, y) -> join -> z -> last -> OUT."""
    return ensemble(
        [
            step(first, [("INPUT0", "IN")], [("OUTPUT0", "x")]),
            step(second, [("INPUT0", second_reads)], [("OUTPUT0", "y")]),
            step("join", [("X", "x"), ("Y", "y")], [("Z", "z")], mark=("out", "Z")),
            step("last", [("INPUT0", "z")], [("OUTPUT0", "OUT")]),
        ],
        batch=0,
    )


LAST = step_model("last", batch=0)
FAN_STEPS = {"rep": DECOUPLED, "rep2": DECOUPLED.replace('"rep"', '"rep2"'), "join": JOIN, "last": LAST}

ONNX_INPUTS_ONLY = (
    'name: "b"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 8\n'
    'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]\n'
)
SEVERITY = {"E322": "warning", "E323": "info"}

# rule -> (repository whose ensemble marks the expected line, part of the expected message)
FAILING: dict[str, tuple[Repo, str]] = {
    "E301": (
        (f'name: "ens"\nplatform: "ensemble" {MARK}\nmax_batch_size: 4\n', {}, ONE),
        "ensemble scheduling must be set for ensemble ens whose platform is ensemble",
    ),
    "E302": (
        (ensemble([A, B], tail=f"instance_group [ {{ kind: KIND_CPU }} ] {MARK}\n"), STEPS, ONE),
        "instance group should not be specified for ensemble 'ens'",
    ),
    "E303": (
        (ensemble([A, B], tail=f"optimization {{ priority: PRIORITY_MAX }} {MARK}\n"), STEPS, ONE),
        "optimization should not be specified for ensemble 'ens'",
    ),
    "E304": (
        (ensemble([A, B], tail=f'model_warmup [ {{ name: "w" batch_size: 1 }} ] {MARK}\n'), STEPS, ONE),
        "model_warmup can not be specified for ensemble 'ens'",
    ),
    "E305": (
        (f'name: "ens"\nplatform: "ensemble"\nensemble_scheduling {{ {MARK}\n  step [ ]\n}}\n', {}, ONE),
        "must specify 'step' for ensemble 'ens'",
    ),
    "E306": (
        (ensemble([A, step(None, [("INPUT0", "mid")], [("OUTPUT0", "OUT")], mark="step")]), STEPS, ONE),
        "must specify 'model_name' in step 1 of ensemble 'ens'",
    ),
    "E307": (
        (ensemble([A, step("b", [("INPUT0", "IN")], [("OUTPUT0", "mid")], mark=("out", "OUTPUT0"))]), STEPS, ONE),
        "ensemble tensor 'mid' can appear in an output map only once for ensemble 'ens' step 1",
    ),
    "E308": (
        (ensemble([A, B], inputs=("IN", "IN2"), mark_io="IN2"), STEPS, ONE),
        "ensemble input 'IN2' for ensemble ens' is not used",
    ),
    "E309": (
        (ensemble([A, B], outputs=("OUT", "OUT2"), mark_io="OUT2"), STEPS, ONE),
        "ensemble output 'OUT2' for ensemble ens' is not used",
    ),
    "E310": (
        (ensemble([A, step("b", [("INPUT0", "ghost")], [("OUTPUT0", "OUT")], mark=("in", "INPUT0"))]), STEPS, ONE),
        "ensemble tensor 'ghost' is unused in ensemble 'ens'",
    ),
    "E311": (
        (ensemble([A, step("zzz", [("INPUT0", "mid")], [("OUTPUT0", "OUT")], mark="model_name")]), STEPS, ONE),
        "ensemble ens contains models that are not available or ambiguous: zzz",
    ),
    "E312": (
        (ensemble([A, step("ens", [("IN", "mid")], [("OUT", "OUT")], mark="model_name")]), STEPS, ONE),
        "circular dependency between ensembles: ens -> ... -> ens -> ens",
    ),
    "E313": (
        (
            ensemble([A, step("b", [("INPUT0", "mid")], [("OUTPUT0", "OUT")], mark="model_name")]),
            {"a": step_model("a"), "b": step_model("b", batch=2)},
            ONE,
        ),
        "ensemble ens allows maximum batch size 4, but it contains model b which only allows maximum batch size "
        "to be 2",
    ),
    "E314": (
        (
            ensemble([A, step("b", [("INPUT0", "mid"), ("EXTRA", "IN")], [("OUTPUT0", "OUT")], mark=("in", "EXTRA"))]),
            STEPS,
            ONE,
        ),
        "in ensemble ens, ensemble tensor IN is mapping to non-existing input EXTRA in model b",
    ),
    "E315": (
        (
            ensemble(
                [A, step("b", [("INPUT0", "mid")], [("OUTPUT0", "OUT"), ("OUT9", "spare")], mark=("out", "OUT9"))]
            ),
            STEPS,
            ONE,
        ),
        "in ensemble ens, ensemble tensor spare is mapped from non-existing output OUT9 in model b",
    ),
    "E316": (
        (ensemble([A, step("b", [("OTHER", "mid")], [("OUTPUT0", "OUT")], mark=("in", "OTHER"))]), STEPS, ONE),
        "in ensemble ens, input INPUT0 in model b is not mapped to any ensemble tensors",
    ),
    "E317": (
        (
            ensemble([A, step("b", [("INPUT0", "mid")], [("OUTPUT0", "OUT")], mark=("in", "INPUT0"))]),
            {"a": step_model("a"), "b": step_model("b", dtype="TYPE_INT32")},
            ONE,
        ),
        "in ensemble ens, ensemble tensor mid: inconsistent data type: TYPE_FP32 is inferred from model a while "
        "TYPE_INT32 is inferred from model b",
    ),
    "E318": (
        (
            ensemble([A, step("b", [("INPUT0", "mid")], [("OUTPUT0", "OUT")], mark=("in", "INPUT0"))]),
            {"a": step_model("a"), "b": step_model("b", dims="16, 16")},
            ONE,
        ),
        "in ensemble ens, ensemble tensor mid: inconsistent shape: [-1,16] is inferred from model a while "
        "[-1,16,16] is inferred from model b",
    ),
    "E319": (
        (
            ensemble([step("a", [("INPUT0", "IN")], [("OUTPUT0", "mid")], version=2, mark="model_version"), B]),
            STEPS,
            ONE,
        ),
        "ensemble 'ens' depends on 'a' whose required version 2 is not loaded",
    ),
    "E320": (
        (fan_in("rep", "rep2"), FAN_STEPS, ONE),
        "in ensemble ens, step of model 'join' receives inputs originated from different decoupled models",
    ),
    # found by the differential test: Triton accepts the step model alone, not the ensemble
    "E321": (
        (
            ensemble([step("a", [("INPUT0", "IN")], [("OUTPUT0", "mid")], mark=("out", "OUTPUT0")), B]),
            {"a": step_model("a", extra=io("output", ["OUTPUT0"])), "b": step_model("b")},
            ONE,
        ),
        "in ensemble ens, multiple outputs in model a are mapped to the same ensemble tensor mid",
    ),
    # found on scenario 07 (a request for LABEL alone): OUT is an output that step b also reads
    "E322": (
        (
            ensemble(
                [
                    step("a", [("INPUT0", "IN")], [("OUTPUT0", "OUT")]),
                    step("b", [("INPUT0", "OUT")], [("OUTPUT0", "OUT2")]),
                ],
                outputs=("OUT2", "OUT"),
                mark_io="OUT",
            ),
            STEPS,
            ONE,
        ),
        "in ensemble 'ens', a request for only the outputs {OUT2}, {OUT} fails in Triton: 'unexpected deadlock, "
        "at least one output is not set while no more ensemble steps can be made'",
    ),
    # an ONNX step whose outputs are left to the onnxruntime backend, with no model.onnx to read them from
    "E323": (
        (
            ensemble([A, step("b", [("INPUT0", "mid")], [("OUTPUT0", "OUT")], mark=("out", "OUTPUT0"))]),
            {"a": step_model("a"), "b": ONNX_INPUTS_ONLY},
            ONE,
        ),
        "in ensemble ens, ensemble tensor OUT was not checked against output OUTPUT0 of model b: its config "
        "lists no outputs, which Triton fills in at load (the onnxruntime backend reads them from model.onnx, "
        "which is not in any version folder)",
    ),
}

INNER = ensemble([A, B], name="inner")
# rule -> a repository next to the failing one that Triton accepts
PASSING: dict[str, Repo] = {
    "E301": (BASE, STEPS, ONE),
    "E302": (ensemble([A, B], tail='parameters { key: "k" value: { string_value: "v" } }\n'), STEPS, ONE),
    "E303": (BASE, STEPS, ONE),
    "E304": (BASE, STEPS, ONE),
    "E305": (ensemble([A, B]), STEPS, ONE),
    "E306": (BASE, STEPS, ONE),
    # one tensor may be read by several steps
    "E307": (
        ensemble(
            [
                A,
                step("b", [("INPUT0", "mid")], [("OUTPUT0", "m2")]),
                step("b", [("INPUT0", "m2")], [("OUTPUT0", "OUT")]),
            ]
        ),
        STEPS,
        ONE,
    ),
    "E308": (BASE, STEPS, ONE),
    "E309": (BASE, STEPS, ONE),
    "E310": (BASE, STEPS, ONE),
    "E311": (BASE, STEPS, ONE),
    # an ensemble may contain another ensemble
    "E312": (
        ensemble([A, step("inner", [("IN", "mid")], [("OUT", "OUT")])]),
        {**STEPS, "inner": INNER},
        ONE,
    ),
    # a step that does not batch is fine: its full shape [-1, 16] matches the ensemble's
    "E313": (BASE, {"a": step_model("a"), "b": step_model("b", batch=0, dims="-1, 16")}, ONE),
    "E314": (BASE, STEPS, ONE),
    "E315": (BASE, STEPS, ONE),
    # an optional input may stay unmapped
    "E316": (
        BASE,
        {
            "a": step_model("a"),
            "b": step_model("b").replace(
                " ] }\n", ' ] }, { name: "OPT" data_type: TYPE_FP32 dims: [ 1 ] optional: true }\n', 1
            ),
        },
        ONE,
    ),
    "E317": (BASE, STEPS, ONE),
    # -1 matches any size
    "E318": (BASE, {"a": step_model("a"), "b": step_model("b", dims="-1")}, ONE),
    # version 2 exists and is the latest
    "E319": (FAILING["E319"][0][0], STEPS, ("1", "2")),
    "E321": (BASE, STEPS, ONE),
    "E323": (BASE, STEPS, ONE),
    # two outputs that no step reads: either alone can be asked for
    "E322": (
        ensemble(
            [step("a", [("INPUT0", "IN")], [("OUTPUT0", "OUT")]), step("b", [("INPUT0", "IN")], [("OUTPUT0", "OUT2")])],
            outputs=("OUT", "OUT2"),
        ),
        STEPS,
        ONE,
    ),
    # both branches descend from the same decoupled model
    "E320": (
        fan_in("rep", "plain", second_reads="x"),
        {"rep": DECOUPLED, "plain": step_model("plain", batch=0), "join": JOIN, "last": LAST},
        ONE,
    ),
}


def write_repository(root: Path, repo: Repo) -> Path:
    text, steps, versions = repo
    write_model(root, "ens", text, {f"{v}/.keep": "" for v in versions})
    for name, config in steps.items():
        write_model(
            root, name, config, {f"{v}/{'.keep' if 'ensemble' in config else 'model.py'}": "" for v in versions}
        )
    return root


def marked_line(text: str) -> int:
    (line,) = [n for n, content in enumerate(text.splitlines(), 1) if MARK in content]
    return line


def test_every_rule_has_a_failing_and_a_passing_case() -> None:
    ids = {rule for rule in catalog.RULES if rule.startswith("E3")}
    assert ids == set(FAILING) == set(PASSING)


@pytest.mark.parametrize("rule", sorted(FAILING))
def test_failing_case(tmp_path: Path, rule: str) -> None:
    repo, message = FAILING[rule]
    findings = [f for f in lint_path(write_repository(tmp_path, repo)) if f.rule == rule]
    matching = [f for f in findings if message in f.message]
    assert matching, [f.message for f in findings]
    assert matching[0].severity == catalog.RULES[rule].severity == SEVERITY.get(rule, "error")
    assert matching[0].path.endswith("ens/config.pbtxt")
    assert matching[0].line == marked_line(repo[0])


@pytest.mark.parametrize("rule", sorted(PASSING))
def test_passing_case(tmp_path: Path, rule: str) -> None:
    findings = lint_path(write_repository(tmp_path, PASSING[rule]))
    assert [f.format() for f in findings] == []


def test_a_decoupled_ensemble_gets_no_output_instead_of_the_deadlock(tmp_path: Path) -> None:
    text, steps, versions = FAILING["E322"][0]
    decoupled = step_model("a", batch=0, extra="model_transaction_policy { decoupled: true }\n")
    unbatched = text.replace("max_batch_size: 4", "max_batch_size: 0")
    write_repository(tmp_path, (unbatched, {**steps, "a": decoupled, "b": step_model("b", batch=0)}, versions))
    (finding,) = [f for f in lint_path(tmp_path) if f.rule == "E322"]
    assert "gets no output from Triton (a decoupled ensemble sends only its final flag" in finding.message


def test_not_written_output_names_the_unconnected_tensor(tmp_path: Path) -> None:
    repo, _ = FAILING["E310"]
    (finding,) = [f for f in lint_path(write_repository(tmp_path, repo)) if f.rule == "E309"]
    assert finding.message == (
        "output 'OUT' for ensemble 'ens' is not written: at least one of its depending tensors, 'ghost', "
        "is not connected"
    )
    assert finding.line == 8  # the OUT line of the output list


def test_cycle_through_two_ensembles_is_reported_on_both(tmp_path: Path) -> None:
    outer = ensemble([A, step("inner", [("IN", "mid")], [("OUT", "OUT")])])
    inner = ensemble([A, step("ens", [("IN", "mid")], [("OUT", "OUT")])], name="inner")
    write_repository(tmp_path, (outer, {**STEPS, "inner": inner}, ONE))
    messages = sorted(f.message for f in lint_path(tmp_path) if f.rule == "E312")
    assert messages == [
        "circular dependency between ensembles: ens -> ... -> inner -> ens",
        "circular dependency between ensembles: inner -> ... -> ens -> inner",
    ]


def test_step_models_without_config_skip_the_mapping_checks(tmp_path: Path) -> None:
    # "a" has no config (its backend auto-completes one), "b" lists no I/O and its model.py completes them
    completes = "class TritonPythonModel:\n    @staticmethod\n    def auto_complete_config(config):\n        ...\n"
    write_repository(tmp_path, (BASE, {"b": 'name: "b"\nbackend: "python"\nmax_batch_size: 8\n'}, ONE))
    (tmp_path / "b" / "1" / "model.py").write_text(completes)
    (tmp_path / "a" / "1").mkdir(parents=True)
    (tmp_path / "a" / "1" / "model.onnx").write_bytes(b"")
    found = [f for f in lint_path(tmp_path / "ens") if f.rule.startswith("E")]
    assert {f.rule for f in found} == {"E323"}, [f.format() for f in found]
    assert all("its model.py defines auto_complete_config" in f.message for f in found)


def test_a_python_step_without_auto_complete_is_checked_as_written(tmp_path: Path) -> None:
    # Triton 2.51: "in ensemble ens, ensemble tensor OUT is mapped from non-existing output OUTPUT0 in model b"
    b = ONNX_INPUTS_ONLY.replace('platform: "onnxruntime_onnx"', 'backend: "python"')
    write_repository(tmp_path, (BASE, {"a": step_model("a"), "b": b}, ONE))
    (finding,) = [f for f in lint_path(tmp_path) if f.rule.startswith("E")]
    assert finding.message == (
        "in ensemble ens, ensemble tensor OUT is mapped from non-existing output OUTPUT0 in model b"
    )


def test_declared_inputs_of_a_step_left_to_autocomplete_are_checked(tmp_path: Path) -> None:
    """The class Triton refuses that the linter used to skip: inputs declared, outputs left to the backend, and a
    neighbour producing a tensor of another rank (Triton 2.51's message, read from the embedded server)."""
    b = ONNX_INPUTS_ONLY.replace("max_batch_size: 8", "max_batch_size: 0").replace("[ 16 ]", "[ -1, -1 ]")
    write_repository(tmp_path, (BASE, {"a": step_model("a", batch=0, dims="-1"), "b": b}, ONE))
    found = {f.rule: f for f in lint_path(tmp_path) if f.rule.startswith("E")}
    assert found["E318"].message == (
        "in ensemble ens, ensemble tensor mid: inconsistent shape: [-1] is inferred from model a while [-1,-1] is "
        "inferred from model b"
    )
    assert "ensemble tensor OUT was not checked against output OUTPUT0 of model b" in found["E323"].message


def test_broken_step_config_is_not_reported_as_missing(tmp_path: Path) -> None:
    write_repository(tmp_path, (BASE, {"a": step_model("a"), "b": 'name: "b"\nbackend "python"\n'}, ONE))
    rules = [f.rule for f in lint_path(tmp_path)]
    assert "C001" in rules
    assert not [r for r in rules if r.startswith("E")]


def test_step_without_model_version_requires_version_0(tmp_path: Path) -> None:
    text = ensemble([step("a", [("INPUT0", "IN")], [("OUTPUT0", "mid")], version=None), B])
    (finding,) = [f for f in lint_path(write_repository(tmp_path, (text, STEPS, ONE))) if f.rule == "E319"]
    assert "required version 0 is not loaded" in finding.message
    assert finding.hint.startswith("model_version is not written, so version 0 is required")


def test_version_policy_of_the_step_model_decides(tmp_path: Path) -> None:
    text = ensemble([step("a", [("INPUT0", "IN")], [("OUTPUT0", "mid")], version=1), B])
    write_repository(tmp_path, (text, STEPS, ("1", "2")))
    (finding,) = [f for f in lint_path(tmp_path) if f.rule == "E319"]
    assert "versions that will be loaded: [2]" in finding.hint
    write_model(tmp_path, "a", step_model("a", extra="version_policy { all { } }\n"))
    assert "E319" not in {f.rule for f in lint_path(tmp_path)}


def test_map_entries_read_keys_and_values_in_text_order(tmp_path: Path) -> None:
    first = (
        '    { model_name: "a"\n'
        '      input_map [ { key: "k\\"1" value: \'v1\' }, { value: "v2" key: "k2" } ]\n'
        '      output_map { key: "OUTPUT0" value: "mid" } }'
    )
    positions = parse_config(ensemble([first, B])).positions
    prefix = ("ensemble_scheduling", 0, "step", 0, "input_map")
    assert positions.map_entries(*prefix) == [(0, 'k"1', "v1"), (1, "k2", "v2")]
    assert positions.map_entry(*prefix, key="k2") == (*prefix, 1)
    assert positions.map_entries("no", "such") == []
