"""The market at a glance: one summary per GPU over a set of offers (``gacost prices``).

Pure functions over :class:`Offer` rows, as ``sky show-gpus`` shows the market: for each
GPU its memory, the GPU counts sold, the cheapest on-demand and cheapest spot price per
GPU-hour with the offer that has it, and how many providers and offers sell it. Prices per
GPU-hour divide the instance price by its GPU count (for comparison only: the job's cost
comes from ``recommend``).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from gacost.base.records import Offer


@dataclass(frozen=True)
class Cheapest:
    """The offer with the lowest price per GPU-hour, and that price."""

    per_gpu_hour: float
    offer: Offer


@dataclass(frozen=True)
class GpuMarket:
    """One GPU across every offer given: memory, counts sold, cheapest prices, breadth."""

    gpu: str
    memory_gib: float | None
    counts: tuple[float, ...]
    on_demand: Cheapest | None
    spot: Cheapest | None
    providers: tuple[str, ...]
    offers: int


def spot_per_gpu_hour(offer: Offer) -> float | None:
    """The spot price divided by the GPU count; None without a spot price."""
    if offer.spot_hour is None or offer.gpu_count <= 0:
        return None
    return offer.spot_hour / offer.gpu_count


def _cheapest(offers: list[Offer], spot: bool) -> Cheapest | None:
    priced = [
        (price, o.provider, o.region, o.instance_type, o)
        for o in offers
        if (price := spot_per_gpu_hour(o) if spot else o.per_gpu_hour) is not None
    ]
    if not priced:
        return None
    best = min(priced, key=lambda t: t[:4])  # ties: provider, region, instance (stable)
    return Cheapest(best[0], best[4])


def _memory(offers: list[Offer]) -> float | None:
    """The GiB per GPU most offers state (the larger on a tie); None when none does."""
    counts = Counter(o.gpu_memory_gib for o in offers if o.gpu_memory_gib is not None)
    if not counts:
        return None
    return max(counts.items(), key=lambda kv: (kv[1], kv[0]))[0]


def summarise(offers: Iterable[Offer]) -> list[GpuMarket]:
    """One :class:`GpuMarket` per GPU in ``offers``, by GPU name (case-insensitive)."""
    by_gpu: dict[str, list[Offer]] = defaultdict(list)
    for o in offers:
        by_gpu[o.gpu].append(o)
    return [
        GpuMarket(
            gpu=gpu,
            memory_gib=_memory(group),
            counts=tuple(sorted({o.gpu_count for o in group})),
            on_demand=_cheapest(group, spot=False),
            spot=_cheapest(group, spot=True),
            providers=tuple(sorted({o.provider for o in group})),
            offers=len(group),
        )
        for gpu, group in sorted(by_gpu.items(), key=lambda kv: (kv[0].lower(), kv[0]))
    ]
