"""gacost pricing: normalise GPU rental prices into :class:`advisor.records.Offer` rows.

``gpu_names`` maps vendor/catalog GPU strings to canonical names, ``skypilot`` parses
SkyPilot catalog CSVs, ``quality`` filters implausible prices, and ``snapshot`` reads and
writes the embedded price snapshot (rebuilt by ``python -m pricing.build_snapshot``).
No module here touches the network.
"""
