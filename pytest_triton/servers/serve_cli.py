"""``python -m pytest_triton serve REPO``: serve a repository until Ctrl-C.

Once every model is ready, prints exactly one line of JSON to stdout and flushes it::

    {"http": "http://127.0.0.1:PORT", "grpc": "127.0.0.1:PORT", "metrics": "http://127.0.0.1:PORT/metrics",
     "models": ["..."]}

(plus ``"sagemaker"`` with ``--sagemaker``). Progress and errors go to stderr. SIGINT or SIGTERM stop the
server cleanly (exit 0); a failed start exits 1; a server that dies while serving exits 1; a signal before
the server was ready exits 130.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

from pytest_triton.errors import PytestTritonError
from pytest_triton.servers.base import TritonLauncher
from pytest_triton.servers.local import LocalLauncher
from pytest_triton.servers.local import repository_models
from pytest_triton.servers.url import UrlLauncher


class _Stop(BaseException):
    """Raised by the signal handlers while the server is starting."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``serve``."""
    parser = argparse.ArgumentParser(
        prog="python -m pytest_triton serve",
        description="Serve a Triton model repository on 127.0.0.1 until Ctrl-C; print its URLs as JSON",
    )
    parser.add_argument("repository", metavar="REPO", help="Model repository folder")
    parser.add_argument("--launcher", choices=["local", "url"], default="local", help="How to run Triton")
    parser.add_argument("--tritonserver", metavar="PATH", help="The tritonserver binary (local launcher)")
    parser.add_argument("--url", metavar="URL", help="HTTP URL of a running server (url launcher)")
    parser.add_argument(
        "--model",
        action="append",
        dest="models",
        metavar="NAME",
        help="Model to load (repeatable; default: all)",
    )
    parser.add_argument("--gpu", action="store_true", help="Require a visible GPU")
    parser.add_argument("--sagemaker", action="store_true", help="Also serve the SageMaker frontend")
    parser.add_argument("--timeout", type=float, default=60.0, metavar="S", help="Seconds to wait for readiness")
    return parser


def _launcher(args: argparse.Namespace, models: list[str]) -> TritonLauncher:
    if args.launcher == "url":
        if not args.url:
            raise PytestTritonError("--launcher url needs --url URL of the running server")
        return UrlLauncher(args.url, models=models, startup_timeout=args.timeout)
    return LocalLauncher(
        args.repository,
        models=models,
        binary=args.tritonserver,
        gpu=args.gpu,
        startup_timeout=args.timeout,
        sagemaker=args.sagemaker,
    )


def serve_main(argv: list[str]) -> int:
    """Run ``serve`` with ``argv`` (without the program name); returns the exit code."""
    args = build_parser().parse_args(argv)
    repository = Path(args.repository)
    if not repository.is_dir():
        print(f"error: REPO={args.repository!r} is not a directory", file=sys.stderr)
        return 1
    models = list(args.models) if args.models else repository_models(repository)

    stop = threading.Event()
    ready = False

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()
        if not ready:
            raise _Stop()

    previous: dict[int, Any] = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    launcher: TritonLauncher | None = None
    try:
        launcher = _launcher(args, models)
        launcher.start()
        ready = True
        payload: dict[str, Any] = {**launcher.urls.as_dict(), "models": models}
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
        if launcher is not None:
            ready = True  # a second signal during stop() must not interrupt it
            launcher.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _serve(launcher: TritonLauncher, stop: threading.Event) -> int:
    while not stop.wait(0.5):
        if isinstance(launcher, LocalLauncher) and not launcher.running:
            print(
                f"error: tritonserver exited while serving\n--- server log (last lines) ---\n{launcher.log_tail()}",
                file=sys.stderr,
            )
            return 1
    return 0


def main() -> None:
    """Console entry: ``python -m pytest_triton.servers.serve_cli REPO ...``."""
    sys.exit(serve_main(sys.argv[1:]))


if __name__ == "__main__":
    main()
