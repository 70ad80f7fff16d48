"""The explicit map from source name (:data:`pricing.sources.SOURCES`) to its fetcher."""

from __future__ import annotations

from gacost.pricing import fetch_aws, fetch_azure, fetch_lambda, fetch_oci, fetch_vast
from gacost.pricing.fetch_skypilot import SkyPilotCatalog
from gacost.pricing.fetching import Fetcher
from gacost.pricing.sources import SKYPILOT_CLOUDS

FETCHERS: dict[str, Fetcher] = {
    **{f"skypilot-{cloud}": SkyPilotCatalog(cloud) for cloud in SKYPILOT_CLOUDS},
    "azure": fetch_azure.fetch,
    "vast": fetch_vast.fetch,
    "aws-bulk": fetch_aws.fetch,
    "oci": fetch_oci.fetch,
    "lambda": fetch_lambda.fetch,
}
