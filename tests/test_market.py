"""``pricing.market``: one summary per GPU over typed offers (no CLI, no snapshot)."""

from __future__ import annotations

from gacost.base.records import Offer
from gacost.pricing.market import spot_per_gpu_hour, summarise


def _offer(provider: str, region: str, gpu: str, count: float, rate: float | None,
           spot: float | None = None, memory: float | None = 80) -> Offer:
    return Offer(provider, region, f"{gpu}-{count:g}", gpu, count, memory, 8, 64, rate, spot,
                 "test", "2026-01-01")


def test_cheapest_per_gpu_hour_counts_and_breadth() -> None:
    offers = [
        _offer("b", "us", "H100", 8, 16.0, 8.0),   # $2.00 on-demand, $1.00 spot per GPU
        _offer("a", "eu", "H100", 1, 2.5),          # dearer per GPU, no spot
        _offer("c", "us", "H100", 2, None, 1.6),    # spot only: $0.80 per GPU
        _offer("a", "us", "h200", 1, 3.0, memory=141),
    ]
    h100, h200 = summarise(offers)  # by name, case-insensitive
    assert (h100.gpu, h200.gpu) == ("H100", "h200")
    assert h100.counts == (1, 2, 8) and h100.providers == ("a", "b", "c") and h100.offers == 3
    assert h100.on_demand is not None and h100.on_demand.per_gpu_hour == 2.0
    assert h100.on_demand.offer.provider == "b"
    assert h100.spot is not None and h100.spot.per_gpu_hour == 0.8
    assert h100.spot.offer.provider == "c"
    assert h200.memory_gib == 141 and h200.spot is None


def test_ties_and_memory_are_deterministic() -> None:
    offers = [_offer("z", "r2", "L4", 1, 1.0, memory=24),
              _offer("a", "r1", "L4", 1, 1.0, memory=24),
              _offer("m", "r1", "L4", 1, 1.0, memory=22.4),
              _offer("q", "r", "L4", 1, 1.0, None)]
    (l4,) = summarise(offers)
    assert l4.on_demand is not None and l4.on_demand.offer.provider == "a"  # tie: by provider
    assert l4.memory_gib == 24  # what most offers state
    assert summarise([]) == []
    assert spot_per_gpu_hour(_offer("a", "r", "L4", 0, 1.0, 1.0)) is None
