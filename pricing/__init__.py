"""gacost pricing: normalise GPU rental prices into :class:`gacost.base.records.Offer` rows.

``skypilot`` parses SkyPilot catalog CSVs (GPU names through
:mod:`gacost.base.gpu_names`), ``quality`` filters implausible prices, and ``snapshot`` reads
and writes the embedded price snapshot (rebuilt by ``python -m gacost.pricing.build_snapshot``).

Live prices (see ``docs/pricing.md``): ``sources`` describes each source, ``cache`` keeps
one file per source, and ``combine`` picks the freshest data offline. Fetching them is
:mod:`gacost.pricing.fetch`'s, the one package that imports httpx (import-linter checks it);
nothing else here touches the network.
"""
