"""GPUs as users name them: one lookup, explicit aliases, ambiguity refused, every figure sourced."""

from __future__ import annotations

import copy
from importlib import resources
from typing import Any

import pytest

from colo.catalog import (
    GIB,
    MIB,
    GpuLookupError,
    gpu,
    gpu_aliases,
    gpu_by_memory,
    gpu_candidates,
    gpu_names,
    instance_type,
    instance_type_names,
    resolve_gpu,
)
from colo.catalog.data import parse_yaml
from colo.catalog.gpus import parse_catalog

RAW: dict[str, Any] = parse_yaml(resources.files("colo.catalog").joinpath("gpus.yaml").read_text())


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("NVIDIA GeForce RTX 4090", "RTX-4090"),
        ("NVIDIA H100 80GB HBM3", "H100-SXM"),
        ("NVIDIA L40S", "L40S"),
        ("Tesla T4", "T4"),
        ("NVIDIA A100-SXM4-80GB", "A100-80GB"),
        ("NVIDIA A100 80GB PCIe", "A100-80GB"),
        ("NVIDIA A100-PCIE-40GB", "A100-40GB"),
        ("NVIDIA A800-SXM4-80GB", "A800-80GB"),
        ("NVIDIA H100 PCIe", "H100-PCIe"),
        ("NVIDIA H100 NVL", "H100-NVL"),
        ("NVIDIA H200", "H200"),
        ("NVIDIA B200", "B200"),
        ("NVIDIA A10G", "A10G"),
        ("NVIDIA RTX A6000", "RTX-A6000"),
        ("NVIDIA RTX 6000 Ada Generation", "RTX-6000-Ada"),
        ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "RTX-PRO-6000"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX-PRO-6000"),
        ("NVIDIA GeForce RTX 5090", "RTX-5090"),
        ("NVIDIA RTX A5000", "RTX-A5000"),
        ("NVIDIA H20", "H20-96GB"),
        ("NVIDIA H20-3e", "H20-141GB"),
        ("NVIDIA GeForce RTX 4060 Ti", "RTX-4060-Ti-8GB"),
    ],
)
def test_the_names_nvidia_smi_prints_find_their_gpu(name: str, expected: str) -> None:
    assert gpu(name).name == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("RTX 4090", "RTX-4090"),
        ("4090", "RTX-4090"),
        ("H100-80GB", "H100-SXM"),
        ("h100 sxm", "H100-SXM"),
        ("H100 80 GB", "H100-SXM"),
        ("a10", "A10"),
        ("A10G", "A10G"),
        ("rtx-a6000", "RTX-A6000"),
        ("L4", "L4"),
        ("l40s", "L40S"),
        ("A100_80GB", "A100-80GB"),
        ("rtx-3090", "RTX-3090"),
    ],
)
def test_the_usual_short_forms_find_their_gpu_whatever_the_case_and_separators(
    name: str, expected: str
) -> None:
    assert gpu(name).name == expected


def test_every_alias_a_gpu_lists_finds_that_gpu() -> None:
    for name in gpu_names():
        for alias in gpu_aliases(name):
            assert gpu(alias).name == name
            assert gpu(alias.lower()).name == name


@pytest.mark.parametrize(
    ("name", "candidates"),
    [
        ("A100", {"A100-40GB", "A100-80GB"}),
        ("H100", {"H100-PCIe", "H100-SXM", "H100-NVL"}),
        ("RTX 6000", {"RTX-6000-Ada", "RTX-PRO-6000"}),
        ("H20", {"H20-96GB", "H20-141GB"}),
    ],
)
def test_a_name_that_fits_several_gpus_is_refused_listing_them(name: str, candidates: set[str]) -> None:
    with pytest.raises(GpuLookupError) as refused:
        gpu(name)
    assert set(refused.value.candidates) == candidates
    message = str(refused.value.args[0])
    assert all(candidate in message for candidate in candidates)
    assert "GiB" in message  # the memory that tells them apart


def test_a_partial_name_is_not_guessed_even_with_one_candidate() -> None:
    with pytest.raises(GpuLookupError, match="did you mean H100-NVL"):
        gpu("NVL")


def test_an_unknown_gpu_is_refused_with_the_known_ones_and_the_memory_way_out() -> None:
    with pytest.raises(GpuLookupError) as refused:
        gpu("Radeon RX 7900 XTX")
    message = str(refused.value.args[0])
    assert "L40S" in message and "memory" in message
    assert gpu_candidates("Radeon RX 7900 XTX") == ()


def test_an_alias_that_names_two_gpus_is_refused_when_the_catalog_loads() -> None:
    raw = copy.deepcopy(RAW)
    raw["gpus"]["L40"]["aliases"] = ["L40S"]
    with pytest.raises(ValueError, match="'L40S' of L40 also names L40S"):
        parse_catalog(raw)


def test_every_figure_of_every_gpu_names_its_source() -> None:
    for name in gpu_names():
        spec = gpu(name)
        for figure in ("cuda_total", "compute_capability", "sm_count", "context"):
            if figure == "context" and "context_mib" in RAW["gpus"][name]:
                figure = "context_mib"
            assert figure in spec.sources, f"{name}: no source for {figure}"
        if spec.nvidia_smi_total_mib is not None:
            assert "nvidia_smi_total_mib" in spec.sources
        if spec.ec2_memory_mib is not None:
            assert "ec2_memory_mib" in spec.sources
        assert all(text and "TODO" not in text for text in spec.sources.values()), name
        assert spec.sm_count > 0 and spec.compute_capability >= (7, 5)


def test_a_cuda_total_is_nvidia_smis_total_less_its_reserved_line() -> None:
    """NVML's reserve ("reserved for system use (driver or firmware)") is what CUDA never hands out: the two
    public checks in gpus.yaml's header, an H100 and an RTX A6000, land on the totals their prints show."""
    for name, entry in RAW["gpus"].items():
        if "reserved_mib" in entry and "cuda_total_mib" not in entry and "cuda_total_gib" not in entry:
            expected = int(entry["nvidia_smi_total_mib"]) - int(entry["reserved_mib"])
            assert gpu(name).cuda_total_bytes == expected * MIB, name
            assert (
                "Reserved" in gpu(name).sources["cuda_total"] or "reserve" in gpu(name).sources["cuda_total"]
            )
    assert round((81559 - 551) * MIB / GIB, 2) == 79.11 == round(gpu("H100-SXM").cuda_total_gib, 2)
    assert round((46068 - 450) * MIB / GIB, 2) == 44.55 == round(gpu("RTX-A6000").cuda_total_gib, 2)


def test_cards_sold_under_one_name_with_different_memory_are_told_apart_or_take_the_lower() -> None:
    assert (
        gpu("RTX 4060 Ti 16GB").cuda_total_bytes
        > gpu("RTX 4060 Ti").cuda_total_bytes
        == gpu("RTX 4060 Ti 8GB").cuda_total_bytes
    )
    assert gpu("NVIDIA GeForce RTX 4060 Ti").name == "RTX-4060-Ti-8GB"  # the name both print: the smaller
    assert gpu("GH200").cuda_total_bytes == (97871 - 1103) * MIB
    assert gpu("H100 NVL").cuda_total_bytes != gpu("H100 SXM").cuda_total_bytes
    # NVIDIA sells a 96 GB and a 141 GB "H20": nvidia-smi's own name finds each, the bare product name neither
    assert gpu("NVIDIA H20").name == "H20-96GB" and gpu("nvidia  h20").name == "H20-96GB"
    assert gpu("NVIDIA H20-3e").cuda_total_bytes > gpu("NVIDIA H20").cuda_total_bytes


def test_a_device_name_matches_in_full_only_so_its_words_alone_stay_ambiguous() -> None:
    """The name "NVIDIA H20" is one card's nvidia-smi name; "H20", or the name with a word changed, is not."""
    for name in ("H20", "Nvidia H20 card"):
        with pytest.raises(GpuLookupError):
            gpu(name)
    assert gpu_candidates("NVIDIA H20") == ("H20-96GB",)


def test_the_rtx_pro_6000s_total_is_cudas_reading_and_ecc_takes_no_gddr7_capacity() -> None:
    """cudaMemGetInfo's total on an RTX PRO 6000 Blackwell Server Edition (101,973,950,464 bytes) is nvidia-smi's
    97887 MiB less the 638 MiB it reserves; ECC-on cards show the same 97887 MiB (gpus.yaml sources)."""
    spec = gpu("NVIDIA RTX PRO 6000 Blackwell Server Edition")
    assert spec.cuda_total_bytes == 101_973_950_464 // MIB * MIB == (97887 - 638) * MIB
    assert spec.nvidia_smi_total_mib == 97887


def test_a_cuda_total_derived_from_nvidia_smi_subtracts_the_largest_measured_gap_and_says_so() -> None:
    measured = {
        name: gpu(name)
        for name, entry in RAW["gpus"].items()
        if "cuda_total_mib" in entry or "cuda_total_gib" in entry or "reserved_mib" in entry
    }
    largest_gap = max(
        g.nvidia_smi_total_mib * MIB - g.cuda_total_bytes for g in measured.values() if g.nvidia_smi_total_mib
    )
    derived = [name for name in gpu_names() if name not in measured]
    for name in derived:
        spec = gpu(name)
        assert spec.nvidia_smi_total_mib is not None
        assert spec.cuda_total_bytes == spec.nvidia_smi_total_mib * MIB - largest_gap
        assert "derived" in spec.sources["cuda_total"]


def test_cuda_reports_less_than_nvidia_smi_wherever_both_are_known() -> None:
    for name in gpu_names():
        spec = gpu(name)
        if spec.nvidia_smi_total_mib is not None:
            assert spec.cuda_total_bytes < spec.nvidia_smi_total_mib * MIB, name


def test_a_gpu_without_a_measured_context_takes_the_largest_measured_in_its_segment() -> None:
    for segment in ("datacenter", "workstation"):
        entries = {name: e for name, e in RAW["gpus"].items() if e["segment"] == segment}
        largest = max(int(e["context_mib"]) for e in entries.values() if "context_mib" in e)
        for name, entry in entries.items():
            expected = int(entry.get("context_mib", largest))
            assert gpu(name).context_bytes == expected * MIB, name


def test_every_instance_type_names_a_catalog_gpu_and_ec2s_names_resolve_to_it() -> None:
    for name in instance_type_names():
        itype = instance_type(name)
        assert itype is not None and itype.gpu in gpu_names()
    # EC2's GpuInfo names the chip: the lookup finds the catalog entries it may stand for.
    assert gpu_candidates("T4") == ("T4",) and gpu_candidates("T4g") == ("T4",)
    assert gpu_candidates("L4") == ("L4",) and gpu_candidates("L40S") == ("L40S",)
    assert set(gpu_candidates("A100")) == {"A100-40GB", "A100-80GB"}
    assert "H100-SXM" in gpu_candidates("H100") and gpu_candidates("B200") == ("B200",)
    assert gpu_candidates("A10G") == ("A10G",) and gpu_candidates("RTX PRO Server 6000") == ("RTX-PRO-6000",)


def test_a_gpu_given_by_memory_takes_the_largest_context_and_sm_count_and_says_so() -> None:
    spec = gpu_by_memory(30000, (8, 9))
    largest_context = max(int(e["context_mib"]) for e in RAW["gpus"].values() if "context_mib" in e)
    assert spec.cuda_total_bytes == 30000 * MIB
    assert spec.context_bytes == largest_context * MIB
    assert spec.sm_count == max(gpu(n).sm_count for n in gpu_names())
    assert not spec.from_catalog
    (assumption,) = spec.assumptions
    assert "not in colo's catalog" in assumption and f"{largest_context} MiB" in assumption
    assert spec.compute_capability == (8, 9) and "compute capability 8.9 as given" in assumption


def test_a_catalog_gpu_with_a_given_total_keeps_its_other_figures_and_notes_the_total() -> None:
    catalog = gpu("L4")
    spec = resolve_gpu("NVIDIA L4", 22579)
    assert spec.cuda_total_bytes == 22579 * MIB
    assert (spec.name, spec.context_bytes, spec.sm_count) == (
        catalog.name,
        catalog.context_bytes,
        catalog.sm_count,
    )
    assert spec.from_catalog and "22579 MiB as given" in spec.assumptions[0]
    assert resolve_gpu("L4", round(catalog.cuda_total_mib)) == catalog


def test_an_unknown_name_with_memory_labels_a_gpu_given_by_memory() -> None:
    spec = resolve_gpu("Tesla V100-SXM2-32GB", 32501, "7.0")
    assert spec.name == "Tesla V100-SXM2-32GB" and not spec.from_catalog
    assert spec.compute_capability == (7, 0)
    with pytest.raises(GpuLookupError):
        resolve_gpu(None, None)


def test_a_gpu_the_catalog_lacks_is_never_assumed_to_be_hopper() -> None:
    for name in ("Tesla V100-SXM2-32GB", None):
        with pytest.raises(GpuLookupError) as refused:
            resolve_gpu(name, 32501)
        assert "compute capability" in str(refused.value.args[0])
    with pytest.raises(GpuLookupError):
        resolve_gpu(None, 32501, "nine")


def test_a_catalog_gpu_keeps_its_capability_and_refuses_another() -> None:
    assert resolve_gpu("L4", None, "8.9") == gpu("L4")
    with pytest.raises(GpuLookupError) as refused:
        resolve_gpu("L4", None, "9.0")
    assert "8.9" in str(refused.value.args[0])


def test_a_size_written_with_g_alone_names_the_same_gpu() -> None:
    assert gpu("A100 40G") == gpu("A100-40GB") and gpu("A100 80G") == gpu("A100-80GB")
