"""The one GPU table (``data/gpus.csv``): specs, aliases and families.

Every layer reads GPU identity and facts from here: the name resolvers of
:mod:`gacost.base.gpu_names` (what users type, what catalogs write), the performance model
(rates, bandwidth, matmul fraction, interconnect) and the CLI (``gacost gpus``). Columns:

- ``name``: the canonical name; ``aliases``: space-separated other spellings (compared
  upper-case without separators); ``family`` and ``form``: the product family (A100, H100,
  ...) and its form factor (SXM, PCIe, NVL), used to tell variants apart; ``architecture``:
  the chip generation (Turing, Ampere, Ada, Hopper, Blackwell, Volta, CDNA3), whose GPUs the
  model lets share a measured GEMM efficiency;
- ``memory_gib``, ``bandwidth_gbs``, dense ``fp16/bf16/fp32_tflops``, ``bf16_supported``,
  ``tdp_w``; ``interconnect`` (``nvlink`` or ``pcie``) between the GPUs of one instance;
  ``matmul_fraction``: the sustained share of the dense tensor rate a large matmul reaches,
  empty where no public figure exists; ``sustained_tflops``, ``stream_bandwidth_gbs``,
  ``l2_mb``, ``base_clock_mhz``, ``boost_clock_mhz``, ``sm_count`` (data/GPUS.md says what
  each means, where it came from and what is missing); ``source``: where every number came
  from. ``tdp_w`` and ``base_clock_mhz`` are reference data: no model reads them, so
  :class:`~gacost.base.records.GpuSpec` does not carry them.
"""

from __future__ import annotations

import csv
import io
from functools import cache

from gacost.base.embedded import data_root
from gacost.base.errors import DataError
from gacost.base.records import GpuSpec


def _opt_float(value: str) -> float | None:
    value = value.strip()
    return float(value) if value else None


@cache
def gpu_specs() -> dict[str, GpuSpec]:
    """GPU specs keyed by canonical name, in table order."""
    text = (data_root() / "gpus.csv").read_text(encoding="utf-8")
    specs: dict[str, GpuSpec] = {}
    for i, row in enumerate(csv.DictReader(io.StringIO(text)), start=2):
        try:
            specs[row["name"]] = GpuSpec(
                name=row["name"],
                memory_gib=float(row["memory_gib"]),
                bandwidth_gbs=float(row["bandwidth_gbs"]),
                fp16_tflops=_opt_float(row["fp16_tflops"]),
                bf16_tflops=_opt_float(row["bf16_tflops"]),
                fp32_tflops=_opt_float(row["fp32_tflops"]),
                bf16_supported=row["bf16_supported"].strip().lower() == "true",
                source=row["source"],
                aliases=tuple(row["aliases"].split()),
                family=row["family"].strip(),
                form=row["form"].strip(),
                architecture=row["architecture"].strip(),
                interconnect=row["interconnect"].strip() or "pcie",
                matmul_fraction=_opt_float(row["matmul_fraction"]),
                sustained_tflops=_opt_float(row["sustained_tflops"]),
                stream_bandwidth_gbs=_opt_float(row["stream_bandwidth_gbs"]),
                l2_mb=_opt_float(row["l2_mb"]),
                boost_clock_mhz=_opt_float(row["boost_clock_mhz"]),
                sm_count=int(row["sm_count"]) if row["sm_count"].strip() else None,
            )
        except (KeyError, ValueError) as exc:
            raise DataError(f"gpus.csv line {i}: malformed row ({exc})") from exc
    return specs


def vendor(name: str) -> str:
    """``AMD`` for the Instinct parts (canonical names ``MI...``), else ``NVIDIA``: every
    other row of the table is an NVIDIA GPU (data/GPUS.md, "Vendors and methods")."""
    return "AMD" if squash(name).startswith("MI") else "NVIDIA"


def squash(name: str) -> str:
    """Upper case without separators: the key names are compared by."""
    return "".join(ch for ch in name.upper() if ch.isalnum())


@cache
def families() -> dict[str, tuple[str, ...]]:
    """Short names people type, mapped to every canonical GPU they may mean.

    A family (``A100``) means all its variants; family plus memory (``A100-80GB``) those of
    that size; an alias (``A6000``) its one GPU.
    """
    out: dict[str, list[str]] = {}
    for spec in gpu_specs().values():
        if spec.family:
            out.setdefault(spec.family, []).append(spec.name)
            if len({s.memory_gib for s in gpu_specs().values() if s.family == spec.family}) > 1:
                out.setdefault(f"{spec.family}-{spec.memory_gib:g}GB", []).append(spec.name)
        for alias in spec.aliases:
            out.setdefault(alias, []).append(spec.name)
    return {k: tuple(v) for k, v in out.items() if (k,) != tuple(v)}
