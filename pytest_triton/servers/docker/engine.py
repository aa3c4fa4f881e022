"""The Docker daemon as the docker launcher meets it: connecting, pulling with progress, one line per failure.

docker-py raises for some failures and reports others inside a stream: ``APIClient.pull(stream=True,
decode=True)`` yields ``{"status": ..., "id": ..., "progressDetail": {...}}`` events, and a failed pull ends
with an ``{"error": ...}`` event instead of an exception. Every failure a user can fix becomes one
:class:`~pytest_triton.errors.ServerStartError` line saying what to do: no daemon, an image that is not
there, a registry that cannot be reached, a daemon without the NVIDIA runtime.

docker-py is imported inside the functions, so this module imports without the ``docker`` extra.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import socket
import threading
import time
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_triton.errors import ConfigError
from pytest_triton.errors import MissingDependency
from pytest_triton.errors import ServerStartError
from pytest_triton.servers.wait import ProgressCallback

DOCKER_EXTRA = "docker"
# Triton's own ports, published on 127.0.0.1 when the container is on a bridge network
CONTAINER_PORTS = {"http": 8000, "grpc": 8001, "metrics": 8002, "sagemaker": 8080}

# what moby and the registries say (checked against moby 20.10-27 and docker-py 7 error texts)
_NOT_FOUND = re.compile(
    r"manifest unknown|not found|pull access denied|repository does not exist|no such image|"
    r"requested access to the resource is denied",
    re.IGNORECASE,
)
_UNREACHABLE = re.compile(
    r"dial tcp|no such host|lookup .* on|i/o timeout|connection refused|network is unreachable|"
    r"TLS handshake timeout|Client\.Timeout|context deadline exceeded|server misbehaving|temporary failure",
    re.IGNORECASE,
)
_NO_GPU_DRIVER = re.compile(r'could not select device driver "[^"]*" with capabilities', re.IGNORECASE)
_NO_NVIDIA_RUNTIME = re.compile(r"unknown or invalid runtime name: nvidia|nvidia-container-cli", re.IGNORECASE)

NVIDIA_RUNTIME_HINT = (
    "install the NVIDIA driver and nvidia-container-toolkit on the Docker host, then run "
    "`sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker` "
    "(check with `docker run --rm --gpus all IMAGE nvidia-smi`), or run without --gpu"
)


def docker_host() -> str:
    """Where docker-py looks for the daemon: ``$DOCKER_HOST``, else the default socket."""
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def no_daemon_message(detail: object) -> str:
    """The one line for a daemon that does not answer."""
    return (
        f"no Docker daemon answers at DOCKER_HOST={docker_host()!r} ({_short(detail)}): start it "
        "(`sudo systemctl start docker`, or `.ci/dockerd.sh start` in this project) or point DOCKER_HOST at one"
    )


def _short(detail: object, limit: int = 300) -> str:
    text = " ".join(str(detail).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _unix_socket_refuses(host: str) -> OSError | None:
    """Why the daemon's unix socket cannot be connected to (None: it accepts, or it is not a unix socket).

    Checked here because docker-py leaves the socket of a failed connection open (a ResourceWarning later)."""
    if not host.startswith("unix://"):
        return None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10.0)
        try:
            sock.connect(host.removeprefix("unix://"))
        except OSError as err:
            return err
    return None


def connect(timeout: float = 60.0) -> Any:
    """A ``docker.DockerClient`` for the daemon of the environment, checked with a ping.

    Raises :class:`MissingDependency` without docker-py and :class:`ServerStartError` when no daemon answers.
    """
    try:
        import docker
        from docker.errors import DockerException
    except ImportError:
        raise MissingDependency("docker", DOCKER_EXTRA) from None
    refused = _unix_socket_refuses(docker_host())
    if refused is not None:
        raise ServerStartError(no_daemon_message(refused))
    client = None
    try:
        client = docker.from_env(timeout=int(timeout))
        client.ping()
    except (DockerException, OSError) as err:  # OSError: a socket that refuses, below docker-py's wrapping
        if client is not None:
            client.close()
        raise ServerStartError(no_daemon_message(err)) from None
    return client


def registry_of(image: str) -> str:
    """The registry an image reference is pulled from (``docker.io`` when the reference names none)."""
    first, sep, _rest = image.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first
    return "docker.io"


def split_reference(image: str) -> tuple[str, str | None]:
    """``repo[:tag|@digest]`` split as ``APIClient.pull`` wants it: (repository, tag or digest or None)."""
    if "@" in image:
        repo, digest = image.split("@", 1)
        return repo, digest
    slash = image.rfind("/")
    colon = image.rfind(":")
    if colon > slash:
        return image[:colon], image[colon + 1 :]
    return image, None


def pull_failure(image: str, detail: str) -> ServerStartError:
    """The one line for a failed pull, sorted into "not there" and "cannot reach the registry"."""
    registry = registry_of(image)
    if _UNREACHABLE.search(detail):
        return ServerStartError(
            f"cannot reach registry {registry!r} to pull image {image!r} ({_short(detail)}): check the network "
            f"or proxy of the Docker daemon, or load the image from a machine that can pull it "
            f"(`docker pull {image} && docker save {image} | ssh HOST docker load`); --triton-image picks "
            "another image"
        )
    if _NOT_FOUND.search(detail):
        login = " (`docker login nvcr.io` with an NGC API key for NGC images)" if registry == "nvcr.io" else ""
        return ServerStartError(
            f"image {image!r} was not found in registry {registry!r}, or access to it is denied ({_short(detail)}): "
            f"check the name and tag given with --triton-image, and log in if it is private{login}"
        )
    return ServerStartError(f"pulling image {image!r} failed: {_short(detail)}")


def image_present(client: Any, image: str) -> bool:
    """Whether the daemon has ``image`` locally."""
    from docker.errors import ImageNotFound

    try:
        client.images.get(image)
    except ImageNotFound:
        return False
    return True


class PullProgress:
    """Folds pull events into one line every few seconds: ``pulling IMAGE: 3/12 layers done, 1.2/4.5 GB``."""

    def __init__(self, image: str, progress: ProgressCallback | None, every: float = 5.0) -> None:
        self.image = image
        self.progress = progress
        self.every = every
        self._layers: dict[str, tuple[str, int, int]] = {}
        self._next = time.monotonic() + every
        self.events = 0

    def feed(self, event: Mapping[str, Any]) -> None:
        self.events += 1
        layer = event.get("id")
        status = str(event.get("status", ""))
        # "Pulling from REPO" carries the tag as its id, "Digest:"/"Status:" none: only layers are counted
        if layer and status and not status.startswith(("Pulling from", "Digest:", "Status:")):
            detail = event.get("progressDetail") or {}
            _old, current, total = self._layers.get(str(layer), ("", 0, 0))
            current = int(detail.get("current", current) or 0)
            total = int(detail.get("total", total) or 0)
            self._layers[str(layer)] = (status, current, total)
        if self.progress is not None and time.monotonic() >= self._next:
            self._next = time.monotonic() + self.every
            self.progress(self.line())

    def line(self) -> str:
        done = sum(1 for status, _c, _t in self._layers.values() if status in ("Pull complete", "Already exists"))
        downloading = [(c, t) for status, c, t in self._layers.values() if status == "Downloading" and t]
        text = f"pulling {self.image}: {done}/{len(self._layers)} layers done"
        if downloading:
            current = sum(c for c, _t in downloading) / 1e9
            total = sum(t for _c, t in downloading) / 1e9
            text += f", downloading {current:.2f}/{total:.2f} GB"
        return text


def stream_error(events: Iterable[Mapping[str, Any]], sink: PullProgress) -> str | None:
    """Feed ``events`` to ``sink``; the error text of the stream (None when it ended without one)."""
    for event in events:
        if "error" in event or "errorDetail" in event:
            detail = event.get("errorDetail") or {}
            return str(detail.get("message") or event.get("error") or "unknown error")
        sink.feed(event)
    return None


DEFAULT_PULL_TIMEOUT = 1800.0  # an NGC Triton image is 10-20 GB: half an hour on a slow link
PULL_TIMEOUT_ENV = "PYTEST_TRITON_PULL_TIMEOUT"
_END = object()


def pull_timeout() -> float:
    """The deadline of one image pull, in seconds: ``$PYTEST_TRITON_PULL_TIMEOUT`` or 1800."""
    text = os.environ.get(PULL_TIMEOUT_ENV, "")
    if not text:
        return DEFAULT_PULL_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise ConfigError(f"{PULL_TIMEOUT_ENV}={text!r} must be a number of seconds above 0, e.g. 1800")
    return value


def events_within(open_events: Callable[[], Iterable[Any]], timeout: float, what: str) -> Iterator[Any]:
    """The events of ``open_events()`` as they come, but TimeoutError once ``timeout`` seconds have passed.

    docker-py pulls with no socket timeout (``timeout=None``), and the daemon sends its reply headers only
    once the registry has answered: a registry or daemon that stops answering blocks the call and then the
    stream. Both run on a daemon thread; when the deadline passes the caller gets TimeoutError, and the
    thread is left to end with the request (closing the client ends it)."""
    found: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def pump() -> None:
        try:
            for event in open_events():
                found.put(event)
        except BaseException as exc:  # handed to the caller
            found.put(exc)
        finally:
            found.put(_END)

    threading.Thread(target=pump, name="pytest-triton-stream", daemon=True).start()
    deadline = time.monotonic() + timeout
    while True:
        try:
            item = found.get(timeout=max(deadline - time.monotonic(), 0.0))
        except queue.Empty:
            raise TimeoutError(f"{what} did not finish within {timeout:g} s") from None
        if item is _END:
            return
        if isinstance(item, BaseException):
            raise item
        yield item


def ensure_image(
    client: Any,
    image: str,
    *,
    pull: str = "missing",
    progress: ProgressCallback | None = None,
    timeout: float | None = None,
) -> None:
    """Make sure the daemon has ``image``: ``pull`` is ``"missing"`` (pull when absent), ``"always"`` or
    ``"never"``. Pull progress goes to ``progress``; failures raise one-line :class:`ServerStartError`, as
    does a pull that has not finished within ``timeout`` s (default :func:`pull_timeout`)."""
    from docker.errors import APIError
    from docker.errors import DockerException

    if pull not in ("missing", "always", "never"):
        raise ValueError(f"pull={pull!r} must be one of 'missing', 'always', 'never'")
    if pull != "always" and image_present(client, image):
        return
    if pull == "never":
        raise ServerStartError(
            f"image {image!r} is not on the Docker host and pulling is off (pull='never'): "
            f"`docker pull {image}` or `docker load` it, or allow pulling"
        )
    repository, tag = split_reference(image)
    sink = PullProgress(image, progress)
    if progress is not None:
        progress(f"pulling {image} (not on the Docker host yet)")
    started = time.monotonic()
    limit = pull_timeout() if timeout is None else timeout
    try:
        events = events_within(
            lambda: client.api.pull(repository, tag=tag, stream=True, decode=True), limit, f"pulling {image}"
        )
        error = stream_error(events, sink)
    except TimeoutError as err:
        with contextlib.suppress(Exception):  # ends the stream the reading thread still waits on
            client.close()
        raise ServerStartError(
            f"{err} ({sink.events} progress events so far): the registry {registry_of(image)} or the Docker "
            f"daemon stopped answering; pull it beforehand (`docker pull {image}`) or raise {PULL_TIMEOUT_ENV}"
        ) from None
    except APIError as err:  # the daemon refused before streaming (e.g. an invalid reference, a 404)
        raise pull_failure(image, str(err.explanation or err)) from None
    except DockerException as err:
        raise pull_failure(image, str(err)) from None
    if error is not None:
        raise pull_failure(image, error)
    if not image_present(client, image):  # a stream that ended quietly without the image
        raise pull_failure(image, f"the pull ended after {sink.events} events but the image is not there")
    if progress is not None:
        progress(f"pulled {image} in {time.monotonic() - started:.0f} s")


_RLIMIT_NAMES = {"7": "nofile", "8": "memlock", "3": "stack", "6": "nproc", "4": "core"}
_RLIMIT_REFUSED = re.compile(r"error setting rlimit type (\d+): operation not permitted", re.IGNORECASE)


def start_failure(image: str, detail: str, *, gpu: bool, ulimits: Mapping[str, int] | None = None) -> ServerStartError:
    """The one line for a container the daemon refused to create or start."""
    if (match := _RLIMIT_REFUSED.search(detail)) is not None:
        name = _RLIMIT_NAMES.get(match.group(1), f"rlimit type {match.group(1)}")
        asked = (ulimits or {}).get(name)
        return ServerStartError(
            f"the Docker daemon may not set ulimit {name}={asked} for the container ({_short(detail)}): its own "
            f"hard limit is lower and it lacks CAP_SYS_RESOURCE; raise the daemon's limit (LimitMEMLOCK=infinity "
            f"in its systemd unit) or ask for less, e.g. PYTEST_TRITON_DOCKER_ULIMITS={name}=8388608"
        )
    if _NO_GPU_DRIVER.search(detail) or _NO_NVIDIA_RUNTIME.search(detail):
        return ServerStartError(
            f"the Docker daemon cannot give GPUs to containers ({_short(detail)}): {NVIDIA_RUNTIME_HINT}"
        )
    if "No such image" in detail or ("not found" in detail.lower() and image in detail):
        return ServerStartError(f"image {image!r} is not on the Docker host ({_short(detail)}): pull or load it")
    hint = "; the GPU request may be the cause: try without --gpu" if gpu else ""
    return ServerStartError(f"the Docker daemon could not start a container of {image!r}: {_short(detail)}{hint}")


def start_ryuk() -> None:
    """Start testcontainers' reaper (Ryuk) unless ``TESTCONTAINERS_RYUK_DISABLED`` is true: testcontainers starts
    it before any container, and an image it cannot pull would otherwise be reported as the server's. Started
    here first, a failure names Ryuk's image and the way round it."""
    from docker.errors import DockerException
    from testcontainers.core.config import testcontainers_config as config
    from testcontainers.core.container import Reaper as Ryuk

    if config.ryuk_disabled:
        return
    try:
        Ryuk.get_instance()
    except (DockerException, OSError) as err:
        detail = getattr(err, "explanation", None) or str(err)
        raise ServerStartError(
            f"testcontainers' reaper (Ryuk) could not start: its image {config.ryuk_image!r} could not be had "
            f"({_short(detail)}); pull it where the runner can (`docker pull {config.ryuk_image}`), or set "
            "TESTCONTAINERS_RYUK_DISABLED=true: pytest-triton's own reaper removes its containers either way"
        ) from None


# as Triton's python backend quick start runs it; -1 is unlimited
DEFAULT_ULIMITS: Mapping[str, int] = {"memlock": -1, "stack": 67108864}
ULIMITS_ENV = "PYTEST_TRITON_DOCKER_ULIMITS"


def parse_ulimits(text: str) -> dict[str, int]:
    """``"memlock=-1,stack=67108864"`` as a dict; raises ConfigError naming the bad part."""
    out: dict[str, int] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, value = part.partition("=")
        try:
            if not sep or not name.strip():
                raise ValueError(part)
            out[name.strip()] = int(value)
        except ValueError:
            raise ConfigError(
                f"ulimit {part!r} is not NAME=INTEGER (e.g. memlock=-1 or stack=67108864; -1 is unlimited)"
            ) from None
    return out


def default_ulimits() -> dict[str, int]:
    """The container's ulimits: :data:`DEFAULT_ULIMITS` updated by ``$PYTEST_TRITON_DOCKER_ULIMITS``."""
    return {**DEFAULT_ULIMITS, **parse_ulimits(os.environ.get(ULIMITS_ENV, ""))}


def device_requests(gpus: bool | str | Sequence[str]) -> list[Any]:
    """docker-py device requests: none, every GPU (``True``/``"all"``) or the GPUs with these ids/indexes."""
    from docker.types import DeviceRequest

    if gpus is False or gpus == "" or gpus == ():
        return []
    if gpus is True or gpus == "all":
        return [DeviceRequest(count=-1, capabilities=[["gpu"]])]
    ids = [g.strip() for g in gpus.split(",")] if isinstance(gpus, str) else [str(g) for g in gpus]
    return [DeviceRequest(device_ids=[g for g in ids if g], capabilities=[["gpu"]])]


def exit_words(code: int, oom: bool) -> str:
    if oom:
        return f"was killed for lack of memory (OOM, exit code {code})"
    if code > 128:
        import signal

        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(code - 128).name} (exit code {code})"
    return f"exited with code {code}"


def pump_logs(container: Any, path: Path) -> None:
    """Copy the container's log stream (stdout and stderr) into ``path`` until the container ends."""
    from docker.errors import DockerException

    with path.open("ab") as out, contextlib.suppress(DockerException, OSError, ValueError):
        for chunk in container.logs(stream=True, follow=True, stdout=True, stderr=True):
            out.write(chunk)
            out.flush()
