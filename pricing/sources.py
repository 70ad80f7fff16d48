"""What each live price source is, without importing its fetcher (so no httpx here).

:data:`SOURCES` is the metadata the offline loader needs (providers, priority, what a
source supersedes); :data:`pricing.fetch.registry.FETCHERS` maps the same names to fetchers.
"""

from __future__ import annotations

from dataclasses import dataclass

SKYPILOT_CLOUDS: tuple[str, ...] = (
    "aws", "gcp", "azure", "lambda", "runpod", "vast", "nebius", "oci", "cudo", "daytona",
    "hyperbolic", "hyperstack", "jarvislabs", "lium", "mithril", "primeintellect", "seeweb",
    "shadeform", "spheron", "verda", "yotta",
)  # fmt: skip

CATALOG_PRIORITY = 1  # SkyPilot's hosted catalogs: a few hours behind the clouds
FIRST_PARTY_PRIORITY = 2  # the provider's own price API


@dataclass(frozen=True)
class SourceInfo:
    """One live source of offers.

    ``priority`` decides which source's offer is kept when two give the same provider,
    region and instance type; ``supersedes`` names sources whose whole cache is ignored
    while this one's is usable (live Vast offers replace the catalog's medians).
    ``key_env`` names the environment variable holding a required API key. A ``partial``
    source covers only some regions, so the snapshot still fills in the others.
    """

    name: str
    label: str
    providers: tuple[str, ...]
    priority: int
    default: bool = True
    key_env: str | None = None
    supersedes: tuple[str, ...] = ()
    partial: bool = False
    notes: str = ""
    kind: str = "offers"  # "offers", or "risk": interruption rates added to other offers


def _catalog(cloud: str) -> SourceInfo:
    return SourceInfo(
        name=f"skypilot-{cloud}",
        label=f"skypilot-catalog v8 {cloud}",
        providers=(cloud,),
        priority=CATALOG_PRIORITY,
        notes=f"SkyPilot hosted catalog catalogs/v8/{cloud}/vms.csv (S3 mirror as fallback)",
    )


SOURCES: dict[str, SourceInfo] = {
    **{f"skypilot-{cloud}": _catalog(cloud) for cloud in SKYPILOT_CLOUDS},
    "azure": SourceInfo(
        name="azure",
        label="Azure Retail Prices API",
        providers=("azure",),
        priority=FIRST_PARTY_PRIORITY,
        notes="prices.azure.com, GPU VM sizes, on-demand + spot; regions: $GACOST_AZURE_REGIONS",
    ),
    "vast": SourceInfo(
        name="vast",
        label="Vast.ai bundles API",
        providers=("vast",),
        priority=FIRST_PARTY_PRIORITY,
        supersedes=("skypilot-vast",),
        notes="console.vast.ai offer search; median per GPU, count and country; "
        "$VAST_API_KEY optional",
    ),
    "aws-bulk": SourceInfo(
        name="aws-bulk",
        label="AWS Price List bulk API",
        providers=("aws",),
        priority=FIRST_PARTY_PRIORITY,
        default=False,
        partial=True,
        notes="per-region EC2 CSV (hundreds of MB, streamed), on-demand only; "
        "regions: $GACOST_AWS_REGIONS (default us-east-1); opt-in with --source aws-bulk",
    ),
    "aws-spot-advisor": SourceInfo(
        name="aws-spot-advisor",
        label="AWS Spot Instance Advisor",
        providers=("aws",),
        priority=FIRST_PARTY_PRIORITY,
        kind="risk",
        notes="spot-bid-advisor.s3.amazonaws.com: interruption bucket per AWS instance type "
        "and region, for risk-adjusted spot costs",
    ),
    "oci": SourceInfo(
        name="oci",
        label="OCI Cost Estimator",
        providers=("oci",),
        priority=FIRST_PARTY_PRIORITY,
        notes="oracle.com Cost Estimator shapes + part prices (public, no key); one list "
        "price in every region",
    ),
    "lambda": SourceInfo(
        name="lambda",
        label="Lambda Cloud API",
        providers=("lambda",),
        priority=FIRST_PARTY_PRIORITY,
        key_env="LAMBDA_API_KEY",
        notes="cloud.lambdalabs.com instance types, on-demand only; needs $LAMBDA_API_KEY",
    ),
}


def default_sources() -> list[str]:
    """Names refreshed when no ``--source`` is given."""
    return [name for name, info in SOURCES.items() if info.default]
