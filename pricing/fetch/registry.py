"""The explicit map from source name (:data:`pricing.sources.SOURCES`) to its fetcher."""

from __future__ import annotations

from gacost.pricing.fetch import aws, azure, lambda_cloud, oci, vast
from gacost.pricing.fetch.fetcher import Fetcher
from gacost.pricing.fetch.skypilot import SkyPilotCatalog
from gacost.pricing.sources import SKYPILOT_CLOUDS

FETCHERS: dict[str, Fetcher] = {
    **{f"skypilot-{cloud}": SkyPilotCatalog(cloud) for cloud in SKYPILOT_CLOUDS},
    "azure": azure.fetch,
    "vast": vast.fetch,
    "aws-bulk": aws.fetch,
    "oci": oci.fetch,
    "lambda": lambda_cloud.fetch,
}
