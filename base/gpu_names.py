"""GPU names to the canonical names of the GPU table: what users type and what catalogs write.

:func:`resolve_gpus` is the one resolver of the names a user types (a job's ``gpus:``,
``prices --gpu``/``--compare``, ``compare --gpu``, ``calibrate --sky``): a name, alias or
family of the GPU table (``a100`` is every A100, ``A100-80GB`` those of 80 GB), else a GPU
the price data holds (``B300``), so every command accepts the same names and gives the
same hint for a typo. :func:`canonical_gpu` maps catalog and vendor strings, where
memory and instance type help tell variants apart.

Catalog strings are compared as upper-case tokens with vendor words dropped, so
``"Tesla T4"``, ``"NVIDIA T4"`` and ``"t4"`` are one GPU. Names, aliases, families, form factors and
memory sizes all come from :mod:`gacost.base.gpu_table`; this module holds only the
parsing rules. Families with several variants (A100 40/80 GB, SXM/PCIe, H100
SXM/PCIe/NVL, V100 16/32 GB) are resolved from, in order: words in the name, hints in the
instance-type name, the per-GPU memory, then the family's default (SXM, smallest memory).
A GPU with no row in the table gets a cleaned, stable name (``"RTX 5090"`` ->
``"RTX-5090"``); only non-GPU rows map to ``None``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import cache

from gacost.base.errors import UnknownNameError, did_you_mean
from gacost.base.gpu_table import families, gpu_specs, squash
from gacost.base.records import GpuSpec


def resolve_gpus(names: Iterable[str], priced: Iterable[str] = ()) -> tuple[str, ...]:
    """Canonical names for user-typed GPU names, each the GPU table's (a name, an alias or a
    family: ``"t4"``, ``"a100"``, ``"A100-80GB"``), else one of ``priced`` (the GPUs of the
    price data, spelt as the catalogs write them or as :func:`canonical_gpu` cleans them:
    ``"B300"``, ``"rtxpro6000"``). In order, without repeats; an unknown name raises
    :class:`UnknownNameError` with the nearest known name."""
    in_data = sorted(set(priced))
    out: list[str] = []
    for name in names:
        found = _table_names().get(squash(name)) or _priced_name(name, in_data)
        if found is None:
            hint = did_you_mean(name, [*gpu_specs(), *families(), *in_data])
            raise UnknownNameError(
                f"unknown GPU '{name}'{hint}; `gacost gpus` lists the GPUs with specs, "
                "`gacost prices` every GPU with a price"
            )
        out.extend(g for g in found if g not in out)
    return tuple(out)


def without_spec(names: Iterable[str]) -> list[str]:
    """The names of ``names`` that have no row in the GPU table (a GPU only priced)."""
    return [n for n in names if n not in gpu_specs()]


def no_spec_text(names: Sequence[str]) -> str:
    """Why GPUs of the price data without a row in the GPU table cannot be planned for."""
    return (
        f"no spec for {', '.join(names)} (a GPU of the price data only), so gacost cannot "
        "estimate a fine-tune on it; `gacost gpus` lists the GPUs it plans for "
        "(data/GPUS.md, the GPU table)"
    )


@cache
def _table_names() -> dict[str, tuple[str, ...]]:
    """Compact key of every canonical name, alias and family -> the GPUs it means."""
    by_key: dict[str, tuple[str, ...]] = {squash(n): (n,) for n in gpu_specs()}
    for key, members in families().items():
        by_key.setdefault(squash(key), members)
    return by_key


def _priced_name(name: str, in_data: Sequence[str]) -> tuple[str, ...] | None:
    """The GPU of the price data ``name`` spells, as written or as catalogs are cleaned."""
    by_key = {squash(g): g for g in in_data}
    cleaned = canonical_gpu(name)
    if cleaned in gpu_specs():  # a table GPU guessed from a prefix ("A1000"): not a match
        cleaned = None
    for key in (squash(name), squash(cleaned or "")):
        if key in by_key:
            return (by_key[key],)
    return None


# Vendor and product-line words that do not identify the GPU.
_NOISE_WORDS = frozenset({"NVIDIA", "TESLA", "GEFORCE", "QUADRO", "AMD", "INSTINCT"})

# Accelerators that are not GPUs (and empty cells): not offers for gacost.
_NOT_GPU = re.compile(
    r"^(INFERENTIA|TRAINIUM|TPU|GAUDI|HL\d|HABANA|QUALCOMM|VIRTEX|XILINX|NAN|NONE|NULL)"
)

# Packaging words that do not change the chip of a GPU outside a family ("L4_PCIE",
# "RTX5090_PCIE_BAREMETAL", "A6000_PCIE_LOW_RAM", "RTXPRO6000-WK", "RTX PRO 6000 96GB").
# For GPUs outside a family there is one variant, so "B200 SXM6" (Lambda) is the B200 and
# "GH200 Superchip" the GH200.
_PACKAGING_WORDS = frozenset(
    {"PCIE", "BAREMETAL", "HIGH", "PERF", "LOW", "RAM", "WS", "WK", "SUPERCHIP"}
)
_MEMORY_WORD = re.compile(r"^(\d{2,3}G(B)?|SXM\d*)$")

_DEFAULT_FORM = "SXM"


@cache
def _single_names() -> dict[str, str]:
    """Compact key of every name and alias of a GPU outside a family -> canonical name."""
    out: dict[str, str] = {}
    for spec in gpu_specs().values():
        if not spec.family:
            for key in (spec.name, *spec.aliases):
                out[squash(key)] = spec.name
    return out


@cache
def _family_members() -> dict[str, tuple[GpuSpec, ...]]:
    out: dict[str, list[GpuSpec]] = {}
    for spec in gpu_specs().values():
        if spec.family:
            out.setdefault(spec.family.upper(), []).append(spec)
    return {k: tuple(v) for k, v in out.items()}


def _family_re() -> re.Pattern[str]:
    keys = sorted(_family_members(), key=len, reverse=True)
    return re.compile(r"^(" + "|".join(map(re.escape, keys)) + r")(.*)$")


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
    single = _single_names().get(compact)
    if single is not None:
        return single
    match = _family_re().match(tokens[0])
    if match:
        rest = [match.group(2), *tokens[1:]] if match.group(2) else tokens[1:]
        return _resolve_family(match.group(1), rest, memory_gib, instance_type.upper())
    chip = [t for t in tokens if t not in _PACKAGING_WORDS and not _MEMORY_WORD.match(t)]
    chip = chip or tokens
    return _single_names().get("".join(chip)) or _clean_name(chip)


def _tokens(raw: str) -> list[str]:
    """Upper-case word tokens of ``raw`` without vendor words ("40 GB" becomes "40GB")."""
    text = re.sub(r"(\d)\s*GB\b", r"\1GB", raw.upper())
    return [t for t in re.split(r"[^A-Z0-9]+", text) if t and t not in _NOISE_WORDS]


def _resolve_family(key: str, rest: list[str], memory_gib: float | None, instance: str) -> str:
    members = _family_members()[key]
    name_mem = _memory_in_name(rest)
    known = max(name_mem or 0.0, memory_gib or 0.0)
    form = _form(rest, instance, {m.form.upper() for m in members}) or _form_by_memory(
        members, known
    )
    variants = [m for m in members if m.form.upper() == form]
    if not variants:  # a form the table has no row for (e.g. H200 NVL): a stable name
        return f"{members[0].family}-{form if form != 'PCIE' else 'PCIe'}"
    sizes = sorted({int(m.memory_gib) for m in variants})
    size = _memory_class(tuple(sizes), name_mem, memory_gib, instance)
    return min(variants, key=lambda m: abs(m.memory_gib - size)).name


def _memory_in_name(rest: list[str]) -> int | None:
    for token in rest:
        found = re.fullmatch(r"(\d{2,3})(GB|G)?", token)
        if found:
            return int(found.group(1))
    return None


def _form(rest: list[str], instance: str, forms: set[str]) -> str | None:
    """The form factor named by the GPU or instance-type name, if any."""
    joined = "".join(rest)
    for word, form in _FORM_WORDS:
        if word in joined:
            return form
    for word, form in _FORM_WORDS:
        if word in instance:
            return form
    for pattern, form in _INSTANCE_FORMS:
        if form in forms and pattern.search(instance):
            return form
    return None


def _form_by_memory(members: tuple[GpuSpec, ...], memory: float) -> str:
    """With no form in the names: the variant nearest in memory, SXM on a tie."""
    if memory <= 0:
        return _DEFAULT_FORM
    nearest = min(abs(m.memory_gib - memory) for m in members)
    forms = [m.form.upper() for m in members if abs(m.memory_gib - memory) == nearest]
    return _DEFAULT_FORM if _DEFAULT_FORM in forms else forms[0]


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
    if re.fullmatch(r"A[245]\d{3}", compact):  # RunPod/Shadeform's bare "A4000": RTX A4000
        compact = "RTX" + compact
    if compact.startswith("RTX") and len(compact) > 3:
        parts = [p for p in re.findall(r"[A-Z]+|\d+", compact[3:]) if p not in _PACKAGING_WORDS]
        merged: list[str] = []
        for part in parts:  # "A", "4000" -> "A4000" (the RTX A-series), "PRO", "6000" stay
            if merged and len(merged[-1]) == 1 and merged[-1].isalpha() and part.isdigit():
                merged[-1] += part
            else:
                merged.append(part)
        return "-".join(["RTX", *merged])
    return "-".join(tokens)
