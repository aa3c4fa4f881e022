"""``python -m pytest_triton serve REPO``: serve a repository until Ctrl-C.

Once every model is ready, prints exactly one line of JSON to stdout and flushes it::

    {"http": "http://127.0.0.1:PORT", "grpc": "127.0.0.1:PORT", "metrics": "http://127.0.0.1:PORT/metrics",
     "models": ["..."], "launcher": "local", "changes": ["..."], "control_headers": {"NAME": "VALUE"}}

(plus ``"sagemaker"`` with ``--sagemaker``; ``changes`` says what the launcher changed to serve the
repository, e.g. ONNX models served by the adapter; ``control_headers`` is what model load, unload and the
repository index need, {} where the server does not restrict them). The repository is served through the same
factory and launchers as the pytest fixtures. Progress and errors go to stderr. SIGINT or SIGTERM stop the
server cleanly (exit 0); a failed start exits 1; a server that dies while serving exits 1; a signal before the
server was ready exits 130.
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

from pytest_triton.errors import PytestTritonError
from pytest_triton.servers.factory import ServerFactory
from pytest_triton.servers.protocol import DEFAULT_STARTUP_TIMEOUT
from pytest_triton.servers.protocol import ServeOptions
from pytest_triton.servers.protocol import TritonServer
from pytest_triton.servers.registry import DEFAULT_LAUNCHER
from pytest_triton.servers.registry import check_settings
from pytest_triton.servers.registry import launcher_names


class _Stop(BaseException):
    """Raised by the signal handlers while the server is starting."""


def _seconds(text: str) -> float:
    """A finite number of seconds above 0 (``nan``, ``inf`` and ``-1`` would wait forever or not at all)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"timeout={text!r}: give a finite number of seconds above 0, such as 120")
    return value


def build_parser(prog: str = "python -m pytest_triton serve") -> argparse.ArgumentParser:
    """The argument parser of ``serve``; ``prog`` is how the usage line names the command."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Serve a Triton model repository on 127.0.0.1 until Ctrl-C; print its URLs as JSON",
    )
    parser.add_argument("repository", metavar="REPO", help="Model repository folder")
    parser.add_argument(
        "--launcher",
        default=DEFAULT_LAUNCHER,
        metavar="NAME",
        help=f"How to run Triton: one of {', '.join(launcher_names())} (default: %(default)s)",
    )
    parser.add_argument("--tritonserver", metavar="PATH", help="The tritonserver binary (local launcher)")
    parser.add_argument("--url", metavar="URL", help="HTTP URL of a running server (url launcher)")
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="A launcher-specific setting (repeatable), e.g. image=nvcr.io/nvidia/tritonserver:26.05-py3",
    )
    parser.add_argument(
        "--model",
        action="append",
        dest="models",
        metavar="NAME",
        help="Model to load (repeatable; default: all)",
    )
    parser.add_argument("--gpu", action="store_true", help="Require a visible GPU")
    parser.add_argument("--sagemaker", action="store_true", help="Also serve the SageMaker frontend")
    parser.add_argument(
        "--timeout",
        type=_seconds,
        default=DEFAULT_STARTUP_TIMEOUT,
        metavar="S",
        help="Seconds to wait for readiness (default: %(default)s)",
    )
    return parser


def _options(args: argparse.Namespace) -> ServeOptions:
    settings: dict[str, Any] = {"tritonserver": args.tritonserver, "url": args.url}
    for item in args.setting:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise PytestTritonError(f"--setting {item!r} is not KEY=VALUE")
        settings[key] = value
    return ServeOptions(gpu=args.gpu, startup_timeout=args.timeout, settings=settings, sagemaker=args.sagemaker)


def serve_main(argv: list[str], prog: str = "python -m pytest_triton serve") -> int:
    """Run ``serve`` with ``argv`` (without the program name); returns the exit code."""
    args = build_parser(prog).parse_args(argv)

    stop = threading.Event()
    ready = False

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()
        if not ready:
            raise _Stop()

    previous: dict[int, Any] = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    factory: ServerFactory | None = None
    try:
        options = _options(args)
        check_settings(args.launcher, options.settings)  # an unknown --setting key lists the launcher's keys
        factory = ServerFactory(args.launcher, options)
        launcher = factory.start(Path(args.repository), models=args.models)
        ready = True
        prepared = launcher.prepared
        payload: dict[str, Any] = {
            **launcher.urls.as_dict(),
            "models": list(prepared.models) if prepared else args.models or [],
            "launcher": args.launcher,
            "changes": prepared.describe() if prepared else [],
            "control_headers": launcher.control_headers,
        }
        sys.stdout.write(json.dumps(payload) + "\n")
        sys.stdout.flush()
        return _serve(launcher, stop)
    except _Stop:
        print("interrupted before the server was ready", file=sys.stderr)
        return 130
    except PytestTritonError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    finally:
        if factory is not None:
            ready = True  # a second signal during stop() must not interrupt it
            factory.stop_all()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _serve(launcher: TritonServer, stop: threading.Event) -> int:
    while not stop.wait(0.5):
        try:
            launcher.check_alive()
        except PytestTritonError as err:
            print(f"error: the server ended while serving: {err}", file=sys.stderr)
            return 1
    return 0


def main() -> None:
    """Console entry: ``python -m pytest_triton.servers.serve_cli REPO ...``."""
    sys.exit(serve_main(sys.argv[1:]))


if __name__ == "__main__":
    main()
