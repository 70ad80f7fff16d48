"""Fetch the AWS Spot Instance Advisor data (no key) and parse it (:mod:`pricing.spot_advisor`).

``GET https://spot-bid-advisor.s3.amazonaws.com/spot-advisor-data.json`` (about 1.2 MB,
``$GACOST_AWS_SPOT_ADVISOR_URL`` points it elsewhere). Not an offer source: it adds the
interruption risk of AWS spot prices, kept in its own cache file.
"""

from __future__ import annotations

import httpx

from gacost.pricing.fetch.fetcher import FetchContext
from gacost.pricing.fetch.http import get_json
from gacost.pricing.spot_advisor import URL, URL_ENV, SpotRisk, parse_advisor


def fetch(client: httpx.Client, ctx: FetchContext) -> SpotRisk:
    """The advisor's Linux interruption rates, stamped with the fetch time."""
    data = get_json(client, ctx.url(URL_ENV, URL), policy=ctx.policy)
    return parse_advisor(data, ctx.stamp)
