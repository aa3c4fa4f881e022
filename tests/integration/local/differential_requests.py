"""More cases for the differential test: steps that batch differently, and requests for some outputs.

``string_escape`` writes a string literal with one escape, valid or not in Triton's C++ tokenizer.
``steps_batch_differently`` (a mutation of :mod:`.differential_cases`, registered on import) gives the two
steps and the ensemble each its own ``max_batch_size`` (0 or not) and writes the shared tensors in the
batching model's dims or in the full shape (the batch dimension written out), so that Triton's rule
(compare the dims, then the dims with the batch dimension) decides.

:func:`request_cases` draws ensembles that load, over python models that copy their first input to
every output, wired as a small graph: some ensemble outputs are read by later steps, some steps have
two outputs, and inputs fan out. Each case is served, then every non-empty set of its outputs is
requested; Triton answering or failing with the deadlock must be what
:func:`pytest_triton.config.ensemble_outputs.request_works` predicts, and the linter's E322 must name
exactly the sets that fail.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hypothesis import strategies as st

from .differential_cases import TOKEN
from .differential_cases import Applied
from .differential_cases import Case
from .differential_cases import Draft
from .differential_cases import Expect
from .differential_cases import Folder
from .differential_cases import mutation
from .differential_cases import text_edit

COPY_PY = (
    "import json\n"
    "import triton_python_backend_utils as pb_utils\n\n\n"
    "class TritonPythonModel:\n"
    "    def initialize(self, args):\n"
    '        config = json.loads(args["model_config"])\n'
    '        self.first = config["input"][0]["name"]\n'
    '        self.outputs = [o["name"] for o in config["output"]]\n\n'
    "    def execute(self, requests):\n"
    "        responses = []\n"
    "        for request in requests:\n"
    "            x = pb_utils.get_input_tensor_by_name(request, self.first).as_numpy()\n"
    "            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor(n, x) for n in self.outputs]))\n"
    "        return responses\n"
)


def _two_steps(draft: Draft, role: str) -> bool:
    return len(draft.configs[role].ensemble_scheduling.step) == 2


@mutation("ensemble", when=_two_steps)
def steps_batch_differently(draw: st.DrawFn, draft: Draft, role: str) -> Applied:
    """Each of the ensemble and its two steps batches or not; each end of the chain is written either in
    the batching dims or in the full shape (the batch dimension as -1 or a size)."""
    config = draft.configs[role]
    steps = [draft.configs[s.model_name] for s in config.ensemble_scheduling.step]
    dims = [int(d) for d in config.input[0].dims]
    batch = [draw(st.sampled_from([0, 4])) for _ in range(3)]  # ensemble, step a, step b
    if batch[0] and not all(batch[1:]):
        batch[0] = draw(st.sampled_from([0, 4]))  # a step with 0 may sit in a batching ensemble
    shapes = [draw(st.sampled_from([dims, [-1, *dims], [4, *dims], [-1] * len(dims)])) for _ in range(6)]
    config.max_batch_size = batch[0]
    config.input[0].dims[:], config.output[0].dims[:] = shapes[0], shapes[1]
    for step, size, (inp, out) in zip(steps, batch[1:], (shapes[2:4], shapes[4:6]), strict=True):
        step.max_batch_size = size
        step.input[0].dims[:], step.output[0].dims[:] = inp, out
    ends = (shapes[0:2], shapes[2:4], shapes[4:6])
    described = ", ".join(
        f"{who} max_batch_size {size} in {i} out {o}"
        for who, size, (i, o) in zip(("ensemble", "a", "b"), batch, ends, strict=True)
    )
    return described, "either"


# escapes in a string literal, as Triton's C++ tokenizer reads them: valid ones (octal, hex, \\u, the
# single-letter table) load, any other one is "Invalid escape sequence in string literal."
ESCAPES: list[tuple[str, Expect]] = [
    ("\\q", "reject"),
    ("\\8", "reject"),
    ("\\o", "reject"),
    ("\\xZ", "reject"),
    ("\\u12G4", "reject"),
    ("\\U0011zzzz", "reject"),
    ("\\\\", "accept"),
    ("\\x41", "accept"),
    ("\\101", "accept"),
    ("\\u0041", "accept"),
    ("\\U0001F600", "accept"),
    ("\\a\\b\\f\\n\\r\\t\\v\\'\\\"", "accept"),
    ("\\?", "accept"),
]


@text_edit("string_escape", r"^max_batch_size: .*$")
def _string_escape(draw: st.DrawFn, match: re.Match[str]) -> tuple[str, Expect]:
    escape, expect = draw(st.sampled_from(ESCAPES))
    quote = draw(st.sampled_from(['"', "'"]))
    return f'{match.group()}\nparameters {{ key: "k" value {{ string_value: {quote}a{escape}b{quote} }} }}', expect


# --- requests for some outputs -----------------------------------------------------------------------


@dataclass(frozen=True)
class RequestCase:
    """An ensemble over copying python models, and the sets of outputs to request from it."""

    case: Case
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


def _config(name: str, reads: list[str], writes: list[str]) -> str:
    ios = "".join(f'input {{ name: "{t}" data_type: TYPE_FP32 dims: [ 1 ] }}\n' for t in reads)
    ios += "".join(f'output {{ name: "{t}" data_type: TYPE_FP32 dims: [ 1 ] }}\n' for t in writes)
    return f'name: "{name}"\nbackend: "python"\nmax_batch_size: 0\n{ios}instance_group {{ kind: KIND_CPU count: 1 }}\n'


@st.composite
def request_cases(draw: st.DrawFn) -> RequestCase:
    """A random small graph: 1-2 ensemble inputs, 1-3 steps of 1-2 inputs and 1-2 outputs each."""
    inputs = [f"IN{i}" for i in range(draw(st.integers(1, 2)))]
    pool, read = list(inputs), set()
    steps: list[tuple[list[str], list[str]]] = []
    for i in range(draw(st.integers(1, 3))):
        unread = [t for t in pool if t not in read]
        first = draw(st.sampled_from(unread or pool))
        others = [t for t in pool if t != first]
        more = draw(st.lists(st.sampled_from(others), max_size=1)) if others else []
        reads = [first, *more]
        writes = [f"T{i}_{j}" for j in range(draw(st.integers(1, 2)))]
        read.update(reads)
        pool += writes
        steps.append((reads, writes))
    produced = [t for _, writes in steps for t in writes]
    unread = [t for t in produced if t not in read]
    extra = draw(st.lists(st.sampled_from(produced), max_size=2, unique=True))
    outputs = list(dict.fromkeys([*unread, *extra]))
    if any(t not in read for t in inputs):  # an ensemble input nothing reads is E308: keep the case loadable
        steps[0] = ([*steps[0][0], *[t for t in inputs if t not in read]], steps[0][1])
    folders = []
    scheduling = []
    for i, (reads, writes) in enumerate(steps):
        keys = [f"x{k}" for k in range(len(reads))]
        outs = [f"y{k}" for k in range(len(writes))]
        model = f"{TOKEN}s{i}"
        folders.append(Folder(model, _config(model, keys, outs).encode(), (("1/model.py", COPY_PY.encode()),)))
        maps = " ".join(f'input_map {{ key: "{k}" value: "{t}" }}' for k, t in zip(keys, reads, strict=True))
        maps += " " + " ".join(f'output_map {{ key: "{k}" value: "{t}" }}' for k, t in zip(outs, writes, strict=True))
        scheduling.append(f'step {{ model_name: "{TOKEN}s{i}" model_version: -1 {maps} }}\n')
    ios = "".join(f'input {{ name: "{t}" data_type: TYPE_FP32 dims: [ 1 ] }}\n' for t in inputs)
    ios += "".join(f'output {{ name: "{t}" data_type: TYPE_FP32 dims: [ 1 ] }}\n' for t in outputs)
    ensemble = f'name: "{TOKEN}ens"\nplatform: "ensemble"\nmax_batch_size: 0\n{ios}ensemble_scheduling {{\n'
    ensemble += "".join(scheduling) + "}\n"
    folders.append(Folder(f"{TOKEN}ens", ensemble.encode(), (("1", None),)))
    described = "; ".join(f"s{i}: {reads} -> {writes}" for i, (reads, writes) in enumerate(steps))
    case = Case(tuple(folders), f"{TOKEN}ens", f"partial requests: {described}; outputs {outputs}", "accept")
    return RequestCase(case, tuple(inputs), tuple(outputs))
