"""The network side of pricing, and the only package of gacost that imports httpx
(import-linter checks it; the rest of gacost reaches it lazily, for ``--refresh``).

``http`` is the only transport (HTTPS, timeouts, deadlines, bounded retries); ``fetcher`` is
the contract between the refresh and each source's fetcher (what it is given and returns);
one module per source fetches and parses it (``aws``, ``azure``, ``lambda_cloud``, ``oci``,
``vast``, ``skypilot`` for the SkyPilot hosted catalogs, ``spot_advisor`` for AWS's
interruption data); ``registry`` maps each source name of
:data:`gacost.pricing.sources.SOURCES` to its fetcher; ``refresh`` fetches the stale
sources into the cache, or exports them as a new embedded snapshot.
"""
