"""``gacost prices``: listing, --compare, --refresh, --export, --list-sources; no real network."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
import time_machine
from conftest import shifted_clock
from pricing_helpers import Router, forbid_network, full_catalog_text, isolate, json_reply

from gacost.commands.cli import main
from gacost.commands.inputs import price_table
from gacost.pricing import spot_advisor
from gacost.pricing.cache import PriceCache
from gacost.pricing.fetch import http
from gacost.pricing.fetch.azure import API_URL as AZURE_URL
from gacost.pricing.fetch.refresh import format_max_age, select_sources
from gacost.pricing.fetch.skypilot import PRIMARY_BASE
from gacost.pricing.sources import SOURCES

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "qwen3-1.7b-lora.yaml"

# These read whole stderr: the snapshot's day, so no stale-prices warning (tests/test_clock.py)
pytestmark = pytest.mark.usefixtures("snapshot_day")


@pytest.fixture
def cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    return isolate(monkeypatch, tmp_path)


@pytest.fixture
def network(monkeypatch: pytest.MonkeyPatch, cache_dir: Path) -> Router:
    """The CLI's client, answered by a router (every other URL: 404)."""
    router = Router()
    monkeypatch.setattr(http, "make_client", lambda policy=None: router.client())
    return router


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["prices", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _csv(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_offline_listing_uses_the_snapshot_without_network(
    capsys: pytest.CaptureFixture[str], cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forbid_network(monkeypatch)
    code, out, err = _run(capsys, "--gpu", "L4", "--provider", "gcp")
    assert code == 0 and "as of 2026-12-02" in out and "g2-standard-4" in out
    assert "aws" not in out.split("\n\n")[0]
    assert not cache_dir.exists()


def test_compare_is_cheapest_per_gpu_first(
    capsys: pytest.CaptureFixture[str], cache_dir: Path
) -> None:
    code, out, _ = _run(capsys, "--compare", "L4", "--format", "csv")
    rows = _csv(out)
    assert code == 0 and {r["gpu"] for r in rows} == {"L4"}
    assert len({r["provider"] for r in rows}) >= 3 and len({r["region"] for r in rows}) >= 3
    per_gpu = [float(r["per_gpu_hour"]) for r in rows if r["per_gpu_hour"]]
    assert per_gpu == sorted(per_gpu) and len(per_gpu) == len(rows)
    code, table, _ = _run(capsys, "--compare", "L4")
    assert "cheapest on-demand per GPU-hour first" in table


def test_compare_a_family_and_an_unknown_gpu(
    capsys: pytest.CaptureFixture[str], cache_dir: Path
) -> None:
    code, out, _ = _run(capsys, "--compare", "A100", "--format", "csv")
    assert code == 0 and {"A100-40GB-SXM", "A100-80GB-SXM"} <= {r["gpu"] for r in _csv(out)}
    code, _, err = _run(capsys, "--compare", "A1000")
    assert code == 2 and err.startswith("error: unknown GPU 'A1000'")


def test_refresh_fetches_caches_and_shows_live_rows(
    capsys: pytest.CaptureFixture[str], network: Router, cache_dir: Path
) -> None:
    network.add(AZURE_URL, json_reply("azure_retail_page1.json"),
                json_reply("azure_retail_page2.json"))  # fmt: skip
    code, out, err = _run(capsys, "--refresh", "--source", "azure", "--provider", "azure",
                          "--gpu", "T4", "--format", "csv", "--verbose")  # fmt: skip
    assert code == 0
    assert err.startswith("note: azure: 6 offers from Azure Retail Prices API")
    assert err.splitlines()[-1] == "note: prices: 1 of 1 sources refreshed"
    rows = {(r["region"], r["instance"]): r for r in _csv(out)}
    assert rows[("eastus", "Standard_NC4as_T4_v3")]["on_demand_hour"] == "0.526"
    assert list(rows) == [("eastus", "Standard_NC4as_T4_v3")]  # live azure replaces the snapshot
    assert (cache_dir / "prices" / "azure.csv").is_file()


def test_recommend_uses_the_cache_and_says_how_old(
    capsys: pytest.CaptureFixture[str], network: Router, cache_dir: Path
) -> None:
    network.add(
        f"{PRIMARY_BASE}/v8/lambda/vms.csv", httpx.Response(200, text=full_catalog_text("lambda"))
    )
    assert _run(capsys, "--source", "skypilot-lambda")[0] == 0  # --source implies --refresh
    table = price_table()
    assert "skypilot-catalog v8 lambda (lambda; under a minute old)" in table.source
    assert "embedded snapshot as of 2026-12-02 (aws, azure, cudo, daytona, gcp, " in table.source
    code = main(["recommend", "--job", str(EXAMPLE)])
    out, _ = capsys.readouterr()
    assert code == 0 and "skypilot-catalog v8 lambda (lambda; under a minute old)" in out


def test_failed_refresh_warns_once_and_still_lists(
    capsys: pytest.CaptureFixture[str], network: Router, cache_dir: Path
) -> None:
    code, out, err = _run(capsys, "--refresh", "--source", "skypilot-gcp", "--gpu", "L4")
    assert code == 0 and "g2-standard-4" in out  # the embedded snapshot
    (line,) = err.splitlines()
    assert line.startswith("warning: prices: 0 of 1 sources refreshed (1 failed); using the "
                           "embedded snapshot (read 2026-12-02")  # fmt: skip
    assert line.endswith("for skypilot-gcp (--verbose says why)")
    assert not (cache_dir / "prices" / "skypilot-gcp.csv").exists()
    code, _, err = _run(capsys, "--refresh", "--source", "skypilot-gcp", "--gpu", "L4", "-v")
    detail, summary = err.splitlines()
    assert detail.startswith("warning: skypilot-gcp: refresh failed (") and "HTTP 404" in detail
    assert summary.startswith("warning: prices: 0 of 1 sources refreshed")


def test_offline_refresh_says_it_in_one_line(
    capsys: pytest.CaptureFixture[str], network: Router, cache_dir: Path
) -> None:
    network.default = httpx.ConnectError("Name or service not known")
    code, out, err = _run(capsys, "--refresh", "--gpu", "L4")
    assert code == 0 and "g2-standard-4" in out
    (line,) = err.splitlines()
    total = len(select_sources())
    keyed = sum(1 for n in select_sources() if SOURCES[n].key_env)
    assert line.startswith(f"warning: prices: 0 of {total} sources refreshed")
    assert f"{keyed} skipped for want of an API key, {total - keyed} failed" in line
    assert "using the embedded snapshot (read 2026-12-02" in line
    assert "no interruption data for aws-spot-advisor" in line
    assert "gacost prices --refresh" not in err and "Name or service" not in err
    assert len(line) < 400


def test_strict_refresh_fails_with_status_4(
    capsys: pytest.CaptureFixture[str], network: Router, cache_dir: Path
) -> None:
    code, out, err = _run(capsys, "--refresh", "--source", "skypilot-gcp", "--strict")
    assert code == 4 and out == ""
    (line,) = err.splitlines()
    assert line.startswith("error: prices: 0 of 1 sources refreshed") and "--strict" in line
    network.add(f"{PRIMARY_BASE}/v8/lambda/vms.csv",
                httpx.Response(200, text=full_catalog_text("lambda")))  # fmt: skip
    code, out, err = _run(capsys, "--source", "skypilot-lambda", "--strict", "--gpu", "A10")
    assert code == 0 and "gpu_1x_a10" in out
    assert err == "note: prices: 1 of 1 sources refreshed\n"


def test_spot_advisor_failure_says_what_is_used(
    capsys: pytest.CaptureFixture[str], network: Router, cache_dir: Path
) -> None:
    code, _, err = _run(capsys, "--refresh", "--source", "aws-spot-advisor", "-v")
    detail, summary = err.splitlines()
    assert code == 0 and "embedded snapshot" not in err
    assert detail.endswith("using no interruption data (AWS spot costs use the job's "
                           "spot_allowance)")  # fmt: skip
    network.add(spot_advisor.URL, json_reply("aws_spot_advisor.json"))
    assert _run(capsys, "--refresh", "--source", "aws-spot-advisor")[0] == 0
    network.add(spot_advisor.URL, httpx.Response(503))
    code, _, err = _run(capsys, "--refresh", "--source", "aws-spot-advisor", "--max-age", "0")
    assert "using the interruption rates cached under a minute ago for aws-spot-advisor" in err


def test_after_a_failed_refresh_the_stale_warning_does_not_advise_it(
    capsys: pytest.CaptureFixture[str], network: Router, cache_dir: Path
) -> None:
    with time_machine.travel(shifted_clock("snapshot+60d"), tick=True):
        code, _, err = _run(capsys, "--refresh", "--source", "skypilot-gcp", "--gpu", "L4")
        summary, stale = err.splitlines()
        assert summary.startswith("warning: prices: 0 of 1 sources refreshed")
        assert stale.startswith("warning: prices: the embedded snapshot (read 2026-12-02")
        assert "gacost prices --refresh" not in err and "the refresh above did not" in stale
        _, _, err = _run(capsys, "--gpu", "L4")  # no refresh tried: the advice stands
        assert "`gacost prices --refresh` fetches current rates" in err


def test_max_age_zero_reads_as_always_fetch(
    capsys: pytest.CaptureFixture[str], network: Router, cache_dir: Path
) -> None:
    network.add(f"{PRIMARY_BASE}/v8/lambda/vms.csv",
                httpx.Response(200, text=full_catalog_text("lambda")))  # fmt: skip
    assert _run(capsys, "--source", "skypilot-lambda")[0] == 0
    code, _, err = _run(capsys, "--source", "skypilot-lambda", "--max-age", "0")
    assert code == 0 and err == "note: prices: 1 of 1 sources refreshed\n"  # fetched again
    _, _, err = _run(capsys, "--source", "skypilot-lambda", "--max-age", "1h", "-v")
    assert "(max age 1 h); not fetched" in err
    assert err.splitlines()[-1] == ("note: prices: 0 of 1 sources refreshed (1 cached within "
                                    "the max age (1 h))")  # fmt: skip
    assert format_max_age(timedelta(0)) == "0: always fetch"


def test_stale_cache_gets_a_warning(
    capsys: pytest.CaptureFixture[str], network: Router, cache_dir: Path
) -> None:
    vast = full_catalog_text("vast")
    network.add(f"{PRIMARY_BASE}/v8/vast/vms.csv", httpx.Response(200, text=vast))
    _run(capsys, "--source", "skypilot-vast")
    code, _, err = _run(capsys, "--provider", "vast", "--max-age", "0")
    assert code == 0 and err.startswith("warning: prices: skypilot-catalog v8 vast prices cached")
    assert "past the max age (0)" in err and len(err.splitlines()) == 1


def test_list_sources(capsys: pytest.CaptureFixture[str], cache_dir: Path) -> None:
    PriceCache().path("vast").parent.mkdir(parents=True)
    PriceCache().path("vast").write_text("junk\n")
    code, out, _ = _run(capsys, "--list-sources", "--format", "csv")
    rows = {r["source"]: r for r in _csv(out)}
    assert code == 0 and {"azure", "vast", "aws-bulk", "lambda", "skypilot-gcp"} <= set(rows)
    assert rows["lambda"]["key"] == "$LAMBDA_API_KEY not set"
    assert rows["aws-bulk"]["default"] == "opt-in"
    assert rows["vast"]["cache"] == "corrupt" and rows["azure"]["cache"] == "none"


def test_export_writes_the_snapshot(
    capsys: pytest.CaptureFixture[str], network: Router, tmp_path: Path
) -> None:
    gcp = full_catalog_text("gcp")
    network.add(f"{PRIMARY_BASE}/v8/gcp/vms.csv", httpx.Response(200, text=gcp))
    out_dir = tmp_path / "prices"
    code, out, _ = _run(capsys, "--export", str(out_dir), "--source", "skypilot-gcp")
    assert code == 0 and re.fullmatch(
        rf"wrote \d+ offers to {re.escape(str(out_dir))}, as of \d{{4}}-\d\d-\d\d",
        out.strip().splitlines()[-1],
    )
    assert (out_dir / "snapshot.csv").is_file() and (out_dir / "snapshot.json").is_file()
    code, _, err = _run(capsys, "--export", str(tmp_path / "x"), "--source", "azure")
    assert code == 1 and err.startswith("error: snapshot export stopped, nothing written")
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-age", "soon"], "expected a duration"),
        (["--prices", "f.csv", "--refresh"], "not allowed with"),
        (["--prices", "f.csv", "--source", "azure"], "not allowed with"),
        (["--gpu", "L4", "--compare", "T4"], "not allowed with"),
    ],
)
def test_usage_errors(
    capsys: pytest.CaptureFixture[str], cache_dir: Path, args: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["prices", *args])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_bad_source_and_bad_env(
    capsys: pytest.CaptureFixture[str], cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = _run(capsys, "--source", "azur")
    assert code == 2 and "unknown price source 'azur' (did you mean 'azure'?)" in err
    monkeypatch.setenv("GACOST_PRICE_MAX_AGE", "often")
    code, _, err = _run(capsys)
    assert code == 1 and err.startswith("error: $GACOST_PRICE_MAX_AGE")


def test_offline_prices_does_not_import_httpx(tmp_path: Path) -> None:
    code = (
        "import sys, io, contextlib\n"
        "from gacost.commands.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    rc = main(['prices', '--compare', 'T4'])\n"
        "print(rc, 'httpx' in sys.modules)\n"
    )
    env = {"GACOST_CACHE_DIR": str(tmp_path / "c"), "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=60
    )
    assert result.stdout.strip() == "0 False", result.stderr


# --- the whole market: names, counts, regions, formats, rejected rows -------------------


def _by_gpu(offers: list[dict[str, str]]) -> dict[str, list[dict[str, str]]]:
    groups: dict[str, list[dict[str, str]]] = {}
    for r in offers:
        groups.setdefault(r["gpu"], []).append(r)
    return groups


def _lowest(rows: list[dict[str, str]], key: str) -> float | None:
    prices = [float(r[key]) for r in rows if r[key]]
    return min(prices) if prices else None


@pytest.mark.parametrize("filters", [[], ["--provider", "gcp", "--region", "us-"]])
def test_default_view_is_one_line_per_gpu_agreeing_with_the_offers(
    capsys: pytest.CaptureFixture[str], cache_dir: Path, filters: list[str]
) -> None:
    """Each GPU's line is what its offers (under the same filters) say: the cheapest
    on-demand and spot $/GPU-h and who sells them, the counts sold, providers, offers."""
    code, out, _ = _run(capsys, *filters, "--format", "csv")
    market = _csv(out)
    code2, offers_out, _ = _run(capsys, *filters, "--offers", "--format", "csv")
    offers = _by_gpu(_csv(offers_out))
    assert code == code2 == 0 and [m["gpu"] for m in market] == sorted(offers, key=str.lower)
    assert sum(int(m["offers"]) for m in market) == sum(map(len, offers.values()))
    for m in market:
        rows = offers[m["gpu"]]
        assert int(m["offers"]) == len(rows)
        assert int(m["providers"]) == len({r["provider"] for r in rows})
        assert [float(c) for c in m["counts"].split()] == sorted({float(r["count"]) for r in rows})
        for kind, key in (("on_demand", "per_gpu_hour"), ("spot", "spot_per_gpu_hour")):
            low = _lowest(rows, key)
            if low is None:
                assert m[f"{kind}_per_gpu_hour"] == m[f"{kind}_provider"] == "", m
                continue
            assert float(m[f"{kind}_per_gpu_hour"]) == pytest.approx(low, abs=1e-4), m
            seller = (m[f"{kind}_provider"], m[f"{kind}_region"], m[f"{kind}_instance"])
            assert any((r["provider"], r["region"], r["instance"]) == seller
                       and r[key] and float(r[key]) == pytest.approx(low) for r in rows)
        if filters:
            assert m["on_demand_provider"] in ("gcp", "")
            assert m["on_demand_region"].startswith("us-") or not m["on_demand_region"]
    assert len(market) >= (3 if filters else 40)


def test_default_view_table_and_json(capsys: pytest.CaptureFixture[str], cache_dir: Path) -> None:
    code, out, _ = _run(capsys)
    lines = out.splitlines()
    assert code == 0 and lines[0].split()[:4] == ["GPU", "GiB", "GPUs", "sold"]
    h100 = next(x for x in lines if x.startswith("H100-SXM "))
    assert re.search(r" 80 +(1,2,4,8|1-8) ", h100) and "/" in h100
    footer = out.split("\n\n")[-1].splitlines()
    assert re.search(r"^\d+ GPUs, \d+ offers from \d+ providers, as of 2026-12-02", footer[0])
    assert "`gacost prices --gpu NAME` lists a GPU's offers" in footer[1]
    assert footer[2].startswith("price dates (not the day read): ")  # tests/test_price_dates.py
    assert "instance" not in lines[0]  # one line per GPU, not per offer
    code, out, _ = _run(capsys, "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["as_of"] == "2026-12-02" and "offers" not in data
    t4 = next(g for g in data["gpus"] if g["gpu"] == "T4")
    assert t4["gpu_memory_gib"] == 16 and 1 in t4["counts"] and t4["offers"] > 10
    assert t4["on_demand_per_gpu_hour"] > 0 and t4["on_demand_provider"]
    code, wide, _ = _run(capsys, "--wide")
    assert "on-demand instance" in wide.splitlines()[0]


def test_gpu_lists_its_offers_and_offers_lists_every_offer(
    capsys: pytest.CaptureFixture[str], cache_dir: Path
) -> None:
    code, out, _ = _run(capsys, "--gpu", "H100")
    header = out.splitlines()[0].split()
    assert code == 0 and header[:5] == ["GPU", "n", "provider", "region", "instance"]
    assert re.search(r"^\d+ offers$", out.split("\n\n")[1].splitlines()[0])
    code, out, _ = _run(capsys, "--offers", "--format", "json")
    data = json.loads(out)
    code2, market, _ = _run(capsys, "--format", "json")
    assert len(data["offers"]) == sum(g["offers"] for g in json.loads(market)["gpus"]) > 4000


def test_gpus_without_a_spec_row_are_listed_and_filterable(
    capsys: pytest.CaptureFixture[str], cache_dir: Path
) -> None:
    code, out, _ = _run(capsys, "--gpu", "B200", "--format", "csv")
    rows = _csv(out)
    assert code == 0 and rows and {r["gpu"] for r in rows} == {"B200"}
    assert {"aws", "lambda", "nebius", "oci", "verda"} <= {r["provider"] for r in rows}
    # SkyPilot's spellings of one GPU meet under one name
    code, out, _ = _run(capsys, "--gpu", "RTXPRO6000", "--format", "csv")
    assert code == 0 and {r["gpu"] for r in _csv(out)} == {"RTX-PRO-6000"}
    code, _, err = _run(capsys, "--gpu", "B2000")
    assert code == 2 and "unknown GPU 'B2000'" in err and "did you mean" in err


def test_count_syntax_and_region_prefix(
    capsys: pytest.CaptureFixture[str], cache_dir: Path
) -> None:
    code, out, _ = _run(capsys, "--gpu", "A100:8", "--region", "us-east", "--format", "csv")
    rows = _csv(out)
    assert code == 0 and rows
    assert all(float(r["count"]) == 8 and r["region"].startswith("us-east") for r in rows)
    assert all(r["gpu"].startswith("A100") for r in rows)
    code, out, _ = _run(capsys, "--gpu", "A100", "--format", "csv")
    assert {float(r["count"]) for r in _csv(out)} > {8.0}
    code, _, err = _run(capsys, "--gpu", "A100:x")
    assert code == 2 and "count after ':'" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--provider", "lamdba"],
         "error: --provider: unknown provider 'lamdba' (did you mean 'lambda'?); known: aws, "),
        (["--compare", "H100", "--provider", "gcp", "--provider", "lamdba"],
         "error: --provider: unknown provider 'lamdba' (did you mean 'lambda'?)"),
        (["--region", "mars"], "error: --region: no region starts with 'mars'; `gacost prices "
                               "--offers --format csv` lists the regions"),
        (["--gpu", "H100", "--region", "eu-wst"],
         "error: --region: no region starts with 'eu-wst' (did you mean 'eu-west"),
        (["--provider", "lambda", "--region", "mars"],
         "error: --region: no region of lambda starts with 'mars'; `gacost prices --provider "
         "lambda --offers --format csv` lists the regions"),
        (["--provider", "gcp", "--region", "us-east-1"],  # an AWS region: none at gcp
         "error: --region: no region of gcp starts with 'us-east-1'"),
        (["--export", "out.csv", "--provider", "lamdba"],
         "error: --provider: unknown provider 'lamdba' (did you mean 'lambda'?)"),
        (["--refresh", "--provider", "lamdba"],
         "error: --provider: unknown provider 'lamdba' (did you mean 'lambda'?)"),
    ],
)
def test_unknown_providers_and_regions_are_errors(
    capsys: pytest.CaptureFixture[str], cache_dir: Path, monkeypatch: pytest.MonkeyPatch,
    args: list[str], message: str,
) -> None:
    """As for a job's unknown provider: one line with a suggestion, exit 2 (not an empty
    list); nothing is fetched."""
    forbid_network(monkeypatch)
    code, out, err = _run(capsys, *args)
    assert code == 2 and not out
    assert err.strip().splitlines()[-1].startswith(message), err


def test_known_providers_and_regions_match_case_insensitively(
    capsys: pytest.CaptureFixture[str], cache_dir: Path
) -> None:
    code, out, _ = _run(capsys, "--provider", "LAMBDA", "--region", "US-East", "--offers",
                        "--format", "csv")  # fmt: skip
    rows = _csv(out)
    assert code == 0 and rows
    assert all(r["provider"] == "lambda" and r["region"].startswith("us-east") for r in rows)


def test_json_format_carries_the_rows_and_the_sources(
    capsys: pytest.CaptureFixture[str], cache_dir: Path
) -> None:
    code, out, _ = _run(capsys, "--gpu", "L4", "--provider", "gcp", "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["as_of"] == "2026-12-02"
    assert any("gcp@" in label for label in data["sources"])
    code, csv_out, _ = _run(capsys, "--gpu", "L4", "--provider", "gcp", "--format", "csv")
    assert len(data["offers"]) == len(_csv(csv_out))
    assert {o["provider"] for o in data["offers"]} == {"gcp"}


def test_default_table_fits_120_columns_and_wide_shows_more(
    capsys: pytest.CaptureFixture[str], cache_dir: Path
) -> None:
    for args in ([], ["--offers"], ["--compare", "H100"], ["--rejected"], ["--gpu", "RTX-A4000"]):
        code, out, _ = _run(capsys, *args)
        assert code == 0 and max(len(line) for line in out.splitlines()) <= 120, args
    code, wide, _ = _run(capsys, "--gpu", "RTX-A4000", "--wide")
    assert "source" in wide.splitlines()[0] and max(len(x) for x in wide.splitlines()) > 120


def test_rejected_lists_each_row_with_its_reason(
    capsys: pytest.CaptureFixture[str], cache_dir: Path
) -> None:
    code, out, _ = _run(capsys, "--rejected", "--provider", "gcp", "--format", "csv")
    rows = _csv(out)
    assert code == 0 and rows and {r["provider"] for r in rows} == {"gcp"}
    reasons = {r["reason"] for r in rows}
    assert any("spot/flex-start only" in r for r in reasons)
    assert any("below its own spot" in r for r in reasons)
    a3 = [r for r in rows if r["instance"] == "a3-highgpu-1g"]
    assert {r["action"] for r in a3} == {"on-demand cleared", "dropped"}
    assert all("spot/flex-start only" in r["reason"] for r in a3 if r["action"] != "dropped")
    # what the listing shows for the same shape: spot only
    code, out, _ = _run(capsys, "--gpu", "H100", "--provider", "gcp", "--format", "csv")
    listed = [r for r in _csv(out) if r["instance"] == "a3-highgpu-1g"]
    assert listed and all(r["on_demand_hour"] == "" and r["spot_hour"] for r in listed)



def test_price_file_rows_out_of_bounds_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from gacost.commands.cli import main as cli_main

    header = ("provider,region,instance_type,gpu,gpu_count,gpu_memory_gib,vcpus,ram_gib,"
              "price_hour,spot_hour,source,fetched_at\n")
    good = "aws,us-east-1,g6.xlarge,L4,1,24,4,16,0.80,,test,2026-12-02\n"
    for row, field in (
        ("aws,us-east-1,g6.big,L4,1,24,4,16,1e308,,test,2026-12-02\n", "price_hour"),
        ("aws,us-east-1,g6.nan,L4,1,24,4,16,0.5,,test,nan\n", "fetched_at"),
        ("aws,us-east-1,g6.many,L4,1000,24,4,16,0.5,,test,2026-12-02\n", "gpu_count"),
    ):
        path = tmp_path / f"{field}.csv"
        path.write_text(header + good + row)
        assert cli_main(["prices", "--prices", str(path)]) != 0, field
        err = capsys.readouterr().err
        assert f"row 3, column {field}" in err and len(err.strip().splitlines()) == 1, err
