"""The image catalog: every mirrored release has its official build, and no reference is ever assumed."""

from __future__ import annotations

from importlib import resources
from typing import Any

import pytest

from colo.catalog.data import parse_yaml
from colo.catalog.images import (
    BUILD_KEYS,
    ExcludedImage,
    ImagesFileError,
    MovingImageTag,
    UnknownImage,
    find_image,
    load_catalog,
    official_build,
    parse_catalog,
    pip_build,
    split_reference,
)


def _mirrored_release_bounds() -> list[str]:
    text = resources.files("colo.vllm").joinpath("rules.yaml").read_text(encoding="utf-8")
    releases = parse_yaml(text)["releases"]
    return sorted({bound for entry in releases for bound in (entry["first"], entry["last"])})


def _catalog_data() -> dict[str, Any]:
    text = resources.files("colo.catalog").joinpath("images.yaml").read_text(encoding="utf-8")
    data: dict[str, Any] = parse_yaml(text)
    return data


@pytest.mark.parametrize("release", _mirrored_release_bounds())
def test_every_release_colo_mirrors_has_a_fully_stated_official_image(release: str) -> None:
    build = official_build(release)
    assert build is not None, f"no official image range holds {release}"
    assert build.missing_facts() == ()


@pytest.mark.parametrize("release", _mirrored_release_bounds())
def test_every_release_colo_mirrors_has_a_pip_install_entry(release: str) -> None:
    build = pip_build(release)
    assert build is not None
    assert build.build.torch is not None and build.build.nccl is not None


def test_the_0_19_0_image_ships_flashinfer_0_6_6_on_torch_2_10_with_its_bundled_nccl() -> None:
    build = find_image("vllm/vllm-openai:v0.19.0")
    assert build.vllm == "0.19.0"
    assert build.build.flashinfer == "0.6.6"
    assert build.build.torch == "2.10.0+cu129"
    assert (build.build.nccl, build.build.nccl_from) == ("2.27.5", "torch")
    assert build.build.cuda == "12.9.1"


def test_images_before_0_9_ship_a_flashinfer_older_than_the_logits_sampler() -> None:
    assert find_image("vllm/vllm-openai:v0.8.5.post1").build.flashinfer == "0.2.1.post2"
    assert find_image("vllm/vllm-openai:v0.9.0").build.flashinfer == "0.2.5"


def test_a_pip_install_before_0_11_1_has_no_flashinfer_while_the_image_does() -> None:
    pip = pip_build("0.10.2")
    image = official_build("0.10.2")
    assert pip is not None and image is not None
    assert pip.build.flashinfer is False
    assert image.build.flashinfer == "0.3.0"


def test_images_from_0_27_load_the_nccl_the_dockerfile_pins_not_torchs() -> None:
    build = find_image("vllm/vllm-openai:v0.27.1")
    assert (build.build.nccl, build.build.nccl_from) == ("2.30.7", "image")
    pip = pip_build("0.27.1")
    assert pip is not None and pip.build.nccl == "2.29.7"


def test_moe_kernel_packages_follow_the_build_files() -> None:
    early = find_image("vllm/vllm-openai:v0.9.1").build
    assert not any((early.deep_gemm, early.deep_ep, early.pplx_kernels, early.triton_kernels))
    assert early.deep_gemm is False and early.triton_kernels is False
    mid = find_image("vllm/vllm-openai:v0.16.0").build
    assert mid.pplx_kernels == "12cecfd" and mid.deep_ep == "73b6ea4" and mid.triton_kernels == "v3.5.0"
    late = find_image("vllm/vllm-openai:v0.17.0").build
    assert late.pplx_kernels is False


def test_docker_hub_prefixes_name_the_same_image() -> None:
    plain = find_image("vllm/vllm-openai:v0.20.0")
    prefixed = find_image("docker.io/vllm/vllm-openai:v0.20.0")
    assert plain.build == prefixed.build
    assert prefixed.reference == "docker.io/vllm/vllm-openai:v0.20.0"


@pytest.mark.parametrize("reference", ["vllm/vllm-openai:latest", "vllm/vllm-openai"])
def test_latest_is_a_moving_tag_refused_with_the_release_tag_it_names_today(reference: str) -> None:
    with pytest.raises(MovingImageTag) as caught:
        find_image(reference)
    assert caught.value.action == "resolve"
    assert caught.value.today == "vllm/vllm-openai:v0.34.0"
    assert "since 2026-11-16 it is vllm/vllm-openai:v0.34.0: pin that tag" in str(caught.value)


def test_latest_names_the_newest_release_the_catalog_has_an_official_image_of() -> None:
    """Adding a release moves `latest` with it: the catalog never says latest is an older release."""
    catalog = load_catalog()
    (latest,) = [tag for tag in catalog.moving_tags if tag.tag == "latest"]
    assert latest.names == catalog.official.ranges[-1].last


def test_the_0_34_0_image_pins_nccl_2_31_2_over_torch_2_14s_2_30_7() -> None:
    build = find_image("vllm/vllm-openai:v0.34.0").build
    assert (build.torch, build.nccl, build.nccl_from, build.flashinfer) == (
        "2.14.0+cu130",
        "2.31.2",
        "image",
        "0.7.3",
    )
    pip = pip_build("0.34.0")
    assert pip is not None and (pip.build.nccl, pip.build.flashinfer) == ("2.30.7", "0.7.3")


def test_a_moving_tag_that_names_a_release_needs_its_date_and_source() -> None:
    data = _catalog_data()
    (latest,) = [tag for tag in data["moving_tags"] if tag["tag"] == "latest"]
    del latest["since"]
    with pytest.raises(ImagesFileError, match="needs action resolve, `since` and `names_source`"):
        parse_catalog(data)


def test_nightly_is_refused_because_it_names_no_release() -> None:
    with pytest.raises(MovingImageTag) as caught:
        find_image("vllm/vllm-openai:nightly")
    assert caught.value.action == "refuse"
    assert "main branch" in str(caught.value)


@pytest.mark.parametrize(
    "reference", ["rocm/vllm:latest", "vllm/vllm-openai:latest-rocm", "vllm/vllm-openai:v0.19.0-rocm"]
)
def test_rocm_builds_are_refused_as_not_nvidia(reference: str) -> None:
    with pytest.raises(ExcludedImage, match="NVIDIA GPUs only"):
        find_image(reference)


@pytest.mark.parametrize(
    "reference",
    [
        "vllm/vllm-openai:v0.15.1",  # a release colo does not mirror
        "vllm/vllm-openai:v0.20.0rc1",  # a release candidate is built from another tree than v0.20.0
        "ghcr.io/example/vllm:custom",
        "vllm/vllm-openai@sha256:" + "0" * 64,
    ],
)
def test_an_unknown_image_is_refused_naming_every_build_key_to_state(reference: str) -> None:
    with pytest.raises(UnknownImage) as caught:
        find_image(reference)
    for key in BUILD_KEYS:
        assert f"vllm.build.{key}" in str(caught.value)


def test_a_distribution_image_reports_the_facts_its_source_leaves_unstated() -> None:
    ngc = find_image("nvcr.io/nvidia/vllm:26.03-py3")
    assert ngc.vllm == "0.17.1" and ngc.build.flashinfer == "0.6.7"
    assert "nccl" in ngc.missing_facts() and "deep_gemm" in ngc.missing_facts()
    rhaiis = find_image("registry.redhat.io/rhaiis/vllm-cuda-rhel9:3.0.0")
    assert rhaiis.vllm == "0.8.4"
    assert set(rhaiis.missing_facts()) == set(BUILD_KEYS)


def test_a_development_build_has_no_release_and_must_state_one() -> None:
    aws = find_image("763104351884.dkr.ecr.us-west-2.amazonaws.com/vllm:server-cuda-v1.3")
    assert aws.vllm is None
    assert aws.missing_facts()[0] == "version"


def test_split_reference_keeps_registry_ports_and_digests_apart_from_tags() -> None:
    assert split_reference("localhost:5000/vllm") == ("localhost:5000/vllm", "latest")
    assert split_reference("localhost:5000/vllm:v0.19.0") == ("localhost:5000/vllm", "v0.19.0")
    assert split_reference("vllm/vllm-openai@sha256:ab") == ("vllm/vllm-openai", None)


def test_the_loader_refuses_a_key_no_model_declares() -> None:
    data = _catalog_data()
    data["official"]["ranges"][0]["flash_infer"] = "0.2.1"
    with pytest.raises(ImagesFileError, match="flash_infer"):
        parse_catalog(data)


def test_the_loader_refuses_overlapping_release_ranges() -> None:
    data = _catalog_data()
    data["official"]["ranges"][1]["first"] = "0.8.5"
    with pytest.raises(ImagesFileError, match="overlap"):
        parse_catalog(data)


def test_the_loader_refuses_a_reversed_range() -> None:
    data = _catalog_data()
    data["official"]["ranges"][0]["last"] = "0.7.0"
    with pytest.raises(ImagesFileError, match="reversed"):
        parse_catalog(data)


def test_the_shipped_catalog_loads_once() -> None:
    assert load_catalog() is load_catalog()
