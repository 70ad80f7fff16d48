"""gacost pricing: normalise GPU rental prices into :class:`gacost.base.records.Offer` rows.

``skypilot`` parses SkyPilot catalog CSVs (GPU names through
:mod:`gacost.base.gpu_names`), ``quality`` filters implausible prices, and ``snapshot`` reads
and writes the embedded price snapshot (rebuilt by ``python -m gacost.pricing.build_snapshot``).

Live prices (see ``docs/pricing.md``): ``sources`` describes each source, ``registry`` maps
it to a ``fetch_*`` module, ``http`` is the only transport (HTTPS, timeouts, retries),
``cache`` keeps one file per source, ``refresh`` fetches into the cache, and ``combine``
picks the freshest data offline. Only ``http``, ``fetching``, ``registry``, ``refresh``
and the ``fetch_*`` modules import httpx; nothing else touches the network.
"""
