"""The AWS bulk price-list fetcher: streamed CSV, GPU families, SkyPilot's row filter."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from pricing_helpers import LoopbackServer, Router, context, fixture_text, isolate, send_body

from gacost.base.errors import PricingError
from gacost.pricing.fetch import aws
from gacost.pricing.fetch.aws import BULK_URL, DUPLICATE_ROWS, NOT_GPU_FAMILY, NOT_LINUX_ON_DEMAND
from gacost.pricing.fetch.http import FetchError

US_EAST_1 = BULK_URL.format(region="us-east-1")


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate(monkeypatch, tmp_path)


def _fetch(client: httpx.Client, env: dict[str, str] | None = None) -> aws.FetchResult:
    ctx, _ = context(env)
    with client:
        return aws.fetch(client, ctx)


def test_streams_the_region_file_and_keeps_gpu_on_demand_rows() -> None:
    router = Router().add(
        US_EAST_1, httpx.Response(200, text=fixture_text("aws_bulk_us-east-1.csv"))
    )
    result = _fetch(router.client())
    offers = {o.instance_type: o for o in result.offers}
    assert sorted(offers) == [
        "g4dn.12xlarge", "g4dn.xlarge", "g5.xlarge", "g6.xlarge", "g6e.xlarge",
        "p4d.24xlarge", "p5.48xlarge",
    ]  # fmt: skip
    g4dn = offers["g4dn.xlarge"]
    assert (g4dn.gpu, g4dn.gpu_count, g4dn.price_hour, g4dn.spot_hour) == ("T4", 1, 0.526, None)
    assert (g4dn.vcpus, g4dn.ram_gib, g4dn.region) == (4, 16, "us-east-1")
    assert offers["p4d.24xlarge"].gpu == "A100-40GB-SXM"
    assert offers["p5.48xlarge"].gpu == "H100-SXM" and offers["p5.48xlarge"].price_hour == 55.04
    assert offers["g6e.xlarge"].price_hour == 0  # left for the quality check to drop
    # Windows, reserved, dedicated, unused capacity, pre-installed SQL:
    assert result.dropped == {NOT_LINUX_ON_DEMAND: 5, NOT_GPU_FAMILY: 1}
    assert DUPLICATE_ROWS not in result.adjusted


def test_regions_from_the_environment() -> None:
    text = fixture_text("aws_bulk_us-east-1.csv")
    router = Router()
    for region in ("us-west-2", "eu-west-1"):
        router.add(BULK_URL.format(region=region), httpx.Response(200, text=text))
    result = _fetch(router.client(), {"GACOST_AWS_REGIONS": "us-west-2,eu-west-1"})
    assert {o.region for o in result.offers} == {"us-west-2", "eu-west-1"}
    assert [r.url.path.split("/")[-2] for r in router.requests] == ["us-west-2", "eu-west-1"]


def test_duplicate_rows_keep_the_lowest_price() -> None:
    lines = fixture_text("aws_bulk_us-east-1.csv").splitlines()
    cheaper = lines[6].replace('"0.5260000000"', '"0.5000000000"')
    result = aws.parse_bulk_csv([*lines, cheaper], "us-east-1", "t")
    g4dn = next(o for o in result.offers if o.instance_type == "g4dn.xlarge")
    assert g4dn.price_hour == 0.5 and result.adjusted == {DUPLICATE_ROWS: 1}


@pytest.mark.parametrize(
    ("marker", "message"),
    [("p4d.24xlarge", "malformed CSV"), ('"p4d.24xlarge"', "fields, the header")],
)
def test_truncated_row_is_an_error(marker: str, message: str) -> None:
    text = fixture_text("aws_bulk_us-east-1.csv")
    cut = text[: text.index(marker)]  # inside a quoted cell, or after a comma
    router = Router().add(US_EAST_1, httpx.Response(200, text=cut))
    with pytest.raises(PricingError, match=message):
        _fetch(router.client())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no price-list header"),
        ('"FormatVersion","v1.0"\n"SKU","Instance Type","TermType"\n', "lacks column"),
        ("<html>Access denied</html>\n", "no price-list header"),
    ],
)
def test_not_a_price_list(text: str, message: str) -> None:
    router = Router().add(US_EAST_1, httpx.Response(200, text=text))
    with pytest.raises(PricingError, match=message):
        _fetch(router.client())


def test_loopback_stream_cut_short_is_a_fetch_error() -> None:
    body = fixture_text("aws_bulk_us-east-1.csv").encode()
    cut = body[: body.index(b"g5.xlarge")]
    with LoopbackServer({US_EAST_1.split(".com")[1]: send_body(cut, declared=len(body))}) as srv:
        with pytest.raises(FetchError, match="while streaming the body"):
            _fetch(srv.client())


def test_loopback_stream_whole_file() -> None:
    body = fixture_text("aws_bulk_us-east-1.csv").encode()
    with LoopbackServer({US_EAST_1.split(".com")[1]: send_body(body)}) as srv:
        result = _fetch(srv.client())
    assert len(result.offers) == 7
