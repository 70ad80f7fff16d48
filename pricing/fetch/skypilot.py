"""Fetch a SkyPilot hosted catalog (``catalogs/v8/<cloud>/vms.csv``) and parse it.

The GitHub copy is tried first and the S3 mirror second, on any failure (GitHub rate
limits unauthenticated clients with 429). ``$GACOST_SKYPILOT_CATALOG_URL`` replaces both
with one base URL (the folder holding ``v8/``). Parsing is :func:`pricing.skypilot.parse_catalog`.
"""

from __future__ import annotations

from collections.abc import Mapping

import httpx

from gacost.base.errors import PricingError
from gacost.pricing.fetch.fetcher import FetchContext, FetchResult
from gacost.pricing.fetch.http import FetchError, get_text
from gacost.pricing.skypilot import parse_catalog

PRIMARY_BASE = "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master/catalogs"
MIRROR_BASE = "https://skypilot-catalog.s3.us-east-1.amazonaws.com/catalogs"
BASE_URL_ENV = "GACOST_SKYPILOT_CATALOG_URL"
SCHEMA = "v8"


def catalog_urls(cloud: str, env: Mapping[str, str]) -> list[str]:
    """The URLs to try for ``cloud``, in order."""
    override = env.get(BASE_URL_ENV, "").strip().rstrip("/")
    bases = [override] if override else [PRIMARY_BASE, MIRROR_BASE]
    return [f"{base}/{SCHEMA}/{cloud}/vms.csv" for base in bases]


class SkyPilotCatalog:
    """The fetcher of one cloud's catalog."""

    def __init__(self, cloud: str) -> None:
        self.cloud = cloud

    def __call__(self, client: httpx.Client, ctx: FetchContext) -> FetchResult:
        """Download and parse the catalog; every URL failing raises :class:`FetchError`."""
        failures = []
        for number, url in enumerate(catalog_urls(self.cloud, ctx.env)):
            label = f"skypilot-catalog {SCHEMA} {self.cloud}" + (" (mirror)" if number else "")
            try:
                text = get_text(client, url, policy=ctx.policy)
                parsed = parse_catalog(text, self.cloud, source=label, fetched_at=ctx.stamp)
            except PricingError as exc:
                failures.append(str(exc))
                continue
            return FetchResult(
                parsed.offers,
                dropped=parsed.dropped,
                adjusted=parsed.adjusted,
                detail=f"{parsed.rows} catalog rows from {httpx.URL(url).host}",
                rejections=parsed.rejections,
            )
        raise FetchError(" / ".join(failures))
