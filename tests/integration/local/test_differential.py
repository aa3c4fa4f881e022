"""Differential test: the linter and the real Triton must give the same verdict on every repository.

Hypothesis draws small repositories (a python model, or an ensemble over python models) with one mutation
each (:mod:`.differential_cases`). Each one is written into the scratch repository of an embedded Triton
(explicit model control), loaded through the repository API and linted. Triton rejecting the load must
coincide with the linter reporting at least one error of a core-level family: C (config syntax),
L (layout), S (schema) or E (ensembles); A, O and D rules are not Triton core's to decide and are left
out. A disagreement is a linter bug, or a gap in what it models.

Two servers run side by side: Triton's default (auto-complete on) for the kinds where auto-complete
changes the verdict, and one with ``--disable-auto-complete-config`` for the others. Their verdicts agree
on every other kind (256 generated cases checked), and a python model loads there in ~0.25 s instead of
~1.5 s (auto-complete starts, and waits out, an extra python stub per load).

One test per mutation kind, so every kind is exercised and a failure names it. Each kind gets up to
``PYTEST_TRITON_DIFFERENTIAL_EXAMPLES`` examples (default 6) and stops drawing new ones after
``PYTEST_TRITON_DIFFERENTIAL_SECONDS`` seconds of its own (default 2.0). The module prints a summary (how
many repositories were compared, Triton's accept/reject split, every disagreement) when it finishes.
"""

from __future__ import annotations

import collections
import contextlib
import importlib.util
import itertools
import os
import shutil
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck
from hypothesis import Phase
from hypothesis import given
from hypothesis import settings

if not sys.platform.startswith("linux") or importlib.util.find_spec("pytriton") is None:
    pytest.skip(
        "the differential test needs the embedded tritonserver: nvidia-pytriton is not installed "
        "(pip install 'pytest-triton[serve]') or this is not Linux",
        allow_module_level=True,
    )

from pytest_triton.client.rest import TritonRest
from pytest_triton.client.transports import TritonHttpTransport
from pytest_triton.config import parse_config
from pytest_triton.config.ensemble_outputs import DEADLOCK
from pytest_triton.config.ensemble_outputs import request_works
from pytest_triton.errors import ModelLoadError
from pytest_triton.errors import ServerError
from pytest_triton.lint import Finding
from pytest_triton.lint import lint_path
from pytest_triton.servers import LocalLauncher
from pytest_triton.servers.logs import model_failure_reason
from pytest_triton.servers.wait import wait_models_unloaded
from tests.unit.lint.layout_cases import CASES as LAYOUT_CASES
from tests.unit.lint.layout_cases import LayoutCase

from .differential_cases import MUTATIONS
from .differential_cases import TOKEN
from .differential_cases import Case
from .differential_cases import Mutation
from .differential_cases import cases
from .differential_requests import RequestCase
from .differential_requests import request_cases

pytestmark = pytest.mark.xdist_group("embedded-triton")

CORE_FAMILIES = ("C", "L", "S", "E")
UNLOAD_BATCH = 48  # models left loaded before a batch unload: each python model is a stub process of ~37 MB RSS
LOAD_TIMEOUT = 20.0  # a python model loads in ~1.5 s; the python backend hangs when its model file is missing
EXAMPLES = int(os.environ.get("PYTEST_TRITON_DIFFERENTIAL_EXAMPLES", "6"))
SECONDS = float(os.environ.get("PYTEST_TRITON_DIFFERENTIAL_SECONDS", "2.0"))
REQUEST_EXAMPLES = int(os.environ.get("PYTEST_TRITON_DIFFERENTIAL_REQUEST_EXAMPLES", "10"))


def _core_error(finding: Finding) -> bool:
    return finding.severity == "error" and finding.rule.startswith(CORE_FAMILIES)


@dataclass(frozen=True)
class Disagreement:
    """One repository on which Triton and the linter gave different verdicts."""

    case: Case
    prefix: str
    triton_error: str | None
    findings: tuple[Finding, ...]

    def report(self) -> str:
        core = [f for f in self.findings if _core_error(f)]
        triton = "ACCEPTS (the model loaded)" if self.triton_error is None else f"REJECTS: {self.triton_error}"
        linter = f"REJECTS ({len(core)} core-level errors)" if core else "ACCEPTS (no core-level error)"
        return "\n".join(
            [
                f"mutation {self.case.mutation} (meant to {self.case.expect})",
                f"Triton {triton}",
                f"linter {linter}; its findings:",
                *(f"  {f.format()}" for f in self.findings),
                self.case.describe(self.prefix),
            ]
        )


@dataclass
class Tally:
    """What the module compared, for its summary."""

    compared: int = 0
    on_autocomplete: int = 0
    triton_accepted: int = 0
    triton_rejected: int = 0
    started: float = field(default_factory=time.monotonic)
    prefixes: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    kinds: collections.Counter[str] = field(default_factory=collections.Counter)
    rules: collections.Counter[str] = field(default_factory=collections.Counter)
    disagreements: list[Disagreement] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)  # both sides agree, but not as the mutation meant
    requests: int = 0  # requests for some of an ensemble's outputs, sent to Triton and predicted
    requests_failed: int = 0  # of them, those Triton answered with the deadlock
    request_disagreements: list[str] = field(default_factory=list)

    def summary(self) -> list[str]:
        lines = [
            f"{self.compared} repositories compared with Triton in {time.monotonic() - self.started:.1f} s: "
            f"{self.triton_accepted} accepted and {self.triton_rejected} rejected by Triton "
            f"({self.on_autocomplete} of them on the server with auto-complete, the others without); "
            f"{len(self.disagreements)} disagreement(s) with the linter",
            f"mutation kinds run: {len(self.kinds)} of {len(MUTATIONS)}",
            "core-level error rules reported: " + " ".join(f"{r}x{n}" for r, n in sorted(self.rules.items())),
        ]
        if self.requests:
            lines.append(
                f"{self.requests} requests for sets of an ensemble's outputs: {self.requests_failed} failed in Triton "
                f"with the deadlock; {len(self.request_disagreements)} disagreement(s) with the prediction (E322)"
            )
        lines += [f"agreed, but not as the mutation meant: {note}" for note in self.unexpected]
        lines += [f"REQUEST DISAGREEMENT: {note}" for note in self.request_disagreements]
        for index, disagreement in enumerate(self.disagreements, 1):
            lines += [f"DISAGREEMENT {index}:", *disagreement.report().splitlines()]
        return lines


@pytest.fixture(scope="module")
def tally(request: pytest.FixtureRequest) -> Iterator[Tally]:
    """The module's counts; printed to the terminal when the module finishes."""
    counts = Tally()
    yield counts
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")  # teardown output is captured otherwise
    if reporter is not None and (counts.compared or counts.requests):
        with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
            reporter.write("\n")
            reporter.write_sep("-", "linter vs Triton differential")
            for line in counts.summary():
                reporter.write_line(line)


@dataclass
class Server:
    """A running Triton on an empty repository; each example writes and removes folders where it serves.

    Churning hundreds of models has crashed tritonserver (see :func:`wait_models_unloaded`): a crash fails
    the kind that caused it, with the server's log, and :meth:`revive` gives the next kind a fresh server.
    """

    repository: Path
    autocomplete: bool
    launcher: LocalLauncher | None = None
    loaded: list[str] = field(default_factory=list)  # models of finished cases, unloaded in batches
    folders: list[Path] = field(default_factory=list)  # their folders, removed once they are unloaded

    def start(self) -> LocalLauncher:
        self.launcher = LocalLauncher(
            self.repository, startup_timeout=120, progress=None, auto_complete_config=self.autocomplete
        )
        return self.launcher.start()

    @property
    def served(self) -> Path:
        """The folder the server reads (the launcher's staged copy): cases are written there, then loaded."""
        assert self.launcher is not None
        assert self.launcher.prepared is not None
        return self.launcher.prepared.folder

    def revive(self) -> LocalLauncher:
        """The running launcher; a new one (on an emptied repository) if the last one died."""
        if self.launcher is not None and self.launcher.running:
            return self.launcher
        if self.launcher is not None:
            self.launcher.stop()  # its staged folder, with every case written there, goes with it
        self.loaded.clear()
        self.folders.clear()
        return self.start()

    def retire(self, names: list[str], folders: list[Path]) -> None:
        """Unload a finished case's models, in batches, waiting each time until Triton has finished.

        Loading while unloads were still running is when tritonserver crashed (SIGSEGV; see
        :func:`wait_models_unloaded`). One python model takes ~1.2 s to unload, 24 at once ~1.5 s and
        64 ~2.3 s, so cases are unloaded together, never during a load.
        """
        self.loaded += names
        self.folders += folders
        triton = self.launcher
        if len(self.loaded) < UNLOAD_BATCH or triton is None or not triton.running:
            return
        for name in self.loaded:
            with contextlib.suppress(ServerError):  # never loaded: it failed, or a step was not reached
                triton.control.unload(name, wait=False)
        rest = TritonRest(triton.urls.need("http"), headers=triton.control_headers)
        wait_models_unloaded(rest, self.loaded, timeout=LOAD_TIMEOUT, progress=None, log_tail=triton.log_tail)
        for folder in self.folders:
            shutil.rmtree(folder, ignore_errors=True)
        self.loaded.clear()
        self.folders.clear()

    def stop(self) -> None:
        if self.launcher is not None:
            self.launcher.stop()


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[bool, Server]]:
    """Two embedded Tritons in explicit model-control mode, by auto-complete on (True) or off (False)."""
    running: dict[bool, Server] = {}
    try:
        for autocomplete in (True, False):
            name = "differential-auto" if autocomplete else "differential-strict"
            running[autocomplete] = Server(tmp_path_factory.mktemp(name), autocomplete)
            running[autocomplete].start()
        yield running
    finally:
        for server in running.values():
            server.stop()


def _load(triton: LocalLauncher, name: str) -> str | None:
    """Load through the repository API: None when the model loaded, else Triton's error text.

    "failed to poll from model repository" says nothing more over HTTP: the reason is in the log.
    """
    try:
        TritonRest(triton.urls.need("http"), headers=triton.control_headers).load(name, timeout=LOAD_TIMEOUT)
    except TimeoutError:
        pytest.fail(f"Triton did not answer the load of {name!r} within {LOAD_TIMEOUT:.0f} s", pytrace=False)
    except OSError:
        try:
            triton.check_alive()
        except ServerError as err:
            pytest.fail(f"tritonserver died while loading {name!r}: {err}", pytrace=False)
        raise
    except ModelLoadError as err:
        reason = err.reason.strip()
        detail = model_failure_reason(triton.logs().splitlines(), name)
        return f"{reason}\n{detail}" if detail and detail not in reason else reason
    return None


def _compare(server: Server, tally: Tally, case: Case) -> Disagreement | None:
    triton, prefix = server.revive(), f"d{next(tally.prefixes)}_"
    folders = case.write(server.served, prefix)
    try:
        findings = tuple(f for folder in folders for f in lint_path(folder))
        error = _load(triton, case.target.replace(TOKEN, prefix))
    finally:
        server.retire(case.names(prefix), folders)
    tally.compared += 1
    tally.on_autocomplete += triton.auto_complete_config
    tally.kinds[case.mutation.split(" ", 1)[0]] += 1
    if error is None:
        tally.triton_accepted += 1
    else:
        tally.triton_rejected += 1
    core = [f for f in findings if _core_error(f)]
    tally.rules.update(f.rule for f in core)
    if (error is not None) != bool(core) or any(f.rule == "X001" for f in findings):
        disagreement = Disagreement(case, prefix, error, findings)
        tally.disagreements.append(disagreement)
        return disagreement
    if case.expect != "either" and (case.expect == "reject") != (error is not None):
        tally.unexpected.append(f"{case.mutation} (meant to {case.expect}, both {'rejected' if error else 'accepted'})")
    return None


@pytest.mark.parametrize("kind", MUTATIONS, ids=[m.name for m in MUTATIONS])
def test_linter_agrees_with_triton(kind: Mutation, servers: dict[bool, Server], tally: Tally) -> None:
    server = servers[kind.autocomplete]
    found: list[Disagreement] = []
    spent = 0.0

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        phases=(Phase.explicit, Phase.generate),  # no shrinking: every load is a real server round trip
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
    )
    @given(cases(kind))
    def compare(case: Case) -> None:
        nonlocal spent
        if spent >= SECONDS:
            return
        started = time.monotonic()
        disagreement = _compare(server, tally, case)
        spent += time.monotonic() - started
        if disagreement is not None:
            found.append(disagreement)

    compare()
    if found:
        reports = "\n\n".join(d.report() for d in found)
        pytest.fail(f"the linter and Triton disagree on {len(found)} repositories:\n\n{reports}", pytrace=False)


def _requests(server: Server, tally: Tally, drawn: RequestCase) -> list[str]:
    """Every non-empty set of the outputs, requested from the served ensemble; what disagrees with the prediction."""
    triton, prefix = server.revive(), f"d{next(tally.prefixes)}_"
    folders = drawn.case.write(server.served, prefix)
    target = drawn.case.target.replace(TOKEN, prefix)
    transport = TritonHttpTransport(triton.urls.need("http"))
    wrong: list[str] = []
    try:
        findings = lint_path(server.served / target)
        error = _load(triton, target)
        where = f"{drawn.case.mutation}\n{drawn.case.describe(prefix)}"
        if error is not None or any(_core_error(f) for f in findings):
            return [f"the drawn ensemble does not load cleanly: {error}; {[f.format() for f in findings]}\n{where}"]
        config = parse_config((server.served / target / "config.pbtxt").read_text()).message
        inputs = {name: np.ones([1], np.float32) for name in drawn.inputs}
        failing = []
        for size in range(1, len(drawn.outputs) + 1):
            for subset in itertools.combinations(drawn.outputs, size):
                try:
                    transport.infer(target, inputs, list(subset))
                    answer: str | None = None
                except Exception as exc:
                    answer = str(exc)
                tally.requests += 1
                tally.requests_failed += answer is not None
                if answer is not None and DEADLOCK not in answer:
                    wrong.append(f"request for {subset} failed otherwise: {answer}\n{where}")
                elif (answer is None) != request_works(config, subset):
                    said = "answers" if answer is None else "deadlocks"
                    wrong.append(f"Triton {said} a request for {subset}, predicted the opposite\n{where}")
                if answer is not None:
                    failing.append(subset)
        warned = [f for f in findings if f.rule == "E322"]
        named = failing and "{" + ", ".join(failing[0]) + "}" in (warned[0].message if warned else "")
        if bool(failing) != bool(warned) or (failing and not named):
            wrong.append(f"E322 {[f.message for f in warned]} but Triton failed the sets {failing}\n{where}")
    finally:
        transport.close()
        server.retire(drawn.case.names(prefix), folders)
    return wrong


def test_partial_output_requests_agree_with_triton(servers: dict[bool, Server], tally: Tally) -> None:
    server = servers[False]
    found: list[str] = []

    @settings(
        max_examples=REQUEST_EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        phases=(Phase.explicit, Phase.generate),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
    )
    @given(request_cases())
    def compare(drawn: RequestCase) -> None:
        found.extend(_requests(server, tally, drawn))

    compare()
    tally.request_disagreements += found
    if found:
        reports = "\n\n".join(found)
        pytest.fail(f"{len(found)} disagreement(s) on requests for some outputs:\n\n{reports}", pytrace=False)


@pytest.mark.parametrize("case", LAYOUT_CASES, ids=[c.id for c in LAYOUT_CASES])
def test_layout_rules_quote_what_triton_says(case: LayoutCase, servers: dict[bool, Server], tally: Tally) -> None:
    """The texts the L rules quote (tests/unit/lint/layout_cases.py) are what this Triton says."""
    server = servers[False]
    triton, name = server.revive(), f"d{next(tally.prefixes)}_layout"
    folder = case.write(server.served, name)
    try:
        error = _load(triton, name)
        said = triton.logs() if case.logged else (error or "")
        assert (error is None) is case.logged, f"{case.id}: Triton answered the load with {error!r}"
        assert case.text(name) in said, f"{case.id}: Triton did not say {case.text(name)!r}; it said: {said[-2000:]}"
        assert [f for f in lint_path(folder) if f.rule == case.rule and case.text(name) in f.message]
    finally:
        server.retire([name], [folder])


SCENARIO07 = Path(__file__).resolve().parents[3] / "model_repos" / "scenario07" / "ensemble"


def test_scenario07_label_alone_deadlocks_and_the_set_clients_ask_for_works() -> None:
    """Scenario 07's ensemble on the embedded server: every set of its outputs, against the prediction, and the
    set parity and latency requests ask for when they want LABEL alone."""
    from pytest_triton.config import read_config
    from pytest_triton.contracts.parity_run import working_outputs

    config = read_config(SCENARIO07 / "ensemble_mdeberta" / "config.pbtxt").message
    names = [str(o.name) for o in config.output]
    asked, note = working_outputs(SCENARIO07, "ensemble_mdeberta", ["LABEL"])
    assert asked == ["LABEL", "LOGITS"]
    assert note is not None
    inputs = {name: np.array([["a cat sits on the mat"]], dtype=object) for name in ("PREMISE", "HYPOTHESIS")}
    with LocalLauncher(SCENARIO07, startup_timeout=180, progress=None) as triton:
        transport = TritonHttpTransport(triton.urls.need("http"))
        try:
            answers = {}
            for size in range(1, len(names) + 1):
                for subset in itertools.combinations(names, size):
                    try:
                        transport.infer("ensemble_mdeberta", inputs, list(subset))
                        answers[subset] = "answers"
                    except Exception as exc:
                        answers[subset] = "deadlocks" if DEADLOCK in str(exc) else str(exc)
            got = transport.infer("ensemble_mdeberta", inputs, asked)
        finally:
            transport.close()
    assert answers[("LABEL",)] == "deadlocks"
    assert {s: a == "answers" for s, a in answers.items()} == {s: request_works(config, s) for s in answers}
    assert sorted(got) == ["LABEL", "LOGITS"]
