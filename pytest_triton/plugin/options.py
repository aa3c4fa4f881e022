"""The plugin's options: one table, each option with its ini twin, its default in its help, parsed here.

Everything is namespaced (``--triton-*``, ini ``triton_*``), so that installing the plugin adds nothing a
user's conftest or another plugin could clash with. The short spellings ``--gpu``, ``--cloud`` and
``--cloud --endpoint NAME`` are not registered as options: once every plugin and the initial conftests have
added theirs (:func:`translate_short_forms`, from ``pytest_load_initial_conftests``), a short form that nothing
else in the session defines is rewritten to its ``--triton-*`` option before pytest parses the command line;
one that a conftest or plugin defines stays theirs, and the report header says how to reach the plugin's own.

Launcher-specific knobs (shared memory, GPU devices, pull policy, network, ulimits, SageMaker instance...)
are not options: they go through ``--triton-setting KEY=VALUE``, which the chosen launcher validates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any
from typing import Literal

import pytest

Kind = Literal["flag", "text", "choice", "seconds", "ms", "paths", "lines"]


@dataclass(frozen=True)
class Option:
    """One option: ``--triton-NAME`` on the command line, ``triton_NAME`` (or ``ini``) in the ini file."""

    name: str  # the dest: triton_gpu
    help: str
    kind: Kind = "text"
    default: Any = None
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    ini: str = ""  # the ini name where it is not the dest (a plural for a repeatable option)
    short: str = ""  # a short spelling, used where nothing else in the session defines it
    shown: str = ""  # the default as help shows it, where it is not ``default``

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def ini_name(self) -> str:
        return self.ini or self.name


OPTIONS: tuple[Option, ...] = (
    Option("triton_gpu", "Require a GPU and run tests marked triton_gpu", "flag", False, short="--gpu"),
    Option(
        "triton_cloud",
        "Serve on a SageMaker endpoint (the sagemaker launcher): deploy the repository for the run and remove it "
        "after, or with --triton-endpoint test that endpoint read-only",
        "flag",
        False,
        short="--cloud",
    ),
    Option("triton_endpoint", "With --triton-cloud: reuse this InService endpoint", metavar="NAME", short="--endpoint"),
    Option(
        "triton_launcher",
        "How to get a Triton server: local (a tritonserver process), url (--triton-url), docker (--triton-image), "
        "sagemaker-local, sagemaker (--triton-cloud) or a launcher another package registers",
        metavar="NAME",
        shown="local; url with --triton-url",
    ),
    Option("triton_url", "HTTP URL of a running Triton (chooses the url launcher)", metavar="URL"),
    Option(
        "triton_image",
        "Container image of the launcher: docker and sagemaker-local run this Triton image "
        "(docker: nvcr.io/nvidia/tritonserver:26.05-py3); sagemaker deploys this image URI instead of the region's",
        metavar="IMAGE",
    ),
    Option(
        "triton_setting",
        "A setting of the chosen launcher, e.g. shm_size=2g (repeatable; an unknown key lists the launcher's keys)",
        "lines",
        (),
        metavar="KEY=VALUE",
        ini="triton_settings",
    ),
    Option("triton_repository", "Model repository served by the triton_server fixture", metavar="PATH"),
    Option("triton_startup_timeout", "Seconds to wait for a server and its models", "seconds", 120.0, metavar="S"),
    Option(
        "triton_lint",
        "Lint this repository, model folder or model.tar.gz as test items (repeatable)",
        "paths",
        (),
        metavar="PATH",
    ),
    Option(
        "triton_lint_limit",
        "Raise or lower a lint limit, e.g. max_config_bytes=32M (repeatable; python -m pytest_triton lint -h)",
        "lines",
        (),
        metavar="NAME=N",
        ini="triton_lint_limits",
    ),
    Option(
        "triton_contracts",
        "Contracts file (TOML, or a pyproject.toml's [tool.pytest-triton.contracts]) run as items (repeatable)",
        "paths",
        (),
        metavar="FILE",
    ),
    Option(
        "triton_budgets",
        "Latency budget file",
        metavar="FILE",
        shown="budgets.toml beside the first contracts file; none found: latency is reported, not asserted",
    ),
    Option(
        "triton_budgets_record",
        "Write this run's latency rows as budgets of this hardware to FILE (kept: other hardware's tables)",
        metavar="FILE",
    ),
    Option(
        "triton_budgets_margin",
        "With --triton-budgets-record: budgets = measured percentiles x FACTOR, samples/s / FACTOR",
        default="2.0",  # a fence at twice the measured time: a first run's numbers move with the machine's load
        metavar="FACTOR",
    ),
    Option("triton_hardware", "Budget hardware key instead of this machine's, e.g. nvidia-a10g", metavar="NAME"),
    Option(
        "triton_unstable",
        "What an unstable latency measurement within budget does (over budget always fails)",
        "choice",
        "warn",
        choices=("warn", "fail"),
    ),
    Option(
        "triton_inconclusive",
        "What a relative budget or --triton-baseline verdict does when its interval still straddles the limit "
        "after the extra rounds: warn (a TritonInconclusiveWarning, the test passes) or fail",
        "choice",
        "warn",
        choices=("warn", "fail"),
    ),
    Option(
        "triton_verdict_seconds",
        "Measurement time of one relative budget or --triton-baseline pair: rounds are added while its answer "
        "is open and the next look (9, 18, 36, 72 rounds) fits in S seconds",
        "seconds",
        90.0,
        metavar="S",
    ),
    Option(
        "triton_window_ms",
        "Latency measurement window; windows repeat until the last three agree within 10%",
        "ms",
        3000.0,
        metavar="MS",
    ),
    Option("triton_report", "Write the latency report to PATH.json, PATH.md, PATH.svg", metavar="PATH"),
    Option(
        "triton_baseline",
        "Serve every declared variant as it is at REF (a git ref such as origin/main, or a folder) beside "
        "the working tree's: items parity[VARIANT@REF] and latency[VARIANT/VARIANT@REF] and a verdict table",
        metavar="REF",
    ),
    Option(
        "triton_baseline_unchanged",
        "With --triton-baseline: compare variants whose repository did not change too (default: skipped)",
        "flag",
        False,
    ),
    Option(
        "triton_verdict",
        "With --triton-baseline: write the verdict table (markdown) to FILE, as well as to "
        "$GITHUB_STEP_SUMMARY when that is set",
        metavar="FILE",
    ),
    Option(
        "triton_shard",
        "Run shard K of N of the contract items (by variant; N alone: the index from JOB_COMPLETION_INDEX or "
        "PYTEST_TRITON_SHARD_INDEX, 0-based); merge the shards' reports with python -m pytest_triton report merge",
        metavar="K/N",
    ),
    Option(
        "triton_cloud_metrics_wait",
        "At the session's end, wait up to S seconds after the last latency window for CloudWatch's "
        "ModelLatency/OverheadLatency split (0: read once)",
        "seconds",
        180.0,
        metavar="S",
    ),
)
BY_NAME = {option.name: option for option in OPTIONS}

# the short spellings, by group: a group is translated only when none of its names is defined elsewhere
# (a suite with its own --cloud keeps --endpoint too, so that its pair stays together)
SHORT_GROUPS: tuple[tuple[str, ...], ...] = (("triton_gpu",), ("triton_cloud", "triton_endpoint"))


def _shown_default(option: Option) -> str:
    if option.shown:
        return option.shown
    if option.kind == "flag":
        return "off"
    if option.kind in ("paths", "lines"):
        return "none"
    if option.default is None:
        return "none"
    if option.kind in ("seconds", "ms"):
        return f"{option.default:g}"
    return str(option.default)


def add_options(parser: pytest.Parser) -> None:
    """Register every option (in the ``triton`` group) and its ini twin."""
    group = parser.getgroup("triton", "Triton model repositories (pytest-triton; python -m pytest_triton docs options)")
    for option in OPTIONS:
        short = f"; short form {option.short} where nothing else defines it" if option.short else ""
        text = f"{option.help} (default: {_shown_default(option)}; ini {option.ini_name}{short})"
        attrs: dict[str, Any] = {"dest": option.name, "help": text.replace("%", "%%"), "default": None}
        if option.kind == "flag":
            attrs["action"] = "store_true"
        elif option.kind in ("paths", "lines"):
            attrs["action"] = "append"
        if option.metavar:
            attrs["metavar"] = option.metavar
        if option.choices:
            attrs["choices"] = option.choices
        group.addoption(option.flag, **attrs)
        ini_type = {"flag": "bool", "paths": "paths", "lines": "linelist"}.get(option.kind)
        ini_default: Any = [] if option.kind in ("paths", "lines") else option.default
        if ini_type is None:
            ini_default = "" if option.default is None else str(option.default)
        parser.addini(option.ini_name, text, type=ini_type, default=ini_default)  # type: ignore[arg-type]


# -- reading values (one place parses numbers) ---------------------------------------------------------------


def _source(config: pytest.Config, name: str) -> tuple[Any, str]:
    """The raw value and where it came from (``--triton-x`` or ``ini triton_x``); the default's source is ini."""
    option = BY_NAME[name]
    value = config.getoption(name)
    if value is not None:
        return value, option.flag
    return config.getini(option.ini_name), f"ini {option.ini_name}"


def text(config: pytest.Config, name: str) -> str:
    """A text or choice option: the command line over the ini file over the default ("" when none)."""
    value, _ = _source(config, name)
    return "" if value is None else str(value)


def flag(config: pytest.Config, name: str) -> bool:
    value, _ = _source(config, name)
    return bool(value)


def number(config: pytest.Config, name: str) -> float:
    """A ``seconds`` or ``ms`` option as a float >= 0; a UsageError naming the option and the value otherwise."""
    value, where = _source(config, name)
    return parse_number(str(value), where, BY_NAME[name].kind)


def parse_number(text: str, where: str, kind: str = "seconds") -> float:
    """``text`` as a finite number >= 0 (of seconds or milliseconds); a UsageError naming ``where`` otherwise."""
    unit = "milliseconds" if kind == "ms" else "seconds"
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value >= 0 and math.isfinite(value)):
        raise pytest.UsageError(f"{where}={text!r}: expected a number of {unit} >= 0")
    return value


def budgets_margin(config: pytest.Config) -> float:
    """``--triton-budgets-margin`` as a factor >= 1; a UsageError naming the option and the value otherwise."""
    value, where = _source(config, "triton_budgets_margin")
    default = BY_NAME["triton_budgets_margin"].default
    if str(value) == default:  # the default needs no check: a session that records nothing imports no bench code
        return float(default)
    from pytest_triton.bench.budgets_record import parse_margin
    from pytest_triton.errors import ConfigError

    try:
        return parse_margin(str(value), where)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from exc


def many(config: pytest.Config, name: str) -> list[str]:
    """A repeatable option: the ini file's values, then the command line's (a later one wins where it matters)."""
    option = BY_NAME[name]
    from_ini = [str(v) for v in config.getini(option.ini_name)]
    return from_ini + [str(v) for v in config.getoption(name) or []]


def settings(config: pytest.Config) -> dict[str, str]:
    """``--triton-setting KEY=VALUE`` (over ini ``triton_settings``) as a dict; a UsageError on a bad item."""
    found: dict[str, str] = {}
    for item in many(config, "triton_setting"):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise pytest.UsageError(f"--triton-setting {item!r} is not KEY=VALUE (e.g. shm_size=2g)")
        found[key.strip()] = value.strip()
    return found


# -- files the options name ---------------------------------------------------------------------------------


def _pyproject_has_contracts(path: Path) -> bool:
    try:  # a table of ours names us: most projects' files do not, and need no TOML reader imported
        if b"pytest-triton" not in path.read_bytes():
            return False
    except OSError:
        return False  # not ours to judge, as below
    from pytest_triton.config.toml import read_toml
    from pytest_triton.errors import ConfigError

    try:
        data = read_toml(path, "pyproject").data
    except ConfigError:
        return False  # not ours to judge: pytest reads the same file and says what is wrong with it
    return isinstance(data.get("tool", {}).get("pytest-triton", {}).get("contracts"), dict)


def contract_paths(config: pytest.Config) -> list[Path]:
    """The contracts files of this run (option, ini, the root's pyproject.toml table), each once."""
    paths = [Path(p).resolve() for p in many(config, "triton_contracts")]
    pyproject = config.rootpath / "pyproject.toml"
    if not paths and pyproject.is_file() and _pyproject_has_contracts(pyproject):
        paths.append(pyproject.resolve())
    return list(dict.fromkeys(paths))


# -- the short spellings -------------------------------------------------------------------------------------


@dataclass
class ShortForms:
    """Which short spellings this session gives the plugin, and which belong to the suite."""

    ours: list[str] = field(default_factory=list)
    theirs: list[str] = field(default_factory=list)

    def header(self) -> list[str]:
        if not self.theirs:
            return []
        pairs = ", ".join(f"{BY_NAME[n].flag} (not {BY_NAME[n].short})" for n in self.theirs)
        return [f"pytest-triton: this suite defines {', '.join(BY_NAME[n].short for n in self.theirs)}; use {pairs}"]


SHORT_KEY = pytest.StashKey[ShortForms]()


def _defined(parser: pytest.Parser, spelling: str) -> bool:
    """Whether any plugin or conftest registered ``spelling`` (asked of pytest's parser itself)."""
    try:
        _, unknown = parser.parse_known_and_unknown_args([spelling])
    except (pytest.UsageError, SystemExit):  # defined, and wants a value
        return True
    return spelling not in unknown


def translate_short_forms(config: pytest.Config, parser: pytest.Parser, args: list[str]) -> ShortForms:
    """Rewrite, in place, the short spellings nobody else defines to the plugin's options; say which are whose."""
    forms = ShortForms()
    for group in SHORT_GROUPS:
        spellings = [BY_NAME[name].short for name in group]
        if any(_defined(parser, spelling) for spelling in spellings):
            forms.theirs.extend(group)
        else:
            forms.ours.extend(group)
    rename = {BY_NAME[n].short: BY_NAME[n].flag for n in forms.ours}
    args[:] = _renamed(args, rename)
    config.stash[SHORT_KEY] = forms
    return forms


def _renamed(args: Sequence[str], rename: dict[str, str]) -> list[str]:
    out: list[str] = []
    for index, arg in enumerate(args):
        if arg == "--":  # the rest are file names
            return out + list(args[index:])
        head, sep, tail = arg.partition("=")
        out.append(rename[head] + sep + tail if head in rename else arg)
    return out


# -- checks before any test runs -----------------------------------------------------------------------------


def spelled(config: pytest.Config, name: str) -> str:
    """How a user of this session types option ``name``: its short form where the session gives it to us."""
    option = BY_NAME[name]
    forms = config.stash.get(SHORT_KEY, None)
    return option.short if forms is not None and name in forms.ours else option.flag


def check_report_folder(prefix: str, where: str) -> None:
    """The report's folder made now, and a file written and removed in it: a report that cannot be written is a
    usage error before the tests run, not a traceback after they passed."""
    import tempfile

    folder = Path(prefix).parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".pytest-triton-check-"):
            pass
    except OSError as exc:
        raise pytest.UsageError(
            f"{where}={prefix!r}: cannot write the report into {str(folder)!r} ({exc.strerror or exc}); "
            "give a path in a folder this user can write"
        ) from None


def launcher_name(config: pytest.Config) -> str:
    """The session's launcher: sagemaker under --triton-cloud, else --triton-launcher, url with --triton-url,
    else the default (local)."""
    from pytest_triton.servers.registry import DEFAULT_LAUNCHER

    if flag(config, "triton_cloud"):
        return "sagemaker"
    return text(config, "triton_launcher") or ("url" if text(config, "triton_url") else DEFAULT_LAUNCHER)


def launcher_chosen(config: pytest.Config) -> bool:
    """Whether the session names its launcher (--triton-cloud, --triton-launcher, --triton-url or their ini
    twins) instead of taking the default."""
    return flag(config, "triton_cloud") or bool(text(config, "triton_launcher") or text(config, "triton_url"))


def launcher_settings(config: pytest.Config) -> dict[str, Any]:
    """The launcher settings of the session: ``--triton-setting KEY=VALUE`` (over ini ``triton_settings``) and
    the options that are settings of one launcher (``--triton-url``, ``--triton-image``, ``--triton-endpoint``)."""
    found: dict[str, Any] = dict(settings(config))
    named = (
        ("triton_url", "url"),
        ("triton_image", "image"),
        ("triton_endpoint", "endpoint"),
        ("triton_report", "report"),
    )
    for option, key in named:
        if text(config, option):
            found[key] = text(config, option)
    return found


def check_launcher(config: pytest.Config) -> None:
    """ConfigError for an unknown launcher (listing the known ones) or a setting it does not read (listing its)."""
    settings = launcher_settings(config)
    if not settings and not launcher_chosen(config):  # the default launcher, given nothing to check
        return
    from pytest_triton.servers.registry import check_settings

    check_settings(launcher_name(config), settings)


def check(config: pytest.Config) -> None:
    """Every option that can be checked before the tests run: numbers, settings, --triton-cloud's company."""
    for name in ("triton_startup_timeout", "triton_window_ms", "triton_cloud_metrics_wait"):
        number(config, name)
    report = text(config, "triton_report")
    if report:
        check_report_folder(report, spelled(config, "triton_report"))
    cloud, endpoint = spelled(config, "triton_cloud"), spelled(config, "triton_endpoint")
    if not flag(config, "triton_cloud"):
        if text(config, "triton_endpoint"):
            raise pytest.UsageError(f"{endpoint} only applies with {cloud}; add {cloud}")
        return
    chosen = text(config, "triton_launcher")
    if chosen and chosen != "sagemaker":
        raise pytest.UsageError(f"{cloud} uses the sagemaker launcher; drop --triton-launcher {chosen}")
