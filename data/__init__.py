"""gacost's embedded data: GPU specs, model configs, a price snapshot, reference profiles.

Installed as the package ``gacost_data``; read it through :mod:`advisor.catalog`.
"""
