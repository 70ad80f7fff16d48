"""GPU-name normalisation: vendor spellings, A100 40/80 GB, form factors, unknown GPUs."""

from __future__ import annotations

import pytest

from gacost.base.gpu_names import canonical_gpu
from gacost.base.gpu_table import gpu_specs


@pytest.mark.parametrize("name", list(gpu_specs()))
def test_canonical_names_map_to_themselves(name: str) -> None:
    assert canonical_gpu(name) == name


@pytest.mark.parametrize("raw", ["Tesla T4", "NVIDIA T4", "T4", "t4", " nvidia tesla t4 ", "T4g"])
def test_t4_aliases(raw: str) -> None:
    assert canonical_gpu(raw) == "T4"


@pytest.mark.parametrize(
    ("raw", "kwargs", "expected"),
    [
        # AWS: p4d is A100 40 GB SXM, p4de A100 80 GB SXM
        ("A100", {"instance_type": "p4d.24xlarge", "memory_gib": 40.0}, "A100-40GB-SXM"),
        ("A100-80GB", {"instance_type": "p4de.24xlarge"}, "A100-80GB-SXM"),
        ("A100", {"instance_type": "p4de.24xlarge"}, "A100-80GB-SXM"),
        # GCP: a2-highgpu (40 GB) and a2-ultragpu (80 GB), both SXM
        ("A100", {"instance_type": "a2-highgpu-1g"}, "A100-40GB-SXM"),
        ("A100-80GB", {"instance_type": "a2-ultragpu-1g"}, "A100-80GB-SXM"),
        # RunPod: the bare name is the PCIe card
        ("A100-80GB", {"instance_type": "1x_A100-80GB_SECURE"}, "A100-80GB-PCIe"),
        ("A100-80GB-SXM", {"instance_type": "1x_A100-80GB-SXM_SECURE"}, "A100-80GB-SXM"),
        # Vast: memory and the instance name decide
        ("A100", {"memory_gib": 40.0, "instance_type": "1x-A100_SXM4-32-65536"}, "A100-40GB-SXM"),
        ("A100", {"memory_gib": 80.0, "instance_type": "1x-A100_PCIE-32-65536"}, "A100-80GB-PCIe"),
        # Azure: NC A100 v4 is PCIe 80 GB, ND96amsr SXM 80 GB, ND96asr SXM 40 GB
        ("A100-80GB", {"instance_type": "Standard_NC24ads_A100_v4"}, "A100-80GB-PCIe"),
        ("A100-80GB", {"instance_type": "Standard_ND96amsr_A100_v4"}, "A100-80GB-SXM"),
        ("A100", {"instance_type": "Standard_ND96asr_v4"}, "A100-40GB-SXM"),
        # Lambda
        ("A100", {"instance_type": "gpu_1x_a100"}, "A100-40GB-PCIe"),
        ("A100", {"instance_type": "gpu_1x_a100_sxm4"}, "A100-40GB-SXM"),
        ("A100-80GB", {"instance_type": "gpu_8x_a100_80gb_sxm4"}, "A100-80GB-SXM"),
        # vendor strings
        ("NVIDIA A100-SXM4-80GB", {}, "A100-80GB-SXM"),
        ("NVIDIA A100 80GB PCIe", {}, "A100-80GB-PCIe"),
        ("A100 (40 GB PCIe)", {}, "A100-40GB-PCIe"),
        ("A100", {"memory_gib": 79.3}, "A100-80GB-SXM"),
        ("A100-40GB", {"memory_gib": 80.0}, "A100-40GB-SXM"),  # the name wins
    ],
)
def test_a100_variants_stay_apart(raw: str, kwargs: dict[str, object], expected: str) -> None:
    assert canonical_gpu(raw, **kwargs) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("raw", "kwargs", "expected"),
    [
        ("H100", {"instance_type": "p5.48xlarge"}, "H100-SXM"),
        ("H100", {"instance_type": "a3-highgpu-1g"}, "H100-SXM"),
        ("H100-MEGA", {"instance_type": "a3-megagpu-8g"}, "H100-SXM"),
        ("H100", {"instance_type": "gpu_1x_h100_pcie"}, "H100-PCIe"),
        ("H100", {"instance_type": "gpu_1x_h100_sxm5"}, "H100-SXM"),
        ("H100", {"instance_type": "Standard_NC40ads_H100_v5"}, "H100-NVL"),
        ("H100", {"instance_type": "Standard_NCC40ads_H100_v5"}, "H100-NVL"),
        ("H100", {"instance_type": "Standard_ND96isr_H100_v5"}, "H100-SXM"),
        ("H100", {"instance_type": "1x-H100_NVL-32-65536", "memory_gib": 93.6}, "H100-NVL"),
        ("H100", {"instance_type": "1x-H100_SXM-32-65536", "memory_gib": 79.6}, "H100-SXM"),
        ("H100", {"memory_gib": 94.0}, "H100-NVL"),
        ("H100 NVL", {}, "H100-NVL"),
        ("NVIDIA H100 80GB HBM3", {}, "H100-SXM"),
        ("H200", {"instance_type": "p5en.48xlarge"}, "H200-SXM"),
        ("H200-SXM", {}, "H200-SXM"),
        ("H200 SXM", {}, "H200-SXM"),
        ("V100", {"instance_type": "p3.2xlarge", "memory_gib": 16.0}, "V100-SXM2-16GB"),
        ("V100-32GB", {"instance_type": "p3dn.24xlarge"}, "V100-SXM2-32GB"),
        ("V100", {"instance_type": "Standard_NC6s_v3"}, "V100-PCIe-16GB"),
        ("Tesla V100-SXM2-32GB", {}, "V100-SXM2-32GB"),
    ],
)
def test_h100_h200_v100_variants(raw: str, kwargs: dict[str, object], expected: str) -> None:
    assert canonical_gpu(raw, **kwargs) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("A10G", "A10G"),
        ("NVIDIA A10G", "A10G"),
        ("A10", "A10"),
        ("L4", "L4"),
        ("L40S", "L40S"),
        ("L40S_PCIE", "L40S"),  # spheron's spellings: packaging words dropped
        ("L40S_PCIE_BAREMETAL", "L40S"),
        ("L4_PCIE", "L4"),
        ("A6000_PCIE_LOW_RAM", "RTX-A6000"),
        ("RTX4090", "RTX-4090"),
        ("NVIDIA GeForce RTX 4090", "RTX-4090"),
        ("RTX3090", "RTX-3090"),
        ("A6000", "RTX-A6000"),
        ("RTXA6000", "RTX-A6000"),
        ("NVIDIA RTX A6000", "RTX-A6000"),
        ("AMD Instinct MI300X", "MI300X"),
    ],
)
def test_single_variant_gpus(raw: str, expected: str) -> None:
    assert canonical_gpu(raw) == expected


@pytest.mark.parametrize(
    ("spellings", "expected"),
    [
        (["RTX6000", "Quadro RTX 6000"], "RTX-6000"),
        (["RTXPRO6000S", "RTX PRO 6000 S"], "RTX-PRO-6000-S"),
        (["RTXA4000", "RTX-A4000", "A4000", "A4000_PCIE"], "RTX-A4000"),
        (["A16", "A16_PCIE"], "A16"),
    ],
)
def test_unknown_gpus_get_a_stable_clean_name(spellings: list[str], expected: str) -> None:
    assert {canonical_gpu(s) for s in spellings} == {expected}
    assert expected not in gpu_specs()


@pytest.mark.parametrize(
    ("spellings", "expected"),
    [
        (["RTX5090", "RTX 5090", "NVIDIA GeForce RTX 5090", "rtx_5090"], "RTX-5090"),
        # SkyPilot's spellings across clouds (tests/fixtures/pricing/full)
        (["RTXPRO6000", "RTX-PRO-6000", "RTXPro6000", "RTXPRO6000-WK", "RTXPRO6000WS",
          "RTXPRO6000_PCIE_BAREMETAL", "RTX PRO 6000 96GB"], "RTX-PRO-6000"),
        (["RTX5090_PCIE", "RTX5090_PCIE_BAREMETAL"], "RTX-5090"),
    ],
)
def test_gpus_given_a_row_keep_the_name_the_catalogs_had(
    spellings: list[str], expected: str
) -> None:
    # the rows added for issue 20 item 5 took the cleaned names, so no price row changed
    assert {canonical_gpu(s) for s in spellings} == {expected}
    assert expected in gpu_specs()


@pytest.mark.parametrize(
    "raw",
    ["", "   ", "nan", "Inferentia", "Trainium2", "tpu-v4", "Qualcomm AI100",
     "Virtex UltraScale (VU9P)", "Gaudi HL-205", "GAUDI2"],
)  # fmt: skip
def test_non_gpus_map_to_none(raw: str) -> None:
    assert canonical_gpu(raw) is None
