"""Serve a declaration's variants through the session's server factory, each repository once.

A variant that cannot run here (no GPU, no TensorRT, another launcher than the session's) raises
:class:`VariantUnavailable` with the reason, which the items turn into a skip and the report into a SKIPPED row.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from typing import final

from pytest_triton.client.transports import Transport
from pytest_triton.client.urls import InferenceEndpoint
from pytest_triton.contracts.spec import Declaration
from pytest_triton.contracts.spec import Variant
from pytest_triton.errors import ConfigError
from pytest_triton.errors import VariantUnavailable
from pytest_triton.servers.factory import ServerFactory
from pytest_triton.servers.protocol import TritonServer

__all__ = ["ContractServers", "ServedVariant", "VariantUnavailable"]

_TENSORRT = "TensorrtExecutionProvider"


def _runs_here(launcher: str) -> bool:
    """Whether the launcher's server runs on this machine, so that this machine's TensorRT is the one it uses
    (a SageMaker endpoint's image brings its own; ``--gpu`` says the endpoint has a GPU)."""
    from pytest_triton.servers.registry import launcher_class

    return bool(getattr(launcher_class(launcher), "runs_here", True))


def inference_protocol(variant: Variant, urls: Any) -> InferenceEndpoint:
    """The transport a variant is called over: its ``protocol`` where the server offers it; for the default
    (``http``) on a server without HTTP, the inference endpoint that server does offer (a SageMaker endpoint's
    InvokeEndpoint). A ``grpc`` variant on a server without gRPC cannot run here."""
    endpoints: tuple[InferenceEndpoint, ...] = ("http", "grpc", "sagemaker")
    offered = [name for name in endpoints if getattr(urls, name, None)]
    if variant.protocol == "stream":  # the stream runs over gRPC; the plain gRPC transport reads the metadata
        if "grpc" in offered:
            return "grpc"
        raise VariantUnavailable(
            variant.name,
            "it is a decoupled model streamed over gRPC and this server has no gRPC endpoint "
            f"(it offers {', '.join(offered) or 'nothing'}; SageMaker's /invocations does not stream)",
        )
    wanted = next((name for name in endpoints if name == variant.protocol), None)
    if wanted is not None and (wanted in offered or not offered):
        return wanted
    if variant.protocol == "http":
        return offered[0]
    raise VariantUnavailable(
        variant.name,
        f"it is called over {variant.protocol} and this server has no {variant.protocol} endpoint "
        f"(it offers {', '.join(offered)})",
    )


@final
@dataclass(frozen=True)
class ServedVariant:
    """A running variant: its server, how to reach it and what its models really run on."""

    variant: Variant
    server: TritonServer
    transport: Transport
    providers: tuple[str, ...]  # of its ONNX models, as the adapter reports them ("" where not adapted)
    notes: tuple[str, ...]

    @property
    def has_gpu(self) -> bool:
        return bool(getattr(self.server, "has_gpu", False))

    @property
    def http_url(self) -> str | None:
        urls = getattr(self.server, "urls", None)
        return getattr(urls, "http", None)


def tensorrt_plan_models(repository: Path) -> list[str]:
    """Models of a repository that only TensorRT can run (``platform: "tensorrt_plan"``)."""
    from pytest_triton.config import read_config
    from pytest_triton.errors import ConfigSyntaxError

    found = []
    for config in sorted(repository.glob("*/config.pbtxt")):
        try:
            message = read_config(config).message
        except ConfigSyntaxError:
            continue  # the server names it when it fails to load
        if message.platform == "tensorrt_plan" or message.backend == "tensorrt":
            found.append(config.parent.name)
    return found


@final
class ContractServers:
    """Serves variants on ``factory``; a repository is served once for every variant that uses it.

    A variant that names another launcher than the session's is served by a factory of its own, made by
    ``factory_for(launcher)`` (None: such variants are skipped); :meth:`stop_all` stops those."""

    def __init__(
        self,
        factory: ServerFactory,
        staging: Path,
        *,
        gpu: bool,
        factory_for: Callable[[str], ServerFactory] | None = None,
    ) -> None:
        self.factory = factory
        self.staging = staging
        self.gpu = gpu
        self.factory_for = factory_for
        self._factories: dict[str, ServerFactory] = {factory.launcher: factory}
        self._servers: dict[tuple[str, Path, str], tuple[Any, tuple[Any, ...]]] = {}
        self._served: dict[tuple[str, Path, str, str], ServedVariant] = {}
        self._folders: dict[Path, Path] = {}

    def folder(self, repository: Path) -> Path:
        """The repository as a folder: a model.tar.gz is unpacked once through the guarded reader, within
        ``$PYTEST_TRITON_ARCHIVE_LIMITS`` (links, devices, ``..`` and absolute members refused); a refused or cut
        short archive leaves nothing behind."""
        if repository.is_dir():
            return repository
        if repository not in self._folders:
            from pytest_triton.archive.model_tar import unpack_model_archive

            target = self.staging / f"archive-{len(self._folders) + 1}"
            target.mkdir(parents=True)
            try:
                unpack_model_archive(repository, target)
            except ConfigError:
                shutil.rmtree(target, ignore_errors=True)
                raise
            self._folders[repository] = target
        return self._folders[repository]

    def unavailable_reason(self, variant: Variant) -> str | None:
        """Why ``variant`` cannot run in this session, or None."""
        session = self.factory.launcher
        if variant.launcher is not None and variant.launcher != session and self.factory_for is None:
            return (
                f"it is served by launcher {variant.launcher!r} and this session's is {session!r} "
                f"(run with --triton-launcher {variant.launcher})"
            )
        on_session = variant.launcher in (None, session)
        if on_session and self.factory.serves_one_model and self.factory.serves_existing:
            return (
                "this session tests one existing endpoint (--endpoint), which does not serve this variant's "
                "repository: run with --cloud and without --endpoint to deploy it"
            )
        requires = set(variant.requires)
        plans = tensorrt_plan_models(self.folder(variant.repository))
        if plans:
            requires.add("tensorrt")
        if requires & {"gpu", "tensorrt"} and not self.gpu:
            return "it needs a GPU: run with --gpu on a GPU runner"
        if "tensorrt" in requires and _runs_here(variant.launcher or session):
            from pytest_triton.repository.onnx_adapter import tensorrt_unavailable_reason

            reason = tensorrt_unavailable_reason()
            if reason is not None:
                return f"it needs TensorRT: {reason}"
        return None

    def serve(self, variant: Variant) -> ServedVariant:
        reason = self.unavailable_reason(variant)
        if reason is not None:
            raise VariantUnavailable(variant.name, reason)
        launcher = variant.launcher or self.factory.launcher
        key = (launcher, variant.repository, variant.protocol, variant.model)
        if key not in self._served:
            server, adapted = self._server(launcher, self.folder(variant.repository), variant.model)
            providers = tuple(str(a.providers[0]) for a in adapted if a.providers)
            notes = (*(a.describe() for a in adapted), *getattr(server, "start_notes", ()))
            transport: Transport = server.transport(inference_protocol(variant, server.urls))
            self._served[key] = ServedVariant(variant, server, transport, providers, notes)
        served = self._served[key]
        if served.variant is not variant:
            served = ServedVariant(variant, served.server, served.transport, served.providers, served.notes)
        if "tensorrt" in variant.requires and served.providers and _TENSORRT not in served.providers:
            raise VariantUnavailable(
                variant.name,
                f"TensorRT is not active: its ONNX models run on {', '.join(sorted(set(served.providers)))}",
            )
        return served

    def _server(self, launcher: str, folder: Path, model: str) -> tuple[Any, tuple[Any, ...]]:
        if launcher not in self._factories:
            assert self.factory_for is not None
            self._factories[launcher] = self.factory_for(launcher)
        factory = self._factories[launcher]
        one_model = factory.serves_one_model
        key = (launcher, folder, model if one_model else "")
        if key not in self._servers:
            server = factory.start(folder, models=[model]) if one_model else factory.start(folder)
            prepared = server.prepared  # what the launcher changed: ONNX models on the adapter, with providers
            self._servers[key] = (server, tuple(prepared.adapted) if prepared is not None else ())
        return self._servers[key]

    def stop_all(self) -> None:
        """Stop the servers of the variants' own launchers (the session's factory stops its own) and remove the
        unpacked archives."""
        for factory in self._factories.values():
            if factory is not self.factory:
                factory.stop_all()
        for folder in self._folders.values():  # unpacked archives: every server serves a staged copy of its own
            shutil.rmtree(folder, ignore_errors=True)
        self._folders.clear()

    def reference(self, declaration: Declaration) -> tuple[Transport, str]:
        """The reference's transport and the model name to call on it."""
        ref = declaration.reference
        if ref.variant is not None:
            variant = declaration.variants[ref.variant]
            try:
                served = self.serve(variant)
            except VariantUnavailable as exc:
                raise VariantUnavailable(exc.variant, f"the reference cannot run here: {exc.reason}") from None
            return served.transport, variant.model
        from pytest_triton.client.reference import OnnxReference

        assert ref.onnx is not None
        return OnnxReference(ref.onnx), ref.onnx.stem


def batching(repository: Path, model: str) -> bool:
    """Whether ``model`` of ``repository`` batches (its config's max_batch_size > 0)."""
    from pytest_triton.config import read_config

    config = repository / model / "config.pbtxt"
    if not config.is_file():
        raise ConfigError(f"model {model!r} has no config.pbtxt in {repository} (its models: {_models(repository)})")
    return int(read_config(config).message.max_batch_size) > 0


def _models(repository: Path) -> Sequence[str]:
    return sorted(p.parent.name for p in repository.glob("*/config.pbtxt"))
