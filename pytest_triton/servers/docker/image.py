"""What a Triton image offers, read from the image itself, and a repository staged for it.

A container does not see the host's paths or its Python: a repository staged for a container must name
the container's own folders. :func:`probe_image` runs the image's ``python3`` once (a throw-away
container, no network) and reads its backends folder, Python version, site folders, onnxruntime, SageMaker
serve script and whether its ``tritonserver`` can restrict model control.
:func:`stage_for_image` stages the repository with real copies (a container cannot follow links to this
machine's files), adapts ONNX models for the image where it has no onnxruntime backend (the adapter then
imports the image's own onnxruntime: no host path is written), checks that the image's onnxruntime offers
the providers the adapted configs ask for, and that no host path is left in any staged ``config.pbtxt``.
"""

from __future__ import annotations

import json
import site
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_triton.errors import ServerStartError
from pytest_triton.servers.control import RESTRICTED_API_FLAGS

CONTAINER_REPOSITORY = "/models"
BACKENDS_DIR = "/opt/tritonserver/backends"

# printed as one JSON line by the image's python3 (kept to the standard library and onnxruntime)
_PROBE = f"""
import json, os, shutil, site, subprocess, sys
out = {{"python": "%d.%d" % sys.version_info[:2], "site": site.getsitepackages()}}
d = {BACKENDS_DIR!r}
out["serve"] = shutil.which("serve") or ""
try:
    usage = subprocess.run(["tritonserver", "--help"], capture_output=True, text=True, timeout=30)
    out["options"] = [f for f in {list(RESTRICTED_API_FLAGS)!r} if f in usage.stdout + usage.stderr]
except Exception:
    out["options"] = []
out["backends"] = sorted(n for n in os.listdir(d) if os.path.isdir(os.path.join(d, n))) if os.path.isdir(d) else []
try:
    import onnxruntime
    out["onnxruntime_dir"] = os.path.dirname(os.path.realpath(onnxruntime.__file__))
    out["providers"] = list(onnxruntime.get_available_providers())
except Exception as exc:
    out["onnxruntime_error"] = "%s: %s" % (type(exc).__name__, exc)
print("PYTEST_TRITON_PROBE " + json.dumps(out))
"""


@dataclass(frozen=True)
class ImageFacts:
    """What one image offers: its backends, its Python and where that Python finds onnxruntime."""

    image_id: str
    backends: frozenset[str]
    python: str
    site_dirs: tuple[str, ...]
    onnxruntime_dir: str | None
    providers: tuple[str, ...]
    onnxruntime_error: str = ""
    serve_script: str = ""  # the SageMaker serve script on the image's PATH (NGC images: /usr/bin/serve)
    restricted_api: bool = False  # its tritonserver has the options that restrict model control

    @classmethod
    def from_json(cls, image_id: str, data: dict[str, Any]) -> ImageFacts:
        return cls(
            image_id=image_id,
            backends=frozenset(data.get("backends", [])),
            python=str(data.get("python", "")),
            site_dirs=tuple(data.get("site", [])),
            onnxruntime_dir=data.get("onnxruntime_dir"),
            providers=tuple(data.get("providers", [])),
            onnxruntime_error=str(data.get("onnxruntime_error", "")),
            serve_script=str(data.get("serve", "")),
            restricted_api=set(RESTRICTED_API_FLAGS) <= set(data.get("options", [])),
        )


_facts: dict[str, ImageFacts] = {}


PROBE_TIMEOUT = 120.0  # python3 printing what it imports; a cold image on a busy host takes seconds


def _run_probe(client: Any, image: str, timeout: float) -> bytes:
    """Run the probe in a throw-away container and return its output, waiting at most ``timeout`` s.

    docker-py's ``containers.run`` waits with no timeout at all: a probe that hangs (a python3 that blocks
    on start) would hold the session for ever. Here the wait has a deadline and the container always goes."""
    container = client.containers.create(
        image,
        ["python3", "-c", _PROBE],
        entrypoint=[],
        network_mode="none",
        labels={"org.pytest-triton.probe": "1"},
    )
    try:
        container.start()
        try:
            container.wait(timeout=timeout)
        except Exception as err:  # requests' ReadTimeout/ConnectionError: the daemon did not say it ended
            raise TimeoutError(f"the probe container of {image!r} did not end within {timeout:g} s") from err
        return bytes(container.logs(stdout=True, stderr=True))
    finally:
        _remove(container)


def _remove(container: Any, attempts: int = 5) -> None:
    """Remove ``container`` (force): after a wait that timed out the daemon may still be stopping it and refuse
    once ("removal already in progress", a read timeout), so a refusal is retried until it is gone."""
    from docker.errors import NotFound

    for attempt in range(attempts):
        try:
            container.remove(force=True, v=True)
            return
        except NotFound:
            return
        except Exception:  # the daemon's refusal or a timeout: ask again
            time.sleep(0.5 * (attempt + 1))


def probe_image(client: Any, image: str, *, timeout: float = PROBE_TIMEOUT) -> ImageFacts:
    """Read :class:`ImageFacts` from ``image`` (once per image id and process), within ``timeout`` s."""
    from docker.errors import DockerException

    image_id = str(client.images.get(image).id)
    if image_id in _facts:
        return _facts[image_id]
    try:
        output = _run_probe(client, image, timeout)
    except TimeoutError as err:
        raise ServerStartError(
            f"{err}: its python3 gave no answer; check that `docker run --entrypoint python3 {image} -c 1` "
            "ends, and that the Docker host is not overloaded"
        ) from None
    except DockerException as err:
        raise ServerStartError(
            f"could not read the backends and Python of image {image!r} (python3 -c ... in a throw-away "
            f"container failed: {err}); a Triton image needs python3 on PATH for its python backend"
        ) from None
    text = output.decode(errors="replace") if isinstance(output, bytes) else str(output)
    line = next((x for x in text.splitlines() if x.startswith("PYTEST_TRITON_PROBE ")), None)
    if line is None:
        raise ServerStartError(f"image {image!r} gave no answer to the probe; its output was: {text[-500:]!r}")
    facts = ImageFacts.from_json(image_id, json.loads(line.split(" ", 1)[1]))
    _facts[image_id] = facts
    return facts


def _host_paths(facts: ImageFacts) -> list[str]:
    """Host folders a staged config must not name: this Python's prefix and site folders, leaving out any
    that the image's own paths start with (a host and an image may share ``/usr/lib/python3/dist-packages``)."""
    ours = [sys.prefix, sys.exec_prefix, *site.getsitepackages()]
    theirs = [*facts.site_dirs, facts.onnxruntime_dir or ""]
    return sorted({p for p in ours if p and p != "/" and not any(t.startswith(p) for t in theirs)})


def check_adapted_providers(staged: Path, models: list[str], facts: ImageFacts) -> None:
    """Every adapted model's ONNX Runtime providers exist in the image's onnxruntime (a load error later
    otherwise, far from the cause)."""
    from pytest_triton.config import read_config

    if facts.onnxruntime_dir is None:
        raise ServerStartError(
            f"models {', '.join(models)} need ONNX Runtime in the container (the image has no onnxruntime "
            f"backend, so they are served by the python-backend adapter), but the image's python3 cannot "
            f"import onnxruntime ({facts.onnxruntime_error}); use an image with the onnxruntime backend or "
            "install onnxruntime in it"
        )
    for name in models:
        config = read_config(staged / name / "config.pbtxt").message
        providers = json.loads(config.parameters["pytest_triton_providers"].string_value or "[]")
        wanted = [p if isinstance(p, str) else p[0] for p in providers]
        missing = [p for p in wanted if p not in facts.providers]
        if missing:
            raise ServerStartError(
                f"model {name!r} asks ONNX Runtime for {', '.join(missing)}, which the image's onnxruntime "
                f"does not offer (it has: {', '.join(facts.providers) or 'none'}); use an image with "
                "onnxruntime-gpu, or run without --gpu"
            )


def host_paths_in(staged: Path, facts: ImageFacts) -> list[str]:
    """``config.pbtxt: host-path`` for every staged config that still names a host folder."""
    found = []
    needles = [*_host_paths(facts), str(staged)]
    for config in sorted(staged.glob("*/config.pbtxt")):
        text = config.read_text()
        found += [f"{config}: {needle}" for needle in needles if needle in text]
    return found


def stage_for_image(source: Path, dest: Path, facts: ImageFacts, *, gpu: bool) -> list[Any]:
    """Stage ``source`` into ``dest`` for a container of the image ``facts`` describe; returns the adapted
    models (:class:`~pytest_triton.repository.onnx_adapter.AdaptedModel`)."""
    from pytest_triton.repository.layout import stage_copy

    stage_copy(source, dest)
    return adapt_for_image(dest, facts, gpu=gpu)


def adapt_for_image(folder: Path, facts: ImageFacts, *, gpu: bool) -> list[Any]:
    """Adapt the ONNX models of a staged ``folder`` in place for the image (where it has no onnxruntime
    backend), check their providers against the image's onnxruntime and that no config names a host folder."""
    from pytest_triton.repository.onnx_adapter import AdapterTarget
    from pytest_triton.repository.onnx_adapter import adapt_repository

    # no python paths: the image's python stub finds the image's onnxruntime on its own sys.path
    adapted = adapt_repository(folder, AdapterTarget(facts.backends, gpu))
    if adapted:
        check_adapted_providers(folder, [model.name for model in adapted], facts)
    leftovers = host_paths_in(folder, facts)
    if leftovers:
        raise ServerStartError(
            "the repository staged for the container still names host folders, which the container cannot "
            "see: " + "; ".join(leftovers)
        )
    return list(adapted)
