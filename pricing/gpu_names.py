"""Map catalog and vendor GPU strings to the canonical names of ``data/gpus.csv``.

Names are compared as upper-case tokens with vendor words dropped, so ``"Tesla T4"``,
``"NVIDIA T4"`` and ``"t4"`` are one GPU. Families with several variants (A100 40/80 GB,
SXM/PCIe, H100 SXM/PCIe/NVL, V100 16/32 GB) are resolved from, in order: words in the
name, the per-GPU memory, hints in the instance-type name, then the family default.
A GPU with no row in ``gpus.csv`` gets a cleaned, stable name (``"RTX 5090"`` ->
``"RTX-5090"``); only non-GPU rows map to ``None``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: The ``name`` column of ``data/gpus.csv`` (a test keeps the two in step).
CANONICAL_GPUS: tuple[str, ...] = (
    "T4", "L4", "A10G", "A10",
    "A100-40GB-PCIe", "A100-40GB-SXM", "A100-80GB-PCIe", "A100-80GB-SXM",
    "H100-PCIe", "H100-SXM", "H100-NVL", "H200-SXM", "L40S",
    "V100-SXM2-16GB", "V100-SXM2-32GB", "V100-PCIe-16GB", "V100-PCIe-32GB",
    "RTX-3090", "RTX-4090", "RTX-A6000", "MI300X",
)  # fmt: skip

# Vendor and product-line words that do not identify the GPU.
_NOISE_WORDS = frozenset({"NVIDIA", "TESLA", "GEFORCE", "QUADRO", "AMD", "INSTINCT"})

# Accelerators that are not GPUs (and empty cells): not offers for gacost.
_NOT_GPU = re.compile(r"^(INFERENTIA|TRAINIUM|TPU|GAUDI|HL\d|HABANA|NAN|NONE|NULL)")

# Single-variant GPUs: compact key (upper case, no separators) -> canonical name.
_ALIASES: dict[str, str] = {
    "T4": "T4",
    "T4G": "T4",  # AWS g5g: the same T4 on an Arm host
    "L4": "L4",
    "A10G": "A10G",
    "A10": "A10",
    "L40S": "L40S",
    "RTX3090": "RTX-3090",
    "RTX4090": "RTX-4090",
    "A6000": "RTX-A6000",  # Lambda gpu_1x_a6000
    "RTXA6000": "RTX-A6000",
    "MI300X": "MI300X",
}


@dataclass(frozen=True)
class _Family:
    """A GPU sold in several variants; templates take ``{mem}`` (GB)."""

    forms: dict[str, str]
    default_form: str
    memories: tuple[int, ...] = ()  # the first one is the default
    big_memory_form: tuple[float, str] | None = None  # (GiB threshold, form)


_FAMILIES: dict[str, _Family] = {
    "A100": _Family({"SXM": "A100-{mem}GB-SXM", "PCIE": "A100-{mem}GB-PCIe"}, "SXM", (40, 80)),
    "H100": _Family(
        {"SXM": "H100-SXM", "PCIE": "H100-PCIe", "NVL": "H100-NVL"},
        "SXM",
        big_memory_form=(90.0, "NVL"),  # only the NVL has 94 GB
    ),
    "H200": _Family({"SXM": "H200-SXM", "NVL": "H200-NVL"}, "SXM"),
    "V100": _Family({"SXM": "V100-SXM2-{mem}GB", "PCIE": "V100-PCIe-{mem}GB"}, "SXM", (16, 32)),
}
_FAMILY_RE = re.compile(r"^(A100|H100|H200|V100)(.*)$")

# Words, in a GPU or instance-type name, that give the form factor.
_FORM_WORDS: tuple[tuple[str, str], ...] = (
    ("SXM", "SXM"),
    ("HBM3", "SXM"),  # "H100 80GB HBM3" is RunPod's id for the SXM part
    ("MEGA", "SXM"),  # GCP a3-megagpu: H100 SXM with more networking
    ("PCIE", "PCIE"),
    ("NVL", "NVL"),
)

# Instance types whose GPU name does not spell out the form factor.
_INSTANCE_FORMS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^STANDARD_NC\d+ADS_A100_V4$"), "PCIE"),  # Azure NC A100 v4: 80 GB PCIe
    (re.compile(r"^STANDARD_NCC?\d+ADI?S_H100_V5$"), "NVL"),  # Azure NC H100 v5: NVL 94 GB
    (re.compile(r"^STANDARD_NC\d+R?S_V3$"), "PCIE"),  # Azure NCv3: V100 16 GB PCIe
    (re.compile(r"^GPU_[124]X_A100$"), "PCIE"),  # Lambda gpu_{1,2,4}x_a100: 40 GB PCIe
    (re.compile(r"_(SECURE|COMMUNITY)$"), "PCIE"),  # RunPod: bare A100-80GB/H100 are PCIe
)

# Instance types that give the memory size when neither name nor memory does.
_INSTANCE_MEMORY: tuple[tuple[re.Pattern[str], int], ...] = (
    (re.compile(r"80GB|P4DE|ULTRAGPU|A100_V4"), 80),  # p4de, a2-ultragpu, Azure *_A100_v4
    (re.compile(r"32GB|P3DN|ND40RS"), 32),  # V100 32 GB: p3dn, Azure ND40rs_v2
)


def canonical_gpu(
    raw: str, *, memory_gib: float | None = None, instance_type: str = ""
) -> str | None:
    """Return the canonical name for ``raw``, a cleaned name if unknown, None if not a GPU."""
    tokens = _tokens(raw)
    if not tokens or _NOT_GPU.match("".join(tokens)):
        return None
    compact = "".join(tokens)
    if compact in _ALIASES:
        return _ALIASES[compact]
    match = _FAMILY_RE.match(tokens[0])
    if match:
        rest = [match.group(2), *tokens[1:]] if match.group(2) else tokens[1:]
        return _resolve_family(match.group(1), rest, memory_gib, instance_type.upper())
    return _clean_name(tokens)


def _tokens(raw: str) -> list[str]:
    """Upper-case word tokens of ``raw`` without vendor words ("40 GB" becomes "40GB")."""
    text = re.sub(r"(\d)\s*GB\b", r"\1GB", raw.upper())
    return [t for t in re.split(r"[^A-Z0-9]+", text) if t and t not in _NOISE_WORDS]


def _resolve_family(key: str, rest: list[str], memory_gib: float | None, instance: str) -> str:
    family = _FAMILIES[key]
    name_mem = _memory_in_name(rest)
    form = _form(rest, instance, family, max(name_mem or 0.0, memory_gib or 0.0))
    template = family.forms.get(form, family.forms[family.default_form])
    if not family.memories:
        return template
    mem = _memory_class(family.memories, name_mem, memory_gib, instance)
    return template.format(mem=mem)


def _memory_in_name(rest: list[str]) -> int | None:
    for token in rest:
        found = re.fullmatch(r"(\d{2,3})(GB|G)?", token)
        if found:
            return int(found.group(1))
    return None


def _form(rest: list[str], instance: str, family: _Family, memory: float) -> str:
    joined = "".join(rest)
    for word, form in _FORM_WORDS:
        if word in joined:
            return form
    for word, form in _FORM_WORDS:
        if word in instance:
            return form
    for pattern, form in _INSTANCE_FORMS:
        if form in family.forms and pattern.search(instance):
            return form
    if family.big_memory_form and memory >= family.big_memory_form[0]:
        return family.big_memory_form[1]
    return family.default_form


def _memory_class(
    sizes: tuple[int, ...], name_mem: int | None, memory_gib: float | None, instance: str
) -> int:
    if name_mem is not None and name_mem in sizes:
        return name_mem
    if memory_gib is not None and memory_gib > 0:
        return min(sizes, key=lambda size: abs(size - memory_gib))
    for pattern, size in _INSTANCE_MEMORY:
        if size in sizes and pattern.search(instance):
            return size
    return sizes[0]


def _clean_name(tokens: list[str]) -> str:
    """A stable name for a GPU gacost has no datasheet row for."""
    compact = "".join(tokens)
    if compact.startswith("RTX") and len(compact) > 3:
        return "-".join(["RTX", *re.findall(r"[A-Z]+|\d+", compact[3:])])
    return "-".join(tokens)
