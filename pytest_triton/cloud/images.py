"""The ``sagemaker-tritonserver`` image URIs: which AWS account serves which Triton version in which region.

The facts are those of the SageMaker Python SDK's ``image_uri_config/sagemaker-tritonserver.json``
(checked 2026-12 against the SDK's main branch, sagemaker-core): versions 23.12 to 26.05; account
763104351884 for most regions, an account of their own for opt-in regions; the regions added in 25.04
have no older versions, ap-southeast-6 only 25.09 and later, and the China regions (``.amazonaws.com.cn``)
stop at 25.04. A URI is ``<account>.dkr.ecr.<region>.<domain>/sagemaker-tritonserver:<version>-py3`` with
``-cpu`` appended for CPU instances.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_triton.errors import ConfigError

REPOSITORY = "sagemaker-tritonserver"
DEFAULT_TRITON_VERSION = "26.05"
VERSIONS = ("23.12", "24.01", "24.03", "24.05", "24.09", "25.04", "25.09", "26.05")

_ALL = VERSIONS
_SINCE_25_04 = VERSIONS[VERSIONS.index("25.04") :]
_SINCE_25_09 = VERSIONS[VERSIONS.index("25.09") :]
_UNTIL_25_04 = VERSIONS[: VERSIONS.index("25.04") + 1]
_COMMON_ACCOUNT = "763104351884"


@dataclass(frozen=True)
class Registry:
    """The ECR account of one region and the Triton versions it publishes."""

    account: str
    versions: tuple[str, ...]


# the one table: region -> account and versions
REGISTRIES: dict[str, Registry] = {
    **{
        region: Registry(_COMMON_ACCOUNT, _ALL)
        for region in (
            "ap-northeast-1",
            "ap-northeast-2",
            "ap-south-1",
            "ap-southeast-1",
            "ap-southeast-2",
            "ca-central-1",
            "eu-central-1",
            "eu-north-1",
            "eu-west-1",
            "eu-west-2",
            "eu-west-3",
            "sa-east-1",
            "us-east-1",
            "us-east-2",
            "us-west-1",
            "us-west-2",
        )
    },
    "af-south-1": Registry("626614931356", _ALL),
    "ap-east-1": Registry("871362719292", _ALL),
    "ap-northeast-3": Registry("364406365360", _ALL),
    "ap-southeast-3": Registry("907027046896", _ALL),
    "ca-west-1": Registry("204538143572", _ALL),
    "eu-south-1": Registry("692866216735", _ALL),
    "il-central-1": Registry("780543022126", _ALL),
    "me-south-1": Registry("217643126080", _ALL),
    "ap-east-2": Registry("975050140332", _SINCE_25_04),
    "ap-south-2": Registry("772153158452", _SINCE_25_04),
    "ap-southeast-4": Registry("457447274322", _SINCE_25_04),
    "ap-southeast-5": Registry("550225433462", _SINCE_25_04),
    "ap-southeast-7": Registry("590183813437", _SINCE_25_04),
    "eu-central-2": Registry("380420809688", _SINCE_25_04),
    "eu-south-2": Registry("503227376785", _SINCE_25_04),
    "me-central-1": Registry("914824155844", _SINCE_25_04),
    "mx-central-1": Registry("637423239942", _SINCE_25_04),
    "ap-southeast-6": Registry("633930458069", _SINCE_25_09),
    "cn-north-1": Registry("727897471807", _UNTIL_25_04),
    "cn-northwest-1": Registry("727897471807", _UNTIL_25_04),
}

_HOW_TO_OVERRIDE = "pass the image URI yourself with --triton-image ACCOUNT.dkr.ecr.REGION.amazonaws.com/REPOSITORY:TAG"


def ecr_domain(region: str) -> str:
    """``amazonaws.com``, or ``amazonaws.com.cn`` for the China regions."""
    return "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"


def triton_image_uri(region: str, version: str = DEFAULT_TRITON_VERSION, *, gpu: bool = True) -> str:
    """The ``sagemaker-tritonserver`` image for ``region`` and Triton ``version`` (``-py3``, or ``-py3-cpu``).

    Raises :class:`ConfigError` naming what is known when the region or the version is not in the table.
    """
    registry = REGISTRIES.get(region)
    if registry is None:
        raise ConfigError(
            f"region={region!r} has no sagemaker-tritonserver image that pytest-triton knows of; "
            f"known regions: {', '.join(sorted(REGISTRIES))}; {_HOW_TO_OVERRIDE}"
        )
    if version not in registry.versions:
        raise ConfigError(
            f"setting container_release={version!r} is not published in region {region!r}; "
            f"versions there: {', '.join(registry.versions)}; {_HOW_TO_OVERRIDE}"
        )
    tag = f"{version}-py3" + ("" if gpu else "-cpu")
    return f"{registry.account}.dkr.ecr.{region}.{ecr_domain(region)}/{REPOSITORY}:{tag}"
