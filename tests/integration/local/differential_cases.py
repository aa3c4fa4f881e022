"""Small repositories for the differential test (linter against Triton core), drawn by Hypothesis.

A case is a python model, or an ensemble over one or two python models, with at most one mutation
applied to one of its models. Mutations change what Triton core decides before a backend runs
(config syntax, layout, schema, ensemble wiring), and include changes both sides should accept, so
that agreement is two-sided. Each case carries the verdict the mutation is meant to produce
(``expect``): informative only, the test compares the linter with Triton, not with this guess.

Model names hold :data:`TOKEN`, which the test replaces by a fresh prefix per example, so that no
two examples share a model name on the long-running server.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any
from typing import Literal

from google.protobuf import text_format
from hypothesis import strategies as st

from pytest_triton.config import model_config_class
from pytest_triton.config import print_config
from pytest_triton.strategies import DATA_TYPES
from pytest_triton.strategies import model_configs
from pytest_triton.strategies import tensor_names

Expect = Literal["accept", "reject", "either"]
Style = Literal["canonical", "brackets"]
Scope = Literal["any", "python", "ensemble"]

TOKEN = "zz-pfx-"  # "-" never occurs in drawn tensor names, so replacing it touches model names only
MODEL_PY = "class TritonPythonModel:\n    def execute(self, requests):\n        return []\n"
ENSEMBLE, STEP_A, STEP_B, SINGLE = "ens", "a", "b", "m"


@dataclass(frozen=True)
class Folder:
    """A model folder: name (with TOKEN), config bytes (None: no config.pbtxt) and files (None: a folder)."""

    name: str
    config: bytes | None
    files: tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True)
class Case:
    """A small repository, the model to load through the repository API, and the mutation applied."""

    folders: tuple[Folder, ...]
    target: str
    mutation: str
    expect: Expect

    def names(self, prefix: str) -> list[str]:
        return [f.name.replace(TOKEN, prefix) for f in self.folders]

    def write(self, root: Path, prefix: str) -> list[Path]:
        """Write every folder under ``root`` with TOKEN replaced by ``prefix``; returns the model folders."""
        written = []
        for folder in self.folders:
            path = root / folder.name.replace(TOKEN, prefix)
            path.mkdir()
            if folder.config is not None:
                (path / "config.pbtxt").write_bytes(folder.config.replace(TOKEN.encode(), prefix.encode()))
            for rel, data in folder.files:
                target = path / rel
                if data is None:
                    target.mkdir(parents=True, exist_ok=True)
                else:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
            written.append(path)
        return written

    def describe(self, prefix: str) -> str:
        """Every folder's files and config text, for a failure report."""
        out = []
        for folder in self.folders:
            files = ", ".join(rel + ("/" if data is None else "") for rel, data in folder.files) or "none"
            out.append(f"--- {folder.name.replace(TOKEN, prefix)}/ (files: {files})")
            if folder.config is None:
                out.append("(no config.pbtxt)")
            else:
                out.append(folder.config.replace(TOKEN.encode(), prefix.encode()).decode("utf-8", "backslashreplace"))
        return "\n".join(out)


@dataclass
class Draft:
    """A case while it is built: messages per role (model folder), files, how to print the configs."""

    configs: dict[str, Any]
    files: dict[str, dict[str, bytes | None]]
    style: Style
    names: dict[str, str] = field(default_factory=dict)  # role -> config name, when not the folder's
    raw: dict[str, bytes] = field(default_factory=dict)  # role -> config bytes that replace the printed text
    no_config: set[str] = field(default_factory=set)

    def python_roles(self) -> list[str]:
        return [r for r, c in self.configs.items() if c.platform != "ensemble" and r not in self.raw]

    def ensemble_roles(self) -> list[str]:
        return [r for r, c in self.configs.items() if c.platform == "ensemble" and r not in self.raw]

    def text(self, role: str) -> str:
        config = model_config_class()()
        config.CopyFrom(self.configs[role])
        name = self.names.get(role, role)
        config.name = TOKEN + name if name else ""
        for step in config.ensemble_scheduling.step:
            if step.model_name:
                step.model_name = TOKEN + step.model_name
        return render(config, self.style)

    def case(self, target: str, mutation: str, expect: Expect) -> Case:
        folders = []
        for role in self.configs:
            config = None if role in self.no_config else self.raw.get(role, self.text(role).encode())
            files = tuple(sorted(self.files[role].items()))
            folders.append(Folder(TOKEN + role, config, files))
        return Case(tuple(folders), TOKEN + target, mutation, expect)


def render(config: Any, style: Style) -> str:
    """config.pbtxt text: protobuf's own printing, or the hand-written style with ``[ ... ]`` lists."""
    if style == "canonical" or not (len(config.input) or len(config.output)):
        return print_config(config)
    rest = model_config_class()()
    rest.CopyFrom(config)
    rest.ClearField("input")
    rest.ClearField("output")
    parts = [print_config(rest)]
    for kind in ("input", "output"):
        items = [_one_line(io) for io in getattr(config, kind)]
        if items:
            parts.append(f"{kind} [\n" + ",\n".join(f"  {{ {item} }}" for item in items) + "\n]\n")
    return "".join(parts)


def _one_line(io: Any) -> str:
    dims = [str(d) for d in io.dims]
    rest = type(io)()
    rest.CopyFrom(io)
    rest.ClearField("dims")
    text = str(text_format.MessageToString(rest, as_one_line=True))
    return f"{text} dims: [ {', '.join(dims)} ]" if dims else text


def enum_number(message: Any, field_name: str, label: str) -> int:
    return int(message.DESCRIPTOR.fields_by_name[field_name].enum_type.values_by_name[label].number)


# --- bases -------------------------------------------------------------------------------------------


def _python_files() -> dict[str, bytes | None]:
    return {"1/model.py": MODEL_PY.encode()}


@st.composite
def python_drafts(draw: st.DrawFn) -> tuple[Draft, str]:
    """One python model drawn by the project's own ``model_configs()`` (instance counts kept to 1)."""
    config = draw(model_configs("python", max_tensors=2))
    for group in config.instance_group:
        group.count = 1  # every instance is a python stub process: keep loads cheap
    style: Style = draw(st.sampled_from(["canonical", "brackets"]))
    return Draft({SINGLE: config}, {SINGLE: _python_files()}, style), SINGLE


def _step_config(batch: int, inp: str, out: str, dtype: str, dims: list[int]) -> Any:
    config = model_config_class()(backend="python", max_batch_size=batch)
    config.input.add(name=inp, data_type=dtype, dims=dims)
    config.output.add(name=out, data_type=dtype, dims=dims)
    config.instance_group.add(kind="KIND_CPU", count=1)
    return config


@st.composite
def ensemble_drafts(draw: st.DrawFn) -> tuple[Draft, str]:
    """An ensemble over one or two python steps in a chain: IN -> a -> [MID -> b] -> OUT."""
    steps = draw(st.sampled_from([1, 2]))
    dtype = draw(st.sampled_from(DATA_TYPES))
    dims = draw(st.lists(st.one_of(st.just(-1), st.integers(1, 8)), min_size=1, max_size=3))
    step_batch = draw(st.integers(0, 8))
    ens_batch = draw(st.integers(0, step_batch)) if step_batch else 0
    names = draw(st.lists(tensor_names(), min_size=8, max_size=8, unique=True))
    ens_in, ens_out, mid, a_in, a_out, b_in, b_out, _ = names
    roles = [STEP_A, STEP_B][:steps]
    configs: dict[str, Any] = {ENSEMBLE: model_config_class()(platform="ensemble", max_batch_size=ens_batch)}
    files: dict[str, dict[str, bytes | None]] = {ENSEMBLE: {"1": None}}
    ens = configs[ENSEMBLE]
    ens.input.add(name=ens_in, data_type=dtype, dims=dims)
    ens.output.add(name=ens_out, data_type=dtype, dims=dims)
    wiring = {STEP_A: (a_in, a_out, ens_in, mid if steps == 2 else ens_out), STEP_B: (b_in, b_out, mid, ens_out)}
    for role in roles:
        inp, out, src, dst = wiring[role]
        configs[role] = _step_config(step_batch, inp, out, dtype, dims)
        files[role] = _python_files()
        step = ens.ensemble_scheduling.step.add(model_name=role, model_version=-1)
        step.input_map[inp] = src
        step.output_map[out] = dst
    style: Style = draw(st.sampled_from(["canonical", "brackets"]))
    return Draft(configs, files, style), ENSEMBLE


# --- the mutation catalogue --------------------------------------------------------------------------

Applied = tuple[str, Expect]
MutationFn = Callable[[st.DrawFn, Draft, str], Applied]


@dataclass(frozen=True)
class Mutation:
    """A kind of change: what it applies to, when it applies, and whether Triton's auto-complete matters.

    ``autocomplete`` kinds are compared on a server with auto-complete on (Triton's default, ~1.5 s per
    python load); the others give the same verdict with ``--disable-auto-complete-config`` (checked on
    256 generated cases) and run there, 7x faster.
    """

    name: str
    scope: Scope
    fn: MutationFn
    when: Callable[[Draft, str], bool]
    autocomplete: bool = False


MUTATIONS: list[Mutation] = []


def _always(draft: Draft, role: str) -> bool:
    return True


def mutation(
    scope: Scope = "any", when: Callable[[Draft, str], bool] = _always, *, autocomplete: bool = False
) -> Callable[[MutationFn], MutationFn]:
    def register(fn: MutationFn) -> MutationFn:
        MUTATIONS.append(Mutation(fn.__name__, scope, fn, when, autocomplete))
        return fn

    return register


def _roles(draft: Draft, scope: Scope) -> list[str]:
    if scope == "python":
        return draft.python_roles()
    if scope == "ensemble":
        return draft.ensemble_roles()
    return [r for r in draft.configs if r not in draft.raw]


def _has_io(draft: Draft, role: str) -> bool:
    return bool(len(draft.configs[role].input) and len(draft.configs[role].output))


def _batching(draft: Draft, role: str) -> bool:
    return int(draft.configs[role].max_batch_size) > 0


def _two_steps(draft: Draft, role: str) -> bool:
    return len(draft.configs[role].ensemble_scheduling.step) == 2


def _pick_io(draw: st.DrawFn, config: Any, kinds: tuple[str, ...] = ("input", "output")) -> tuple[str, Any]:
    kind = draw(st.sampled_from([k for k in kinds if len(getattr(config, k))]))
    items = getattr(config, kind)
    return kind, items[draw(st.integers(0, len(items) - 1))]


# -- text (family C): protobuf text format as Triton's C++ parser and the linter's Python parser read it


# name, pattern, and the replacements of one match (a ``re.Match.expand`` template, the verdict it is meant to get)
TEXT_EDITS: list[tuple[str, str, list[tuple[str, Expect]]]] = [
    ("drop_closing_brace", r"\}", [("", "reject")]),
    ("drop_list_comma", r"(?<=[\d}]),(?= ?[\d\n-])", [("", "reject")]),
    ("trailing_list_comma", r"(?<=[\d}])(?= \]|\n\])", [(",", "either")]),
    ("unknown_enum_value", r"\b(TYPE|KIND)_[A-Z0-9]+\b", [(r"\g<0>X", "reject"), ("TYPE_FLOAT32", "reject")]),
    ("duplicate_scalar_field", r"^(name|backend|platform|max_batch_size): .*$", [("\\g<0>\n\\g<0>", "reject")]),
    (
        "unknown_field",
        r"^max_batch_size: .*$",
        [("\\g<0>\nmax_batch: 4", "reject"), ("\\g<0>\ngpu_count: 1", "reject")],
    ),
    ("unquoted_string", r'^(backend|platform|name): "([a-z_]+)"$', [(r"\1: \2", "reject")]),
    (
        "string_spelling",  # single quotes, adjacent literals concatenated, ";" or "," after a field
        r'^(backend|platform): "([a-z_]+)"$',
        [(r"\1: '\2'", "accept"), (r'\1: "" "\2"', "accept"), (r'\1: "\2";', "accept"), (r'\1: "\2",', "accept")],
    ),
    ("comments_and_blank_lines", r"^(?=[a-z])", [("# a comment\n", "accept"), ("\n\n  # indented\n", "accept")]),
    ("colon_before_message", r"^([a-z_]+) \{$", [(r"\1: {", "accept")]),
    ("angle_brackets", r"^(input|output) \{\n((?:  .*\n)*)\}$", [("\\1 <\n\\2>", "accept")]),
    (
        "integer_spelling",
        r"^max_batch_size: (\d+)$",
        [(r"\g<0>.0", "reject"), ("max_batch_size: 4294967297", "reject")],
    ),
    ("integer_plus_sign", r"^max_batch_size: (\d+)$", [(r"max_batch_size: +\1", "either")]),
    ("oneof_conflict", r"^(ensemble_scheduling|dynamic_batching) \{$", [("sequence_batching {\n}\n\\g<0>", "reject")]),
    # the surrogate is written as the byte 0xE9: Latin-1 "e acute" in a comment
    ("non_utf8_comment", r"\A", [("# caf\udce9 in latin-1\n", "either")]),
    ("utf8_bom", r"\A", [("\ufeff", "either")]),
]


Edit = Callable[[st.DrawFn, re.Match[str]], tuple[str, Expect]]


def _text_mutation(name: str, pattern: str, edit: Edit) -> Mutation:
    """A mutation that rewrites one match of ``pattern`` in one model's config text."""
    regex = re.compile(pattern, re.MULTILINE)

    def fn(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
        text = draft.text(role)
        matches = list(regex.finditer(text))
        match = matches[draw(st.integers(0, len(matches) - 1))]
        new, expect = edit(draw, match)
        draft.raw[role] = (text[: match.start()] + new + text[match.end() :]).encode("utf-8", "surrogateescape")
        return f"{match.group()!r} -> {new!r}", expect

    def when(draft: Draft, role: str) -> bool:
        return regex.search(draft.text(role)) is not None

    return Mutation(name, "any", fn, when)


def _expand(templates: list[tuple[str, Expect]]) -> Edit:
    def edit(draw: st.DrawFn, match: re.Match[str]) -> tuple[str, Expect]:
        template, expect = draw(st.sampled_from(templates))
        return match.expand(template), expect

    return edit


MUTATIONS.extend(_text_mutation(name, pattern, _expand(templates)) for name, pattern, templates in TEXT_EDITS)


def text_edit(name: str, pattern: str) -> Callable[[Edit], Edit]:
    def register(edit: Edit) -> Edit:
        MUTATIONS.append(_text_mutation(name, pattern, edit))
        return edit

    return register


_FIELDS = ("max_batch_size", "data_type", "dims", "backend", "platform", "kind", "count", "input_map", "output_map")


@text_edit("misspell_field", r"\b(" + "|".join(_FIELDS) + r")(?=:| \{)")
def _misspell(draw: st.DrawFn, match: re.Match[str]) -> tuple[str, Expect]:
    word = match.group()
    how = draw(st.sampled_from(["swap", "double", "suffix"]))
    at = draw(st.integers(1, len(word) - 1))
    swapped = word[: at - 1] + word[at] + word[at - 1] + word[at + 1 :]
    typo = {"swap": swapped, "double": word[:at] + word[at] + word[at:], "suffix": word + "s"}[how]
    return (typo if typo != word else word + "s"), "reject"


@text_edit("enum_by_number", r"\b(data_type|kind): ((?:TYPE|KIND)_[A-Z0-9]+)\b")
def _enum_number(draw: st.DrawFn, match: re.Match[str]) -> tuple[str, Expect]:
    field_name, label = match.group(1), match.group(2)
    holder = model_config_class().DESCRIPTOR.fields_by_name["input" if field_name == "data_type" else "instance_group"]
    known = holder.message_type.fields_by_name[field_name].enum_type.values_by_name.get(label)
    number = draw(st.sampled_from([known.number if known else 1, 99, -1]))
    return f"{field_name}: {number}", "accept" if known is not None and number == known.number else "either"


@text_edit("enum_out_of_range", r"\b(data_type|kind): ((?:TYPE|KIND)_[A-Z0-9]+)\b")
def _enum_out_of_range(draw: st.DrawFn, match: re.Match[str]) -> tuple[str, Expect]:
    number = draw(st.sampled_from([2**31, 2**32, -(2**31) - 1, 2**63]))
    return f"{match.group(1)}: {number}", "reject"


@text_edit("integer_hex", r"^max_batch_size: (\d+)$")
def _integer_hex(draw: st.DrawFn, match: re.Match[str]) -> tuple[str, Expect]:
    return f"max_batch_size: {hex(int(match.group(1)))}", "either"


@text_edit("bool_spelling", r"^input \{$|^input \[\n  \{")
def _bool_spelling(draw: st.DrawFn, match: re.Match[str]) -> tuple[str, Expect]:
    word = draw(st.sampled_from(["true", "True", "t", "1", "false", "False", "f", "0", "TRUE", "yes", "2"]))
    return f"{match.group()} optional: {word}", "reject" if word in ("TRUE", "yes", "2") else "accept"


@mutation()
def crlf_line_endings(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    draft.raw[role] = draft.text(role).replace("\n", "\r\n").encode()
    return "every line ends with CR LF", "accept"


# -- layout (family L)


@mutation()
def name_mismatch(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    draft.names[role] = role + draw(st.sampled_from(["_v2", "x", "_renamed"]))
    return f"config name {draft.names[role]!r} in folder {role!r}", "reject"


@mutation(autocomplete=True)
def name_omitted(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    draft.names[role] = ""
    return "no name field (Triton takes the folder's)", "accept"


@mutation()
def version_folder_renamed(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    names = ["v1", "version_1", "01", "007", "0x1", "0"]
    if draft.configs[role].platform == "ensemble":
        # Triton 2.51 reads the leading integer of "1.0", "+1", "1a", "2.5"... and then looks for the model
        # file under "1/": the python backend hangs on that, an ensemble (no model file) loads
        names += ["1.0", "+1", "-1", "-0", "1a", "2.5", "1e0", " 1", "1 "]
    new = draw(st.sampled_from(names))
    files = draft.files[role]
    draft.files[role] = {(new + rel[1:] if rel == "1" or rel.startswith("1/") else rel): d for rel, d in files.items()}
    return f"1/ renamed {new!r}/", "accept" if new == "0" else "reject" if new in names[:5] else "either"


@mutation()
def extra_version_folder(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    version = draw(st.sampled_from(["0", "2", "10"]))
    is_python = draft.configs[role].platform != "ensemble"
    # an empty latest version of a python model is never compared: the python backend hangs on it
    empty = draw(st.booleans()) and (version == "0" or not is_python)
    src = {rel[2:]: d for rel, d in draft.files[role].items() if rel.startswith("1/")}
    if empty or not src:
        draft.files[role][version] = None
    else:
        draft.files[role].update({f"{version}/{rel}": d for rel, d in src.items()})
    # Triton loads only the latest version by default: an empty lower version is never read
    return f"extra version {version}/" + (" (empty)" if empty else ""), "accept"


@mutation("python")
def default_model_filename(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    draft.configs[role].default_model_filename = "served.py"
    draft.files[role]["1/served.py"] = draft.files[role].pop("1/model.py")
    return "model file 1/served.py named by default_model_filename", "accept"


@mutation()
def junk_files(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    draft.files[role].update({"README.md": b"notes\n", "1/notes.txt": b"x\n", "assets/": None})
    return "README.md, 1/notes.txt and assets/ added", "accept"


@mutation("python", autocomplete=True)
def backend_from_model_file(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    config = draft.configs[role]
    config.backend = ""
    renamed = draw(st.booleans())
    if renamed:  # default_model_filename that is not model.<backend>: nothing tells the backend
        config.default_model_filename = "run.py"
        draft.files[role]["1/run.py"] = draft.files[role].pop("1/model.py")
    return "backend removed" + (", model file run.py" if renamed else ""), "reject" if renamed else "accept"


@mutation("python", lambda draft, role: role == SINGLE, autocomplete=True)
def config_missing(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    draft.no_config.add(role)
    return "config.pbtxt removed (python model.py only)", "either"


@mutation()
def version_policy(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    policy = draft.configs[role].version_policy
    which = draw(st.sampled_from(["latest", "all", "specific_1", "specific_2", "latest_0"]))
    if which.startswith("latest"):
        policy.latest.num_versions = 0 if which == "latest_0" else draw(st.integers(1, 3))
    elif which == "all":
        policy.all.SetInParent()
    else:
        policy.specific.versions.append(int(which[-1]))
    expect: Expect = "reject" if which in ("specific_2", "latest_0") else "accept"
    return f"version_policy {which} (folders: 1/)", expect


# -- schema (family S)


@mutation()
def max_batch_size_negative(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    draft.configs[role].max_batch_size = draw(st.integers(-8, -1))
    return f"max_batch_size: {draft.configs[role].max_batch_size}", "reject"


@mutation("python")
def preferred_batch_size(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    config = draft.configs[role]
    mbs = int(config.max_batch_size)
    size = draw(st.sampled_from(sorted({0, -1, 1, max(mbs, 1), mbs + 1})))
    config.dynamic_batching.preferred_batch_size[:] = [size]
    return f"preferred_batch_size: [{size}], max_batch_size: {mbs}", "accept" if 0 < size <= mbs else "reject"


@mutation("python")
def dynamic_batching_without_batching(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    config = draft.configs[role]
    config.max_batch_size = 0
    config.dynamic_batching.SetInParent()
    del config.dynamic_batching.preferred_batch_size[:]
    ensembles = draft.ensemble_roles()
    batching_ensemble = bool(ensembles) and int(draft.configs[ensembles[0]].max_batch_size) > 0
    return "max_batch_size: 0 with dynamic_batching {}", "either" if batching_ensemble else "accept"


@mutation("python")
def priority_levels(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    batching = draft.configs[role].dynamic_batching
    levels = draw(st.integers(1, 3))
    default = draw(st.integers(0, levels + 1))
    batching.priority_levels = levels
    batching.default_priority_level = default
    detail = f"priority_levels: {levels}, default_priority_level: {default}"
    ok = 1 <= default <= levels
    if draw(st.booleans()):
        key = draw(st.integers(0, levels + 1))
        batching.priority_queue_policy[key].max_queue_size = 4
        detail += f", priority_queue_policy key {key}"
        ok = ok and 1 <= key <= levels
    return detail, "accept" if ok else "reject"


@mutation("python")
def preserve_ordering(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    batching = draft.configs[role].dynamic_batching
    batching.preserve_ordering = True
    levels = draw(st.integers(0, 2))
    if levels:
        batching.priority_levels = levels
        batching.default_priority_level = 1
    timeout = draw(st.sampled_from([0, 100]))
    policy = batching.default_queue_policy
    policy.timeout_action = enum_number(policy, "timeout_action", "DELAY")
    policy.default_timeout_microseconds = timeout
    ok = levels <= 1 and timeout == 0
    return f"preserve_ordering, priority_levels: {levels}, DELAY after {timeout} us", "accept" if ok else "reject"


@mutation("python")
def instance_group_kind(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    config = draft.configs[role]
    del config.instance_group[:]
    kind = draw(st.sampled_from(["KIND_CPU", "KIND_MODEL", "KIND_AUTO"]))
    # KIND_GPU, and KIND_AUTO with GPU ids, depend on the machine's GPUs: not decided by the config alone
    gpus = draw(st.sampled_from([[], [-1]] if kind == "KIND_AUTO" else [[], [0], [-1], [0, 1]]))
    count = draw(st.sampled_from([1, 0, -2]))
    config.instance_group.add(kind=kind, gpus=gpus, count=count)
    expect: Expect = "reject" if gpus else "either" if kind == "KIND_MODEL" else "accept"
    return f"instance_group {kind} gpus: {gpus} count: {count}", expect


@mutation("python")
def instance_group_profile(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    config = draft.configs[role]
    del config.instance_group[:]
    config.instance_group.add(kind="KIND_CPU", count=1, profile=[draw(st.sampled_from(["0", "-1", "x"]))])
    return f"instance_group profile {list(config.instance_group[0].profile)}", "reject"


@mutation("python")
def two_instance_groups(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    config = draft.configs[role]
    del config.instance_group[:]
    config.instance_group.add(kind="KIND_CPU", count=1, name="first")
    config.instance_group.add(kind="KIND_CPU", count=1, name=draw(st.sampled_from(["second", "first"])))
    return f"two KIND_CPU groups named first and {config.instance_group[1].name}", "either"


_PAIRS: list[tuple[str, str, Expect]] = [
    ("tensorrt_plan", "onnxruntime", "reject"),
    ("onnxruntime_onnx", "pytorch", "reject"),
    ("ensemble", "python", "reject"),
    ("pytorch_libtorch", "python", "either"),  # a python backend runs model.py whatever the platform says,
    ("onnxruntime_onnx", "python", "either"),  # except a tensorflow_* one: auto-complete then names
    ("tensorrt_plan", "python", "either"),  # model.savedmodel/graphdef and the python backend hangs on it
    ("no_such_platform", "python", "either"),
    ("no_such_platform", "", "reject"),
]


@mutation("python")
def platform_backend(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    config = draft.configs[role]
    platform, backend, expect = draw(st.sampled_from(_PAIRS))
    config.platform, config.backend = platform, backend
    return f"platform: {platform!r} backend: {backend!r}", expect


@mutation("python")
def ensemble_scheduling_on_python(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    config = draft.configs[role]
    step = config.ensemble_scheduling.step.add(model_name=role, model_version=-1)
    step.input_map["x"] = "y"
    step.output_map["z"] = "w"
    return "ensemble_scheduling on a python model", "reject"


@mutation("python")
def sequence_batching(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    config = draft.configs[role]
    batching = config.sequence_batching
    variant = draw(
        st.sampled_from(
            [
                "valid",
                "no_values",
                "three_values",
                "two_value_kinds",
                "corrid_values",
                "corrid_fp32",
                "corrid_int64",
                "tensor_twice",
                "kind_twice",
                "no_name",
            ]
        )
    )
    start = batching.control_input.add(name="" if variant == "no_name" else "START")
    start.control.add(kind="CONTROL_SEQUENCE_START", int32_false_true=[0, 1])
    control = start.control[0]
    if variant == "no_values":
        del control.int32_false_true[:]
    elif variant == "three_values":
        control.int32_false_true.append(1)
    elif variant == "two_value_kinds":
        control.fp32_false_true.extend([0.0, 1.0])
    elif variant.startswith("corrid"):
        corrid = batching.control_input.add(name="CORRID").control.add(kind="CONTROL_SEQUENCE_CORRID")
        corrid.data_type = enum_number(corrid, "data_type", "TYPE_FP32" if variant == "corrid_fp32" else "TYPE_INT64")
        if variant == "corrid_values":
            corrid.int32_false_true.extend([0, 1])
    elif variant in ("tensor_twice", "kind_twice"):
        other = batching.control_input.add(name="START" if variant == "tensor_twice" else "START2")
        kind = "CONTROL_SEQUENCE_END" if variant == "tensor_twice" else "CONTROL_SEQUENCE_START"
        other.control.add(kind=kind, int32_false_true=[0, 1])
    expect: Expect = "accept" if variant in ("valid", "corrid_int64") else "reject"
    return f"sequence_batching control variant {variant}", expect


@mutation("python")
def sequence_strategy(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    config = draft.configs[role]
    mbs = int(config.max_batch_size)
    if draw(st.booleans()):
        value = draw(st.sampled_from([-0.5, 0.0, 0.5, 1.0, 1.5]))
        config.sequence_batching.direct.minimum_slot_utilization = value
        return f"sequence direct minimum_slot_utilization: {value}", "accept" if 0.0 <= value <= 1.0 else "reject"
    size = draw(st.sampled_from(sorted({0, 1, max(mbs, 1), mbs + 1})))
    config.sequence_batching.oldest.preferred_batch_size.append(size)
    return f"sequence oldest preferred_batch_size: {size}, max_batch_size: {mbs}", (
        "accept" if 0 < size <= mbs else "reject"
    )


@mutation("python")
def response_cache(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    config = draft.configs[role]
    config.response_cache.enable = True
    with_what = draw(st.sampled_from(["alone", "sequence", "decoupled"]))
    if with_what == "sequence":
        config.sequence_batching.SetInParent()
    elif with_what == "decoupled":
        config.model_transaction_policy.decoupled = True
    return f"response_cache enable ({with_what})", "either" if with_what == "alone" else "reject"


@mutation("any", when=_has_io)
def dims_invalid(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    kind, io = _pick_io(draw, draft.configs[role])
    value = draw(st.sampled_from([0, -2, -7, None]))
    if value is None:
        del io.dims[:]
        return f"{kind} {io.name!r} dims: []", "reject"
    io.dims[draw(st.integers(0, len(io.dims) - 1))] = value
    return f"{kind} {io.name!r} dims: {list(io.dims)}", "reject"


@mutation("any", when=_has_io)
def io_field_missing(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    kind, io = _pick_io(draw, draft.configs[role])
    what = draw(st.sampled_from(["name", "data_type"]))
    old = str(io.name)
    io.ClearField(what)
    return f"{kind} {old!r} without {what}", "reject"


@mutation("python", when=_has_io)
def duplicate_io_name(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    kind, io = _pick_io(draw, draft.configs[role])
    getattr(draft.configs[role], kind).add().CopyFrom(io)
    return f"{kind} {io.name!r} declared twice", "either"


@mutation("any", when=_has_io)
def reshape(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    kind, io = _pick_io(draw, draft.configs[role])
    dims = [int(d) for d in io.dims]
    fixed = -1 not in dims
    count = 1
    for d in dims:
        count *= d
    variant = draw(st.sampled_from(["same", "flat", "off_by_one", "extra_variable", "empty", "zero"]))
    shape: list[int] = {
        "same": dims,
        "flat": [count] if fixed else [-1],
        "off_by_one": [count + 1] if fixed else [*dims, 2],
        "extra_variable": [*dims, -1],
        "empty": [],
        "zero": [0],
    }[variant]
    io.reshape.SetInParent()
    io.reshape.shape[:] = shape
    flat_ok = fixed or (dims.count(-1) == 1 and len(dims) == 1)
    if variant == "same" or (variant == "flat" and flat_ok):
        expect: Expect = "accept"
    elif variant == "empty":
        expect = "accept" if dims == [1] and int(draft.configs[role].max_batch_size) > 0 else "reject"
    elif variant == "flat":
        expect = "either"
    else:
        expect = "reject"
    return f"{kind} {io.name!r} dims: {dims} reshape: {shape}", expect


@mutation("any", when=_has_io)
def tensor_flags(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    flag = draw(st.sampled_from(["is_shape_tensor", "is_non_linear_format_io", "format", "optional", "ragged"]))
    input_only = flag in ("format", "optional", "ragged")
    kind, io = _pick_io(draw, draft.configs[role], ("input",) if input_only else ("input", "output"))
    if flag == "format":
        io.format = enum_number(io, "format", draw(st.sampled_from(["FORMAT_NHWC", "FORMAT_NCHW"])))
        return f"input {io.name!r} format with dims {list(io.dims)}", "either" if len(io.dims) == 3 else "reject"
    if input_only:
        setattr(io, "optional" if flag == "optional" else "allow_ragged_batch", True)
        return f"input {io.name!r} {flag}", "either"
    setattr(io, flag, True)
    return f"{kind} {io.name!r} {flag}: true", "reject"


@mutation("python", when=_has_io)
def batch_input(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    config = draft.configs[role]
    source = str(config.input[0].name)
    variant = draw(st.sampled_from(["valid", "unknown_source", "no_source", "two_sources", "fp16", "bad_kind"]))
    item = config.batch_input.add(kind="BATCH_ELEMENT_COUNT", target_name=["BATCH_IN"], data_type="TYPE_INT32")
    item.source_input.append("nosuch" if variant == "unknown_source" else source)
    if variant == "no_source":
        del item.source_input[:]
    elif variant == "two_sources":
        item.source_input.append(source)
    elif variant == "fp16":
        item.data_type = enum_number(item, "data_type", "TYPE_FP16")
    elif variant == "bad_kind":
        item.kind = 42
    return f"batch_input {variant}", "either" if variant == "valid" else "reject"


@mutation("python", when=_has_io)
def batch_output(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    config = draft.configs[role]
    variant = draw(st.sampled_from(["valid", "unknown_target", "target_twice", "unknown_source"]))
    target = str(config.output[0].name)
    targets = {"unknown_target": ["nosuch"], "target_twice": [target, target]}.get(variant, [target])
    source = "nosuch" if variant == "unknown_source" else str(config.input[0].name)
    config.batch_output.add(kind="BATCH_SCATTER_WITH_INPUT_SHAPE", target_name=targets, source_input=[source])
    return f"batch_output {variant}", "either" if variant == "valid" else "reject"


# -- ensembles (family E)


@mutation("ensemble")
def step_missing_model(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    steps = draft.configs[role].ensemble_scheduling.step
    steps[draw(st.integers(0, len(steps) - 1))].model_name = "nosuch"
    return "a step names model nosuch", "reject"


@mutation("ensemble")
def step_self_reference(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    draft.configs[role].ensemble_scheduling.step[0].model_name = role
    return "step 0 names the ensemble itself", "reject"


@mutation("ensemble")
def unused_ensemble_input(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    draft.configs[role].input.add(name="UNUSED_IN", data_type="TYPE_FP32", dims=[1])
    return "ensemble input UNUSED_IN read by no step", "reject"


@mutation("ensemble")
def unwritten_ensemble_output(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    draft.configs[role].output.add(name="UNWRITTEN_OUT", data_type="TYPE_FP32", dims=[1])
    return "ensemble output UNWRITTEN_OUT written by no step", "reject"


@mutation("ensemble")
def tensor_written_twice(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    steps = draft.configs[role].ensemble_scheduling.step
    steps.add().CopyFrom(steps[draw(st.integers(0, len(steps) - 1))])
    return "a step is repeated, so its output tensor is written twice", "reject"


@mutation("ensemble")
def not_for_ensembles(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    config = draft.configs[role]
    what = draw(st.sampled_from(["instance_group", "backend", "optimization", "model_warmup"]))
    if what == "instance_group":
        config.instance_group.add(kind="KIND_CPU", count=1)
    elif what == "backend":
        config.backend = "python"
    elif what == "optimization":
        config.optimization.input_pinned_memory.enable = True
    else:
        warmup = config.model_warmup.add(name="w", batch_size=1)
        warmup.inputs[str(config.input[0].name)].zero_data = True
    return f"{what} on the ensemble", "reject"


@mutation("ensemble")
def scheduling_broken(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    config = draft.configs[role]
    what = draw(st.sampled_from(["no_scheduling", "no_steps", "no_input_map", "no_output_map", "no_model_name"]))
    steps = config.ensemble_scheduling.step
    if what == "no_scheduling":
        config.ClearField("ensemble_scheduling")
    elif what == "no_steps":
        del steps[:]
    elif what == "no_model_name":
        steps[0].model_name = ""
    else:
        getattr(steps[0], what[3:]).clear()
    return what, "reject"


@mutation("ensemble")
def map_key_wrong(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    steps = draft.configs[role].ensemble_scheduling.step
    step = steps[draw(st.integers(0, len(steps) - 1))]
    which = draw(st.sampled_from(["input_map", "output_map"]))
    mapping = getattr(step, which)
    key, value = next(iter(mapping.items()))
    del mapping[key]
    mapping["NOSUCH"] = value
    return f"{which} key {key!r} -> 'NOSUCH' in step {step.model_name}", "reject"


@mutation("ensemble")
def step_extra_input(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    step = draft.configs[role].ensemble_scheduling.step[0]
    step_config = draft.configs[step.model_name]
    optional = draw(st.booleans())
    step_config.input.add(name="EXTRA_IN", data_type="TYPE_FP32", dims=[1], optional=optional)
    return f"step model input EXTRA_IN (optional: {optional}) not mapped", "either" if optional else "reject"


@mutation("ensemble")
def edge_mismatch(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    config = draft.configs[role]
    kind, io = _pick_io(draw, config)
    what = draw(st.sampled_from(["data_type", "dims_fixed", "dims_variable", "rank"]))
    if what == "data_type":
        int8 = enum_number(io, "data_type", "TYPE_INT8")
        io.data_type = int8 if io.data_type != int8 else enum_number(io, "data_type", "TYPE_UINT8")
        return f"ensemble {kind} data_type changed", "reject"
    dims = [int(d) for d in io.dims]
    if what == "dims_fixed":
        io.dims[:] = [d + 1 if d > 0 else 3 for d in dims]
        return f"ensemble {kind} dims {dims} -> {list(io.dims)}", "either" if -1 in dims else "reject"
    if what == "dims_variable":
        io.dims[:] = [-1 for _ in dims]
        return f"ensemble {kind} dims {dims} -> {list(io.dims)}", "accept"
    io.dims.append(1)
    return f"ensemble {kind} dims {dims} -> {list(io.dims)}", "reject"


@mutation("ensemble", when=_two_steps)
def edge_batching_mismatch(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    """The first step stops batching (max_batch_size 0) and writes the middle tensor with other dims,
    while the second keeps its batching: Triton compares the dims, then the dims with the batch one."""
    config = draft.configs[role]
    first = draft.configs[config.ensemble_scheduling.step[0].model_name]
    second = draft.configs[config.ensemble_scheduling.step[1].model_name]
    second.max_batch_size = max(int(second.max_batch_size), 1)
    config.max_batch_size = min(int(config.max_batch_size), int(second.max_batch_size))
    first.max_batch_size = 0
    dims = [int(d) for d in first.output[0].dims]
    shape = draw(
        st.sampled_from(
            [[-1, *dims], [4, *dims], [-1], [-1, -1, *dims], [*dims, 1], [-1] * len(dims), [-1] * (len(dims) + 1)]
        )
    )
    first.output[0].dims[:] = shape
    return f"step 0 max_batch_size 0 writes dims {shape}; step 1 batches with dims {dims}", "either"


@mutation("ensemble", when=_batching)
def ensemble_batch_too_large(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    config = draft.configs[role]
    step = draft.configs[config.ensemble_scheduling.step[0].model_name]
    config.max_batch_size = int(step.max_batch_size) + draw(st.integers(1, 4))
    return f"ensemble max_batch_size {config.max_batch_size} > step's {step.max_batch_size}", "reject"


@mutation("ensemble")
def ensemble_batching_differs(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    config = draft.configs[role]
    steps = [draft.configs[s.model_name] for s in config.ensemble_scheduling.step]
    value = draw(st.integers(0, 4))
    for step in steps:
        step.max_batch_size = value
    return f"steps max_batch_size {value}, ensemble {config.max_batch_size}", "either"


@mutation("ensemble")
def step_model_version(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    step = draft.configs[role].ensemble_scheduling.step[0]
    version = draw(st.sampled_from([1, 2, 0]))
    step.model_version = version
    return f"step 0 model_version: {version} (the step has 1/)", "accept" if version == 1 else "reject"


@mutation("ensemble", when=_two_steps)
def intermediate_unused(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    config = draft.configs[role]
    second = config.ensemble_scheduling.step[1]
    key = next(iter(second.input_map))
    second.input_map[key] = str(config.input[0].name)
    return "step 1 reads the ensemble input: step 0's output is never read", "reject"


@mutation("ensemble")
def nested_ensemble(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    outer = model_config_class()()
    outer.CopyFrom(draft.configs[role])
    del outer.ensemble_scheduling.step[:]
    step = outer.ensemble_scheduling.step.add(model_name=role, model_version=-1)
    for io in outer.input:
        step.input_map[io.name] = io.name
    for io in outer.output:
        step.output_map[io.name] = io.name
    draft.configs["outer"] = outer
    draft.files["outer"] = {"1": None}
    return "an outer ensemble over this one (same tensors)", "accept"


def _completing_model_py(kind: str, tensors: list[Any]) -> bytes:
    """A model.py whose auto_complete_config adds ``tensors`` back as the ``kind`` ("input"/"output") of its config."""
    adds = "".join(
        f"        config.add_{kind}({{'name': {t.name!r}, 'data_type': {_TYPE_NAMES[t.data_type]!r}, "
        f"'dims': {[int(d) for d in t.dims]!r}}})\n"
        for t in tensors
    )
    return (
        "class TritonPythonModel:\n    @staticmethod\n    def auto_complete_config(config):\n"
        f"{adds}        return config\n\n    def execute(self, requests):\n        return []\n"
    ).encode()


_TYPE_NAMES = {enum_number(model_config_class()().input.add(), "data_type", name): name for name in DATA_TYPES}


@mutation("ensemble", autocomplete=True)
def step_io_left_to_autocomplete(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    """A step model declares one side of its I/O and leaves the other to its backend's auto-complete (an ONNX
    export with inputs declared and outputs not is the common case; the embedded server has no onnxruntime
    backend, so the step is a python model, optionally under the onnxruntime_onnx platform). Its model.py
    completes the missing side, or not; the declared side may change rank against its neighbour."""
    steps = draft.configs[role].ensemble_scheduling.step
    step_role = steps[draw(st.integers(0, len(steps) - 1))].model_name
    config = draft.configs[step_role]
    left = draw(st.sampled_from(["input", "output"]))
    dropped = list(getattr(config, left))
    del getattr(config, left)[:]
    completes = draw(st.booleans())
    if completes:
        draft.files[step_role]["1/model.py"] = _completing_model_py(left, dropped)
    if draw(st.booleans()):
        config.platform = "onnxruntime_onnx"
    declared = "output" if left == "input" else "input"
    rank = draw(st.booleans())
    if rank:
        for io in getattr(config, declared):
            io.dims.append(-1)
    what = (
        f"step {step_role} lists no {left}s (model.py {'completes them' if completes else 'does not'}; "
        f"platform {config.platform or 'none'}){'; its ' + declared + 's gain a dimension' if rank else ''}"
    )
    return what, "either" if rank else ("accept" if completes else "reject")


@mutation(autocomplete=True)
def no_mutation(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    return "none", "accept"


# --- the strategy ------------------------------------------------------------------------------------


def _fits(kind: Mutation) -> Callable[[tuple[Draft, str]], bool]:
    return lambda drawn: any(kind.when(drawn[0], r) for r in _roles(drawn[0], kind.scope))


@st.composite
def cases(draw: st.DrawFn, kind: Mutation | None = None) -> Case:
    """A python model or an ensemble with one mutation of ``kind`` (None: drawn from :data:`MUTATIONS`)."""
    chosen = draw(st.sampled_from(MUTATIONS)) if kind is None else kind
    bases = ensemble_drafts() if chosen.scope == "ensemble" else st.one_of(python_drafts(), ensemble_drafts())
    draft, target = draw(bases.filter(_fits(chosen)))
    role = draw(st.sampled_from([r for r in _roles(draft, chosen.scope) if chosen.when(draft, r)]))
    detail, expect = chosen.fn(draw, draft, role)
    if "outer" in draft.configs:
        target = "outer"
    return draft.case(target, f"{chosen.name} on {role}: {detail}", expect)
