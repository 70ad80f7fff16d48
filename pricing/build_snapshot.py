"""Rebuild the embedded price snapshot from SkyPilot catalog CSVs.

    python -m gacost.pricing.build_snapshot --from DIR [--out data/prices] [--as-of YYYY-MM-DD]

``DIR`` (required; the stored catalog copies are the checkout's
``tests/fixtures/pricing/full``) holds one folder per cloud,
``skypilot_<cloud>/vms_v8_gpu_sample.csv`` or ``<cloud>/vms.csv``; other CSVs of the same
header in a ``<cloud>/`` folder are appended (``gcp/host_vms.csv``: the host rows GCP's GPU
rows are joined with). The catalog commit of each cloud comes from ``DIR/sources.json``
(``{"aws": {"repo": "...", "commit": "..."}}``) or, failing that, from :data:`KNOWN_SOURCES`;
the same entries may date the cloud's prices (``prices_as_of``, ``not_before``, ``outdated``,
``basis``: :mod:`gacost.pricing.price_dates`), which go into ``snapshot.json`` as
``price_dates``. Every catalog is parsed, quality-checked, and the result written to
``OUT/snapshot.csv`` and ``OUT/snapshot.json`` atomically, with a summary per source.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gacost.base.clock import utc_now
from gacost.base.errors import DataError, GacostError
from gacost.base.inputfile import read_text
from gacost.base.records import Offer
from gacost.pricing.price_dates import PriceDate, parse_price_dates
from gacost.pricing.quality import Rejection, review_offers
from gacost.pricing.skypilot import parse_catalog
from gacost.pricing.snapshot import write_snapshot

DEFAULT_OUT = Path("data/prices")
UPSTREAM_REPO = "skypilot-org/skypilot-catalog"
_CATALOG_FILES = ("vms.csv", "vms_v8_gpu_sample.csv")
MAX_CATALOG_BYTES = 1 << 30  # a whole cloud's catalog, GPU or not; a limit, not an estimate

#: cloud -> (repository, commit) of the stored catalog copies (see data/prices/SOURCES.md).
KNOWN_SOURCES: dict[str, tuple[str, str]] = {
    "aws": (UPSTREAM_REPO, "00148f2af3672e2229b4f7bf8157d5a3f36e3c35"),
    "gcp": (UPSTREAM_REPO, "006059e0f18acb1341e22a27751e9f80df6ba92f"),
    "azure": ("coopslarhette/skypilot-catalog", "20291d7eda23e6f420cd9586558cf0bc4051851c"),
    "lambda": (UPSTREAM_REPO, "0f4070387edc953d7004cff197940e1918a1d6aa"),
    "runpod": (UPSTREAM_REPO, "01acdfd419ce5afae1289ff14825b893ced0c196"),
    "vast": (UPSTREAM_REPO, "01b8cdda287814b30ff0acb49746cca19fbd4355"),
}


@dataclass(frozen=True)
class SourceSummary:
    """What one catalog contributed to the snapshot."""

    cloud: str
    label: str
    rows: int
    offers: int
    dropped: dict[str, int]
    quality: dict[str, int]
    adjusted: dict[str, int]


def source_label(cloud: str, repo: str, commit: str) -> str:
    """E.g. ``"skypilot-catalog v8 aws@00148f2a"`` (forks keep their owner)."""
    name = "skypilot-catalog" if repo == UPSTREAM_REPO else repo
    return f"{name} v8 {cloud}@{commit[:8] or 'unknown'}"


def find_catalogs(root: Path) -> list[tuple[str, Path]]:
    """``(cloud, csv path)`` for every cloud folder under ``root``, sorted by cloud."""
    if not root.is_dir():
        raise DataError(f"{root}: not a directory of SkyPilot catalogs; check --from")
    found = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        for name in _CATALOG_FILES:
            if (folder / name).is_file():
                found.append((folder.name.removeprefix("skypilot_"), folder / name))
                break
    if not found:
        raise DataError(
            f"{root}: no <cloud>/vms.csv or skypilot_<cloud>/vms_v8_gpu_sample.csv found"
        )
    return found


def read_sources(root: Path) -> dict[str, tuple[str, str]]:
    """:data:`KNOWN_SOURCES` updated from ``root/sources.json`` when that file exists."""
    sources = dict(KNOWN_SOURCES)
    path = root / "sources.json"
    if not path.is_file():
        return sources
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        for cloud, entry in data.items():
            sources[cloud] = (str(entry.get("repo", UPSTREAM_REPO)), str(entry["commit"]))
    except (OSError, ValueError, KeyError, AttributeError, TypeError) as exc:
        raise DataError(
            f"{path}: expected {{cloud: {{repo, commit}}}} ({exc}); fix or delete it"
        ) from None
    return sources


_DATE_FIELDS = ("prices_as_of", "not_before", "outdated", "basis")


def read_price_dates(root: Path, labels: dict[str, str]) -> dict[str, PriceDate]:
    """Per cloud of ``labels`` (cloud -> source label), the price-date fields of its entry in
    ``root/sources.json``; clouds without any are left out."""
    path = root / "sources.json"
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: not readable JSON ({exc}); fix or delete it") from None
    if not isinstance(data, dict):
        raise DataError(f"{path}: expected {{cloud: {{repo, commit}}}}; fix or delete it")
    picked = {
        cloud: {"source": labels[cloud], **{k: v for k, v in entry.items() if k in _DATE_FIELDS}}
        for cloud, entry in data.items()
        if cloud in labels and isinstance(entry, dict) and set(entry) & set(_DATE_FIELDS)
    }
    return parse_price_dates(picked, str(path), "fix that entry of sources.json")


def build(
    root: Path, as_of: str
) -> tuple[list[Offer], list[SourceSummary], list[Rejection]]:
    """Parse every catalog under ``root`` and check all of them together (the market spread
    compares providers); offers sorted, one summary per cloud, every rejection."""
    sources = read_sources(root)
    parsed_all = []
    for cloud, path in find_catalogs(root):
        repo, commit = sources.get(cloud, (UPSTREAM_REPO, ""))
        label = source_label(cloud, repo, commit)
        parsed = parse_catalog(read_catalog(path), cloud, source=label, fetched_at=as_of)
        parsed_all.append((cloud, label, parsed))
    report = review_offers([o for _, _, p in parsed_all for o in p.offers])
    rejections = [r for _, _, p in parsed_all for r in p.rejections] + report.rejections
    summaries = []
    for cloud, label, parsed in parsed_all:
        kept = sum(1 for o in report.kept if o.provider == cloud)
        quality = Counter(r.reason for r in report.rejections if r.offer.provider == cloud)
        summaries.append(
            SourceSummary(
                cloud, label, parsed.rows, kept, parsed.dropped, dict(quality), parsed.adjusted
            )
        )
    offers = sorted(report.kept, key=lambda o: (o.provider, o.gpu, o.instance_type, o.region))
    return offers, summaries, rejections


def read_catalog(path: Path) -> str:
    """``path``'s text plus the rows of the other CSVs beside it that share its header."""
    text = _read(path)
    if path.name != "vms.csv":
        return text
    header = text.split("\n", 1)[0].rstrip("\r")
    for extra in sorted(path.parent.glob("*.csv")):
        if extra == path:
            continue
        head, _, rows = _read(extra).partition("\n")
        if head.rstrip("\r") != header:
            raise DataError(f"{extra}: its header differs from {path}'s; fix or remove it")
        text = text.rstrip("\r\n") + "\n" + rows
    return text


def _read(path: Path) -> str:
    """A catalog file, read as every price file is (an upstream catalog holds every
    instance type of a cloud, GPU or not: tens of MB)."""
    return read_text(path, "", DataError, MAX_CATALOG_BYTES, fix="check --from")


def format_summary(summary: SourceSummary) -> str:
    """A few lines: rows in, offers kept, and the count per drop/adjust reason."""
    lines = [f"{summary.label}: {summary.rows} rows -> {summary.offers} offers"]
    for title, counts in (
        ("dropped", summary.dropped),
        ("quality", summary.quality),
        ("adjusted", summary.adjusted),
    ):
        for reason, count in sorted(counts.items()):
            lines.append(f"    {title:<8} {count:>4}  {reason}")
    return "\n".join(lines)


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m gacost.pricing.build_snapshot", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--from",
        dest="source",
        type=Path,
        required=True,
        metavar="DIR",
        help="folder of SkyPilot catalogs (the stored copies: tests/fixtures/pricing/full)",
    )
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default: {DEFAULT_OUT})"
    )
    parser.add_argument(
        "--as-of",
        default=utc_now().date().isoformat(),
        help="date the catalogs were normalised (default: today)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Build the snapshot, print the per-source summary; 1 on a gacost error."""
    args = _parse_args(argv)
    try:
        offers, summaries, rejections = build(args.source, args.as_of)
        dates = read_price_dates(args.source, {s.cloud: s.label for s in summaries})
        write_snapshot(
            args.out,
            offers,
            as_of=args.as_of,
            sources=[s.label for s in summaries],
            rejected=rejections,
            price_dates=dates,
        )
    except GacostError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for summary in summaries:
        print(format_summary(summary))
    providers = len({o.provider for o in offers})
    print(f"total: {len(offers)} offers from {providers} providers, as of {args.as_of}")
    print(f"wrote {args.out / 'snapshot.csv'} and {args.out / 'snapshot.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
