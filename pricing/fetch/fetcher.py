"""The contract between the refresh (:mod:`gacost.pricing.fetch.refresh`) and each source's
fetcher: what a fetcher is given (:class:`FetchContext`) and returns (:class:`FetchResult`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, TypeVar

import httpx

from gacost.base.records import Offer
from gacost.pricing.cache import format_timestamp
from gacost.pricing.fetch.http import HttpPolicy
from gacost.pricing.quality import Rejection

T = TypeVar("T")


@dataclass(frozen=True)
class FetchContext:
    """What a fetcher may use besides the client: the time, the environment, the policy."""

    now: datetime
    env: Mapping[str, str]
    policy: HttpPolicy = field(default_factory=HttpPolicy)

    def url(self, env_var: str, default: str) -> str:
        """``$env_var`` when set (to point a source at another server), else ``default``."""
        return self.env.get(env_var, "").strip() or default

    @property
    def stamp(self) -> str:
        """The ``fetched_at`` value of every offer of this fetch."""
        return format_timestamp(self.now)


@dataclass(frozen=True)
class FetchResult:
    """Offers from one source, plus the rows dropped or adjusted, counted per reason."""

    offers: tuple[Offer, ...]
    dropped: dict[str, int] = field(default_factory=dict)
    adjusted: dict[str, int] = field(default_factory=dict)
    detail: str = ""
    rejections: tuple[Rejection, ...] = ()


def collect_offers(entries: Iterable[T], make: Callable[[T], list[Offer] | str]) -> FetchResult:
    """The offers ``make`` builds from each entry, or the reason it skips one (counted),
    sorted by instance type and region."""
    dropped: Counter[str] = Counter()
    offers: list[Offer] = []
    for entry in entries:
        made = make(entry)
        if isinstance(made, str):
            dropped[made] += 1
        else:
            offers += made
    offers.sort(key=lambda o: (o.instance_type, o.region))
    return FetchResult(tuple(offers), dict(dropped))


class Fetcher(Protocol):
    """Fetch one source's current offers; raise :class:`gacost.base.errors.PricingError`."""

    def __call__(self, client: httpx.Client, ctx: FetchContext) -> FetchResult: ...
