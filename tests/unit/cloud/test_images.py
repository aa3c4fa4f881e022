from __future__ import annotations

import pytest

from pytest_triton.cloud.images import DEFAULT_TRITON_VERSION
from pytest_triton.cloud.images import REGISTRIES
from pytest_triton.cloud.images import VERSIONS
from pytest_triton.cloud.images import triton_image_uri
from pytest_triton.errors import ConfigError


@pytest.mark.parametrize(
    ("region", "version", "gpu", "uri"),
    [
        ("us-east-1", "26.05", True, "763104351884.dkr.ecr.us-east-1.amazonaws.com/sagemaker-tritonserver:26.05-py3"),
        (
            "us-east-1",
            "26.05",
            False,
            "763104351884.dkr.ecr.us-east-1.amazonaws.com/sagemaker-tritonserver:26.05-py3-cpu",
        ),
        ("eu-west-1", "23.12", True, "763104351884.dkr.ecr.eu-west-1.amazonaws.com/sagemaker-tritonserver:23.12-py3"),
        ("af-south-1", "24.09", True, "626614931356.dkr.ecr.af-south-1.amazonaws.com/sagemaker-tritonserver:24.09-py3"),
        ("ap-east-1", "25.04", True, "871362719292.dkr.ecr.ap-east-1.amazonaws.com/sagemaker-tritonserver:25.04-py3"),
        (
            "ap-northeast-3",
            "24.01",
            True,
            "364406365360.dkr.ecr.ap-northeast-3.amazonaws.com/sagemaker-tritonserver:24.01-py3",
        ),
        (
            "ap-southeast-3",
            "24.03",
            True,
            "907027046896.dkr.ecr.ap-southeast-3.amazonaws.com/sagemaker-tritonserver:24.03-py3",
        ),
        ("ca-west-1", "24.05", True, "204538143572.dkr.ecr.ca-west-1.amazonaws.com/sagemaker-tritonserver:24.05-py3"),
        ("eu-south-1", "25.09", True, "692866216735.dkr.ecr.eu-south-1.amazonaws.com/sagemaker-tritonserver:25.09-py3"),
        (
            "il-central-1",
            "26.05",
            True,
            "780543022126.dkr.ecr.il-central-1.amazonaws.com/sagemaker-tritonserver:26.05-py3",
        ),
        ("me-south-1", "26.05", True, "217643126080.dkr.ecr.me-south-1.amazonaws.com/sagemaker-tritonserver:26.05-py3"),
        (
            "mx-central-1",
            "25.04",
            True,
            "637423239942.dkr.ecr.mx-central-1.amazonaws.com/sagemaker-tritonserver:25.04-py3",
        ),
        (
            "ap-southeast-6",
            "25.09",
            False,
            "633930458069.dkr.ecr.ap-southeast-6.amazonaws.com/sagemaker-tritonserver:25.09-py3-cpu",
        ),
        (
            "cn-north-1",
            "25.04",
            True,
            "727897471807.dkr.ecr.cn-north-1.amazonaws.com.cn/sagemaker-tritonserver:25.04-py3",
        ),
        (
            "cn-northwest-1",
            "23.12",
            False,
            "727897471807.dkr.ecr.cn-northwest-1.amazonaws.com.cn/sagemaker-tritonserver:23.12-py3-cpu",
        ),
    ],
)
def test_image_uri(region: str, version: str, gpu: bool, uri: str) -> None:
    assert triton_image_uri(region, version, gpu=gpu) == uri


@pytest.mark.parametrize(
    ("region", "version", "says"),
    [
        ("ap-east-2", "24.09", "versions there: 25.04, 25.09, 26.05"),
        ("eu-central-2", "23.12", "versions there: 25.04, 25.09, 26.05"),
        ("ap-southeast-6", "25.04", "versions there: 25.09, 26.05"),
        ("cn-north-1", "25.09", "versions there: 23.12, 24.01, 24.03, 24.05, 24.09, 25.04"),
        ("us-east-1", "24.11", "versions there: 23.12"),
    ],
)
def test_version_not_published_in_region(region: str, version: str, says: str) -> None:
    with pytest.raises(ConfigError, match="setting container_release") as info:
        triton_image_uri(region, version)
    assert says in str(info.value)
    assert "--triton-image" in str(info.value)


def test_unknown_region_lists_known_ones_and_says_how_to_pass_an_image() -> None:
    with pytest.raises(ConfigError, match=r"region='xx-west-9'") as info:
        triton_image_uri("xx-west-9")
    text = str(info.value)
    assert "us-east-1" in text
    assert "mx-central-1" in text
    assert "--triton-image" in text


def test_default_version_is_published_outside_china_only() -> None:
    assert VERSIONS[-1] == DEFAULT_TRITON_VERSION
    missing = sorted(r for r, reg in REGISTRIES.items() if DEFAULT_TRITON_VERSION not in reg.versions)
    assert missing == ["cn-north-1", "cn-northwest-1"]
