"""Choosing offers: GPU queries (``B200``, ``A100:8``, a family), providers and regions.

Pure functions over :class:`Offer` rows. A GPU name resolves through the one resolver,
:func:`gacost.base.gpu_names.resolve_gpus`, with the GPUs of the offers as the price data's
names, so an offer whose GPU has no spec row is still listed and filterable. What is
particular to offers stays here: ``NAME:COUNT`` (SkyPilot's syntax) keeps offers with
exactly that many GPUs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gacost.base.errors import UnknownNameError, did_you_mean
from gacost.base.gpu_names import resolve_gpus
from gacost.base.inputfile import clip
from gacost.base.records import Offer


@dataclass(frozen=True)
class GpuQuery:
    """One ``--gpu`` value: the canonical names it means and, optionally, a GPU count."""

    text: str
    names: tuple[str, ...]
    count: float | None = None

    def matches(self, offer: Offer) -> bool:
        """True when ``offer`` has one of the GPUs (and the count, when one was given)."""
        if offer.gpu not in self.names:
            return False
        return self.count is None or offer.gpu_count == self.count


def parse_gpu_query(text: str, offers: Sequence[Offer]) -> GpuQuery:
    """``"A100"``, ``"a100-80gb"``, ``"B200"``, ``"A100:8"``; unknown names raise
    :class:`UnknownNameError` with a suggestion."""
    name, sep, count_text = text.strip().partition(":")
    count = None
    if sep:
        try:
            count = float(count_text)
        except ValueError:
            count = -1.0
        if not count > 0:
            raise UnknownNameError(
                f"GPU '{text}': the count after ':' must be a number above 0, e.g. A100:8"
            )
    return GpuQuery(text, resolve_gpus([name], priced=(o.gpu for o in offers)), count)


def check_filters(
    offers: Sequence[Offer], providers: Sequence[str] = (), regions: Sequence[str] = ()
) -> None:
    """Every ``--provider`` is a provider of ``offers`` and every ``--region`` starts a
    region of them (of the chosen providers): else :class:`UnknownNameError` with a
    suggestion, as for a job's unknown provider, rather than an empty list."""
    known = sorted({o.provider.lower() for o in offers})
    for name in providers:
        if name.strip().lower() not in known:
            raise UnknownNameError(
                f"--provider: unknown provider {clip(name)}{did_you_mean(name[:100], known)}; "
                f"known: {', '.join(known)}"
            )
    wanted = {p.strip().lower() for p in providers}
    in_scope = sorted({o.region for o in offers if not wanted or o.provider.lower() in wanted})
    lowered = [r.lower() for r in in_scope]
    for prefix in regions:
        if not any(r.startswith(prefix.strip().lower()) for r in lowered):
            of = f" of {', '.join(sorted(wanted))}" if wanted else ""
            raise UnknownNameError(
                f"--region: no region{of} starts with {clip(prefix)}"
                f"{did_you_mean(prefix[:100], in_scope)}; `gacost prices"
                f"{' --provider ' + sorted(wanted)[0] if len(wanted) == 1 else ''} "
                "--offers --format csv` lists the regions"
            )


def select_offers(
    offers: Iterable[Offer],
    *,
    gpus: Sequence[GpuQuery] = (),
    providers: Sequence[str] = (),
    regions: Sequence[str] = (),
) -> list[Offer]:
    """The offers matching any GPU query, any provider and any region (case-insensitive
    prefix of the region, so ``us-`` or ``europe`` work); an empty filter keeps all."""
    wanted = {p.strip().lower() for p in providers}
    prefixes = tuple(r.strip().lower() for r in regions)
    return [
        o
        for o in offers
        if (not gpus or any(q.matches(o) for q in gpus))
        and (not wanted or o.provider.lower() in wanted)
        and (not prefixes or o.region.lower().startswith(prefixes))
    ]
